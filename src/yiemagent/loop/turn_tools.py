"""A turn's tool calls (DESIGN R-5.3, R-5.6, R-5.7) and a resumed run's held calls (§14).

`run_tool_calls` runs the calls of the turn's assistant message as one batch
(`batches.execute_tool_calls`), or answers each with an error result when the message was
cut off or failed; `answer_held_calls` runs the held calls that now have a decision as a
resumed run's first turn. Either way every call is answered once and its result is appended
to the run's transcript, also when the run's task is cancelled meanwhile (R-4.1).
"""

from __future__ import annotations

from yiemagent.loop.batches import execute_tool_calls
from yiemagent.loop.limits import UsageMeter
from yiemagent.loop.run_state import LoopRun
from yiemagent.loop.tool_results import fail_tool_calls, held_tool_calls
from yiemagent.types import (
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    ToolCall,
    ToolCallBatch,
    ToolResultMessage,
    TurnContext,
)
from yiemagent.types.observe import RunSpan

__all__ = ["TRUNCATED_CALL_TEXT", "answer_held_calls", "decided_held_calls", "run_tool_calls"]

TRUNCATED_CALL_TEXT = (
    "not executed: the response hit the output token limit; "
    "re-issue the call with complete arguments"
)
"""DESIGN R-5.6: the result of each tool call in a message cut off by the token limit."""


async def run_tool_calls(
    run: LoopRun, message: AssistantMessage
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
        batch = await _execute(run, message, meter=run.meter, trace=run.trace)
    _record(run, batch)
    run.held = batch.held
    return batch.messages, batch.terminate


def decided_held_calls(
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


async def answer_held_calls(
    run: LoopRun, message: AssistantMessage, decided: list[ToolCall], undecided: list[ToolCall]
) -> TurnContext:
    """The first turn of a resumed run: the decided held calls run as one batch (approved
    ones through the whole pipeline, rejected ones answered with the reason), then
    `turn_end` for the assistant message they belong to."""
    run.turn_message = message
    run.unanswered = decided
    batch = await _execute(run, message, only=decided)
    _record(run, batch)
    run.held = [*undecided, *batch.held]
    await run.end_turn(message, batch.messages)
    return TurnContext(message, batch.messages, run.context, run.new_messages)


async def _execute(
    run: LoopRun,
    message: AssistantMessage,
    *,
    meter: UsageMeter | None = None,
    trace: RunSpan | None = None,
    only: list[ToolCall] | None = None,
) -> ToolCallBatch:
    """`execute_tool_calls` for the run. Cancelled or interrupted meanwhile, the results
    every call got are appended before the exception goes on (R-4.1)."""
    answered: list[ToolResultMessage] = []
    try:
        return await execute_tool_calls(
            run.context,
            message,
            run.config,
            run.signal,
            run.emit,
            answered=answered,
            meter=meter,
            trace=trace,
            only=only,
        )
    except BaseException:
        if answered:
            _record(run, ToolCallBatch(answered, False))
        raise


def _record(run: LoopRun, batch: ToolCallBatch) -> None:
    for result in batch.messages:
        run.append(result)
    run.unanswered = []


def _unfinished_call_text(message: AssistantMessage) -> str:
    if message.stop_reason == "aborted":
        return "not executed: the run was aborted"
    return f"not executed: the model's response ended in an error: {message.error_message}"
