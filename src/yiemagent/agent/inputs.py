"""The `Agent`'s inputs: constructor options, prompts, the tool store (DESIGN R-6.1, R-6.3, R-4.12).

`check_options`, `check_queue_mode`, `loop_hooks`, `make_store`, `prompt_messages`,
`to_messages` and `to_tool_list` turn the constructor's and the prompts' arguments into what
the agent uses, or a clear error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from yiemagent.errors import ConfigError
from yiemagent.types import (
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    DocumentContent,
    ImageContent,
    Model,
    TextContent,
    UserMessage,
)
from yiemagent.types.messages import to_messages as to_messages_of

if TYPE_CHECKING:
    from yiemagent.tools import ToolStore

__all__ = [
    "PromptInput",
    "check_options",
    "check_queue_mode",
    "loop_hooks",
    "make_store",
    "prompt_messages",
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


def check_queue_mode(name: str, mode: object) -> None:
    """Raise `ConfigError` unless `mode` is a `QueueMode` ("one-at-a-time" or "all");
    `name` is the option's name in the message."""
    if mode not in _QUEUE_MODES:
        raise ConfigError(f"{name} must be 'one-at-a-time' or 'all', not {mode!r}")


PromptInput: TypeAlias = "str | AgentMessage | Mapping[str, Any] | Sequence[Any]"
"""A prompt: a text, a message, an OpenAI user dict, or a list of messages for one run."""


def to_messages(value: Any, *, what: str) -> list[AgentMessage]:
    """`yiemagent.types.to_messages` with OpenAI user dicts read by `user_message_from_openai`.

    Raises:
        MessageInputError: not a list of messages (also a `ValueError`).
    """
    from yiemagent.ai.openai_wire import user_message_from_openai

    return to_messages_of(value, what=what, from_dict=user_message_from_openai)


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


_LOOP_OPTIONS = (
    "convert_to_llm",
    "transform_context",
    "before_tool_call",
    "after_tool_call",
    "should_stop_after_turn",
    "tool_timeout_s",
    "stream_idle_timeout_s",
    "cache_retention",
    "max_parallel_tools",
    "usage_limits",
    "tracer_provider",
    "trace_content",
)
"""The constructor's arguments the loop takes as they are (`AgentLoopConfig` fields)."""


def loop_hooks(options: Mapping[str, Any], placeholder: Model) -> AgentLoopConfig:
    """The `Agent` constructor's hooks and bounds as an `AgentLoopConfig` (R-6.1), with
    `placeholder` as its model: each run's config names the model the run uses."""
    return AgentLoopConfig(model=placeholder, **{name: options[name] for name in _LOOP_OPTIONS})


def check_options(options: Mapping[str, Any]) -> None:
    """Check the `Agent` constructor's arguments (R-6.1).

    Raises:
        ConfigError: the first invalid argument, saying what to pass instead.
    """
    if not isinstance(options["system_prompt"], str):
        raise ConfigError("system_prompt must be a str")
    model = options["model"]
    if isinstance(model, list | tuple) and model and all(isinstance(m, Model) for m in model):
        pass  # a FallbackModel of them (DESIGN §13)
    elif model is not None and not isinstance(model, Model):
        raise ConfigError(
            f"model must be a Model (for example get_model('openai/gpt-4o-mini')), a list of "
            f"them tried in order, or None for the embedded model, not {type(model).__name__}"
        )
    for name in _CALLABLES:
        value = options[name]
        if value is not None and not callable(value):
            raise ConfigError(f"{name} must be a function, not {type(value).__name__}")
    if options["cache_retention"] not in (None, "none", "short", "long"):
        raise ConfigError(
            "cache_retention must be 'short', 'long', 'none' or None, "
            f"not {options['cache_retention']!r}"
        )
    if options["tool_execution"] not in ("parallel", "sequential"):
        raise ConfigError(
            f"tool_execution must be 'parallel' or 'sequential', not {options['tool_execution']!r}"
        )
    for name in ("steering_mode", "follow_up_mode"):
        check_queue_mode(name, options[name])
    if options["stream_fn"] is not None and options["llm_call"] is not None:
        raise ConfigError("pass either stream_fn or llm_call, not both")
    if options["format_messages"] is not None and options["llm_call"] is None:
        raise ConfigError("format_messages only applies with llm_call; pass llm_call too")
    retries = options.get("output_retries", 0)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"output_retries must be a whole number >= 0, not {retries!r}")
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


def prompt_messages(
    input: Any, images: Sequence[ImageContent | DocumentContent] | None
) -> list[AgentMessage]:
    """A prompt as messages: a text (with `images`: images and documents), a message, an
    OpenAI user dict, or a list of messages/dicts.

    Raises:
        ValueError: not a prompt (an empty list included), or `images` with something other
            than a text.
    """
    if isinstance(input, str):
        for image in images or []:
            if not isinstance(image, ImageContent | DocumentContent):
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
