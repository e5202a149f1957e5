"""One task of a batch, start to end, on a fresh Agent: attempts, timeout, retries, the
output check and the result (DESIGN §16). Every backend runs a task through `run_task`:
in the driver's event loop (local), in a worker process (local pool), in a Ray task or a
Ray actor; so a task means the same everywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import logging
import time
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from yiemagent.agent import AgentRunError
from yiemagent.batch._results import TaskResult, TaskStatus
from yiemagent.batch._tasks import BatchTask
from yiemagent.errors import BatchError, exception_summary
from yiemagent.loop import ABORT_GRACE_S
from yiemagent.types.callbacks import maybe_await
from yiemagent.types.messages import Usage, transcript_usage

if TYPE_CHECKING:
    from yiemagent.agent import Agent
    from yiemagent.types import AgentEvent, AssistantMessage, ToolResultMessage

__all__ = [
    "RUN_END_GRACE_S",
    "WORKER_DEATH_RETRIES",
    "MakeAgent",
    "TaskOptions",
    "build_agent",
    "check_output",
    "not_an_agent",
    "run_task",
    "unfinished_result",
    "worker_died",
]

logger = logging.getLogger(__name__)

MakeAgent: TypeAlias = (
    "Callable[[], Agent | Awaitable[Agent]] | Callable[[BatchTask], Agent | Awaitable[Agent]]"
)
"""Builds a fresh Agent for one attempt of a task: `make_agent()` or `make_agent(task)`
(then it also gets the task's `session` and `metadata`). Must be picklable (a module-level
function or an instance of a module-level class) for worker processes and Ray."""

WORKER_DEATH_RETRIES = 3
"""Times a task runs again after the worker process running it died (a system failure, not
the task's: it does not use up `retries`), on a fresh worker."""

RUN_END_GRACE_S = 4 * ABORT_GRACE_S
"""Seconds an aborted Agent run gets to end by itself before the batch cancels its task. The
loop ends a running tool or stream `ABORT_GRACE_S` after an abort (its one deadline helper) and
then answers every call; this is the batch's backstop above it."""


@dataclass(slots=True, frozen=True)
class TaskOptions:
    """How each task runs."""

    timeout_s: float | None = None
    """Wall-clock limit of one attempt, seconds; None: no limit."""
    retries: int = 1
    """Attempts after the first for a task that failed or timed out."""
    approve: bool = False
    """Approve every tool call held for approval and resume, as `yiem run
    --yes` does; False: the task ends "held" (not done: a rerun runs it again)."""
    keep_messages: bool = False
    """Put the last attempt's messages in the result (`TaskResult.messages`, its sub-agents'
    in `TaskResult.sub_agent_messages`): what the run
    did, for checks that look at its tool calls (`yiemagent.evals`) and its timeline."""

    def backstop_s(self, slack_s: float) -> float | None:
        """How long a backend waits for a task's result before it gives up on the worker
        running it (a model that does not respond to an abort), seconds: every attempt's
        `timeout_s` and `RUN_END_GRACE_S`, plus the backend's `slack_s`; None without a
        timeout (a task then runs as long as it takes)."""
        if self.timeout_s is None:
            return None
        return (self.timeout_s + RUN_END_GRACE_S + slack_s) * (self.retries + 1)


def unfinished_result(task: BatchTask, kind: str, error: str, attempts: int) -> TaskResult:
    """The result of a task a backend got no result for: kind "interrupted"
    gives status "interrupted" (not done: a rerun runs it again), any other kind
    ("worker_died", "timeout", "exception") status "error" with that `error_kind`.

    Args:
        task: The task; its id and metadata are copied.
        kind: The `error_kind`.
        error: The one-line `error` text.
        attempts: Tries so far, each worker death included (at least 1 is recorded).
    """
    return TaskResult(
        id=task.id,
        status="interrupted" if kind == "interrupted" else "error",
        error=error,
        error_kind=kind,
        attempts=max(1, attempts),
        metadata=task.metadata,
    )


def worker_died(task: BatchTask, how: str, deaths: Counter[str]) -> TaskResult | None:
    """The rule for a worker that died running `task`, the same for every backend: the
    death is counted in `deaths` (by task id); up to `WORKER_DEATH_RETRIES` deaths the task
    runs again (None: the backend queues it again), after that it is recorded with error
    kind "worker_died" (the result returned), every death counted in `attempts`.

    Args:
        task: The task whose worker died.
        how: How it died, for the error and the log: "exit code 17", Ray's error name.
        deaths: Deaths so far per task id; this one is added.
    """
    deaths[task.id] += 1
    if deaths[task.id] <= WORKER_DEATH_RETRIES:
        logger.warning("task %s: its worker died (%s); running it again", task.id, how)
        return None
    error = f"the worker died while running the task ({how})"
    return unfinished_result(task, "worker_died", error, deaths[task.id])


@dataclass(slots=True)
class _Tally:
    """The usage of every model call of a task's attempts, and of the tool results that
    report some (a sub-agent's run, `Agent.as_tool`)."""

    usage: Usage = field(default_factory=Usage)

    def add(self, message: AssistantMessage | ToolResultMessage) -> None:
        self.usage.add(transcript_usage([message]))  # a summary written for it too

    def token_counts(self) -> dict[str, int]:
        """`TaskResult.usage`: the counts in tokens (the cost is `cost_usd`)."""
        return {k: v for k, v in dataclasses.asdict(self.usage).items() if k != "cost"}


@dataclass(slots=True)
class _Outcome:
    status: TaskStatus
    text: str | None = None
    output: Any = None
    stop_reason: str | None = None
    end_reason: str | None = None
    error: str | None = None
    error_kind: str | None = None
    messages: list[dict[str, Any]] | None = None
    sub_agent_messages: list[dict[str, Any]] | None = None


def _takes_task(make_agent: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(make_agent).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: call it without arguments
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return bool(positional)


async def call_make_agent(make_agent: MakeAgent, task: BatchTask) -> object:
    """What `make_agent` returns for `task` (called with it when it takes an argument),
    unchecked.

    Raises:
        Exception: whatever `make_agent` raised; a plain factory that ran an event loop of
            its own (`asyncio.run`), which cannot run inside the batch's, is a
            `RuntimeError` saying to make it an `async def`.
    """
    try:
        made: object = await maybe_await(
            make_agent(task) if _takes_task(make_agent) else make_agent()  # type: ignore[call-arg]
        )
    except RuntimeError as exc:
        said = str(exc) if type(exc) is RuntimeError else ""
        if "running event loop" not in said and "already running" not in said:
            raise
        raise RuntimeError(
            f"{exc}: make_agent runs in the batch's event loop: make it an async def and "
            "await what it set up with asyncio.run (e.g. `await add_server(agent, server)`)"
        ) from exc
    return made


def not_an_agent(make_agent: MakeAgent, made: str, where: str) -> BatchError:
    """The one-line error for a `make_agent` that returned something other than an Agent,
    of type `made` (its name: it may have been seen on another machine), `where`: "for
    task 'q1'", "in a batch worker process": a mistake of the factory, not of a task,
    which every task would report again as its own failure, so the batch stops on it
    before any task runs."""
    module = getattr(make_agent, "__module__", None)
    name = getattr(make_agent, "__qualname__", None) or type(make_agent).__qualname__
    factory = f"{module}:{name}" if module else name
    return BatchError(
        f"make_agent ({factory}) must return an Agent, not {made} (it "
        f"returned that {where}); no task was run"
    )


_made: weakref.WeakSet[Agent] = weakref.WeakSet()
"""The agents `make_agent` returned in this process that are still alive."""


def check_new_agent(agent: Agent) -> None:
    """Note `agent`, which `make_agent` just returned.

    Raises:
        TypeError: it returned that Agent before: each task's agent is closed when the
            task ends, so a shared one fails every later task ("the agent is closed").
    """
    if agent in _made:
        raise TypeError(
            "make_agent returned an Agent it had returned before; it must build a new Agent "
            "on each call (each task's agent is closed when the task ends)"
        )
    _made.add(agent)


async def build_agent(make_agent: MakeAgent, task: BatchTask) -> Agent:
    """Call `make_agent` (with the task when it takes an argument) and check its result.

    Raises:
        TypeError: `make_agent` returned something that is not an Agent, or an Agent it
            returned before (`check_new_agent`).
        Exception: whatever `make_agent` raised.
    """
    from yiemagent.agent import Agent

    made = await call_make_agent(make_agent, task)
    if not isinstance(made, Agent):
        raise TypeError(f"make_agent must return an Agent, not {type(made).__name__}")
    check_new_agent(made)
    if task.session is not None and not _takes_task(make_agent) and made.session_store is None:
        made.session_id = task.session
    return made


def check_output(text: str, schema: dict[str, Any]) -> Any:
    """Parse a final answer as JSON (a ```json fence around it is allowed) and validate it
    against `schema` (JSON Schema, the draft its `$schema` names, else 2020-12).

    Returns:
        The parsed value.

    Raises:
        ValueError: not JSON, or not matching; the message says where.
    """
    from jsonschema import validators
    from jsonschema.exceptions import best_match

    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not JSON ({exc.msg} at char {exc.pos})") from None
    validator = validators.validator_for(schema)(schema)
    error = best_match(validator.iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ValueError(f"the answer does not match output_schema at {where}: {error.message}")
    return value


async def _wait_run(
    run: asyncio.Future[Any], stop: asyncio.Event | None, timeout_s: float | None
) -> str | None:
    """Wait for `run`; returns None when it finished, else "timeout" or "interrupted"."""
    waiter = asyncio.ensure_future(stop.wait()) if stop is not None else None
    try:
        pending = {run} if waiter is None else {run, waiter}
        done, _ = await asyncio.wait(pending, timeout=timeout_s, return_when="FIRST_COMPLETED")
    finally:
        if waiter is not None:
            waiter.cancel()
    if run in done:
        return None
    return "interrupted" if stop is not None and stop.is_set() else "timeout"


async def _attempt(
    task: BatchTask,
    make_agent: MakeAgent,
    options: TaskOptions,
    stop: asyncio.Event | None,
    tally: _Tally,
) -> _Outcome:
    """One attempt at `task`: a fresh agent from `make_agent`, prompted (`_prompt`), its
    spending added to `tally` and its messages kept when the options ask, then closed
    (within `RUN_END_GRACE_S` seconds). Never raises for a task problem: `make_agent`
    raising is an "error" outcome."""
    from yiemagent.types import AssistantMessage, ToolResultMessage, message_to_dict

    try:
        agent = await build_agent(make_agent, task)
    except Exception as exc:
        logger.warning("task %s: make_agent failed: %r", task.id, exc)
        return _Outcome(
            "error", error=f"make_agent raised {_describe(exc)}", error_kind="exception"
        )
    end: dict[str, str] = {}
    kept: list[dict[str, Any]] = []
    kept_nested: list[dict[str, Any]] = []

    def listen(event: AgentEvent, _signal: Any) -> None:
        if event.type == "message_end":
            if isinstance(event.message, AssistantMessage | ToolResultMessage):
                tally.add(event.message)
            if options.keep_messages:
                _keep(kept, event.message)
        elif event.type == "agent_end":
            end["reason"] = event.reason
        elif event.type == "nested_agent" and options.keep_messages:
            # a sub-run's spending is in its tool result's usage: kept, not tallied again
            inner = event.event
            if inner.type == "message_end" and isinstance(
                inner.message, AssistantMessage | ToolResultMessage
            ):
                kept_nested.append(
                    {
                        "agent_path": list(event.agent_path),
                        "tool_call_id": event.tool_call_id,
                        "tool_call_path": list(event.tool_call_path),
                        "message": message_to_dict(inner.message),
                    }
                )

    agent.subscribe(listen)
    try:
        outcome = await _prompt(task, agent, options.timeout_s, stop, end, options.approve)
        outcome.messages = kept if options.keep_messages else None
        outcome.sub_agent_messages = kept_nested if options.keep_messages else None
        return outcome
    finally:
        # gives back a session's writer lease, so the next attempt may open the session
        with contextlib.suppress(Exception):
            await asyncio.wait_for(agent.close(), RUN_END_GRACE_S)


async def _run_approving(
    agent: Agent, prompt: str, approve: bool, end: dict[str, str]
) -> AssistantMessage:
    """`agent.prompt(prompt)`; with `approve`, each time the run stops on held calls they
    are approved and the run resumed (`end["reason"]` is the last run's end reason)."""
    reply: AssistantMessage = await agent.prompt(prompt)
    while approve and end.get("reason") == "awaiting_approval" and agent.pending_approvals:
        for pending in agent.pending_approvals:
            agent.approve(pending.tool_call_id)
        reply = await agent.resume()
    return reply


def _held(agent: Agent, reply: AssistantMessage, end_reason: str | None) -> _Outcome:
    """The "held" outcome of a run that stopped on calls held for approval, its error
    naming each call and how to approve them (not done: a rerun runs the task again)."""
    calls = ", ".join(
        f"{p.tool_name}({json.dumps(p.arguments, ensure_ascii=False)})"
        for p in agent.pending_approvals
    )
    return _Outcome(
        "held",
        text=reply.text or None,
        stop_reason=reply.stop_reason,
        end_reason=end_reason,
        error=f"held for approval, not run: {calls}; approve with yiem batch --yes "
        "(run_batch(approve=True)) and run the batch again",
        error_kind="awaiting_approval",
    )


def _keep(kept: list[dict[str, Any]], message: Any) -> None:
    from yiemagent.types.messages import message_to_dict

    try:
        kept.append(message_to_dict(message))
    except Exception:  # an application's own message type: not kept
        logger.debug("a %s message was not kept", type(message).__name__)


async def _prompt(
    task: BatchTask,
    agent: Agent,
    timeout_s: float | None,
    stop: asyncio.Event | None,
    end: dict[str, str],
    approve: bool,
) -> _Outcome:
    """Prompt `agent` with the task (approving held calls with `approve`) and wait for the
    run, at most `timeout_s` seconds or until `stop`; the outcome of how it ended (`end`:
    what the agent's `agent_end` said)."""
    run = asyncio.ensure_future(_run_approving(agent, task.prompt, approve, end))
    cut = await _wait_run(run, stop, timeout_s)
    if cut is not None:
        return await _cut_off(agent, run, cut, timeout_s, end)
    try:
        reply = run.result()
    except AgentRunError as exc:  # the run ended in error
        return _failed_reply(exc.message, end.get("reason"))
    except Exception as exc:
        return _Outcome("error", error=f"the run raised {_describe(exc)}", error_kind="exception")
    if end.get("reason") == "awaiting_approval":
        return _held(agent, reply, end.get("reason"))
    return _answered(task, reply, end.get("reason"))


async def _cut_off(
    agent: Agent,
    run: asyncio.Future[AssistantMessage],
    cut: str,
    timeout_s: float | None,
    end: dict[str, str],
) -> _Outcome:
    """Abort a run cut off by its timeout or by `stop` (`cut`: "timeout" or "interrupted"),
    give it `RUN_END_GRACE_S` seconds to end, then cancel it; the outcome keeps the text of
    its answer when it gave one in time."""
    from yiemagent.types import AssistantMessage

    agent.abort("timed out" if cut == "timeout" else "interrupted")
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(run), RUN_END_GRACE_S)
    if not run.done():
        run.cancel()
        with contextlib.suppress(BaseException):
            await run
    partial = run.result() if run.done() and not run.cancelled() and not run.exception() else None
    error = f"timed out after {timeout_s:g} s" if cut == "timeout" else "interrupted"
    return _Outcome(
        "timeout" if cut == "timeout" else "interrupted",
        text=partial.text if isinstance(partial, AssistantMessage) else None,
        stop_reason="aborted",
        end_reason=end.get("reason"),
        error=error,
        error_kind=cut,
    )


def _failed_reply(reply: AssistantMessage, end_reason: str | None) -> _Outcome:
    """The "error" outcome of a run whose model call failed (or was aborted), its error the
    model's message on one line."""
    return _Outcome(
        "error",
        text=reply.text or None,
        stop_reason=reply.stop_reason,
        end_reason=end_reason,
        error=" ".join((reply.error_message or "the model call failed").split()),
        error_kind="model_error",
    )


def _answered(task: BatchTask, reply: AssistantMessage, end_reason: str | None) -> _Outcome:
    """The outcome of a run that ended with `reply`: "ok" with its text and output (an
    output type's value, or the answer checked against the task's `output_schema`);
    "error" when the model call failed, the turn limit cut it off, or the output is not
    valid."""
    if reply.stop_reason in ("error", "aborted"):
        return _failed_reply(reply, end_reason)
    outcome = _Outcome("ok", text=reply.text, stop_reason=reply.stop_reason, end_reason=end_reason)
    value = getattr(reply, "output", None)
    if value is not None:  # the agent's output type: its validated value is the output
        from pydantic_core import to_jsonable_python

        outcome.output = to_jsonable_python(value)
        # answered through the output tool, the model wrote no text: the value is the answer
        outcome.text = reply.text or json.dumps(outcome.output, ensure_ascii=False)
    if end_reason == "max_turns":
        outcome.status, outcome.error_kind = "error", "max_turns"
        outcome.error = "the turn limit was reached before the model answered"
    elif task.output_schema is not None:
        answer = reply.text if value is None else json.dumps(outcome.output)
        try:
            outcome.output = check_output(answer, task.output_schema)
        except ValueError as exc:
            outcome.status, outcome.error_kind, outcome.error = "error", "output_invalid", str(exc)
            outcome.output = None
    return outcome


def _describe(exc: BaseException) -> str:
    """`exception_summary` on one line (a batch result's error is one line)."""
    return " ".join(exception_summary(exc).split())


async def run_task(
    task: BatchTask,
    make_agent: MakeAgent,
    options: TaskOptions,
    stop: asyncio.Event | None = None,
) -> TaskResult:
    """Run `task` on fresh Agents until it succeeds, is out of attempts, or is stopped.

    Args:
        task: The task.
        make_agent: Builds the Agent of each attempt.
        options: timeout per attempt (s), retries, and whether held calls are approved.
        stop: When set, the running attempt is aborted and the task ends "interrupted".

    Returns:
        The task's result (never raises for a task problem: make_agent raising, a model
        error, a timeout, an invalid output, calls held for approval all become a result
        with `error`).
    """
    started = time.monotonic()
    tally = _Tally()
    outcome = _Outcome("interrupted", error="interrupted", error_kind="interrupted")
    attempts = 0
    while attempts < 1 + max(0, options.retries):
        if stop is not None and stop.is_set():
            break
        attempts += 1
        outcome = await _attempt(task, make_agent, options, stop, tally)
        if outcome.status in ("ok", "held", "interrupted"):
            break
        logger.info("task %s attempt %d: %s: %s", task.id, attempts, outcome.status, outcome.error)
    return TaskResult(
        id=task.id,
        status=outcome.status,
        text=outcome.text,
        output=outcome.output,
        usage=tally.token_counts(),
        cost_usd=tally.usage.cost.total,
        stop_reason=outcome.stop_reason,
        end_reason=outcome.end_reason,
        error=outcome.error,
        error_kind=outcome.error_kind,
        attempts=max(attempts, 1),
        duration_s=time.monotonic() - started,
        metadata=task.metadata,
        messages=outcome.messages,
        sub_agent_messages=outcome.sub_agent_messages or None,
    )
