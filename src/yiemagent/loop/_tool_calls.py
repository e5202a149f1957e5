"""Tool calls: the batches and the per-call pipeline, prepare → execute → finalize
(DESIGN §4).

A batch runs the tool calls of one assistant message, sequentially or in parallel; both
schedules run the same steps for each call — start event, prepare, execute + finalize, end
event, result message events — and differ only in when. `_Batch` records how far each call
got, so that whatever happens (an abort, a bug here) every call ends with exactly one start
event, one end event and one result message, in source order. The per-call steps return an
outcome instead of raising, so every call has one result for the model: `prepare_tool_call`
(find the tool, prepare and validate the arguments, ask `before_tool_call`),
`execute_prepared_tool_call` (run the tool's code through `_execution`),
`finalize_executed_tool_call` (`after_tool_call`). Then what a batch leaves in the
transcript: the result messages, whether the batch terminates the run, calls answered
without running (a cut-off or failed model answer, an abort, a cancelled task) and the
calls still without a result (held for approval).

The output tool of a typed run (labelled `OUTPUT_TOOL_LABEL`) is the run's answer, not an
action: neither tool hook sees it, so a hook that blocks, holds for approval or rewrites
every call leaves the answer alone (openai-agents and pydantic-ai keep their output apart
from their tool hooks too). It still has its events and its result message.

Abort (our choice where pi leaves it to the tool): when the run's signal is aborted while a
tool runs, the tool's own signal (a `child()` of the run's) is aborted at once and the
pipeline waits up to `ABORT_GRACE_S` for the tool to return. A tool that returns
in time has its result used (it decides what an abort means for it); one that does not is
abandoned with the error result "Operation aborted: tool x did not stop within N s" (an
async tool is cancelled, a thread is left to finish and its late result discarded). An
abort never hangs the run on a tool.

The seeds' signatures: `signal=None` means the config's `signal`, else no abort, and `emit`
may be a plain or an async function (or None: no events); its exceptions are logged.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import json
import logging
import time
from collections.abc import (
    Awaitable,
    Collection,
    Coroutine,
    Generator,
    Iterable,
    Mapping,
    Sequence,
)
from typing import Any, TypeVar

from yiemagent.errors import exception_summary, exception_text
from yiemagent.loop._execution import (
    ABORT_GRACE_S,
    QUICK_WAIT_S,
    Deadline,
    ToolRaised,
    ToolUpdates,
    as_tool_result,
    await_apart,
    call_plain,
    nested_grace,
    run_in_process,
    tool_threads,
    within_abort_grace,
)
from yiemagent.loop._usage_limits import (
    CallUsage,
    UsageMeter,
    counts_as_tool_call,
    current_call_usage,
)
from yiemagent.tools.schema import ToolArgumentsError, validate_arguments_against_schema
from yiemagent.types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ExecutedOutcome,
    FinalizedOutcome,
    HeldOutcome,
    ImageContent,
    ImmediateOutcome,
    MessageEndEvent,
    MessageStartEvent,
    PreparedToolCall,
    TextContent,
    ToolApproval,
    ToolCall,
    ToolCallBatch,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolResultMessage,
)
from yiemagent.types.callbacks import (
    EventSink,
    GuardedSink,
    adopt_task,
    guarded_sink,
    is_async_callable,
    task_is_cancelled,
)
from yiemagent.types.messages import ensure_unique_tool_call_ids, now_ms, trailing_tool_turn
from yiemagent.types.observe import RunSpan, ToolFailure, ToolSpan
from yiemagent.types.output import OUTPUT_TOOL_LABEL
from yiemagent.types.signal import AbortSignal
from yiemagent.types.tools import HeldToolResult, ToolCallFailed, cut_tool_result

__all__ = [
    "CANCELLED_TEXT",
    "SKIPPED_TEXT",
    "Offer",
    "all_done",
    "create_error_tool_result",
    "create_tool_result_message",
    "execute_prepared_tool_call",
    "execute_tool_calls",
    "execute_tool_calls_parallel",
    "execute_tool_calls_sequential",
    "fail_tool_calls",
    "finalize_executed_tool_call",
    "held_tool_calls",
    "interrupted_text",
    "offer_only",
    "offering",
    "prepare_tool_call",
    "prepare_tool_call_arguments",
    "run_concurrently",
    "should_terminate",
    "validate_tool_arguments",
]

logger = logging.getLogger(__name__)


_INTERNAL_ERROR = "Tool call failed: internal error: "


REJECTED_TEXT = "Tool call rejected by the user"
"""The result of a held call a person rejected without a reason."""

NOT_RUN_TEXT = "Tool call not run"
"""The result of a held call nobody could decide (`ToolApproval.by_user` False)."""


SKIPPED_TEXT = "Tool call skipped: the run was aborted"


CANCELLED_TEXT = "Tool call cancelled: the run's task was cancelled"


_HookResult = TypeVar("_HookResult", BeforeToolCallResult, AfterToolCallResult)


# ── what a model call was offered ────────────────────────────────────────────


class Offer:
    """The tools one model call was offered, as its `StreamFn` told (`offer_only`)."""

    __slots__ = ("names",)

    def __init__(self) -> None:
        self.names: frozenset[str] | None = None
        """The names offered; None: every tool of the run's context (nothing was told)."""


offering: contextvars.ContextVar[Offer | None] = contextvars.ContextVar(
    "yiemagent_offering", default=None
)
"""The `Offer` of the model call the loop is making; None outside one."""


def offer_only(tools: Iterable[Any]) -> None:
    """Tell the loop which tools the model call being made is offered, when a `StreamFn`
    sends the model fewer than the context it was given (the Agent's `prepare_context`).

    A call in that call's answer of any other tool is answered as an unknown tool, so a tool
    left out is not run, held or shown to `before_tool_call`. The last list told in one
    model call stands. Outside a loop's model call (a `StreamFn` called directly) it does
    nothing.

    Args:
        tools: the tools sent, anything with a `name` (`AgentTool`, `Tool`).
    """
    offer = offering.get()
    if offer is not None:
        offer.names = frozenset(tool.name for tool in tools)


