"""The `Agent`'s state and inputs (DESIGN R-6.1, R-6.2, R-6.3).

`AgentStateView` is an `AgentState` whose `messages` copy on assignment and whose `tools`
mirror the agent's `ToolStore`; `reduce_event` folds events into it; `final_message` builds a
run's answer; `check_options`, `make_store`, `prompt_messages` turn the constructor's and
the prompts' arguments into what the agent uses, or a clear error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from yiemagent.errors import ConfigError
from yiemagent.types import (
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentState,
    AgentTool,
    AssistantMessage,
    ImageContent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    TextContent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
    UserMessage,
)

if TYPE_CHECKING:
    from yiemagent.tools import ToolStore

__all__ = [
    "AgentStateView",
    "RunRecorder",
    "check_options",
    "final_message",
    "make_store",
    "placeholder_model",
    "prompt_messages",
    "reduce_event",
    "to_messages",
    "to_tool_list",
]

_CALLABLES = (
    "stream_fn",
    "llm_call",
    "on_event",
    "prepare_context",
    "format_messages",
    "convert_to_llm",
    "transform_context",
    "before_tool_call",
    "after_tool_call",
    "prepare_next_turn",
    "should_stop_after_turn",
)
_QUEUE_MODES = ("one-at-a-time", "all")


class AgentStateView(AgentState):
    """An `Agent`'s state (R-6.2): assigning `messages` stores a copy of the list; `tools` is
    the tool store's tools in registration order, and assigning it replaces them."""

    __slots__ = ("_messages", "_store", "on_assign")

    def __init__(self, store: ToolStore) -> None:  # no super().__init__: it would set `tools`
        self._store = store
        self._messages: list[AgentMessage] = []
        self.on_assign: Callable[[list[AgentMessage]], None] | None = None
        """Called with the new list before an assignment to `messages` takes effect (the
        agent's session rewrites the stored transcript); if it raises, nothing changes."""
        self.system_prompt = ""
        self.model = None
        self.active_run = False
        self.streaming_message = None
        self.pending_tool_calls = set()
        self.error_message = None

    @property
    def messages(self) -> list[AgentMessage]:
        """The transcript (the agent appends each message at its `message_end`)."""
        return self._messages

    @messages.setter
    def messages(self, value: Iterable[AgentMessage]) -> None:
        messages = to_messages(value, what="state.messages")
        if self.on_assign is not None:
            self.on_assign(messages)
        self._messages = messages

    @property
    def tools(self) -> list[AgentTool]:
        """The tools offered on the next turn (a new list each time)."""
        return list(self._store.tools.values())

    @tools.setter
    def tools(self, value: Any) -> None:
        new = to_tool_list(value)
        self._store.clear()
        for tool in new:
            self._store.register(tool)

    def __repr__(self) -> str:
        return (
            f"AgentState(model={self.model!r}, messages={len(self._messages)}, "
            f"tools={[t.name for t in self.tools]}, active_run={self.active_run}, "
            f"error_message={self.error_message!r})"
        )


def to_messages(value: Any, *, what: str) -> list[AgentMessage]:
    """A new list of messages; OpenAI user dicts become `UserMessage`s.

    Raises:
        ValueError: an item that is neither a message (an object with a `role`) nor a dict.
    """
    from yiemagent._agent_openai import user_message_from_openai

    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ValueError(f"{what} must be a list of messages, not {type(value).__name__}")
    messages: list[AgentMessage] = []
    for item in value:
        if isinstance(item, Mapping):
            messages.append(user_message_from_openai(item))
        elif isinstance(getattr(item, "role", None), str):
            messages.append(item)
        else:
            raise ValueError(
                f"{what}: {item!r} is not a message; pass UserMessage/AssistantMessage/... "
                "objects or OpenAI user dicts"
            )
    return messages


