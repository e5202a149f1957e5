"""Checking that a transcript pairs every tool call with its result (DESIGN R-4.1).

The loop writes a transcript in one shape: an assistant message with tool calls is followed
by exactly one result per call (in call order, nothing between them but other results and
custom messages) before the next user or assistant message. `transcript_problems` finds
every place a stored transcript breaks that shape, as two writers interleaving their rows
would leave it. A tail that ends with calls still unanswered is not a problem here: that is
what a crash during the tools leaves, and the session log answers those calls.
"""

from __future__ import annotations

from collections.abc import Sequence

from yiemagent.types import AgentMessage, AssistantMessage, ToolResultMessage, UserMessage

__all__ = ["transcript_problems"]


def transcript_problems(messages: Sequence[AgentMessage]) -> list[str]:
    """Each break of the tool call / result pairing in `messages`, as a sentence naming the
    messages by 0-based position; `[]` for a well-formed transcript.

    Found: a tool result whose id answers no open call of the preceding assistant message
    (orphan, duplicate, or after the conversation went on), and tool calls left without a
    result when a user or assistant message follows. Unanswered calls of the last
    assistant message (at the end of the transcript) are allowed.
    """
    problems: list[str] = []
    open_calls: dict[str, str] = {}  # id -> tool name, of the last assistant message
    opened_at = -1
    for index, message in enumerate(messages):
        if isinstance(message, ToolResultMessage):
            if open_calls.pop(message.tool_call_id, None) is None:
                problems.append(
                    f"message {index} is a result for tool call {message.tool_call_id!r} "
                    f"({message.tool_name}), which no open tool call matches"
                )
            continue
        if not isinstance(message, AssistantMessage | UserMessage):
            continue  # custom messages do not take part in the pairing
        if open_calls:
            names = ", ".join(f"{cid!r} ({name})" for cid, name in open_calls.items())
            problems.append(
                f"the tool calls {names} of message {opened_at} have no result before "
                f"message {index} ({message.role})"
            )
        open_calls = {}
        if isinstance(message, AssistantMessage):
            open_calls = {call.id: call.name for call in message.tool_calls}
            opened_at = index
    return problems
