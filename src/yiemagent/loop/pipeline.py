"""The per-call tool pipeline: prepare → execute → finalize (DESIGN R-4.4 to R-4.7).

Seed 000 §8, seed 004. Each step returns an outcome instead of raising, so every tool call
ends with exactly one result for the model (DESIGN R-4.1). The batches in `batches.py` only
schedule these steps.

Threads: plain-function tools run on the worker pool of `tool_runs` (up to
`TOOL_THREADS` threads, created on demand); async tools run on the caller's event loop, in
the caller's task; `isolation="process"` tools in a reused worker process (`_processes`),
which the call's timeout or abort kills. `on_update` may be called from any thread. The
pool's threads are daemon threads, so a plain tool that never returns (abandoned after a
timeout) does not keep the program from exiting.

Abort (our choice where pi leaves it to the tool): when the run's signal is aborted while a
tool runs, the tool's own signal (a `child()` of the run's) is aborted at once and the
pipeline waits up to `deadline.ABORT_GRACE_S` for the tool to return. A tool that returns in
time has its result used (it decides what an abort means for it); one that does not is
abandoned with the error result "Operation aborted: tool x did not stop within N s" (an async
tool is cancelled, a thread is left to finish and its late result discarded). An abort never
hangs the run on a tool.

The seeds' signatures (DESIGN §10): `signal=None` means no abort, and `emit` may be a plain
or an async function (or None: no events).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from collections.abc import Mapping
from typing import Any, TypeVar

from yiemagent.loop.deadline import Deadline
from yiemagent.loop.tool_runs import (
    QUICK_WAIT_S,
    ToolUpdates,
    as_tool_result,
    call_plain,
    run_in_process,
    tool_threads,
)
from yiemagent.tools.schema import ToolArgumentsError, validate_arguments_against_schema
from yiemagent.types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ExecutedOutcome,
    FinalizedOutcome,
    HeldOutcome,
    ImmediateOutcome,
    PreparedToolCall,
    TextContent,
    ToolApproval,
    ToolCall,
)
from yiemagent.types.callbacks import EventSink, guarded_sink, is_async_callable, maybe_await
from yiemagent.types.signal import AbortSignal

__all__ = [
    "REJECTED_TEXT",
    "create_error_tool_result",
    "exception_text",
    "execute_prepared_tool_call",
    "finalize_executed_tool_call",
    "prepare_tool_call",
    "prepare_tool_call_arguments",
    "validate_tool_arguments",
]

logger = logging.getLogger(__name__)

REJECTED_TEXT = "Tool call rejected by the user"
"""The result of a held call a person rejected without a reason (DESIGN §14)."""


# ── error results ──────────────────────────────────────────────────


def create_error_tool_result(text: str) -> AgentToolResult:
    """An error result: one `TextContent` holding `text` (DESIGN R-4.7; seed 004).

    An empty `text` becomes "Tool call failed", since providers reject empty content.
    """
    return AgentToolResult([TextContent(text or "Tool call failed")], {})


def exception_text(exc: BaseException) -> str:
    """What the model reads about an exception: its text, else its class name (never empty)."""
    return str(exc) or type(exc).__name__


# ── prepare ──────────────────────────────────────────────────────────


def prepare_tool_call_arguments(tool: AgentTool, tool_call: ToolCall) -> Any:
    """The call's arguments after the tool's `prepare_arguments` hook, if it has one.

    A finished call still carrying `partial_json` is one whose argument text never parsed as
    a JSON object (providers keep the raw text there and only a best-effort prefix in
    `arguments`): the raw text goes on, so validation reports it instead of running the tool
    on a fragment (DESIGN §8, malformed tool-call JSON).
    """
    raw: Any = tool_call.arguments if tool_call.partial_json is None else tool_call.partial_json
    if tool.prepare_arguments is None:
        return raw
    return tool.prepare_arguments(raw)


def validate_tool_arguments(tool: AgentTool, args: Any) -> dict[str, Any]:
    """Repair and validate `args` against the tool's schema, then run its own check (R-4.4).

    Returns:
        The validated arguments: a new dict whose nested objects and arrays are new too, so
        a hook or tool changing them leaves the call in the transcript as the model sent it
        (pi clones them as well).

    Raises:
        ToolArgumentsError: invalid arguments; the text is what the model reads.
    """
    validated = validate_arguments_against_schema(tool.input_schema, args, tool_name=tool.name)
    for key, value in validated.items():
        if isinstance(value, dict | list):
            validated[key] = _copy_json(value)
        elif type(value) is float and value.is_integer():  # JSON Schema's integer 3.0
            validated[key] = _as_declared_int(tool.input_schema, key, value)
    if tool.validate_arguments is not None:
        problem = tool.validate_arguments(validated)
        if problem:
            raise ToolArgumentsError(tool.name, [("root", str(problem))], args)
    return validated


_HookResult = TypeVar("_HookResult", BeforeToolCallResult, AfterToolCallResult)


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


def _copy_json(value: Any) -> Any:
    """A copy of JSON-shaped data: every dict and list new, other values shared."""
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_json(item) for item in value]
    return value


def _not_found(name: str, tools: Mapping[str, AgentTool]) -> ImmediateOutcome:
    available = ", ".join(tools) or "none"
    text = f'Tool "{name}" not found. Available tools: {available}'
    return ImmediateOutcome(create_error_tool_result(text), True)


async def prepare_tool_call(
    context: AgentContext,
    assistant_message: AssistantMessage,
    tool_call: ToolCall,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    *,
    tools: Mapping[str, AgentTool] | None = None,
) -> PreparedToolCall | ImmediateOutcome | HeldOutcome:
    """Resolve the tool, prepare and validate the arguments, ask `before_tool_call` (R-4.4).

    Seed 000 §8.1, seed 004 prepareToolCall.

    Args:
        context: the run's context; the tool is looked up in `context.tools`.
        assistant_message: the message holding `tool_call` (given to the hook).
        tool_call: the call to prepare.
        config: `before_tool_call` comes from here.
        signal: the run's signal, given to the hook; None: no abort.
        tools: `context.tools` indexed by name, when the caller has built it once for a
            whole batch (else it is built here).

    Returns:
        The `PreparedToolCall` to execute, or an `ImmediateOutcome` holding an error result
        (unknown tool, invalid arguments, blocked, aborted, a hook that raised, a call a
        person rejected: its reason), or a `HeldOutcome` for a call that needs a person's
        approval (the tool's `requires_approval`, or the hook's `defer=True`) and has no
        decision in `config.approvals` (DESIGN §14). Never raises.
    """
    if signal is None:
        signal = AbortSignal()
    if tools is None:
        tools = {tool.name: tool for tool in context.tools}
    approval = config.approvals.get(tool_call.id) if config.approvals else None
    if approval is not None and not approval.approved:
        return ImmediateOutcome(create_error_tool_result(rejected_text(approval)), True)
    tool = tools.get(tool_call.name)
    if tool is None:
        return _not_found(tool_call.name, tools)
    approved = approval is not None
    try:
        args = validate_tool_arguments(tool, prepare_tool_call_arguments(tool, tool_call))
        if not approved and _requires_approval(tool, args):
            return HeldOutcome(tool_call, args)
        hook = config.before_tool_call
        if hook is not None:
            hook_context = BeforeToolCallContext(
                assistant_message, tool_call, args, context, approved
            )
            before = _hook_result(
                await maybe_await(hook(hook_context, signal)), BeforeToolCallResult, "before"
            )
            args = hook_context.args  # changed in place, or replaced: the tool gets it
            if signal.aborted:
                return ImmediateOutcome(create_error_tool_result("Operation aborted"), True)
            if before is not None and before.block:
                result = create_error_tool_result(before.reason or "Tool execution was blocked")
                result.terminate = before.terminate
                return ImmediateOutcome(result, True)
            if before is not None and before.defer and not approved:
                return HeldOutcome(tool_call, args)
        return PreparedToolCall(tool, tool_call, args)
    except Exception as exc:
        return ImmediateOutcome(create_error_tool_result(exception_text(exc)), True)


def _requires_approval(tool: AgentTool, args: dict[str, Any]) -> bool:
    """The tool's `requires_approval`: a bool, or its function of the validated arguments
    (which may raise: the call then gets the error result, R-4.4)."""
    needs = tool.requires_approval
    if isinstance(needs, bool):
        return needs
    return bool(needs(args))


def rejected_text(approval: ToolApproval) -> str:
    """The error result of a rejected held call: the reason, said as a rejection."""
    reason = (approval.reason or "").strip()
    return f"{REJECTED_TEXT}: {reason}" if reason else REJECTED_TEXT


# ── execute ──────────────────────────────────────────────────────────


def _content(content: Any) -> list[Any]:
    """A hook's replacement content as a new list; a text is one `TextContent`."""
    return [TextContent(content)] if isinstance(content, str) else list(content)