# ── batches ──────────────────────────────────────────────────────────────────


async def execute_tool_calls(
    context: AgentContext,
    assistant_message: AssistantMessage,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    emit: EventSink | None = None,
    *,
    answered: list[ToolResultMessage] | None = None,
    meter: UsageMeter | None = None,
    trace: RunSpan | None = None,
    only: Sequence[ToolCall] | None = None,
    offered: Collection[str] | None = None,
) -> ToolCallBatch:
    """Run the tool calls of `assistant_message` as one batch.

    Empty or repeated tool-call ids are first made unique in the message itself.
    The batch runs in parallel when `config.tool_execution == "parallel"` and every called
    tool that exists has `parallel=True`, else sequentially.

    Args:
        context: the run's context (its tools, and what the hooks see).
        assistant_message: the message whose tool calls run.
        config: tool execution mode, cap, timeout and hooks.
        signal: the run's signal; None: `config.signal`, else no abort.
        emit: the event sink, plain or async; None: no events.
        answered: when given and the calling task is cancelled, receives every result
            message (one per call) before the `CancelledError` goes on (the loop puts them
            in the transcript).
        meter: the run's usage meter (the loop's): each call is checked against
            its limits before it runs; None: no limits.
        trace: the run's span (the loop's): each call gets an `execute_tool`
            span; None: untraced.
        only: run just these calls of the message (held calls that now have a decision).
        offered: the names of the tools the model call that wrote the message was offered
            (`offer_only`): a call of another tool is answered as an unknown tool, listing
            these; None: every tool of `context`.

    Returns:
        One result message per tool call, in source order, and whether to terminate.
        Never raises, except `CancelledError` when the calling task is
        cancelled, after every call has had its events and an error result.
    """
    sink = guarded_sink(emit)
    try:
        ensure_unique_tool_call_ids(assistant_message)
        calls = assistant_message.tool_calls if only is None else list(only)
        batch = _Batch(
            context, assistant_message, calls, config, signal, sink, meter, trace, offered
        )
    except Exception as exc:  # a malformed message or context: still answer what we can
        logger.exception("could not set up the tool-call batch")
        calls = [b for b in assistant_message.content if isinstance(b, ToolCall)]
        return await fail_tool_calls(calls, f"{_INTERNAL_ERROR}{exception_text(exc)}", sink)
    if not calls:
        return ToolCallBatch([], False)
    parallel = config.tool_execution == "parallel" and all(
        tool.parallel for call in calls if (tool := batch.tools.get(call.name)) is not None
    )
    return await _guarded(batch, parallel, answered)


async def execute_tool_calls_sequential(
    context: AgentContext,
    assistant_message: AssistantMessage,
    tool_calls: Sequence[ToolCall],
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    emit: EventSink | None = None,
) -> ToolCallBatch:
    """Run `tool_calls` one after another. Never raises for a tool problem.

    For each call: start event, prepare, execute, finalize, end event, result message events.
    Once the signal is aborted every remaining call gets start/end events and the error
    result "Tool call skipped: the run was aborted". `signal` and `emit` as in
    `execute_tool_calls`.
    """
    batch = _Batch(context, assistant_message, tool_calls, config, signal, guarded_sink(emit))
    return await _guarded(batch, parallel=False)


async def execute_tool_calls_parallel(
    context: AgentContext,
    assistant_message: AssistantMessage,
    tool_calls: Sequence[ToolCall],
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    emit: EventSink | None = None,
) -> ToolCallBatch:
    """Run `tool_calls` concurrently. Never raises for a tool problem.

    Preparation runs in source order (start event, prepare; an immediate outcome emits its
    end event at once). The prepared calls then run concurrently, at most
    `config.max_parallel_tools` at a time, each emitting its end event when it finishes.
    Result messages are emitted, and returned, in source order once all are done. Calls not
    yet running when the run is aborted are skipped. `signal` and `emit` as in
    `execute_tool_calls`.
    """
    batch = _Batch(context, assistant_message, tool_calls, config, signal, guarded_sink(emit))
    return await _guarded(batch, parallel=True)


async def _guarded(
    batch: _Batch, parallel: bool, answered: list[ToolResultMessage] | None = None
) -> ToolCallBatch:
    """Run a schedule; if anything in it raises, the calls without a result get one.

    Cancelled (or a `KeyboardInterrupt`/`SystemExit` going by), it answers them too, puts
    every result in `answered` and re-raises the very exception it got (`asyncio.timeout`
    and `TaskGroup` recognise only the `CancelledError` they caused)."""
    try:
        await (_parallel(batch) if parallel else _sequential(batch))
        if batch.held and batch.signal.aborted:  # an aborted run leaves nothing held
            await batch.answer_the_rest(SKIPPED_TEXT, "aborted")
        batch.end_held_spans()
    except Exception as exc:
        logger.exception("tool-call batch failed; answering the remaining calls")
        await batch.answer_the_rest(f"{_INTERNAL_ERROR}{exception_text(exc)}", "tool_error")
    except BaseException as exc:  # cancelled, or KeyboardInterrupt/SystemExit passing through
        for task in batch.tasks:
            task.cancel()
        if isinstance(exc, GeneratorExit):  # the coroutine is being closed: no more awaits
            raise
        if batch.tasks:  # let the cancelled calls end (each is bounded: `await_apart`)
            await asyncio.wait(batch.tasks, timeout=2 * ABORT_GRACE_S)
        text = CANCELLED_TEXT if isinstance(exc, asyncio.CancelledError) else interrupted_text(exc)
        try:  # the exception is delivered; emitting the missing events can go on
            await batch.answer_the_rest(text, "aborted")
        except Exception:
            logger.exception("could not answer the tool calls of a cancelled batch")
        if answered is not None:
            answered.extend(batch.result().messages)
        raise
    return batch.result()


# ── schedules ────────────────────────────────────────────────────────────────