def to_tool_list(tools: Any) -> list[AgentTool]:
    """The tools of a `ToolStore`, a name → tool mapping or an iterable of tools.

    Raises:
        ConfigError: something that is not an `AgentTool`, or a mapping key that is not the
            tool's name.
    """
    if tools is None:
        return []
    if hasattr(tools, "tools") and isinstance(tools.tools, Mapping):
        tools = tools.tools
    if isinstance(tools, Mapping):
        for key, tool in tools.items():
            if isinstance(tool, AgentTool) and key != tool.name:
                raise ConfigError(
                    f"tools[{key!r}] is the tool {tool.name!r}; key each tool by its own name"
                )
        tools = tools.values()
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise ConfigError(
            f"tools must be a ToolStore, a dict of tools or a list of tools, not "
            f"{type(tools).__name__}"
        )
    result = list(tools)
    for tool in result:
        if not isinstance(tool, AgentTool):
            raise ConfigError(
                f"tools holds {tool!r}, not an AgentTool; build tools with @tool or AgentTool(...)"
            )
    return result


def check_options(options: Mapping[str, Any]) -> None:
    """Check the `Agent` constructor's arguments (R-6.1).

    Raises:
        ConfigError: the first invalid argument, saying what to pass instead.
    """
    if not isinstance(options["system_prompt"], str):
        raise ConfigError("system_prompt must be a str")
    model = options["model"]
    if model is not None and not isinstance(model, Model):
        raise ConfigError(
            f"model must be a Model (for example get_model('openai/gpt-4o-mini')) or None for "
            f"the embedded model, not {type(model).__name__}"
        )
    for name in _CALLABLES:
        value = options[name]
        if value is not None and not callable(value):
            raise ConfigError(f"{name} must be a function, not {type(value).__name__}")
    if options["tool_execution"] not in ("parallel", "sequential"):
        raise ConfigError(
            f"tool_execution must be 'parallel' or 'sequential', not {options['tool_execution']!r}"
        )
    for name in ("steering_mode", "follow_up_mode"):
        if options[name] not in _QUEUE_MODES:
            raise ConfigError(f"{name} must be 'one-at-a-time' or 'all', not {options[name]!r}")
    max_turns = options["max_turns"]
    if max_turns is not None and (
        isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1
    ):
        raise ConfigError(f"max_turns must be a whole number >= 1 or None, not {max_turns!r}")
    delay = options["max_retry_delay_ms"]
    if delay is not None and (isinstance(delay, bool) or not isinstance(delay, int) or delay < 0):
        raise ConfigError(f"max_retry_delay_ms must be a whole number >= 0 or None, not {delay!r}")
    session_id = options["session_id"]
    if session_id is not None and not isinstance(session_id, str):
        raise ConfigError(f"session_id must be a str or None, not {type(session_id).__name__}")
    messages = options["messages"]
    if messages is not None and (
        isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable)
    ):
        raise ConfigError("messages must be a list of messages")


def reduce_event(state: AgentState, event: AgentEvent) -> None:
    """Fold one event into the state (R-6.2; pi's `Agent.processEvents`)."""
    if isinstance(event, MessageStartEvent | MessageUpdateEvent):
        if isinstance(event.message, AssistantMessage):
            state.streaming_message = event.message
    elif isinstance(event, MessageEndEvent):
        message = event.message
        state.messages.append(message)
        if isinstance(message, AssistantMessage):
            state.streaming_message = None
            if message.stop_reason == "error" or message.stop_reason == "aborted":
                state.error_message = message.error_message or message.stop_reason
    elif isinstance(event, ToolExecutionStartEvent):
        state.pending_tool_calls = state.pending_tool_calls | {event.tool_call_id}
    elif isinstance(event, ToolExecutionEndEvent):
        state.pending_tool_calls = state.pending_tool_calls - {event.tool_call_id}
    elif isinstance(event, AgentEndEvent):
        state.active_run = False
        state.streaming_message = None


class RunRecorder:
    """What the Agent needs from a run's events to build its answer."""

    __slots__ = ("end", "last_turn")

    def __init__(self) -> None:
        self.end: AgentEndEvent | None = None
        self.last_turn: TurnEndEvent | None = None

    def record(self, event: AgentEvent) -> None:
        if isinstance(event, TurnEndEvent):
            self.last_turn = event
        elif isinstance(event, AgentEndEvent):
            self.end = event


