"""Tool-call batches: the sequential and parallel schedules of the per-call pipeline, and
the result messages they produce.

DESIGN R-4.1, R-4.8 to R-4.10; seed 000 §9, seed 004 executeToolCalls*. Both schedules run
the same steps for each call — start event, prepare, execute + finalize, end event, result
message events — and differ only in when. `_Batch` records how far each call got, so that
whatever happens (an abort, a bug in this module) every call ends with exactly one start
event, one end event and one result message, in source order.

The seeds' signatures (DESIGN §10): `signal=None` means no abort, and `emit` may be a plain
or an async function (or None: no events); its exceptions are logged (R-5.1b).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence

from yiemagent.loop.limits import UsageMeter
from yiemagent.loop.pipeline import (
    create_error_tool_result,
    exception_text,
    execute_prepared_tool_call,
    finalize_executed_tool_call,
    prepare_tool_call,
)
from yiemagent.loop.tasks import run_concurrently
from yiemagent.loop.tool_results import (
    CANCELLED_TEXT,
    SKIPPED_TEXT,
    create_tool_result_message,
    fail_tool_calls,
    interrupted_text,
    should_terminate,
)
from yiemagent.types import (
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    FinalizedOutcome,
    HeldOutcome,
    ImmediateOutcome,
    MessageEndEvent,
    MessageStartEvent,
    PreparedToolCall,
    ToolCall,
    ToolCallBatch,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolResultMessage,
)
from yiemagent.types.callbacks import EventSink, GuardedSink, guarded_sink
from yiemagent.types.messages import ensure_unique_tool_call_ids, now_ms
from yiemagent.types.observe import RunSpan, ToolSpan
from yiemagent.types.signal import AbortSignal

__all__ = [
    "execute_tool_calls",
    "execute_tool_calls_parallel",
    "execute_tool_calls_sequential",
]

logger = logging.getLogger(__name__)

_INTERNAL_ERROR = "Tool call failed: internal error: "


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
        "held",
        "messages",
        "meter",
        "outcomes",
        "signal",
        "spans",
        "started",
        "started_ms",
        "tasks",
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
    ) -> None:
        self.context = context
        self.assistant_message = assistant_message
        self.calls = calls
        self.config = config
        self.signal = AbortSignal() if signal is None else signal
        self.emit = emit
        self.tools: dict[str, AgentTool] = {tool.name: tool for tool in context.tools}
        n = len(calls)
        self.started = [False] * n
        self.ended = [False] * n
        self.outcomes: list[FinalizedOutcome | None] = [None] * n
        self.messages: list[ToolResultMessage | None] = [None] * n
        self.held: list[int] = []
        """Calls held for approval (DESIGN §14): no end event, no result message."""
        self.tasks: list[asyncio.Task[None]] = []
        self.started_ms = [0] * n
        self.ended_ms = [0] * n
        self.meter = meter
        """The run's spending, when it has `UsageLimits` (DESIGN §13)."""
        self.trace = trace
        self.spans: list[ToolSpan | None] | None = None if trace is None else [None] * n
        """Each call's `execute_tool` span, when the run is traced (DESIGN §13)."""

    # The steps every call goes through, in order. `start`, `end` and `publish` hand their
    # events to the sink at once and return what is left to await (None: nothing), so a
    # plain sink costs no coroutine (DESIGN §9): `if (w := batch.start(i)) is not None:
    # await w`.

    def start(self, i: int) -> Awaitable[None] | None:
        call = self.calls[i]
        self.started[i] = True
        self.started_ms[i] = now_ms()
        if self.spans is not None and self.trace is not None:
            self.spans[i] = self.trace.tool(call, self.tools.get(call.name))
        return self.emit.now(ToolExecutionStartEvent(call.id, call.name, call.arguments))

    async def prepare(self, i: int) -> PreparedToolCall | ImmediateOutcome | HeldOutcome:
        if self.signal.aborted:
            return ImmediateOutcome(create_error_tool_result(SKIPPED_TEXT), True)
        prepared = await prepare_tool_call(
            self.context,
            self.assistant_message,
            self.calls[i],
            self.config,
            self.signal,
            tools=self.tools,
        )
        if self.meter is not None and isinstance(prepared, PreparedToolCall):
            refused = self.meter.refuse_tool_call()  # a limit reached mid-batch (§13)
            if refused is not None:
                return ImmediateOutcome(create_error_tool_result(refused), True)
        return prepared

    async def run(self, i: int, prepared: PreparedToolCall) -> None:
        """Execute, finalize and end one prepared call; a bug here fails only this call.
        A traced call runs inside its span's context, so spans the tool opens are its
        children (DESIGN §13)."""
        span = self.spans[i] if self.spans is not None else None
        if span is None:
            finalized = await self.execute(prepared)
        else:
            with span.activate():
                finalized = await self.execute(prepared)
        if (w := self.end(i, finalized)) is not None:
            await w

    async def execute(self, prepared: PreparedToolCall) -> FinalizedOutcome:
        timeout_s = prepared.tool.timeout_s or self.config.tool_timeout_s
        try:
            executed = await execute_prepared_tool_call(
                prepared, self.signal, self.emit, timeout_s=timeout_s
            )
            if self.config.after_tool_call is None:  # what finalizing without a hook gives
                return FinalizedOutcome(prepared.tool_call, executed.result, executed.is_error)
            finalized = await finalize_executed_tool_call(
                self.context, self.assistant_message, prepared, executed, self.config, self.signal
            )
        except Exception as exc:
            logger.exception("tool call %s failed inside the pipeline", prepared.tool_call.id)
            failed = create_error_tool_result(f"{_INTERNAL_ERROR}{exception_text(exc)}")
            finalized = FinalizedOutcome(prepared.tool_call, failed, True)
        return finalized

    def end(self, i: int, finalized: FinalizedOutcome) -> Awaitable[None] | None:
        self.outcomes[i] = finalized
        self.ended[i] = True
        self.ended_ms[i] = now_ms()
        result = finalized.result
        if self.meter is not None:
            self.meter.add_result(result)
        if self.spans is not None:
            span = self.spans[i]
            if span is not None:
                span.end(result, finalized.is_error)
        call = finalized.tool_call
        return self.emit.now(ToolExecutionEndEvent(call.id, call.name, result, finalized.is_error))

    def publish(self, i: int) -> Awaitable[None] | None:
        """Emit the result message of call `i` (its end event has been sent)."""
        outcome = self.outcomes[i]
        assert outcome is not None
        message = create_tool_result_message(outcome, self.ended_ms[i])
        message.duration_ms = self.ended_ms[i] - self.started_ms[i]
        self.messages[i] = message
        first = self.emit.now(MessageStartEvent(message))
        if first is not None:
            return self._publish_end(first, message)
        return self.emit.now(MessageEndEvent(message))

    async def _publish_end(self, first: Awaitable[None], message: ToolResultMessage) -> None:
        await first
        if (w := self.emit.now(MessageEndEvent(message))) is not None:
            await w

    async def answer_the_rest(self, text: str) -> None:
        """Give every call that lacks one an error result, with the events it has not had."""
        for task in self.tasks:
            task.cancel()
        for i, call in enumerate(self.calls):
            if not self.started[i] and (w := self.start(i)) is not None:
                await w
            if not self.ended[i]:
                failed = FinalizedOutcome(call, create_error_tool_result(text), True)
                if (w := self.end(i, failed)) is not None:
                    await w
            if self.messages[i] is None and (w := self.publish(i)) is not None:
                await w

    def result(self) -> ToolCallBatch:
        messages = [m for m in self.messages if m is not None]
        finalized = [f for f in self.outcomes if f is not None]
        held = [self.calls[i] for i in self.held if self.messages[i] is None]
        return ToolCallBatch(messages, should_terminate(finalized) and not held, held)