async def _sequential(batch: _Batch) -> None:
    """Each call runs to its result message before the next one starts."""
    for i, call in enumerate(batch.calls):
        if (w := batch.start(i)) is not None:
            await w
        prepared = await batch.prepare(i)
        if isinstance(prepared, HeldOutcome):
            batch.held.append(i)
            continue
        if isinstance(prepared, ImmediateOutcome):
            immediate = FinalizedOutcome(call, prepared.result, prepared.is_error)
            if (w := batch.end(i, immediate)) is not None:
                await w
        else:
            await batch.run(i, prepared)
            if not batch.ended[i]:  # held inside the tool
                continue
        if (w := batch.publish(i)) is not None:
            await w


async def _parallel(batch: _Batch) -> None:
    """Prepare in source order, run the prepared calls concurrently (end events in
    completion order), then publish the result messages in source order. The calls start in
    this task; only those after the first one that waits get a Task of their own
    (`run_concurrently`: a call that never waits costs no Task)."""
    runnable: list[tuple[int, PreparedToolCall]] = []
    for i, call in enumerate(batch.calls):
        if (w := batch.start(i)) is not None:
            await w
        prepared = await batch.prepare(i)
        if isinstance(prepared, HeldOutcome):
            batch.held.append(i)
        elif isinstance(prepared, ImmediateOutcome):
            immediate = FinalizedOutcome(call, prepared.result, prepared.is_error)
            if (w := batch.end(i, immediate)) is not None:
                await w
        else:
            runnable.append((i, prepared))
    if runnable and batch.signal.aborted:  # nothing starts once the run is aborted
        skipped = create_error_tool_result(SKIPPED_TEXT)
        for i, prepared in runnable:
            batch.failures[i] = "aborted"
            if (w := batch.end(i, FinalizedOutcome(prepared.tool_call, skipped, True))) is not None:
                await w
        runnable = []
    if runnable:
        cap = batch.config.max_parallel_tools
        limit = asyncio.Semaphore(cap) if cap is not None and cap < len(runnable) else None
        calls = (batch.run(i, p) if limit is None else _limited(batch, i, p, limit)
                 for i, p in runnable)  # fmt: skip
        await run_concurrently(calls, batch.tasks)
    for i in range(len(batch.calls)):
        if batch.ended[i] and (w := batch.publish(i)) is not None:
            await w


async def _limited(
    batch: _Batch, i: int, prepared: PreparedToolCall, limit: asyncio.Semaphore
) -> None:
    """`batch.run` once a slot of `max_parallel_tools` is free; a call whose slot comes
    after the run was aborted is skipped, not started."""
    async with limit:
        if batch.signal.aborted:
            skipped = create_error_tool_result(SKIPPED_TEXT)
            batch.failures[i] = "aborted"
            if (w := batch.end(i, FinalizedOutcome(prepared.tool_call, skipped, True))) is not None:
                await w
            return
        await batch.run(i, prepared)


async def run_concurrently(
    coroutines: Iterable[Coroutine[Any, Any, None]], tasks: list[asyncio.Task[None]]
) -> None:
    """Run `coroutines` concurrently until each is done; none waits on another.

    Each coroutine runs in its own copy of the current context, as a Task's would. They are
    started in order in the calling task; the first one that waits (awaits something not yet
    done) stays in the calling task, which drives it to the end, and each one after it gets
    its own Task, appended to `tasks` at once (so a caller that is cancelled can cancel
    them). The coroutine the calling task drives sees it as `asyncio.current_task()`, and its
    cancellation, like a call of a sequential batch.

    Args:
        coroutines: the calls, created lazily (those after a failure are never created).
        tasks: receives the Tasks made; the caller's list, usually empty.

    Raises:
        Whatever a coroutine raises, as soon as the calling task sees it (a Task's failure
        once the calling task waits for the Tasks): `asyncio.gather`'s rule; the Tasks still
        running go on (the caller cancels them).
    """
    held: _Drive | None = None
    loop: asyncio.AbstractEventLoop | None = None
    for coroutine in coroutines:
        if held is not None:
            task = loop.create_task(coroutine) if loop else asyncio.create_task(coroutine)
            adopt_task(task)
            tasks.append(task)
            continue
        context = contextvars.copy_context()
        try:
            waiting_on = context.run(coroutine.send, None)
        except StopIteration:
            continue  # done without waiting: no Task
        held = _Drive(coroutine, context, waiting_on)
        loop = asyncio.get_running_loop()
    if held is not None:
        await held
    if tasks:
        await all_done(tasks)


class _Drive:
    """Awaiting it drives a started coroutine to its end in the awaiting task: what it waits
    on is handed up to the task, what the task sends or throws in is handed down, each step
    in the coroutine's own context (what a native `await` does, plus the context)."""

    __slots__ = ("_context", "_coroutine", "_waiting_on")

    def __init__(
        self, coroutine: Coroutine[Any, Any, None], context: contextvars.Context, waiting_on: Any
    ) -> None:
        self._coroutine = coroutine
        self._context = context
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, None]:
        coroutine, run, waiting_on = self._coroutine, self._context.run, self._waiting_on
        self._waiting_on = None
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:  # the awaiting coroutine is being closed
                run(coroutine.close)
                raise
            except BaseException as exc:  # cancelled (or a bad yield): the coroutine decides
                try:
                    waiting_on = run(coroutine.throw, exc)
                except StopIteration:
                    return
            else:
                try:
                    waiting_on = run(coroutine.send, sent)
                except StopIteration:
                    return


async def all_done(tasks: list[asyncio.Task[None]]) -> None:
    """Wait until every task is done; the first that raised (or was cancelled) raises here,
    as `asyncio.gather` would, the others going on. One future and a done-callback per task
    (cheaper than `gather`). No tasks: done at once."""
    if not tasks:
        return
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    left = len(tasks)

    def finished(task: asyncio.Task[None]) -> None:
        nonlocal left
        left -= 1
        if done.done():
            return
        if task.cancelled():
            done.set_exception(asyncio.CancelledError())
        elif (error := task.exception()) is not None:
            done.set_exception(error)
        elif left == 0:
            done.set_result(None)

    for task in tasks:
        task.add_done_callback(finished)
    await done


# ── one batch in flight ──────────────────────────────────────────────────────


