"""The agent loop: turns of one model call and its tool calls, with events (DESIGN §5, seed 002).

Read top to bottom, the functions follow a run: the entry points, the run and its turns
(R-5.4, R-5.5), the tool calls (R-5.3, R-5.6, R-5.7), and what happens when something raises
(R-5.9). One model call (R-5.2, R-5.8) is `model_call.stream_assistant_response`; the
tool calls run through `batches.execute_tool_calls` and the per-call steps of `pipeline`.

A run appends to `context.messages` in place and returns the messages it added. It never
copies the history: a turn costs the same at 10 messages and at 10 000.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from yiemagent.errors import ConfigError
from yiemagent.loop.batches import (
    CANCELLED_TEXT,
    execute_tool_calls,
    fail_tool_calls,
    held_tool_calls,
    interrupted_text,
)
from yiemagent.loop.convert import IncrementalConverter
from yiemagent.loop.limits import UsageMeter, limit_text
from yiemagent.loop.model_call import assistant_message, stream_assistant_response
from yiemagent.loop.output import OutputFailed, OutputRun
from yiemagent.types import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEndReason,
    AgentLoopConfig,
    AgentMessage,
    AgentStartEvent,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    StreamFn,
    ToolCall,
    ToolResultMessage,
    TurnContext,
    TurnEndEvent,
    TurnStartEvent,
    UserMessage,
)
from yiemagent.types.callbacks import Emit, EventSink, guarded_sink, maybe_await
from yiemagent.types.messages import to_messages
from yiemagent.types.observe import RunSpan, run_observer

__all__ = [
    "as_prompts",
    "check_can_continue",
    "run_agent_loop",
    "run_agent_loop_continue",
]

logger = logging.getLogger(__name__)

TRUNCATED_CALL_TEXT = (
    "not executed: the response hit the output token limit; "
    "re-issue the call with complete arguments"
)
"""DESIGN R-5.6: the result of each tool call in a message cut off by the token limit."""

# ── entry points ────────────────────────────────────────────────────────────


async def run_agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: EventSink,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    converter: IncrementalConverter | None = None,
) -> list[AgentMessage]:
    """Run to the end with new prompts, sending each event to `emit` (plain or async; its
    exceptions are logged and ignored, R-5.1b). Never raises for what happens inside the run
    (R-5.9). Returns the messages the run added, prompts first. A prompt given as a text
    (or one message) is taken as a list of one user message (or that message).

    `converter`: an `IncrementalConverter` kept by a caller that runs the loop again and
    again on one growing `context.messages` list (the `Agent`), so a run converts only the
    messages added since the last one (DESIGN §9); default: a new one per run."""
    prompts = as_prompts(prompts)
    run = _Run(context, config, guarded_sink(emit), signal or AbortSignal(), stream_fn)
    if converter is not None:
        run.convert = converter
    _observe(run)
    run.new_messages.extend(prompts)
    context.messages.extend(prompts)
    await run.emit(AgentStartEvent())
    await _start_turn(run)
    for prompt in prompts:
        await _emit_message(run, prompt)
    await _run(run)
    return run.new_messages


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: EventSink,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    converter: IncrementalConverter | None = None,
) -> list[AgentMessage]:
    """`run_agent_loop` without prompts: continue from the transcript (no prompt events);
    `converter` as there.

    When the transcript's last assistant message has held tool calls (DESIGN §14) with
    decisions in `config.approvals`, the approved ones run and the rejected ones get their
    error result first, as the first turn; calls still without a decision end the run
    with reason "awaiting_approval" before any model call.

    Raises:
        ConfigError: the transcript is empty or ends with an assistant message (see
            `agent_loop_continue`).
    """
    check_can_continue(context, config)
    run = _Run(context, config, guarded_sink(emit), signal or AbortSignal(), stream_fn)
    if converter is not None:
        run.convert = converter
    _observe(run)
    await run.emit(AgentStartEvent())
    await _start_turn(run)
    await _run(run)
    return run.new_messages


def check_can_continue(context: AgentContext, config: AgentLoopConfig | None = None) -> None:
    """Raise `ConfigError` unless the run can continue from `context`: the transcript is
    not empty and does not end with an assistant message, unless that message has held
    tool calls with decisions in `config.approvals` (DESIGN §14)."""
    if not context.messages:
        raise ConfigError("Cannot continue: no messages in context")
    role = getattr(context.messages[-1], "role", None)
    if role == "assistant" and not _decided_held_calls(context, config):
        raise ConfigError(
            "Cannot continue from message role: assistant (add a user message or tool results)"
        )


# ── the run and its turns ───────────────────────────────────────────────────


@dataclass(slots=True)
class _Run:
    """One run's state: what the turns share."""

    context: AgentContext
    config: AgentLoopConfig
    emit: Emit
    signal: AbortSignal
    stream_fn: StreamFn | None
    new_messages: list[AgentMessage] = field(default_factory=list)
    convert: IncrementalConverter = field(default_factory=IncrementalConverter)
    model_calls: int = 0
    in_turn: bool = False
    unanswered: list[ToolCall] = field(default_factory=list)
    """Tool calls of the last assistant message still without results (R-4.1)."""
    turn_message: AssistantMessage | None = None
    """The assistant message of the current turn, once the model call has ended."""
    meter: UsageMeter | None = None
    """What the run has spent, when it has `UsageLimits` (DESIGN §13)."""
    trace: RunSpan | None = None
    """The run's `invoke_agent` span, when it is traced (DESIGN §13)."""
    held: list[ToolCall] = field(default_factory=list)
    """Tool calls of the last batch held for approval (DESIGN §14)."""
    output: OutputRun | None = None
    """The run's output type, when it has one (DESIGN §14)."""

    def __post_init__(self) -> None:
        spec = self.config.output_type
        if spec is not None:
            self.output = OutputRun(spec, self.config.output_retries)

    def append(self, message: AgentMessage) -> None:
        self.context.messages.append(message)
        self.new_messages.append(message)