# ── schedules ────────────────────────────────────────────────────────────────


async def _sequential(batch: _Batch) -> None:
    """R-4.8: each call runs to its result message before the next one starts."""
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
        if (w := batch.publish(i)) is not None:
            await w


async def _parallel(batch: _Batch) -> None:
    """R-4.9: prepare in source order, run the prepared calls concurrently (end events in
    completion order), then publish the result messages in source order. The calls start in
    this task; only those after the first one that waits get a Task of their own
    (`tasks.run_concurrently`: a call that never waits costs no Task, DESIGN §9)."""
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
    async with limit:
        await batch.run(i, prepared)


async def _guarded(
    batch: _Batch, parallel: bool, answered: list[ToolResultMessage] | None = None
) -> ToolCallBatch:
    """Run a schedule; if anything in it raises, the calls without a result get one (R-4.1).

    Cancelled (or a `KeyboardInterrupt`/`SystemExit` going by), it answers them too, puts
    every result in `answered` and re-raises the very exception it got (`asyncio.timeout`
    and `TaskGroup` recognise only the `CancelledError` they caused)."""
    try:
        await (_parallel(batch) if parallel else _sequential(batch))
        if batch.held and batch.signal.aborted:  # an aborted run leaves nothing held
            await batch.answer_the_rest(SKIPPED_TEXT)
    except Exception as exc:
        logger.exception("tool-call batch failed; answering the remaining calls")
        await batch.answer_the_rest(f"{_INTERNAL_ERROR}{exception_text(exc)}")
    except BaseException as exc:  # cancelled, or KeyboardInterrupt/SystemExit passing through
        for task in batch.tasks:
            task.cancel()
        if isinstance(exc, GeneratorExit):  # the coroutine is being closed: no more awaits
            raise
        text = CANCELLED_TEXT if isinstance(exc, asyncio.CancelledError) else interrupted_text(exc)
        try:  # the exception is delivered; emitting the missing events can go on
            await batch.answer_the_rest(text)
        except Exception:
            logger.exception("could not answer the tool calls of a cancelled batch")
        if answered is not None:
            answered.extend(batch.result().messages)
        raise
    return batch.result()