class _Batch:
    """One batch in flight: the calls, the run's pieces, and each call's progress."""

    __slots__ = (
        "assistant_message",
        "calls",
        "config",
        "context",
        "emit",
        "ended",
        "ended_ms",
        "failures",
        "held",
        "live",
        "messages",
        "meter",
        "outcomes",
        "ran_with",
        "signal",
        "spans",
        "started",
        "started_ms",
        "tasks",
        "took_ms",
        "tools",
        "trace",
    )

    def __init__(
        self,
        context: AgentContext,
        assistant_message: AssistantMessage,
        calls: Sequence[ToolCall],
        config: AgentLoopConfig,
        signal: AbortSignal | None,
        emit: GuardedSink,
        meter: UsageMeter | None = None,
        trace: RunSpan | None = None,
        offered: Collection[str] | None = None,
    ) -> None:
        self.context = context
        self.assistant_message = assistant_message
        self.calls = calls
        self.config = config
        self.signal = config.run_signal(signal)
        self.emit = emit
        self.tools: dict[str, AgentTool] = {
            tool.name: tool for tool in context.tools if offered is None or tool.name in offered
        }
        """The tools a call may run: the context's, less those its model call was not
        offered (an unknown tool's error result answers a call of one)."""
        n = len(calls)
        self.started = [False] * n
        self.ended = [False] * n
        self.outcomes: list[FinalizedOutcome | None] = [None] * n
        self.failures: list[ToolFailure] = ["tool_error"] * n
        """Why each call that ended in an error failed, for its span (`ToolFailure`); read only
        when it did."""
        self.messages: list[ToolResultMessage | None] = [None] * n
        self.held: list[int] = []
        """Calls held for approval: no end event, no result message."""
        self.tasks: list[asyncio.Task[None]] = []
        self.started_ms = [0] * n
        """When each call started, on the monotonic clock (ms): its duration does not jump
        when the wall clock is stepped (NTP, a suspended machine, a changed time zone)."""
        self.ended_ms = [0] * n
        """When each call ended, on the wall clock (ms since the epoch): its timestamp."""
        self.took_ms = [0] * n
        self.ran_with: list[dict[str, Any] | None] = [None] * n
        """The arguments each executed call ran with, when they differ from the model's."""
        self.meter = meter
        """The run's spending, when it has `UsageLimits`."""
        self.live: dict[int, CallUsage] = {}
        """With a meter: what runs nested in each running call have spent so far."""
        self.trace = trace
        self.spans: list[ToolSpan | None] | None = None if trace is None else [None] * n
        """Each call's `execute_tool` span, when the run is traced."""

    # The steps every call goes through, in order. `start`, `end` and `publish` hand their
    # events to the sink at once and return what is left to await (None: nothing), so a
    # plain sink costs no coroutine: `if (w := batch.start(i)) is not None:
    # await w`.

    def start(self, i: int) -> Awaitable[None] | None:
        call = self.calls[i]
        self.started[i] = True
        self.started_ms[i] = time.monotonic_ns() // 1_000_000
        if self.spans is not None and self.trace is not None:
            self.spans[i] = self.trace.tool(call, self.tools.get(call.name))
        return self.emit.now(ToolExecutionStartEvent(call.id, call.name, call.arguments))

    async def prepare(self, i: int) -> PreparedToolCall | ImmediateOutcome | HeldOutcome:
        if self.signal.aborted:  # a person's rejection is still the call's answer
            decision = (self.config.approvals or {}).get(self.calls[i].id)
            rejected = decision is not None and not decision.approved
            text = rejected_text(decision) if decision is not None and rejected else SKIPPED_TEXT
            self.failures[i] = "rejected" if rejected else "aborted"
            return ImmediateOutcome(create_error_tool_result(text), True)
        prepared, self.failures[i] = await _prepare(
            self.context,
            self.assistant_message,
            self.calls[i],
            self.config,
            self.signal,
            self.tools,
        )
        if (
            self.meter is not None
            and isinstance(prepared, PreparedToolCall)
            and not self._is_answer(prepared)
        ):
            counted = counts_as_tool_call(prepared.tool)
            refused = self.meter.refuse_tool_call(counted=counted)  # a limit reached mid-batch
            if refused is not None:
                self.failures[i] = "usage_limit"
                return ImmediateOutcome(create_error_tool_result(refused), True)
        return prepared

    def _is_answer(self, prepared: PreparedToolCall) -> bool:
        """A call of the output tool: the run's answer, which spends nothing, so no limit
        refuses it and it counts as no tool call (a text answer is not refused either)."""
        spec = self.config.output_type
        return spec is not None and prepared.tool.name == spec.name

    async def run(self, i: int, prepared: PreparedToolCall) -> None:
        """Execute, finalize and end one prepared call; a bug here fails only this call.
        A traced call runs inside its span's context, so spans the tool opens are its
        children."""
        if prepared.args != self.calls[i].arguments:
            self.ran_with[i] = _as_stored_json(prepared.args)
        span = self.spans[i] if self.spans is not None else None
        token = None
        if self.meter is not None:  # a sub-run inside the call counts here as it spends
            token = current_call_usage.set(self.live.setdefault(i, self.meter.start_call()))
        try:
            if span is None:
                finalized = await self.execute(i, prepared)
            else:
                with span.activate():
                    finalized = await self.execute(i, prepared)
        finally:
            if token is not None:
                current_call_usage.reset(token)
        if type(finalized.result) is HeldToolResult:  # held inside the tool (a sub-agent)
            self.held.append(i)
            return
        if (w := self.end(i, finalized)) is not None:
            await w

    async def execute(self, i: int, prepared: PreparedToolCall) -> FinalizedOutcome:
        timeout_s = prepared.tool.timeout_s or self.config.tool_timeout_s
        try:
            executed, self.failures[i] = await _execute(prepared, self.signal, self.emit, timeout_s)
            if type(executed.result) is HeldToolResult:
                return FinalizedOutcome(prepared.tool_call, executed.result, executed.is_error)
            if self.config.after_tool_call is None:
                finalized = FinalizedOutcome(prepared.tool_call, executed.result, executed.is_error)
            else:
                finalized = await finalize_executed_tool_call(
                    self.context,
                    self.assistant_message,
                    prepared,
                    executed,
                    self.config,
                    self.signal,
                )
            limit = self.config.max_tool_result_chars
            if limit is not None:
                finalized.result = cut_tool_result(finalized.result, limit)
        except Exception as exc:
            logger.exception("tool call %s failed inside the pipeline", prepared.tool_call.id)
            failed = create_error_tool_result(f"{_INTERNAL_ERROR}{exception_text(exc)}")
            finalized = FinalizedOutcome(prepared.tool_call, failed, True)
        return finalized

    def end(self, i: int, finalized: FinalizedOutcome) -> Awaitable[None] | None:
        self.outcomes[i] = finalized
        self.ended[i] = True
        self.ended_ms[i] = now_ms()
        self.took_ms[i] = time.monotonic_ns() // 1_000_000 - self.started_ms[i]
        result = finalized.result
        if self.meter is not None:
            self.meter.add_result(result, self.live.pop(i, None))
        if self.spans is not None:
            span = self.spans[i]
            if span is not None:
                span.end(result, finalized.is_error, self.failures[i])
        call = finalized.tool_call
        return self.emit.now(ToolExecutionEndEvent(call.id, call.name, result, finalized.is_error))

    def publish(self, i: int) -> Awaitable[None] | None:
        """Emit the result message of call `i` (its end event has been sent)."""
        outcome = self.outcomes[i]
        assert outcome is not None
        message = create_tool_result_message(outcome, self.ended_ms[i])
        message.duration_ms = self.took_ms[i]
        message.executed_arguments = self.ran_with[i]
        self.messages[i] = message
        first = self.emit.now(MessageStartEvent(message))
        if first is not None:
            return self._publish_end(first, message)
        return self.emit.now(MessageEndEvent(message))

    async def _publish_end(self, first: Awaitable[None], message: ToolResultMessage) -> None:
        await first
        if (w := self.emit.now(MessageEndEvent(message))) is not None:
            await w

    async def answer_the_rest(self, text: str, failure: ToolFailure) -> None:
        """Give every call that lacks one the error result `text` (`failure` says why, for
        its span), with the events it has not had."""
        for task in self.tasks:
            task.cancel()
        for i, call in enumerate(self.calls):
            if not self.started[i] and (w := self.start(i)) is not None:
                await w
            if not self.ended[i]:
                self.failures[i] = failure
                failed = FinalizedOutcome(call, create_error_tool_result(text), True)
                if (w := self.end(i, failed)) is not None:
                    await w
            if self.messages[i] is None and (w := self.publish(i)) is not None:
                await w

    def end_held_spans(self) -> None:
        """End the spans of the calls still held: they get no end event in this run."""
        if self.spans is None:
            return
        for i in self.held:
            span = self.spans[i]
            if span is not None and not self.ended[i]:
                self.spans[i] = None
                span.held()

    def result(self) -> ToolCallBatch:
        messages = [m for m in self.messages if m is not None]
        finalized = [f for f in self.outcomes if f is not None]
        held = [self.calls[i] for i in self.held if self.messages[i] is None]
        return ToolCallBatch(messages, should_terminate(finalized) and not held, held)


