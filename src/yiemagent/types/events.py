"""Agent events: everything a run does, in order (DESIGN R-5.1).

Each event is a slotted dataclass with a literal `type`. `event_to_dict` makes any event
JSON-ready, so a run can be logged, replayed or shown elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from yiemagent.types.alias_doc import describe_alias
from yiemagent.types.messages import AgentMessage, AssistantMessage, ToolResultMessage
from yiemagent.types.model import AssistantMessageEvent
from yiemagent.types.tools import AgentToolResult

__all__ = [
    "AgentEndEvent",
    "AgentEndReason",
    "AgentEvent",
    "AgentStartEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "NestedAgentEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
    "event_to_dict",
]

AgentEndReason: TypeAlias = Literal[
    "stop",
    "terminate",
    "should_stop",
    "max_turns",
    "error",
    "aborted",
    "usage_limit",
    "awaiting_approval",
    "guardrail",
]
describe_alias(
    __name__,
    "AgentEndReason",
    """Why a run ended ("usage_limit": a `UsageLimits` cap was reached;
"awaiting_approval": tool calls are held; "guardrail": a guardrail tripped).""",
)


@dataclass(slots=True)
class AgentStartEvent:
    """A run has started."""

    type: Literal["agent_start"] = "agent_start"


@dataclass(slots=True)
class AgentEndEvent:
    """A run has ended; `messages` are the messages it added, `reason` why it ended, and
    `output` the validated value when the run had an output type."""

    messages: list[AgentMessage] = field(default_factory=list)
    reason: AgentEndReason = "stop"
    output: Any = None
    type: Literal["agent_end"] = "agent_end"


@dataclass(slots=True)
class TurnStartEvent:
    """A turn (one model call and its tool calls) has started."""

    type: Literal["turn_start"] = "turn_start"


@dataclass(slots=True)
class TurnEndEvent:
    """A turn has ended, with its assistant message and tool results (source order)."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage] = field(default_factory=list)
    type: Literal["turn_end"] = "turn_end"


@dataclass(slots=True)
class MessageStartEvent:
    """A message enters the transcript (user, assistant, tool result, custom)."""

    message: AgentMessage
    type: Literal["message_start"] = "message_start"


@dataclass(slots=True)
class MessageUpdateEvent:
    """The assistant message grew: one provider event between `start` and `done`/`error`,
    relayed as it came."""

    message: AssistantMessage
    """The partial message (the provider event's `partial`)."""
    assistant_message_event: AssistantMessageEvent
    """The provider event: `text_delta`, `toolcall_end`, `fallback`, …"""
    type: Literal["message_update"] = "message_update"


@dataclass(slots=True)
class MessageEndEvent:
    """A message is complete."""

    message: AgentMessage
    type: Literal["message_end"] = "message_end"


@dataclass(slots=True)
class ToolExecutionStartEvent:
    """A tool call is about to be prepared and run.

    `tool_call_id` and `tool_name` are the `ToolCall`'s, in this event and in the call's
    update and end events; `args` are its arguments as the model sent them (before
    `prepare_arguments` and validation)."""

    tool_call_id: str
    tool_name: str
    args: Any
    type: Literal["tool_execution_start"] = "tool_execution_start"


@dataclass(slots=True)
class ToolExecutionUpdateEvent:
    """A running tool reported a partial result through `on_update`; `args` as in
    the start event."""

    tool_call_id: str
    tool_name: str
    args: Any
    partial_result: AgentToolResult
    type: Literal["tool_execution_update"] = "tool_execution_update"


@dataclass(slots=True)
class ToolExecutionEndEvent:
    """A tool call has its final result (a call that ran: after `after_tool_call`).
    Every call that started ends exactly once; in a parallel batch in completion
    order."""

    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool
    """Whether `result` is an error result (the `ToolResultMessage`'s `is_error`)."""
    type: Literal["tool_execution_end"] = "tool_execution_end"


@dataclass(slots=True)
class NestedAgentEvent:
    """An event of a sub-agent's run (an `Agent.as_tool` call), relayed into
    the parent's events as it happens. Events of deeper levels arrive as they are, each
    once, with their own path."""

    agent_path: tuple[str, ...]
    """The agents' names from the outermost agent down to the one that emitted `event`."""
    tool_call_id: str
    """The id of the tool call (in the agent one level up) that runs this sub-agent."""
    event: AgentEvent
    tool_call_path: tuple[str, ...] = ()
    """The ids of the tool calls that run the agents of `agent_path` after the first, from
    the outermost run's down; `tool_call_id` is its last. Models number their calls
    (`call_0`), so two invocations of one sub-agent can both make a call of the same id:
    the path tells whose call it is. Empty only in an event made by hand."""
    type: Literal["nested_agent"] = "nested_agent"


AgentEvent: TypeAlias = (
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
    | NestedAgentEvent
)
describe_alias(
    __name__,
    "AgentEvent",
    """What a run emits, in order, to every `Agent.subscribe` listener: one of the `*Event`
classes of `yiemagent.types.events`, told apart by their `type`.""",
)


def event_to_dict(event: AgentEvent) -> dict[str, Any]:
    """An event as JSON-ready data (nested dataclasses become dicts; unknown objects their
    `str`)."""
    from pydantic_core import to_jsonable_python

    data: dict[str, Any] = to_jsonable_python(event, fallback=str)
    return data