def _observe(run: _Run) -> None:
    """Start the run's span and usage meter (DESIGN §13); nothing when neither is asked."""
    if run.config.usage_limits is not None:
        run.meter = UsageMeter(run.config.usage_limits)
    observer = run_observer(run.config)
    if observer is not None:
        try:
            run.trace = observer.run(run.config, run.context.system_prompt)
        except Exception:
            logger.exception("could not start the run's span; the run goes on untraced")


async def _run(run: _Run) -> None:
    """Run the turns, then `agent_end`; whatever raises becomes an error message (R-5.9).
    A traced run's work happens in its span's context, and the span ends after `agent_end`
    on every path."""
    reason: AgentEndReason = "error"
    trace = run.trace
    scope = trace.activate() if trace is not None else contextlib.nullcontext()
    try:
        with scope:
            reason = await _run_turns(run)
    except Exception as exc:  # the run ends, it never raises into the consumer
        logger.exception("agent loop failed")
        try:
            await _fail_run(run, exc)
        except Exception:
            logger.exception("could not report the failure as a message")
    except BaseException as exc:  # cancelled, Ctrl-C, sys.exit: close the turn, then go on
        reason = "aborted"
        if isinstance(exc, GeneratorExit):  # the coroutine is being closed: no more awaits
            raise
        try:
            await _end_cancelled_turn(run, exc)
        except Exception:
            logger.exception("could not close the turn of a cancelled run")
        raise
    finally:
        output = run.output.value if run.output is not None and reason == "stop" else None
        await run.emit(AgentEndEvent(run.new_messages, reason, output))
        if trace is not None:
            _end_trace(trace, run, reason)


def _end_trace(trace: RunSpan, run: _Run, reason: str) -> None:
    last = next((m for m in reversed(run.new_messages) if isinstance(m, AssistantMessage)), None)
    error = last.error_message if last is not None else None
    try:
        trace.end(reason, run.new_messages, error)
    except Exception:
        logger.exception("could not end the run's span")


