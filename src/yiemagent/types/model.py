"""What a provider needs: the `Model`, the LLM `Context`, `StreamOptions`, and the
assistant-message event protocol with its stream (DESIGN §7).

These live in the bottom layer so that the loop's configuration can name them; the
providers themselves are in `yiemagent.ai`, which re-exports these names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

from yiemagent.errors import ConfigError
from yiemagent.types.alias_doc import describe_alias
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from yiemagent.types.signal import AbortSignal
from yiemagent.types.stream import EventStream

if TYPE_CHECKING:
    from yiemagent.types.tools import AgentTool

__all__ = [
    "PROVIDER_OPTIONS",
    "THINKING_LEVELS",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "AssistantStartEvent",
    "CacheRetention",
    "Context",
    "DoneEvent",
    "ErrorEvent",
    "FallbackEvent",
    "Model",
    "ModelCost",
    "ProviderOptions",
    "StreamFn",
    "StreamOptions",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "silence_limit_s",
]

ThinkingLevel: TypeAlias = Literal["minimal", "low", "medium", "high", "xhigh"]
describe_alias(
    __name__, "ThinkingLevel", "How much a reasoning model thinks, least first (`THINKING_LEVELS`)."
)
THINKING_LEVELS: tuple[ThinkingLevel, ...] = get_args(ThinkingLevel)
"""The reasoning levels, least thinking first."""
CacheRetention: TypeAlias = Literal["none", "short", "long"]
describe_alias(
    __name__,
    "CacheRetention",
    """How long a provider keeps the prompt cache: "none" turns it off, "short" is the provider's
default, "long" asks for the longer retention.""",
)


@dataclass(slots=True, frozen=True)
class ModelCost:
    """Prices in USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(slots=True, frozen=True)
class Model:
    """A model reachable through one wire API.

    `api` selects the provider module: "openai-completions", "anthropic-messages", "local",
    "faux". `base_url` points an OpenAI-compatible API at any server.
    """

    id: str
    """The provider's model id, as sent in the request (e.g. `gpt-4o-mini`)."""
    provider: str
    """Who serves it (e.g. "openai", "anthropic", "openrouter", "local"); some request
    details follow it, and an assistant message's thinking goes back only to the same
    provider and model."""
    api: str
    base_url: str | None = None
    name: str = ""
    """A human-readable name (a `FallbackModel`: its models, "a | b"); may be empty."""
    reasoning: bool = False
    """Whether the model can think before answering."""
    input: tuple[str, ...] = ("text",)
    """Input modalities: "text", "image"."""
    context_window: int = 128_000
    """Tokens."""
    max_tokens: int = 4096
    """Most output tokens per call."""
    cost: ModelCost = field(default_factory=ModelCost)
    headers: Mapping[str, str] | None = None
    """HTTP headers sent with every request to this model (a call's `headers` override
    them name by name)."""


@dataclass(slots=True)
class Context:
    """What a provider receives: the system prompt, the messages after `convert_to_llm`, and
    the tools (a provider reads only their name, description and input schema)."""

    system_prompt: str = ""
    messages: list[Message] = field(default_factory=list)
    tools: list[AgentTool] | None = None

    def __post_init__(self) -> None:
        """None for `system_prompt` is no system prompt ("") and for `messages` none ([]),
        as in pi's optional fields and openai-agents' `instructions=None`; made so here,
        every provider sees the same value.

        Raises:
            ConfigError: `system_prompt` is neither text nor None.
        """
        prompt: object = self.system_prompt
        if prompt is None:
            self.system_prompt = ""
        elif not isinstance(prompt, str):
            raise ConfigError(
                "Context.system_prompt must be text (a str), or None for no system prompt, "
                f"not {type(prompt).__name__}"
            )
        if self.messages is None:
            self.messages = []


