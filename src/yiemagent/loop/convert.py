"""From the transcript to what a model sees: `default_convert_to_llm` (DESIGN R-5.2).

The transcript holds `AgentMessage`s: the three LLM roles plus custom ones. Before each model
call they become `Message`s: user, assistant and tool-result messages pass unchanged (the same
objects, never copied); a shell run and the two kinds of summary become user text, worded as
pi's coding agent words them; any other role is left out. Seed 002 §3 step 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from yiemagent.types import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Message,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "IncrementalConverter",
    "bash_execution_to_text",
    "convert_message",
    "default_convert_to_llm",
]

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"

_PASS_THROUGH = frozenset({"user", "assistant", "toolResult"})
_LLM_TYPES = frozenset({UserMessage, AssistantMessage, ToolResultMessage})


def bash_execution_to_text(message: BashExecutionMessage) -> str:
    """A shell run as the user text the model reads: the command, its output in a fence, and
    the exit code when it is not 0 (or that it was cancelled)."""
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code is not None and message.exit_code != 0:
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated:
        text += "\n\n[Output truncated]"
    return text


def convert_message(message: AgentMessage) -> Message | None:
    """One transcript message as a model sees it, or `None` when the model does not see it."""
    role = getattr(message, "role", None)
    if role in _PASS_THROUGH:
        return message  # type: ignore[return-value]
    if isinstance(message, BashExecutionMessage):
        return UserMessage(bash_execution_to_text(message), timestamp=message.timestamp)
    if isinstance(message, CompactionSummaryMessage):
        text = COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX
        return UserMessage(text, timestamp=message.timestamp)
    if isinstance(message, BranchSummaryMessage):
        text = BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX
        return UserMessage(text, timestamp=message.timestamp)
    return None


def default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """The transcript as the model sees it (DESIGN R-5.2); never mutates `messages`.

    Args:
        messages: the transcript, oldest first.

    Returns:
        A new list: user/assistant/toolResult messages (the same objects), bash runs and
        summaries as new `UserMessage`s, other roles left out. Linear in `len(messages)`.
    """
    if set(map(type, messages)) <= _LLM_TYPES:  # the usual transcript: a copy, at C speed
        return list(messages)  # type: ignore[arg-type]
    return [m for message in messages if (m := convert_message(message)) is not None]


class IncrementalConverter:
    """`default_convert_to_llm` for a transcript that only grows: each call converts only the
    messages appended since the previous call, so a turn's cost does not grow with the
    history (DESIGN §9).

    Invariants: between calls, the messages already seen are not replaced in place (a
    different list, a shorter list, or another object at the first or the last position
    seen makes it convert everything again; a hook that edits the middle of the transcript
    must assign a new list, e.g. `prepare_next_turn` returning a new `AgentContext`).
    A list it returned is never changed once anyone else holds a reference to it: it appends
    in place only while it alone references the list, and copies it first otherwise
    (copy-on-write by reference count), so a provider that keeps its context keeps a
    faithful snapshot. One instance serves one transcript list, over one run or many (the
    `Agent` keeps one across its runs); not thread-safe.
    """

    __slots__ = ("_converted", "_first", "_last", "_seen", "_source")

    def __init__(self) -> None:
        self._source: list[AgentMessage] | None = None
        self._seen = 0
        self._first: AgentMessage | None = None
        self._last: AgentMessage | None = None
        self._converted: list[Message] = []

    def __call__(self, messages: list[AgentMessage]) -> list[Message]:
        """The converted transcript (see the class invariants)."""
        seen = self._seen
        if (
            messages is not self._source
            or len(messages) < seen
            or (seen and (messages[seen - 1] is not self._last or messages[0] is not self._first))
        ):
            self._source, self._converted = messages, default_convert_to_llm(messages)
            self._seen = len(messages)
            self._first = messages[0] if messages else None
            self._last = messages[-1] if messages else None
            return self._converted
        if seen < len(messages):
            # Referenced only by this attribute and the call's argument: no one kept it.
            if sys.getrefcount(self._converted) > 2:
                self._converted = self._converted[:]
            converted = self._converted
            for index in range(seen, len(messages)):
                llm_message = convert_message(messages[index])
                if llm_message is not None:
                    converted.append(llm_message)
            self._seen = len(messages)
            self._first = messages[0]
            self._last = messages[-1]
        return self._converted