# ── prepare ──────────────────────────────────────────────────────────────────


async def prepare_tool_call(
    context: AgentContext,
    assistant_message: AssistantMessage,
    tool_call: ToolCall,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    *,
    tools: Mapping[str, AgentTool] | None = None,
) -> PreparedToolCall | ImmediateOutcome | HeldOutcome:
    """Resolve the tool, prepare and validate the arguments, ask `before_tool_call` (not
    for the output tool: the run's answer is no action to allow).

    Args:
        context: the run's context; the tool is looked up in `context.tools`.
        assistant_message: the message holding `tool_call` (given to the hook).
        tool_call: the call to prepare.
        config: `before_tool_call` comes from here.
        signal: the run's signal, given to the hook; None: `config.signal`, else no abort.
        tools: `context.tools` indexed by name, when the caller has built it once for a
            whole batch (else it is built here).

    Returns:
        The `PreparedToolCall` to execute, or an `ImmediateOutcome` holding an error result
        (unknown tool, invalid arguments, blocked, aborted, a hook that raised, a call a
        person rejected: its reason), or a `HeldOutcome` for a call that needs a person's
        approval (the tool's `requires_approval`, or the hook's `defer=True`) and has no
        decision in `config.approvals`. Never raises.
    """
    if tools is None:
        tools = {tool.name: tool for tool in context.tools}
    return (await _prepare(context, assistant_message, tool_call, config, signal, tools))[0]


async def _prepare(
    context: AgentContext,
    assistant_message: AssistantMessage,
    tool_call: ToolCall,
    config: AgentLoopConfig,
    signal: AbortSignal | None,
    tools: Mapping[str, AgentTool],
) -> tuple[PreparedToolCall | ImmediateOutcome | HeldOutcome, ToolFailure]:
    """`prepare_tool_call`, with why an immediate outcome failed (for the call's span)."""
    signal = config.run_signal(signal)
    approval = config.approvals.get(tool_call.id) if config.approvals else None
    if approval is not None and not approval.approved:
        return ImmediateOutcome(create_error_tool_result(rejected_text(approval)), True), "rejected"
    tool = tools.get(tool_call.name)
    if tool is None:
        return _not_found(tool_call.name, tools), "tool_not_found"
    approved = approval is not None
    try:
        args = validate_tool_arguments(tool, prepare_tool_call_arguments(tool, tool_call))
        if not approved and _requires_approval(tool, args):
            return HeldOutcome(tool_call, args), "tool_error"
        hook = config.before_tool_call
        if hook is not None and tool.label != OUTPUT_TOOL_LABEL:
            hook_context = BeforeToolCallContext(
                assistant_message, tool_call, args, context, approved
            )
            value = await within_abort_grace(hook(hook_context, signal), signal, "before_tool_call")
            before = _hook_result(value, BeforeToolCallResult, "before")
            args = hook_context.args  # changed in place, or replaced: the tool gets it
            if signal.aborted:
                aborted = create_error_tool_result("Operation aborted")
                return ImmediateOutcome(aborted, True), "aborted"
            if before is not None and before.block:
                result = create_error_tool_result(before.reason or "Tool execution was blocked")
                result.terminate = before.terminate
                return ImmediateOutcome(result, True), "blocked"
            if before is not None and before.defer and not approved:
                return HeldOutcome(tool_call, args), "tool_error"
        return PreparedToolCall(tool, tool_call, args), "tool_error"
    except asyncio.CancelledError as exc:
        if task_is_cancelled():
            raise
        return ImmediateOutcome(create_error_tool_result(exception_text(exc)), True), "tool_error"
    except ToolArgumentsError as exc:
        failed = create_error_tool_result(exception_text(exc))
        return ImmediateOutcome(failed, True), "invalid_arguments"
    except Exception as exc:
        return ImmediateOutcome(create_error_tool_result(exception_text(exc)), True), "tool_error"