@dataclass(slots=True, kw_only=True)
class ProviderOptions:
    """The options a model call hands the provider as they are (AgentLoopConfig's
    provider part): declared once, here, and shared by `StreamOptions` (one call) and
    `AgentLoopConfig` (a run, copied into each of its calls' `StreamOptions`)."""

    api_key: str | None = field(default=None, repr=False)
    """Kept out of `repr`, so a logged config never shows the key."""
    temperature: float | None = None
    """None: the provider's default (the embedded model: 0)."""
    max_tokens: int | None = None
    """Output tokens. None: the model's `max_tokens` for Anthropic and the embedded model;
    the OpenAI APIs send none, so the server's own limit holds (vLLM refuses a value
    larger than its context, which a `Model` does not know)."""
    reasoning: ThinkingLevel | None = None
    """How hard a reasoning model (`Model.reasoning`) thinks; None: no thinking asked for."""
    thinking_budgets: Mapping[str, int] | None = None
    """Tokens of thinking per level, overriding the provider's defaults."""
    session_id: str | None = None
    """OpenAI's `prompt_cache_key` (unless `cache_retention="none"`): one prompt cache."""
    headers: Mapping[str, str] | None = None
    """Extra HTTP headers for the call, over the model's own."""
    metadata: Mapping[str, Any] | None = None
    """Request metadata: OpenAI's Responses API gets all of it (as strings; its Chat
    Completions takes it only for a stored completion, so none), Anthropic `user_id`."""
    max_retry_delay_ms: int | None = None
    """Longest wait (ms) before a retry (default 60 000); a server asking for longer ends the
    call in error. `0` means no cap."""
    cache_retention: CacheRetention | None = None
    """Prompt caching: "none" turns it off; "long" asks for the longer retention (OpenAI
    24 h, Anthropic 1 h); None or "short": the provider's default."""
    transport: str | None = None
    """The seeds' transport choice, carried to the provider; no provider reads it yet."""
    on_payload: Callable[[dict[str, Any]], Any] | None = None
    """Sees (and may replace, by returning a dict) the request body before it is sent."""
    on_response: Callable[[Any], Any] | None = None
    """Sees the raw HTTP response (status, headers) when it arrives."""


PROVIDER_OPTIONS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ProviderOptions))
"""The field names of `ProviderOptions`, in order: what a run copies into each call."""


@dataclass(slots=True, kw_only=True)
class StreamOptions(ProviderOptions):
    """Per-call options for a provider: the `ProviderOptions`, plus the call's abort signal,
    idle limit and output schema."""

    signal: AbortSignal | None = None
    idle_timeout_s: float | None = None
    """Seconds without a chunk after which the provider ends the call in error (None: no
    limit); while a reasoning model's call shows nothing but reasoning, `reasoning_timeout_s`
    instead (`silence_limit_s`)."""
    reasoning_timeout_s: float | None = None
    """Seconds a call of a reasoning model may stay silent before its first output and while
    its latest block is thinking (None: no limit): a reasoning model on the Chat Completions API
    sends nothing while it thinks, and on the Responses API nothing between a reasoning item
    and its end unless summaries are asked for."""
    keep_alive: Callable[[], None] | None = None
    """The caller's idle watchdog: a provider that is busy without an event to send
    (the embedded model reading a long prompt, or writing a tool call it sends only once
    whole) calls `keep_alive()` — on the event loop's thread, as often as it makes progress —
    and the idle time starts again. It sends nothing and changes no message: consumers see
    only the provider events. None: nobody is watching. A provider that never calls it
    (a hosted model streams its chunks) is idle when it sends nothing."""
    output_schema: Mapping[str, Any] | None = None
    """A JSON Schema (an object) the final answer's text must match, as JSON: providers with
    native structured output or constrained decoding apply it."""


def silence_limit_s(
    model: Model, options: StreamOptions, message: AssistantMessage | None
) -> float | None:
    """Seconds the stream of a call of `model` with `options` may now stay silent, given the
    `message` it has built so far (None: nothing arrived yet).

    A call of a reasoning model (`Model.reasoning`; it may think at its default effort with
    no `reasoning` level asked for, and no level makes another model think) that has shown
    nothing but reasoning (no block yet, or its latest block is thinking) may be thinking out
    of sight: `options.reasoning_timeout_s` holds. Otherwise, and once text or a tool call
    has started, `options.idle_timeout_s`. Either may be None: no limit.
    """
    if model.reasoning and (message is None or not message.content or _thinking_last(message)):
        return options.reasoning_timeout_s
    return options.idle_timeout_s


def _thinking_last(message: AssistantMessage) -> bool:
    return isinstance(message.content[-1], ThinkingContent)


# ── the assistant-message event protocol ───────────────────────────────────


@dataclass(slots=True)
class AssistantStartEvent:
    """The message has started; `partial` is the (empty) message being built."""

    partial: AssistantMessage
    type: Literal["start"] = "start"


@dataclass(slots=True)
class TextStartEvent:
    """A text block opened, empty, at `partial.content[content_index]`.

    In every event of one message, `content_index` indexes `partial.content`, and
    `partial` is the same message object, growing."""

    content_index: int
    partial: AssistantMessage
    type: Literal["text_start"] = "text_start"