async def _run_turns(run: _Run) -> AgentEndReason:
    """Seed 002 runLoop as DESIGN R-5.4 orders it; returns why the run ended (R-5.5).

    The first turn has started already. Steering is polled at the start and after each turn;
    follow-ups only when the agent would otherwise stop.
    """
    turn: TurnContext | None = None
    if run.config.approvals and (decided := _decided_held_calls(run.context, run.config)):
        turn = await _answer_held_calls(run, *decided)
        if run.held:
            return "awaiting_approval"
        if run.signal.aborted:
            return "aborted"
    pending = await _poll(run.config.get_steering_messages)
    reason: AgentEndReason = "stop"
    while True:
        has_more_tool_calls = True
        while has_more_tool_calls or pending:
            if turn is not None:
                await _prepare_next_turn(run, turn)
                await _start_turn(run)
            for message in pending:
                await _emit_message(run, message)
                run.append(message)
            pending = []

            meter = run.meter
            if meter is not None and (limit := meter.refused or meter.reached()) is not None:
                await _end_turn(run, await _limit_message(run, limit), [])
                return "usage_limit"
            message = await _call_model(run)
            tool_results, terminate = await _run_tool_calls(run, message)
            failed = message.stop_reason == "error" or message.stop_reason == "aborted"
            if meter is not None and not failed:
                limit = meter.refused or (meter.reached() if tool_results else None)
                if limit is not None and not terminate:
                    await _limit_message(run, limit)
                    await _end_turn(run, message, tool_results)
                    return "usage_limit"
            await _end_turn(run, message, tool_results)
            if message.stop_reason == "error" or message.stop_reason == "aborted":
                return message.stop_reason
            if run.held:
                return "awaiting_approval"
            has_more_tool_calls = bool(tool_results) and not terminate
            reason = "terminate" if terminate else "stop"
            retry: list[AgentMessage] = []
            if run.output is not None:
                verdict = run.output.check(message, tool_results, run.config.model)
                if verdict is True:
                    return "stop"
                if isinstance(verdict, OutputFailed):
                    await _fail_output(run, verdict.text)
                    return "error"
                if isinstance(verdict, UserMessage):
                    retry = [verdict]
                    has_more_tool_calls = True

            turn = TurnContext(message, tool_results, run.context, run.new_messages)
            if await _should_stop_after_turn(run, turn):
                return "should_stop"
            if run.signal.aborted:
                return "aborted"
            max_turns = run.config.max_turns
            if max_turns is not None and run.model_calls >= max_turns:
                return "max_turns" if has_more_tool_calls else reason
            pending = [*retry, *await _poll(run.config.get_steering_messages)]

        pending = await _poll(run.config.get_follow_up_messages)
        if not pending:
            return reason


async def _poll(
    get_messages: Callable[[], Any] | None,
) -> list[AgentMessage]:
    """The messages a steering or follow-up queue hands over now (none when no hook).

    A hook returning one message, or a text, is taken as a list of it (a text as a user
    message), never iterated into characters."""
    if get_messages is None:
        return []
    return as_prompts(await maybe_await(get_messages()))


def as_prompts(value: Any) -> list[AgentMessage]:
    """Prompts or a queue hook's answer as a list: one message, one text (a user message) or
    one dict is taken as a list of it, never iterated into characters; then the one message
    coercion (`to_messages`).

    Raises:
        MessageInputError: `value` or one of its items is not a message.
    """
    if not value:
        return []
    if isinstance(value, str | Mapping) or hasattr(value, "role"):
        value = [value]
    return to_messages(value, what="prompts")