def prepare_tool_call_arguments(tool: AgentTool, tool_call: ToolCall) -> ToolCall:
    """The call as the tool's `prepare_arguments` hook leaves it (the seeds'
    prepareToolCallArguments): `tool_call` itself when the tool has no hook or the hook
    answers the arguments unchanged, else a copy (same id and name) carrying what the hook
    returned. The model's call is never changed.

    The hook receives the raw argument text of a call still carrying `partial_json` (see
    `validate_tool_arguments`).
    """
    if tool.prepare_arguments is None:
        return tool_call
    raw = _sent_arguments(tool_call)
    prepared = tool.prepare_arguments(raw)
    if prepared is raw or (
        isinstance(prepared, dict) and isinstance(raw, dict) and prepared == raw
    ):
        return tool_call
    return dataclasses.replace(tool_call, arguments=prepared, partial_json=None)


def validate_tool_arguments(tool: AgentTool, args: Any) -> dict[str, Any]:
    """Repair and validate `args` against the tool's schema, then run its own check.

    Args:
        tool: the tool whose `input_schema` and `validate_arguments` apply.
        args: the arguments, or the (prepared) `ToolCall` carrying them, as the seeds'
            validateToolArguments(tool, preparedCall) takes it. A finished call still
            carrying `partial_json` is one whose argument text never parsed as a JSON object
            (providers keep the raw text there and only a best-effort prefix in
            `arguments`): the raw text is validated, so the model reads what was wrong
            instead of the tool running on a fragment.

    Returns:
        The validated arguments: a new dict whose nested objects and arrays are new too, so
        a hook or tool changing them leaves the call in the transcript as the model sent it
        (pi clones them as well).

    Raises:
        ToolArgumentsError: invalid arguments; the text is what the model reads.
    """
    if isinstance(args, ToolCall):
        args = _sent_arguments(args)
    validated = validate_arguments_against_schema(tool.input_schema, args, tool_name=tool.name)
    for key, value in validated.items():
        if isinstance(value, dict | list):
            try:
                validated[key] = _copy_containers(value)
            except RecursionError:  # deeper than the schema check went: say so, as it does
                too_deep = [("root", "arguments are nested too deeply")]
                raise ToolArgumentsError(tool.name, too_deep, args) from None
        elif type(value) is float and value.is_integer():  # JSON Schema's integer 3.0
            validated[key] = _as_declared_int(tool.input_schema, key, value)
    if tool.validate_arguments is not None:
        problem = tool.validate_arguments(validated)
        if problem:
            raise ToolArgumentsError(tool.name, [("root", str(problem))], args)
    return validated


def _sent_arguments(tool_call: ToolCall) -> Any:
    """The arguments as the model sent them: the raw text of a call whose JSON never parsed."""
    return tool_call.arguments if tool_call.partial_json is None else tool_call.partial_json


def _hook_result(value: object, cls: type[_HookResult], which: str) -> _HookResult | None:
    """A hook's answer: `None`, the result class, or a mapping of its fields (the seeds' and
    pi's plain-object shape, `isError` spelled either way).

    Raises:
        TypeError: anything else, or a mapping with an unknown field (the text names the hook).
    """
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        fields = {("is_error" if k == "isError" else k): v for k, v in value.items()}
        try:
            return cls(**fields)
        except TypeError as exc:
            raise TypeError(f"{which}_tool_call returned {value!r}: {exc}") from None
    raise TypeError(
        f"{which}_tool_call returned {type(value).__name__}; expected {cls.__name__} or None"
    )


def _as_declared_int(schema: Mapping[str, Any], key: str, value: float) -> float | int:
    """`value` as an `int` when the schema declares the top-level property `key` an integer
    (JSON Schema accepts 3.0 there; a Python tool expects 3)."""
    properties = schema.get("properties")
    declared = properties.get(key) if isinstance(properties, Mapping) else None
    if isinstance(declared, Mapping) and declared.get("type") == "integer":
        return int(value)
    return value