@dataclass(slots=True)
class TextDeltaEvent:
    """Text was appended to the block at `content_index`; `delta` is only the new text
    (never empty)."""

    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["text_delta"] = "text_delta"


@dataclass(slots=True)
class TextEndEvent:
    """The text block at `content_index` is complete; `content` is that block."""

    content_index: int
    content: TextContent
    partial: AssistantMessage
    type: Literal["text_end"] = "text_end"


@dataclass(slots=True)
class ThinkingStartEvent:
    """A thinking block opened, empty, at `partial.content[content_index]`."""

    content_index: int
    partial: AssistantMessage
    type: Literal["thinking_start"] = "thinking_start"


@dataclass(slots=True)
class ThinkingDeltaEvent:
    """Thinking text was appended to the block at `content_index`; `delta` is only the new
    text (a signature fragment is added to the block without an event)."""

    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(slots=True)
class ThinkingEndEvent:
    """The thinking block at `content_index` is complete (its signature, if any, too)."""

    content_index: int
    content: ThinkingContent
    partial: AssistantMessage
    type: Literal["thinking_end"] = "thinking_end"


@dataclass(slots=True)
class ToolCallStartEvent:
    """A tool call opened at `partial.content[content_index]`: its id and name are known,
    its arguments are `{}` so far."""

    content_index: int
    partial: AssistantMessage
    type: Literal["toolcall_start"] = "toolcall_start"


@dataclass(slots=True)
class ToolCallDeltaEvent:
    """More argument JSON arrived: `delta` is the raw text fragment; the call in `partial`
    holds the text so far parsed (always a dict)."""

    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["toolcall_delta"] = "toolcall_delta"


@dataclass(slots=True)
class ToolCallEndEvent:
    """The tool call at `content_index` is complete: `tool_call.arguments` is final, and
    `tool_call.partial_json` is None, or keeps the raw text when it was not a JSON object
    (validation then reports that text instead of running the tool)."""

    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage
    type: Literal["toolcall_end"] = "toolcall_end"


@dataclass(slots=True)
class DoneEvent:
    """The message ended normally; `reason` is "stop", "length" or "toolUse"."""

    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage
    type: Literal["done"] = "done"


@dataclass(slots=True)
class ErrorEvent:
    """The message ended by a failure or an abort; `error` carries `error_message`."""

    reason: Literal["error", "aborted"]
    error: AssistantMessage
    type: Literal["error"] = "error"
    error_type: str | None = None
    """A low-cardinality class of the failure when the provider knows it: the HTTP status
    (`"500"`, `"429"`, `"401"`), `"connection"`, `"timeout"`, `"retry_delay"` (the server
    asked to wait too long), `"no_api_key"`, `"no_sdk"` (the provider's SDK extra is not
    installed); `None` otherwise. `FallbackModel` reads it.
    """


@dataclass(slots=True)
class FallbackEvent:
    """A `FallbackModel` moved on: `failed_model` failed before streaming any content, and
    `partial` is now the message of the next model."""

    failed_provider: str
    failed_model: str
    error_message: str
    error_type: str | None
    partial: AssistantMessage
    type: Literal["fallback"] = "fallback"


AssistantMessageEvent: TypeAlias = (
    AssistantStartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
    | FallbackEvent
)
describe_alias(
    __name__,
    "AssistantMessageEvent",
    """What a provider's stream of one assistant message yields: the start, text, thinking and
tool-call parts as they arrive, then `done` or `error` (a `FallbackEvent` when a fallback
model takes over).""",
)


def _is_final(event: AssistantMessageEvent) -> bool:
    return event.type == "done" or event.type == "error"


def _final_message(event: AssistantMessageEvent) -> AssistantMessage:
    if isinstance(event, DoneEvent):
        return event.message
    assert isinstance(event, ErrorEvent)
    return event.error


class AssistantMessageEventStream(EventStream[AssistantMessageEvent, AssistantMessage]):
    """A provider's answer: events ending with `done` or `error`; `result()` is the final
    `AssistantMessage`. Providers never raise: every failure ends the stream with `error`."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_is_final, _final_message)


StreamFn: TypeAlias = Callable[
    [Model, Context, StreamOptions | None],
    AssistantMessageEventStream | Awaitable[AssistantMessageEventStream],
]
describe_alias(
    __name__,
    "StreamFn",
    """`(model, context, options) -> AssistantMessageEventStream` (or an awaitable of one).""",
)
