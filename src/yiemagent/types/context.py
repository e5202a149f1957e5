"""Contexts handed to the loop's hooks (DESIGN §3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from yiemagent.types.messages import AgentMessage, AssistantMessage, ToolCall, ToolResultMessage
from yiemagent.types.tools import AgentTool, AgentToolResult

if TYPE_CHECKING:
    from yiemagent.types.model import Model, ThinkingLevel

__all__ = [
    "AfterToolCallContext",
    "AgentContext",
    "BeforeToolCallContext",
    "TurnContext",
    "TurnUpdate",
]


@dataclass(slots=True)
class AgentContext:
    """The transcript a run works on: system prompt, messages (appended to in place by the
    loop) and the tools offered to the model. A typed function among the tools is taken
    too: the loop's entry points make it the tool `@tool` makes of it before the run."""

    system_prompt: str = ""
    messages: list[AgentMessage] = field(default_factory=list)
    tools: list[AgentTool] = field(default_factory=list)


@dataclass(slots=True)
class BeforeToolCallContext:
    """Given to `before_tool_call`; the hook may change `args` in place.
    `approved` is true when a person approved this held call."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: dict[str, Any]
    context: AgentContext
    approved: bool = False


@dataclass(slots=True)
class AfterToolCallContext:
    """Given to `after_tool_call`."""

    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: dict[str, Any]
    result: AgentToolResult
    """What `execute` produced (an error result when it raised or timed out)."""
    is_error: bool
    context: AgentContext


@dataclass(slots=True)
class TurnContext:
    """Given to `should_stop_after_turn` and `prepare_next_turn` after each turn."""

    message: AssistantMessage
    """The turn's assistant message."""
    tool_results: list[ToolResultMessage]
    """Its tool calls' results, in source order."""
    context: AgentContext
    new_messages: list[AgentMessage]
    """Every message the run has added so far, its prompts first."""


@dataclass(slots=True)
class TurnUpdate:
    """What `prepare_next_turn` may return: each non-`None` field replaces the run's."""

    context: AgentContext | None = None
    model: Model | None = None
    reasoning: ThinkingLevel | Literal["off"] | None = None
    """The reasoning level from the next call on; "off": no thinking from then on."""


def as_turn_update(value: object) -> TurnUpdate | None:
    """What a `prepare_next_turn` hook returned: `None`, a `TurnUpdate`, or a mapping of its
    fields (pi's plain-object shape, which the tool hooks take too).

    Raises:
        TypeError: anything else, or a mapping with an unknown field; the text names the
            hook and what it returned (it read as "'dict' object has no attribute
            'context'" before).
    """
    if value is None or isinstance(value, TurnUpdate):
        return value
    if isinstance(value, Mapping):
        try:
            return TurnUpdate(**value)
        except TypeError as exc:
            raise TypeError(f"prepare_next_turn returned {value!r}: {exc}") from None
    raise TypeError(
        f"prepare_next_turn returned {type(value).__name__}; expected TurnUpdate or None"
    )