def _as_stored_json(args: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of `args` as JSON (the tool may change the dict it got), or None when a
    `prepare_arguments` or `before_tool_call` hook left something JSON cannot hold: the
    message goes into sessions and results files."""
    try:
        copied: dict[str, Any] = json.loads(json.dumps(args, allow_nan=False))
    except (TypeError, ValueError):
        return None
    return copied


def _copy_containers(value: Any) -> Any:
    """A copy of JSON-shaped data: every dict and list new, other values shared (no JSON
    round trip, unlike `_as_stored_json`: the arguments a tool gets keep their values)."""
    if isinstance(value, dict):
        return {key: _copy_containers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_containers(item) for item in value]
    return value


def _not_found(name: str, tools: Mapping[str, AgentTool]) -> ImmediateOutcome:
    available = ", ".join(tools) or "none"
    text = f'Tool "{name}" not found. Available tools: {available}'
    return ImmediateOutcome(create_error_tool_result(text), True)


def _requires_approval(tool: AgentTool, args: dict[str, Any]) -> bool:
    """The tool's `requires_approval`: a bool, or its function of the validated arguments
    (which may raise: the call then gets the error result)."""
    needs = tool.requires_approval
    if isinstance(needs, bool):
        return needs
    return bool(needs(args))


def rejected_text(approval: ToolApproval) -> str:
    """The error result of a held call not approved: the reason, said as a person's
    rejection, or as a call not run when no person decided (`approval.by_user` False)."""
    reason = (approval.reason or "").strip()
    head = REJECTED_TEXT if approval.by_user else NOT_RUN_TEXT
    return f"{head}: {reason}" if reason else head


# ── execute ──────────────────────────────────────────────────────────────────


async def execute_prepared_tool_call(
    prepared: PreparedToolCall,
    signal: AbortSignal | None = None,
    emit: EventSink | None = None,
    *,
    timeout_s: float | None = None,
) -> ExecutedOutcome:
    """Run the tool with its validated arguments.

    A plain `execute` runs on a worker thread, an async one in the calling task. The tool
    gets its own child of `signal` and an `on_update` callback (safe from any thread; calls
    after the tool returned are ignored; accepted updates are emitted before this returns).

    Args:
        prepared: the call from `prepare_tool_call`.
        signal: the run's signal (the tool gets a `child()` of it); None: no abort.
        emit: where `ToolExecutionUpdateEvent`s go, plain or async (its exceptions are
            logged); None: nowhere.
        timeout_s: seconds the call may take; `None` for no limit.

    Returns:
        The tool's result, or an error result with the exception's text, "Tool x timed out
        after N s", or "Operation aborted: ..." (see the module docstring). Never raises,
        except `CancelledError` when the calling task itself is cancelled (the tool's own
        signal is aborted then).
    """
    return (await _execute(prepared, signal, emit, timeout_s))[0]


async def _execute(
    prepared: PreparedToolCall,
    signal: AbortSignal | None,
    emit: EventSink | None,
    timeout_s: float | None,
) -> tuple[ExecutedOutcome, ToolFailure]:
    """`execute_prepared_tool_call`, with why an error outcome failed (for the call's span):
    its time limit, the run's abort, or the tool itself."""
    tool = prepared.tool
    call = prepared.tool_call
    loop = asyncio.get_running_loop()
    task = asyncio.current_task(loop)
    assert task is not None
    updates = ToolUpdates(loop, guarded_sink(emit), call)
    if signal is None:
        signal = AbortSignal()
    deadline = Deadline(timeout_s, signal, loop=loop, task=task)
    child = deadline.signal  # aborting the run aborts it; aborting it touches nothing else
    outcome: ExecutedOutcome
    spent: ToolCallFailed | None = None  # what a tool cut off says it spent
    plain = tool.isolation == "process" or not is_async_callable(tool.execute)
    try:
        raw: Any
        if tool.isolation == "process":
            raw = await run_in_process(loop, prepared, child, updates)
        elif not plain:
            with nested_grace(deadline.grace_s):
                started = tool.execute(call.id, prepared.args, child, updates)
                raw = await await_apart(started)  # type: ignore[arg-type]
        else:
            with nested_grace(deadline.grace_s):
                run = contextvars.copy_context().run
            raw = await tool_threads().submit(
                loop,
                run,
                call_plain,
                tool,
                call,
                prepared.args,
                child,
                updates,
                wait_s=QUICK_WAIT_S,
            )
            kind = type(raw)  # the usual results first: isawaitable is an ABC check
            if kind is not str and kind is not AgentToolResult and inspect.isawaitable(raw):
                raw = await raw
        outcome = ExecutedOutcome(as_tool_result(raw, tool.name), False)
    except asyncio.CancelledError as exc:
        if deadline.fired is None and task.cancelling():
            updates.accepting = False
            # the caller was cancelled: a plain tool's thread runs on, and its signal is
            # the only way to tell it to stop
            child.abort("the run's task was cancelled")
            raise
        if isinstance(exc.__cause__, ToolCallFailed):
            spent = exc.__cause__
        outcome = ExecutedOutcome(create_error_tool_result(exception_text(exc)), True)
    except ToolRaised as exc:
        failed = create_error_tool_result(f"Tool {tool.name} raised {exc}")
        outcome = ExecutedOutcome(failed, True)
    except Exception as exc:
        failed = create_error_tool_result(exception_text(exc))
        if isinstance(exc, ToolCallFailed):  # what the call spent stays on its result
            failed.usage, failed.details = exc.usage, exc.details
        outcome = ExecutedOutcome(failed, True)
    except BaseException as exc:
        # SystemExit (a wrapped CLI's sys.exit, argparse), GeneratorExit, ... raised by the
        # tool are the tool's failure, not the program's. A KeyboardInterrupt on the
        # loop's thread may be a real Ctrl-C and goes on; on a worker thread it cannot be.
        if isinstance(exc, KeyboardInterrupt) and not plain:
            raise
        said = exception_summary(exc)
        outcome = ExecutedOutcome(create_error_tool_result(f"Tool {tool.name} raised {said}"), True)
    finally:
        deadline.close()
    if deadline.fired is not None:
        if task.uncancel() > 0:  # the caller was cancelled too
            updates.accepting = False
            raise asyncio.CancelledError
        if deadline.fired == "timeout":
            text = f"Tool {tool.name} timed out after {timeout_s:g} s"
        else:
            text = f"Operation aborted: tool {tool.name} did not stop within {deadline.grace_s:g} s"
        outcome = ExecutedOutcome(create_error_tool_result(text), True)
        if spent is not None:  # a sub-agent's tokens count even when its call is cut off
            outcome.result.usage, outcome.result.details = spent.usage, spent.details
    if updates.stop(worker=plain):
        await updates.drain()
    if deadline.fired == "timeout":
        return outcome, "timeout"
    return outcome, "aborted" if outcome.is_error and signal.aborted else "tool_error"


# ── finalize ─────────────────────────────────────────────────────────────────


async def finalize_executed_tool_call(
    context: AgentContext,
    assistant_message: AssistantMessage,
    prepared: PreparedToolCall,
    executed: ExecutedOutcome,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
) -> FinalizedOutcome:
    """Apply `after_tool_call` (not to the output tool: the run's answer is kept as given).

    Each non-`None` field of the hook's `AfterToolCallResult` replaces that field of the
    result (`is_error` included); the tool's result object is not mutated. The hook raising
    gives an error result with its text and the tool's usage. `signal` (None: `config.signal`,
    else no abort) is given to the hook. Never raises.
    """
    signal = config.run_signal(signal)
    result = executed.result
    is_error = executed.is_error
    hook = config.after_tool_call
    if hook is not None and prepared.tool.label != OUTPUT_TOOL_LABEL:
        try:
            hook_context = AfterToolCallContext(
                assistant_message, prepared.tool_call, prepared.args, result, is_error, context
            )
            value = await within_abort_grace(hook(hook_context, signal), signal, "after_tool_call")
            after = _hook_result(value, AfterToolCallResult, "after")
            if after is not None:
                result = AgentToolResult(
                    content=result.content if after.content is None else _content(after.content),
                    details=after.details if after.details is not None else result.details,
                    usage=after.usage if after.usage is not None else result.usage,
                    terminate=after.terminate if after.terminate is not None else result.terminate,
                    added_tool_names=result.added_tool_names,
                )
                if after.is_error is not None:
                    is_error = after.is_error
        except (Exception, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError) and task_is_cancelled():
                raise
            spent = result.usage  # what the call spent (a sub-agent's tokens) still counts
            result = create_error_tool_result(exception_text(exc))
            result.usage = spent
            is_error = True
    return FinalizedOutcome(prepared.tool_call, result, is_error)


def _shown(value: object) -> str:
    """`value` as an error result shows it: its repr, cut to 60 characters, and its type."""
    text = repr(value)
    text = text if len(text) <= 60 else f"{text[:57]}..."
    return f"{text} ({type(value).__name__})"


def _content(content: Any) -> list[Any]:
    """`after_tool_call`'s replacement content as a new list; a text is one `TextContent`.

    Raises:
        TypeError: content that is neither a `str` nor a list (or tuple) of `TextContent`,
            `ImageContent` and `str`; the text names the hook, the value and what it takes,
            since the model reads it as the call's error result.
    """
    if isinstance(content, str):
        return [TextContent(content)]
    if isinstance(content, list | tuple) and all(
        isinstance(block, str | TextContent | ImageContent) for block in content
    ):
        return list(content)
    if isinstance(content, list | tuple):
        shown = next(b for b in content if not isinstance(b, str | TextContent | ImageContent))
        said = f"content holding {_shown(shown)}"
    else:
        said = f"content={_shown(content)}"
    raise TypeError(
        f"after_tool_call returned AfterToolCallResult with {said}; content is a str or a "
        "list of TextContent, ImageContent and str"
    )


# ── results ──────────────────────────────────────────────────────────────────


def create_tool_result_message(
    finalized: FinalizedOutcome, timestamp: int | None = None
) -> ToolResultMessage:
    """The transcript message for one finalized call.

    Content is never `None`; an error result with no content gets a text saying the call
    failed. A text given as content (or as an item of it) becomes a `TextContent`. An
    image whose data is not base64 becomes a text naming it (`image_or_note`), whatever
    the tool's source: stored as is, it would make every later model call of the session
    fail. `timestamp` (ms since the epoch) defaults to now.
    """
    result = finalized.result
    call = finalized.tool_call
    content = result.content
    if content is None:
        content = []
    elif isinstance(content, str):
        content = [TextContent(content)]
    else:
        for block in content:  # a loop, not any(<genexpr>): this runs for every call
            if isinstance(block, str | ImageContent):
                content = [_checked_block(b) for b in content]
                break
    if not content and finalized.is_error:
        content = [TextContent(f"Tool {call.name} failed")]
    return ToolResultMessage(  # positional: a third of the keyword call's cost
        call.id,
        call.name,
        content,
        result.details,
        result.usage,
        result.added_tool_names,
        finalized.is_error,
        now_ms() if timestamp is None else timestamp,
    )


def _checked_block(block: Any) -> Any:
    """A result block as the transcript keeps it: a text as `TextContent`, an image checked."""
    if isinstance(block, str):
        return TextContent(block)
    if isinstance(block, ImageContent):
        from yiemagent.ai.attachments import image_or_note  # only results with an image

        return image_or_note(block.data, block.mime_type)
    return block


def should_terminate(finalized: list[FinalizedOutcome]) -> bool:
    """True only when the batch is non-empty and every result asks to terminate."""
    return bool(finalized) and all(f.result.terminate for f in finalized)


def create_error_tool_result(text: str) -> AgentToolResult:
    """An error result: one `TextContent` holding `text`.

    An empty `text` becomes "Tool call failed", since providers reject empty content.
    """
    return AgentToolResult([TextContent(text or "Tool call failed")], {})


async def fail_tool_calls(
    tool_calls: Sequence[ToolCall], text: str, emit: EventSink | None = None
) -> ToolCallBatch:
    """Answer every call with the error result `text` without running it.

    Each call gets its start and end events and its result message events, in order.
    """
    emit = guarded_sink(emit)
    messages: list[ToolResultMessage] = []
    for call in tool_calls:
        result = create_error_tool_result(text)
        await emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))
        await emit(ToolExecutionEndEvent(call.id, call.name, result, True))
        message = create_tool_result_message(FinalizedOutcome(call, result, True))
        await emit(MessageStartEvent(message))
        await emit(MessageEndEvent(message))
        messages.append(message)
    return ToolCallBatch(messages, False)


def interrupted_text(exc: BaseException) -> str:
    """The result of a call cut short by a `KeyboardInterrupt`, `SystemExit`, ... going by."""
    return f"Tool call interrupted: {type(exc).__name__}"


def held_tool_calls(
    messages: Sequence[AgentMessage],
) -> tuple[AssistantMessage, list[ToolCall]] | None:
    """The last assistant message and its tool calls that have no result yet, when only tool
    results follow it (the calls a run held for approval); else None."""
    turn = trailing_tool_turn(messages)
    if turn is None:
        return None
    message, answered = turn
    if message.stop_reason in ("error", "aborted", "length"):
        return None
    calls = [call for call in message.tool_calls if call.id not in answered]
    return (message, calls) if calls else None