async def _prepare_next_turn(run: _Run, turn: TurnContext) -> None:
    """R-5.4: `prepare_next_turn` may replace the context, the model or the reasoning level."""
    hook = run.config.prepare_next_turn
    if hook is None:
        return
    update = await maybe_await(hook(turn))
    if update is None:
        return
    if update.context is not None:
        run.context = update.context
    changes: dict[str, Any] = {}
    if update.model is not None:
        changes["model"] = update.model
    if update.reasoning is not None:
        changes["reasoning"] = update.reasoning
    if changes:
        run.config = dataclasses.replace(run.config, **changes)


async def _start_turn(run: _Run) -> None:
    run.in_turn = True
    run.turn_message = None
    await run.emit(TurnStartEvent())


async def _emit_message(run: _Run, message: AgentMessage) -> None:
    await run.emit(MessageStartEvent(message))
    await run.emit(MessageEndEvent(message))


async def _limit_message(run: _Run, limit: str) -> AssistantMessage:
    """DESIGN §13: the message that ends a run at a usage limit (stop reason "error")."""
    message = assistant_message(run.config, "error", limit_text(limit))
    await _emit_message(run, message)
    run.append(message)
    return message


async def _call_model(run: _Run) -> AssistantMessage:
    """The turn's assistant message, appended to the transcript. Once the run is aborted no
    model is called: the message says so (R-5.7)."""
    if run.signal.aborted:
        message = assistant_message(run.config, "aborted", "The run was aborted")
        await _emit_message(run, message)
    else:
        if run.output is not None:
            run.output.offer(run.context, run.config.model)
        run.model_calls += 1
        message = await stream_assistant_response(
            run.context,
            run.config,
            run.signal,
            run.emit,
            run.stream_fn,
            converter=run.convert,
            trace=run.trace,
        )
        if run.meter is not None:
            run.meter.add(message.usage)
    run.append(message)
    run.turn_message = message
    return message


async def _end_turn(
    run: _Run, message: AssistantMessage, tool_results: list[ToolResultMessage]
) -> None:
    run.in_turn = False
    await run.emit(TurnEndEvent(message, tool_results))


async def _should_stop_after_turn(run: _Run, turn: TurnContext) -> bool:
    hook = run.config.should_stop_after_turn
    return hook is not None and bool(await maybe_await(hook(turn)))


# ── the tool calls ──────────────────────────────────────────────────────────


async def _run_tool_calls(
    run: _Run, message: AssistantMessage
) -> tuple[list[ToolResultMessage], bool]:
    """R-5.3: run the message's tool calls as a batch and append their results. A message cut
    off by the token limit (R-5.6) or ended by error/abort (R-5.7) runs none: each call gets an
    error result (R-4.1). Returns the results and whether the batch terminates (R-4.10)."""
    calls = message.tool_calls  # ids already unique: the model call saw to it
    if not calls:
        return [], False
    run.unanswered = calls
    if message.stop_reason == "length":
        batch = await fail_tool_calls(calls, TRUNCATED_CALL_TEXT, run.emit)
    elif message.stop_reason == "error" or message.stop_reason == "aborted":
        batch = await fail_tool_calls(calls, _unfinished_call_text(message), run.emit)
    else:
        answered: list[ToolResultMessage] = []
        try:
            batch = await execute_tool_calls(
                run.context,
                message,
                run.config,
                run.signal,
                run.emit,
                answered=answered,
                meter=run.meter,
                trace=run.trace,
            )
        except BaseException:  # cancelled or interrupted: every call answered all the same
            if answered:
                for result in answered:
                    run.append(result)
                run.unanswered = []
            raise
    for result in batch.messages:
        run.append(result)
    run.unanswered = []
    run.held = batch.held
    return batch.messages, batch.terminate


# ── held tool calls (DESIGN §14) ────────────────────────────────────────────


