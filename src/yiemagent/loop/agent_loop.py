"""The agent loop: turns of one model call and its tool calls, with events (DESIGN §5, seed 002).

Read top to bottom, the functions follow a run: the entry points, the run and its turns
(R-5.4, R-5.5), and what happens when something raises (R-5.9). The run's shared state and
turn events are `run_state.LoopRun`; one model call (R-5.2, R-5.8) is
`model_call.stream_assistant_response`; a turn's tool calls (R-5.3, R-5.6, R-5.7) and a
resumed run's held calls are `turn_tools`, which runs them through
`batches.execute_tool_calls` and the per-call steps of `pipeline`.

A run appends to `context.messages` in place and returns the messages it added. It never
copies the history: a turn costs the same at 10 messages and at 10 000.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from yiemagent.errors import ConfigError
from yiemagent.loop.convert import IncrementalConverter
from yiemagent.loop.limits import limit_text
from yiemagent.loop.model_call import assistant_message, stream_assistant_response
from yiemagent.loop.output import OutputFailed
from yiemagent.loop.run_state import LoopRun
from yiemagent.loop.tool_results import (
    CANCELLED_TEXT,
    fail_tool_calls,
    interrupted_text,
)
from yiemagent.loop.turn_tools import answer_held_calls, decided_held_calls, run_tool_calls
from yiemagent.types import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEndReason,
    AgentLoopConfig,
    AgentMessage,
    AgentStartEvent,
    AssistantMessage,
    StreamFn,
    ToolResultMessage,
    TurnContext,
    UserMessage,
)
from yiemagent.types.callbacks import EventSink, maybe_await
from yiemagent.types.messages import to_messages
from yiemagent.types.observe import RunSpan

__all__ = [
    "as_prompts",
    "check_can_continue",
    "run_agent_loop",
    "run_agent_loop_continue",
]

logger = logging.getLogger(__name__)

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
    run = LoopRun.start(context, config, emit, signal, stream_fn, converter)
    run.new_messages.extend(prompts)
    context.messages.extend(prompts)
    await run.emit(AgentStartEvent())
    await run.start_turn()
    for prompt in prompts:
        await run.emit_message(prompt)
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
    return await run_agent_loop((), context, config, emit, signal, stream_fn, converter=converter)


def check_can_continue(context: AgentContext, config: AgentLoopConfig | None = None) -> None:
    """Raise `ConfigError` unless the run can continue from `context`: the transcript is
    not empty and does not end with an assistant message, unless that message has held
    tool calls with decisions in `config.approvals` (DESIGN §14)."""
    if not context.messages:
        raise ConfigError("Cannot continue: no messages in context")
    role = getattr(context.messages[-1], "role", None)
    if role == "assistant" and not decided_held_calls(context, config):
        raise ConfigError(
            "Cannot continue from message role: assistant (add a user message or tool results)"
        )


# ── the run and its turns ───────────────────────────────────────────────────


async def _run(run: LoopRun) -> None:
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


def _end_trace(trace: RunSpan, run: LoopRun, reason: str) -> None:
    last = next((m for m in reversed(run.new_messages) if isinstance(m, AssistantMessage)), None)
    error = last.error_message if last is not None else None
    try:
        trace.end(reason, run.new_messages, error)
    except Exception:
        logger.exception("could not end the run's span")


async def _run_turns(run: LoopRun) -> AgentEndReason:
    """Seed 002 runLoop as DESIGN R-5.4 orders it; returns why the run ended (R-5.5).

    The first turn has started already. Steering is polled at the start and after each turn;
    follow-ups only when the agent would otherwise stop.
    """
    turn: TurnContext | None = None
    if run.config.approvals and (decided := decided_held_calls(run.context, run.config)):
        turn = await answer_held_calls(run, *decided)
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
                await run.start_turn()
            for message in pending:
                await run.emit_message(message)
                run.append(message)
            pending = []

            meter = run.meter
            if meter is not None and (limit := meter.refused or meter.reached()) is not None:
                await run.end_turn(await _limit_message(run, limit), [])
                return "usage_limit"
            message = await _call_model(run)
            tool_results, terminate = await run_tool_calls(run, message)
            failed = message.stop_reason == "error" or message.stop_reason == "aborted"
            if meter is not None and not failed:
                limit = meter.refused or (meter.reached() if tool_results else None)
                if limit is not None and not terminate:
                    await _limit_message(run, limit)
                    await run.end_turn(message, tool_results)
                    return "usage_limit"
            await run.end_turn(message, tool_results)
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


async def _prepare_next_turn(run: LoopRun, turn: TurnContext) -> None:
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


async def _limit_message(run: LoopRun, limit: str) -> AssistantMessage:
    """DESIGN §13: the message that ends a run at a usage limit (stop reason "error")."""
    message = assistant_message(run.config, "error", limit_text(limit))
    await run.emit_message(message)
    run.append(message)
    return message


async def _call_model(run: LoopRun) -> AssistantMessage:
    """The turn's assistant message, appended to the transcript. Once the run is aborted no
    model is called: the message says so (R-5.7)."""
    if run.signal.aborted:
        message = assistant_message(run.config, "aborted", "The run was aborted")
        await run.emit_message(message)
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


async def _should_stop_after_turn(run: LoopRun, turn: TurnContext) -> bool:
    hook = run.config.should_stop_after_turn
    return hook is not None and bool(await maybe_await(hook(turn)))


# ── when something raises ───────────────────────────────────────────────────


async def _end_cancelled_turn(run: LoopRun, exc: BaseException) -> None:
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
        await run.emit_message(message)
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
    await run.end_turn(message, results)


async def _fail_output(run: LoopRun, text: str) -> None:
    """DESIGN §14: the output retries are used up; an error message says why, in a turn of
    its own (no model call)."""
    await run.start_turn()
    message = assistant_message(run.config, "error", text)
    await run.emit_message(message)
    run.append(message)
    await run.end_turn(message, [])


async def _fail_run(run: LoopRun, exc: Exception) -> None:
    """R-5.9: answer any tool calls left open (R-4.1), then an error assistant message and
    `turn_end`; the caller emits `agent_end`."""
    text = f"{type(exc).__name__}: {exc}"
    if not run.in_turn:
        await run.start_turn()
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
    await run.emit_message(message)
    run.append(message)
    await run.end_turn(message, results)