async def execute_prepared_tool_call(
    prepared: PreparedToolCall,
    signal: AbortSignal | None = None,
    emit: EventSink | None = None,
    *,
    timeout_s: float | None = None,
) -> ExecutedOutcome:
    """Run the tool with its validated arguments (DESIGN R-4.5; seed 000 §8.2).

    A plain `execute` runs on a worker thread, an async one in the calling task. The tool
    gets its own child of `signal` and an `on_update` callback (safe from any thread; calls
    after the tool returned are ignored; accepted updates are emitted before this returns).

    Args:
        prepared: the call from `prepare_tool_call`.
        signal: the run's signal (the tool gets a `child()` of it); None: no abort.
        emit: where `ToolExecutionUpdateEvent`s go, plain or async (its exceptions are
            logged, R-5.1b); None: nowhere.
        timeout_s: seconds the call may take; `None` for no limit.

    Returns:
        The tool's result, or an error result with the exception's text, "Tool x timed out
        after N s", or "Operation aborted: ..." (see the module docstring). Never raises,
        except `CancelledError` when the calling task itself is cancelled.
    """
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
    plain = tool.isolation == "process" or not is_async_callable(tool.execute)
    try:
        raw: Any
        if tool.isolation == "process":
            raw = await run_in_process(loop, prepared, child, updates)
        elif not plain:
            raw = await tool.execute(call.id, prepared.args, child, updates)  # type: ignore[misc]
        else:
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
            raise  # the caller was cancelled
        outcome = ExecutedOutcome(create_error_tool_result(exception_text(exc)), True)
    except Exception as exc:
        outcome = ExecutedOutcome(create_error_tool_result(exception_text(exc)), True)
    except BaseException as exc:
        # SystemExit (a wrapped CLI's sys.exit, argparse), GeneratorExit, ... raised by the
        # tool are the tool's failure, not the program's. A KeyboardInterrupt on the
        # loop's thread may be a real Ctrl-C and goes on; on a worker thread it cannot be.
        if isinstance(exc, KeyboardInterrupt) and not plain:
            raise
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        outcome = ExecutedOutcome(create_error_tool_result(f"Tool {tool.name} raised {text}"), True)
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
    if updates.stop(worker=plain):
        await updates.drain()
    return outcome


# ── finalize ─────────────────────────────────────────────────────────


async def finalize_executed_tool_call(
    context: AgentContext,
    assistant_message: AssistantMessage,
    prepared: PreparedToolCall,
    executed: ExecutedOutcome,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
) -> FinalizedOutcome:
    """Apply `after_tool_call` (DESIGN R-4.6; seed 000 §8.3).

    Each non-`None` field of the hook's `AfterToolCallResult` replaces that field of the
    result (`is_error` included); the tool's result object is not mutated. The hook raising
    gives an error result with its text. `signal` (None: no abort) is given to the hook.
    Never raises.
    """
    if signal is None:
        signal = AbortSignal()
    result = executed.result
    is_error = executed.is_error
    hook = config.after_tool_call
    if hook is not None:
        try:
            after = _hook_result(
                await maybe_await(
                    hook(
                        AfterToolCallContext(
                            assistant_message,
                            prepared.tool_call,
                            prepared.args,
                            result,
                            is_error,
                            context,
                        ),
                        signal,
                    )
                ),
                AfterToolCallResult,
                "after",
            )
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
        except Exception as exc:
            result = create_error_tool_result(exception_text(exc))
            is_error = True
    return FinalizedOutcome(prepared.tool_call, result, is_error)