# ── entry points ─────────────────────────────────────────────────────────────


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
) -> ToolCallBatch:
    """Run the tool calls of `assistant_message` as one batch (seed 000 §9, seed 004).

    Empty or repeated tool-call ids are first made unique in the message itself (R-4.1).
    The batch runs in parallel when `config.tool_execution == "parallel"` and every called
    tool that exists has `parallel=True` (DESIGN §1), else sequentially.

    Args:
        context: the run's context (its tools, and what the hooks see).
        assistant_message: the message whose tool calls run.
        config: tool execution mode, cap, timeout and hooks.
        signal: the run's signal; None: no abort.
        emit: the event sink, plain or async; None: no events.
        answered: when given and the calling task is cancelled, receives every result
            message (one per call) before the `CancelledError` goes on (the loop puts them
            in the transcript).
        meter: the run's usage meter (the loop's, DESIGN §13): each call is checked against
            its limits before it runs; None: no limits.
        trace: the run's span (the loop's, DESIGN §13): each call gets an `execute_tool`
            span; None: untraced.
        only: run just these calls of the message (held calls that now have a decision,
            DESIGN §14).

    Returns:
        One result message per tool call, in source order, and whether to terminate
        (R-4.10). Never raises, except `CancelledError` when the calling task is
        cancelled, after every call has had its events and an error result.
    """
    sink = guarded_sink(emit)
    try:
        ensure_unique_tool_call_ids(assistant_message)
        calls = assistant_message.tool_calls if only is None else list(only)
        batch = _Batch(context, assistant_message, calls, config, signal, sink, meter, trace)
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
    """Run `tool_calls` one after another (DESIGN R-4.8). Never raises for a tool problem.

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
    """Run `tool_calls` concurrently (DESIGN R-4.9). Never raises for a tool problem.

    Preparation runs in source order (start event, prepare; an immediate outcome emits its
    end event at once). The prepared calls then run concurrently, at most
    `config.max_parallel_tools` at a time, each emitting its end event when it finishes.
    Result messages are emitted, and returned, in source order once all are done. Calls not
    yet running when the run is aborted are skipped. `signal` and `emit` as in
    `execute_tool_calls`.
    """
    batch = _Batch(context, assistant_message, tool_calls, config, signal, guarded_sink(emit))
    return await _guarded(batch, parallel=True)