def _decided_held_calls(
    context: AgentContext, config: AgentLoopConfig | None
) -> tuple[AssistantMessage, list[ToolCall], list[ToolCall]] | None:
    """The last assistant message, its held calls that have a decision in
    `config.approvals`, and those that still have none; None when no held call is decided."""
    approvals = config.approvals if config is not None else None
    held = held_tool_calls(context.messages) if approvals else None
    if held is None or approvals is None:
        return None
    message, calls = held
    decided = [call for call in calls if call.id in approvals]
    if not decided:
        return None
    return message, decided, [call for call in calls if call.id not in approvals]


async def _answer_held_calls(
    run: _Run, message: AssistantMessage, decided: list[ToolCall], undecided: list[ToolCall]
) -> TurnContext:
    """The first turn of a resumed run: the decided held calls run as one batch (approved
    ones through the whole pipeline, rejected ones answered with the reason), then
    `turn_end` for the assistant message they belong to."""
    run.turn_message = message
    run.unanswered = decided
    answered: list[ToolResultMessage] = []
    try:
        batch = await execute_tool_calls(
            run.context, message, run.config, run.signal, run.emit, answered=answered, only=decided
        )
    except BaseException:  # cancelled or interrupted: every call answered all the same
        for result in answered:
            run.append(result)
        run.unanswered = []
        raise
    for result in batch.messages:
        run.append(result)
    run.unanswered = []
    run.held = [*undecided, *batch.held]
    await _end_turn(run, message, batch.messages)
    return TurnContext(message, batch.messages, run.context, run.new_messages)


def _unfinished_call_text(message: AssistantMessage) -> str:
    if message.stop_reason == "aborted":
        return "not executed: the run was aborted"
    return f"not executed: the model's response ended in an error: {message.error_message}"


# ── when something raises ───────────────────────────────────────────────────


async def _end_cancelled_turn(run: _Run, exc: BaseException) -> None:
    """The run's task was cancelled (e.g. `asyncio.wait_for` around it) or a
    `KeyboardInterrupt`/`SystemExit` is going through it: answer the tool calls left open
    (R-4.1), end the model call cut short with an "aborted" message, and emit `turn_end`, as
    an abort does; the caller emits `agent_end` and re-raises."""
    if not run.in_turn:
        return
    cancelled = isinstance(exc, asyncio.CancelledError)
    message = run.turn_message
    if message is None:  # cancelled during the model call
        why = "cancelled" if cancelled else f"interrupted ({type(exc).__name__})"
        message = assistant_message(run.config, "aborted", f"The run's task was {why}")
        await _emit_message(run, message)
        run.append(message)
    if run.unanswered:
        text = CANCELLED_TEXT if cancelled else interrupted_text(exc)
        batch = await fail_tool_calls(run.unanswered, text, run.emit)
        for result in batch.messages:
            run.append(result)
        run.unanswered = []
    calls = {call.id for call in message.tool_calls}
    results = [
        m for m in run.new_messages if isinstance(m, ToolResultMessage) and m.tool_call_id in calls
    ]
    await _end_turn(run, message, results)


async def _fail_output(run: _Run, text: str) -> None:
    """DESIGN §14: the output retries are used up; an error message says why, in a turn of
    its own (no model call)."""
    await _start_turn(run)
    message = assistant_message(run.config, "error", text)
    await _emit_message(run, message)
    run.append(message)
    await _end_turn(run, message, [])


async def _fail_run(run: _Run, exc: Exception) -> None:
    """R-5.9: answer any tool calls left open (R-4.1), then an error assistant message and
    `turn_end`; the caller emits `agent_end`."""
    text = f"{type(exc).__name__}: {exc}"
    if not run.in_turn:
        await _start_turn(run)
    results: list[ToolResultMessage] = []
    if run.unanswered:
        try:
            batch = await fail_tool_calls(run.unanswered, f"not executed: {text}", run.emit)
            results = batch.messages
        except Exception:
            logger.exception("could not answer the open tool calls")
        for result in results:
            run.append(result)
        run.unanswered = []
    message = assistant_message(run.config, "error", text)
    await _emit_message(run, message)
    run.append(message)
    await _end_turn(run, message, results)