def final_message(
    new: Sequence[AgentMessage], recorder: RunRecorder, model: Model, aborted: bool
) -> AssistantMessage:
    """A run's answer (R-6.3): after a terminating batch the "tool_use_terminated" summary of
    its results (seed 000 §10), else the run's last assistant message; a run aborted after
    that message answers with a new, empty "aborted" message (not in the history)."""
    turn = recorder.last_turn
    if recorder.end is not None and recorder.end.reason == "terminate" and turn is not None:
        content: list[Any] = [TextContent("Tool execution completed.")]
        for result in turn.tool_results:
            content.extend(b for b in result.content if isinstance(b, TextContent))
        failed = any(result.is_error for result in turn.tool_results)
        return AssistantMessage(
            content=content,
            api=turn.message.api,
            provider=turn.message.provider,
            model=turn.message.model,
            usage=turn.message.usage,
            stop_reason="tool_use_terminated",
            error_message="One or more tool calls failed" if failed else None,
        )
    last = next((m for m in reversed(new) if isinstance(m, AssistantMessage)), None)
    ended_by_abort = recorder.end is not None and recorder.end.reason == "aborted"
    if last is not None and (last.stop_reason == "aborted" or not ended_by_abort):
        return last
    if last is not None:  # aborted between turns (e.g. during the tools): say so
        return AssistantMessage(
            api=last.api,
            provider=last.provider,
            model=last.model,
            stop_reason="aborted",
            error_message="The run was aborted",
        )
    return AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="aborted" if aborted else "error",
        error_message="The run ended before the model answered",
    )


def placeholder_model(kind: str) -> Model:
    """The `Model` of a run through `llm_call` or a custom `stream_fn` given no model."""
    return Model(id=kind, provider=kind, api=kind, name=kind)


def prompt_messages(input: Any, images: Sequence[ImageContent] | None) -> list[AgentMessage]:
    """A prompt as messages: a text (with `images`), a message, an OpenAI user dict, or a
    list of messages/dicts.

    Raises:
        ValueError: not a prompt (an empty list included), or `images` with something other
            than a text.
    """
    if isinstance(input, str):
        for image in images or []:
            if not isinstance(image, ImageContent):
                raise ValueError(f"images must be ImageContent, not {type(image).__name__}")
        return [UserMessage([TextContent(input), *(images or [])])]
    if images:
        raise ValueError("images go with a text prompt; put them in the message's content")
    single = isinstance(input, Mapping) or hasattr(input, "role")
    messages = to_messages([input] if single else input, what="prompt")
    if not messages:
        raise ValueError("a prompt needs at least one message; use resume() to continue")
    return messages


def make_store(tools: Any, tool_store: Any) -> ToolStore:
    """The agent's `ToolStore` (R-4.12, seed 000 Step 2.5).

    `tool_store` is used as it is (tools registered in it later show on the next turn).
    `tools` — a `ToolStore`, a mapping or a list — is copied into the store (a new one when no
    `tool_store`), as R-6.1 says: two agents built from one `ToolStore` never see each other's
    registrations (R-4.12). A copied `listTools` is rebound to the new store. Give the store a
    `writeTool` writes into as `tool_store` (seed 000 Step 2.5's `_tool_store`).

    Raises:
        ConfigError: `tool_store` is not a `ToolStore`, or a tool in `tools` conflicts with a
            different tool of the same name in `tool_store`.
    """
    from yiemagent.tools import ToolStore, list_tools_tool

    if tool_store is not None and not isinstance(tool_store, ToolStore):
        raise ConfigError(f"tool_store must be a ToolStore, not {type(tool_store).__name__}")
    if tool_store is not None:
        store = tool_store
    else:
        store = ToolStore(tools.name if isinstance(tools, ToolStore) else "agent")
    wants_list_tools = False
    for tool in to_tool_list(tools):
        if tool.name == "listTools":  # bound to its own store: rebound below
            wants_list_tools = True
            continue
        existing = store.tools.get(tool.name)
        if existing is tool:
            continue
        if existing is not None and tool_store is None:
            raise ConfigError(
                f"two different tools named {tool.name!r} in tools: tool names must be "
                "unique; rename one (@tool(name=...)) or drop it"
            )
        if existing is not None:
            raise ConfigError(
                f"tool {tool.name!r} is in both tools and tool_store with different "
                "definitions; pass it in one of them"
            )
        store.register(tool)
    if wants_list_tools and "listTools" not in store:
        store.register(list_tools_tool(store))
    return store
