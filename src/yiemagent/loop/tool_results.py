"""What a tool-call batch leaves in the transcript (DESIGN R-4.1, R-4.10, R-4.11; seed 000
§10, §11): the result message of a finalized call, whether the batch terminates the run,
calls answered without running (a cut-off or failed model answer, an abort, a cancelled
task, R-5.6, R-5.7) with the texts they get, and the calls of the transcript still without
a result (held for approval, DESIGN §14). `batches` runs the calls; this module is what both
it and the loop use to answer them.
"""

from __future__ import annotations

from collections.abc import Sequence

from yiemagent.loop.pipeline import create_error_tool_result
from yiemagent.types import (
    AgentMessage,
    AssistantMessage,
    FinalizedOutcome,
    MessageEndEvent,
    MessageStartEvent,
    TextContent,
    ToolCall,
    ToolCallBatch,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolResultMessage,
)
from yiemagent.types.callbacks import EventSink, guarded_sink
from yiemagent.types.messages import now_ms, trailing_tool_turn

__all__ = [
    "CANCELLED_TEXT",
    "SKIPPED_TEXT",
    "create_tool_result_message",
    "fail_tool_calls",
    "held_tool_calls",
    "interrupted_text",
    "should_terminate",
]

SKIPPED_TEXT = "Tool call skipped: the run was aborted"
CANCELLED_TEXT = "Tool call cancelled: the run's task was cancelled"


def should_terminate(finalized: list[FinalizedOutcome]) -> bool:
    """True only when the batch is non-empty and every result asks to terminate (R-4.10)."""
    return bool(finalized) and all(f.result.terminate for f in finalized)


def create_tool_result_message(
    finalized: FinalizedOutcome, timestamp: int | None = None
) -> ToolResultMessage:
    """The transcript message for one finalized call (DESIGN R-4.11; seed 000 §11).

    Content is never `None`; an error result with no content gets a text saying the call
    failed (R-4.7). A text given as content (or as an item of it) becomes a `TextContent`.
    `timestamp` (ms since the epoch) defaults to now.
    """
    result = finalized.result
    call = finalized.tool_call
    content = result.content
    if content is None:
        content = []
    elif isinstance(content, str):
        content = [TextContent(content)]
    else:
        for block in content:  # a loop, not any(<genexpr>): this runs for every call (§9)
            if isinstance(block, str):
                content = [TextContent(b) if isinstance(b, str) else b for b in content]
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


def interrupted_text(exc: BaseException) -> str:
    """The result of a call cut short by a `KeyboardInterrupt`, `SystemExit`, ... going by."""
    return f"Tool call interrupted: {type(exc).__name__}"


async def fail_tool_calls(
    tool_calls: Sequence[ToolCall], text: str, emit: EventSink | None = None
) -> ToolCallBatch:
    """Answer every call with the error result `text` without running it (R-4.1, R-5.6, R-5.7).

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


def held_tool_calls(
    messages: Sequence[AgentMessage],
) -> tuple[AssistantMessage, list[ToolCall]] | None:
    """The last assistant message and its tool calls that have no result yet, when only tool
    results follow it (the calls a run held for approval, DESIGN §14); else None."""
    turn = trailing_tool_turn(messages)
    if turn is None:
        return None
    message, answered = turn
    if message.stop_reason in ("error", "aborted", "length"):
        return None
    calls = [call for call in message.tool_calls if call.id not in answered]
    return (message, calls) if calls else None
