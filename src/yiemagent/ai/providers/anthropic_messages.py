"""The `anthropic-messages` provider: the streaming Messages API over the official `anthropic`
SDK (DESIGN §7).

`stream_anthropic_messages` returns an `AssistantMessageEventStream` at once and streams on a
task of the running event loop; it never raises (failures end the stream with an `error`
event, HTTP status included, API key scrubbed). Retries are ours (`_retry.py`, in the SDK
call of `_sdk_call.py`: 429, 5xx and 529 overloaded, `retry-after` honoured up to
`max_retry_delay_ms`), the SDK's are off.

Mapping: text, thinking (with its signature), redacted thinking (its opaque `data` kept as the
signature, `redacted=True`), tool_use with streamed `input_json_delta` arguments; usage with
cache reads and writes (one-hour writes priced at twice the input price); stop reasons
end_turn/stop_sequence → stop, max_tokens and model_context_window_exceeded →
length, tool_use → toolUse, refusal → error. `pause_turn` (the API paused a long turn of its
server tools) is not a stop: as Anthropic's docs ask, the response's content goes back as it
was sent (server tool calls and results, citations and all), as the last assistant message
of one more request whose response continues the same message, usage summed; a turn paused
`MAX_PAUSES` times in a row ends in error. Prompt caching
(`cache_retention`: "none"; "short" (the default) → `cache_control` ephemeral; "long" → ttl
1h) marks the last tool, the system prompt and the last two user messages (the latest
turn, and the one the previous request marked as latest: four, the API's most). Thinking
is enabled for reasoning models when `StreamOptions.reasoning` is set: Claude 4.6 and later
(`claude_version`) think adaptively (`thinking.type` "adaptive" with its summary shown, the
level as `output_config.effort`, `EFFORTS`; from 4.7 on the API refuses a budget), earlier
and unversioned models with a budget from `thinking_budgets` or `THINKING_BUDGETS`. Thinking is
sent back only to the model that produced it, with its signature. Claude 4.7 and later
refuse `temperature` on every request, so it is not sent to them (a warning says so once).
An image larger than the API takes (`MAX_IMAGE_BASE64` of base64; more than 8000 px a side,
or 2000 px once the request holds more than 20 images: `IMAGE_SIDE_LIMITS`) is sent as a
text naming it, so a big screenshot a tool returned does not fail every later request of
its session. A native output schema (`StreamOptions.output_schema`) goes as
`output_config.format`, in the form the SDK's `transform_schema` gives it (the API refuses
some keywords; they become description text), so the answer's text is the JSON value.
Content blocks of other kinds (server tools) are left out of the message, but kept as sent
for a `pause_turn`. A tool schema the API refuses (no "type"; `anyOf`, `oneOf` or `allOf` at
its top, as MCP servers write a choice) is sent in a form it takes (`_input_schema`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from yiemagent.ai._retry import RetryDecision
from yiemagent.ai._sanitize import image_base64
from yiemagent.ai.attachments import (
    IMAGE_BASE64_LIMITS,
    IMAGE_SIDE_LIMITS,
    PDF_PAGE_LIMITS,
    attachment_stand_in,
    image_size,
    image_type_stand_in,
    oversized_image_stand_in,
    oversized_pdf_stand_in,
    oversized_sides_stand_in,
    pdf_pages,
)
from yiemagent.ai.builder import DoneReason, MessageBuilder, complete_arguments
from yiemagent.ai.openai_wire import fold_root_choices
from yiemagent.ai.providers._sdk_call import (
    SdkApi,
    StreamAssembler,
    open_raw_stream,
    stream_sdk,
)
from yiemagent.ai.providers._sdk_failures import api_error, sdk_retry_decision
from yiemagent.types.messages import (
    AssistantMessage,
    Cost,
    DocumentContent,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from yiemagent.types.model import (
    AssistantMessageEventStream,
    Context,
    Model,
    ModelCost,
    StreamOptions,
)
from yiemagent.types.tools import provider_property_names

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = [
    "ADAPTIVE_FROM",
    "EFFORTS",
    "MAX_IMAGE_BASE64",
    "MESSAGES",
    "NO_SAMPLING_FROM",
    "THINKING_BUDGETS",
    "build_request_body",
    "claude_version",
    "stream_anthropic_messages",
]

logger = logging.getLogger(__name__)

_STOP_REASONS: dict[str, DoneReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}


MAX_IMAGE_BASE64 = IMAGE_BASE64_LIMITS["anthropic-messages"]
"""The most base64 characters the API takes in one image ("image exceeds 5 MB maximum");
a larger image is sent as a text naming it."""
MAX_PDF_PAGES = PDF_PAGE_LIMITS["anthropic-messages"]
"""The most PDF pages the API takes in a request; a PDF past them is sent as a text naming
it."""

MAX_PAUSES = 10
"""Requests a turn the API paused (`pause_turn`) is continued with, at most."""


def stream_anthropic_messages(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one Messages API call (the `anthropic-messages` `StreamFn`).

    Args:
        model: `base_url` selects the server (None: Anthropic); `max_tokens` the default
            output limit (the API requires one).
        context: System prompt, messages (repaired with `transform_messages`, tool-call
            ids normalised with `anthropic_tool_call_id`), tools.
        options: Per-call options (see the module docstring).

    Returns:
        The event stream; it always ends with `done` or `error`.
    """
    return stream_sdk(MESSAGES, model, context, options)


# ── the request ──────────────────────────────────────────────────────────────

_EMPTY = "(empty message)"
"""The text sent for a user message of only whitespace."""

_LONG_WRITE_FACTOR = 2.0
"""A one-hour cache write costs this many times the input price (a five-minute one 1.25)."""

_UNCHOSEN_MAX_TOKENS: Final = next(f.default for f in fields(Model) if f.name == "max_tokens")
"""`Model.max_tokens` of a model whose maker set none: the type's default, no Claude's limit."""

THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32000,
}
"""Default thinking budget (tokens) per reasoning level."""

EFFORTS: dict[str, str] = {
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "max",
}
"""The `output_config.effort` sent for each reasoning level to a model that thinks
adaptively: the API's levels are low, medium, high (its default), xhigh and max; "max",
the most, is the one every adaptive model takes ("xhigh" only some)."""

ADAPTIVE_FROM = (4, 6)
"""The first Claude version that thinks adaptively; from 4.7 on the API refuses
`thinking.type` "enabled" (a budget) with HTTP 400."""
NO_SAMPLING_FROM = (4, 7)
"""The first Claude version that refuses `temperature` (400 "`temperature` is deprecated
for this model"), with thinking on or off."""

_UNVERSIONED_NEW = frozenset({"mythos", "fable"})
"""Claude families that came after 4.7 and may be named without a version
("claude-mythos-preview")."""


def claude_version(model_id: str) -> tuple[int, int] | None:
    """The Claude version a model id names, as (major, minor), or None when it names none.

    The numbers come after the family ("claude-opus-4-7", "claude-sonnet-5",
    "claude-haiku-4-5-20251001") or before it ("claude-3-7-sonnet-20250219"), also inside a
    cloud's id ("anthropic.claude-opus-4-6-v1"); an 8-digit date is no minor version
    ("claude-opus-4-20250514" is 4.0). A family newer than 4.7 named without a version
    ("claude-mythos-preview") is 5.0; any other id without one (a compatible server's own
    name) is None, and keeps the request form every Claude model before 4.6 takes.
    """
    match = re.search(r"claude-([a-z0-9._-]*)", model_id.lower())
    if match is None:
        return None
    tokens = re.split(r"[._-]", match.group(1))
    for position, token in enumerate(tokens):
        if token.isdigit() and len(token) <= 2:
            following = tokens[position + 1] if position + 1 < len(tokens) else ""
            minor = int(following) if following.isdigit() and len(following) <= 2 else 0
            return int(token), minor
    return (5, 0) if _UNVERSIONED_NEW.intersection(tokens) else None


_warned_temperature: set[str] = set()
"""Model ids whose refused `temperature` has been warned about in this process."""


def _cache_control(options: StreamOptions) -> dict[str, str] | None:
    retention = options.cache_retention or "short"
    if retention == "none":
        return None
    if retention == "long":
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def convert_messages(model: Model, context: Context) -> list[dict[str, Any]]:
    """The Messages API `messages` (the transcript repaired; consecutive tool results share one user
    message, as the API requires)."""
    from yiemagent.ai.transform import anthropic_tool_call_id, transform_messages

    out: list[dict[str, Any]] = []
    images_ok = "image" in model.input
    messages = transform_messages(
        context.messages,
        model,
        normalize_tool_call_id=anthropic_tool_call_id,
        tool_names=[tool.name for tool in context.tools or ()],
    )
    images = _Images(messages) if images_ok else None
    documents = _Documents(messages) if "pdf" in model.input else None
    for message in messages:
        if isinstance(message, UserMessage):
            # Only whitespace (the API refuses it as text) keeps its turn with a stand-in:
            # dropped, the request would end with the previous answer, a prefill to continue.
            blocks = _blocks(message.content, images, documents)
            out.append({"role": "user", "content": blocks or [{"type": "text", "text": _EMPTY}]})
        elif isinstance(message, AssistantMessage):
            blocks = _assistant_blocks(message, model)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        elif isinstance(message, ToolResultMessage):
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": _blocks(message.content, images)
                or [{"type": "text", "text": "(error)" if message.is_error else "(no output)"}],
                "is_error": message.is_error,
            }
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous["role"] == "user"
                and all(b.get("type") == "tool_result" for b in previous["content"])
            ):
                previous["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
    return out


class _Images:
    """The images of one request as the API takes them: each one's base64, type and size,
    or the text sent in its place (a type the API does not read, more base64 than it takes,
    a side longer than it takes: 8000 px, or 2000 px once more than 20 images go)."""

    __slots__ = ("_checked", "_longest")

    def __init__(self, messages: list[Any]) -> None:
        self._checked: dict[int, _Checked] = {}
        limit = IMAGE_SIDE_LIMITS["anthropic-messages"]
        for message in messages:
            if isinstance(message, UserMessage | ToolResultMessage):
                for block in message.content:
                    if isinstance(block, ImageContent):
                        self._checked[id(block)] = _check(block)
        fitting = sum(
            1
            for checked in self._checked.values()
            if not isinstance(checked, str)
            and oversized_sides_stand_in(checked[2], limit.side, _API) is None
        )
        self._longest = limit.for_request(fitting)

    def block(self, image: ImageContent) -> dict[str, Any]:
        """The API block for `image`: an image block, or a text saying why it is not one."""
        checked = self._checked.get(id(image)) or _check(image)
        if isinstance(checked, str):
            return {"type": "text", "text": checked}
        data, mime_type, size = checked
        too_large = oversized_sides_stand_in(size, self._longest, _API)
        if too_large is not None:
            return {"type": "text", "text": too_large}
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": mime_type, "data": data},
        }


class _Documents:
    """The PDFs of one request as the API takes them: `MAX_PDF_PAGES` pages in all, the
    newest PDFs first (the one just attached is the one asked about). A PDF past them goes
    as a text naming its pages; one whose pages cannot be counted goes as it is."""

    __slots__ = ("_stand_ins",)

    def __init__(self, messages: list[Any]) -> None:
        self._stand_ins: dict[int, str] = {}
        room = MAX_PDF_PAGES
        documents = [
            block
            for message in messages
            if isinstance(message, UserMessage) and isinstance(message.content, list)
            for block in message.content
            if isinstance(block, DocumentContent)
        ]
        for document in reversed(documents):
            stand_in = oversized_pdf_stand_in(document, room, MAX_PDF_PAGES, _API)
            if stand_in is not None:
                self._stand_ins[id(document)] = stand_in
            else:
                room -= pdf_pages(document.data) or 0

    def stand_in(self, document: DocumentContent) -> str | None:
        """The text sent in place of `document`, or None when it goes as a document."""
        return self._stand_ins.get(id(document))


_API = "the Messages API"
"""How a stand-in names the API."""

_Checked = tuple[str, str, tuple[int, int] | None] | str
"""An image's base64, type and size (pixels, when its header tells), or its stand-in."""


def _check(block: ImageContent) -> _Checked:
    data, mime_type = image_base64(block.data, block.mime_type)
    stand_in = image_type_stand_in(mime_type, _API) or oversized_image_stand_in(
        data, MAX_IMAGE_BASE64, _API
    )
    return stand_in if stand_in is not None else (data, mime_type, image_size(data))


def _blocks(
    content: list[Any], images: _Images | None, documents: _Documents | None = None
) -> list[dict[str, Any]]:
    """Text, image and document (PDF) blocks; the API rejects empty or whitespace-only
    text, and a model that reads no images (`images` None) or PDFs (`documents` None) gets
    a note in place of each."""
    blocks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            if images is not None:
                blocks.append(images.block(block))
            else:
                blocks.append({"type": "text", "text": attachment_stand_in(block)})
        elif isinstance(block, DocumentContent):
            too_long = documents is not None and documents.stand_in(block)
            if too_long:
                blocks.append({"type": "text", "text": too_long})
            elif documents is not None:
                source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
                document: dict[str, Any] = {"type": "document", "source": source}
                if block.name:
                    document["title"] = block.name
                blocks.append(document)
            else:
                blocks.append({"type": "text", "text": attachment_stand_in(block)})
    return blocks


def _assistant_blocks(message: AssistantMessage, model: Model) -> list[dict[str, Any]]:
    same_model = message.provider == model.provider and message.model == model.id
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if not (same_model and block.signature):
                continue  # unsigned or foreign thinking cannot be verified by the API
            if block.redacted:
                blocks.append({"type": "redacted_thinking", "data": block.signature})
            else:
                blocks.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
        elif isinstance(block, ToolCall):
            arguments = block.arguments if isinstance(block.arguments, dict) else {}
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": arguments}
            )
    return blocks


def build_request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body of the streaming Messages request (before `on_payload`)."""
    cache = _cache_control(options)
    max_tokens = options.max_tokens or model.max_tokens
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context),
        "max_tokens": max_tokens,
        "stream": True,
    }
    if context.system_prompt.strip():  # the API refuses a whitespace-only text block
        system: dict[str, Any] = {"type": "text", "text": context.system_prompt}
        if cache:
            system["cache_control"] = cache
        body["system"] = [system]
    if cache:
        # The latest turn, and the turn before it: where the previous request's latest mark
        # was. The API finds a cached prefix only within 20 blocks before a breakpoint, and
        # one turn (a batch of tool results) may add more.
        users = [message for message in body["messages"] if message["role"] == "user"]
        for message in users[-2:]:
            message["content"][-1]["cache_control"] = cache
    if context.tools:
        body["tools"] = []
        for t in context.tools:
            schema, note = _input_schema(t.input_schema)
            renamed = _rename_properties(schema)
            if renamed:  # the calls already made with the old names, as the model now sees
                _rename_inputs(body["messages"], t.name, renamed)
            description = f"{t.description}\n\n{note}" if note else t.description
            body["tools"].append(
                {"name": t.name, "description": description, "input_schema": schema}
            )
        if cache:  # the last tool's mark caches every tool definition
            body["tools"][-1]["cache_control"] = cache
    else:
        used = _tool_names_in(body["messages"])
        if used:
            # The API refuses tool_use/tool_result blocks in a request that defines no tools:
            # the tools of the history are declared, and the model may not call them.
            body["tools"] = [
                {
                    "name": name,
                    "description": "Not available in this turn.",
                    "input_schema": {"type": "object"},
                }
                for name in used
            ]
            body["tool_choice"] = {"type": "none"}
    # "off" (pi's spelling of no reasoning) is None here.
    thinking = bool(options.reasoning and str(options.reasoning) != "off" and model.reasoning)
    version = claude_version(model.id)
    adaptive = version is not None and version >= ADAPTIVE_FROM
    if thinking and adaptive:
        # The model decides how much to think, also between tool calls, so a tool loop
        # begun without thinking may go on with it. From 4.7 on the API sends only the
        # thinking's signature unless a summary is asked for: the user would see none.
        body["thinking"] = {"type": "adaptive", "display": "summarized"}
        body["output_config"] = {"effort": EFFORTS.get(str(options.reasoning), "high")}
        if not options.max_tokens and model.max_tokens == _UNCHOSEN_MAX_TOKENS:
            # `max_tokens` bounds thinking and answer together: a `Model` built by hand
            # keeps the type's 4096, which a high effort spent thinking before any text
            # (the call ended "length" with no answer). Room for the level's budget and
            # an answer, as the budget form gets; a limit someone chose stays.
            budget = THINKING_BUDGETS.get(str(options.reasoning), THINKING_BUDGETS["high"])
            max_tokens = body["max_tokens"] = max(max_tokens, budget + 1024)
    elif thinking and _open_tool_turn_without_thinking(body["messages"]):
        # The API refuses thinking when the assistant turn being continued (tool use, then
        # results) does not start with a thinking block: reasoning switched on, or the model
        # switched, in the middle of a tool loop. This one request goes without thinking.
        logger.info("thinking left off: the open tool-use turn has no thinking block")
        thinking = False
    if thinking and not adaptive:
        assert options.reasoning is not None
        budgets = {**THINKING_BUDGETS, **(options.thinking_budgets or {})}
        budget = budgets.get(options.reasoning, THINKING_BUDGETS["medium"])
        if max_tokens <= budget:
            # Room for the answer after the thinking, within the model's output limit.
            max_tokens = body["max_tokens"] = min(budget + 1024, max(model.max_tokens, max_tokens))
            budget = min(budget, max_tokens - 1024)
        if budget >= 1024:  # the API's minimum
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        else:
            logger.info("thinking left off: max_tokens=%d leaves no room for it", max_tokens)
            thinking = False
    refuses_temperature = version is not None and version >= NO_SAMPLING_FROM
    if options.temperature is not None and refuses_temperature:
        if model.id not in _warned_temperature:
            _warned_temperature.add(model.id)
            logger.warning("%s takes no temperature: it is not sent", model.id)
    elif not thinking and options.temperature is not None:
        body["temperature"] = options.temperature  # the API refuses it with thinking on
    if options.output_schema is not None:  # native structured output
        from anthropic import transform_schema  # the API's dialect of JSON Schema

        schema = transform_schema(dict(options.output_schema))
        output_config = body.setdefault("output_config", {})
        output_config["format"] = {"type": "json_schema", "schema": schema}
    if options.metadata and options.metadata.get("user_id"):
        body["metadata"] = {"user_id": str(options.metadata["user_id"])}
    return body


def _input_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """A tool's input schema as the API takes it, and a note for the tool's description.

    The API refuses a schema without "type" (a tool taking any arguments: `{}`) and one
    with `anyOf`, `oneOf` or `allOf` at its top ("input_schema does not support oneOf,
    allOf, or anyOf at the top level"), which MCP servers write for "give `route` or
    `file`"; one such tool failed every request of the run. `fold_root_choices` puts the
    branches' properties at the top and says the choice in the note; a root `$ref` (a
    whole model named once) is sent as the definition it names, its `$defs` kept.

    Returns:
        The schema to send, and the note ("" when nothing was folded).
    """
    folded, note = fold_root_choices(schema)
    return (dict(folded) if "type" in folded else {"type": "object", **folded}), note


def _rename_properties(schema: dict[str, Any]) -> dict[str, str]:
    """Give the top-level properties of `schema` (in place) names the API takes
    (`provider_property_names`), in `required` too; the arguments of the model's calls
    come back under the old names in the tool pipeline. Returns `{old: new}`."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    renamed = provider_property_names(properties)
    if renamed:
        schema["properties"] = {renamed.get(k, k): v for k, v in properties.items()}
        required = schema.get("required")
        if isinstance(required, list):
            schema["required"] = [renamed.get(n, n) if isinstance(n, str) else n for n in required]
    return renamed


def _rename_inputs(messages: list[dict[str, Any]], tool: str, renamed: dict[str, str]) -> None:
    """The `input` of each tool_use block of `tool` in `messages`, its keys renamed."""
    for message in messages:
        if message["role"] != "assistant":
            continue
        for block in message["content"]:
            if block.get("type") == "tool_use" and block.get("name") == tool:
                given = block.get("input")
                if isinstance(given, dict):
                    block["input"] = {renamed.get(k, k): v for k, v in given.items()}


def _tool_names_in(messages: list[dict[str, Any]]) -> list[str]:
    """The tool names of the tool_use blocks in `messages`, in first-use order."""
    names: dict[str, None] = {}
    for message in messages:
        if message["role"] == "assistant":
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    names[block["name"]] = None
    return list(names)


def _open_tool_turn_without_thinking(messages: list[dict[str, Any]]) -> bool:
    """Whether the last assistant message calls tools, is not answered by a later assistant
    message, and does not start with a (redacted) thinking block."""
    for message in reversed(messages):
        if message["role"] != "assistant":
            continue
        content = message["content"]
        if not any(block.get("type") == "tool_use" for block in content):
            return False
        return content[0].get("type") not in ("thinking", "redacted_thinking")
    return False


# ── streaming ────────────────────────────────────────────────────────────────


@dataclass(slots=True)
class _Assembler:
    """Turns Messages API stream events into builder calls. Events are routed by their
    block's `index`: the open block streams through the builder; a block that starts while
    another is open (a proxy that opens every tool_use block before closing any) waits, its
    events kept, until that one has stopped, so each block streams whole between its start
    and its end; a delta of a block already closed is completed in place."""

    builder: MessageBuilder
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    streamed: bool = False
    ignored: set[int] = field(default_factory=set)
    """Indexes of blocks we do not map (server tools, results): their deltas are skipped."""
    blocks: dict[int, TextContent | ThinkingContent | ToolCall] = field(default_factory=dict)
    """The mapped blocks by index."""
    raw: dict[int, str] = field(default_factory=dict)
    """The input JSON each tool_use block has received, by index."""
    long_writes: int = 0
    """Cache writes kept for an hour (`cache_retention="long"`), priced apart."""
    start_input: dict[int, str] = field(default_factory=dict)
    """A tool_use's `input` from its start event, as JSON, when not empty, until a delta
    comes: some Anthropic-compatible servers send the whole input there and no
    `input_json_delta`."""
    wire: dict[int, dict[str, Any]] = field(default_factory=dict)
    """This response's content blocks as the API sent them, by index, for a `pause_turn`."""
    wire_parts: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    """The streamed pieces of those blocks' fields ("text", "thinking", "signature",
    "input" JSON), by (index, field)."""
    paused: list[dict[str, Any]] = field(default_factory=list)
    """The content of the responses paused so far, as sent: one assistant turn."""
    messages: list[dict[str, Any]] | None = None
    """The request's messages before the first pause."""
    before: Usage = field(default_factory=Usage)
    """The usage of the paused responses (this one's is `usage`)."""
    pauses: int = 0
    open_index: int | None = None
    """The index of the block open in the builder, until its stop."""
    queued: dict[int, list[Any]] = field(default_factory=dict)
    """The events of blocks that started while another was open, by index, in start
    order."""

    def feed(self, event: Any) -> None:
        kind = event.type
        if kind == "content_block_start":
            self.wire[event.index] = event.content_block.model_dump(mode="json", exclude_unset=True)
        elif kind == "content_block_delta":
            self._wire_delta(event.index, event.delta)
        index = getattr(event, "index", None)
        waits = kind == "content_block_start" and self.open_index is not None
        if index is not None and (waits or index in self.queued):
            self.queued.setdefault(index, []).append(event)
            return
        if kind in ("message_delta", "message_stop"):
            self._release(every=True)
        self._handle(event)
        if kind == "content_block_stop" and index == self.open_index:
            self.open_index = None
            self._release(every=False)

    def _release(self, *, every: bool) -> None:
        """Stream the waiting blocks in order: each while no block is open (`every`: all,
        at the end of the message)."""
        while self.queued and (every or self.open_index is None):
            index = next(iter(self.queued))
            for event in self.queued.pop(index):
                self._handle(event)
                if event.type == "content_block_stop" and index == self.open_index:
                    self.open_index = None

    def _handle(self, event: Any) -> None:
        kind = event.type
        if kind in ("content_block_delta", "content_block_stop") and event.index in self.ignored:
            return
        if kind == "message_start":
            self._usage(event.message.usage)
        elif kind == "content_block_start":
            self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            block = self.blocks.get(event.index)
            if block is None or block is self.builder.open_block:
                self._delta(event.index, event.delta)
            else:
                self._late_delta(event.index, block, event.delta)
        elif kind == "content_block_stop":
            block = self.blocks.get(event.index)
            given = self.start_input.pop(event.index, None)
            if block is None or block is self.builder.open_block:
                if given is not None:
                    self.builder.tool_call_delta(given)
                self.builder.end_block()
            elif given is not None and isinstance(block, ToolCall):
                complete_arguments(block, given)
        elif kind == "message_delta":
            if event.delta.stop_reason:
                self.stop_reason = event.delta.stop_reason
            self._usage(event.usage)

    def _start(self, index: int, block: Any) -> None:
        self.streamed = True
        if block.type == "text":
            self.builder.text_delta(block.text or "")
        elif block.type == "thinking":
            self.builder.thinking_delta(block.thinking or "", block.signature or None)
        elif block.type == "redacted_thinking":
            self.builder.thinking_delta("", block.data)
            last = self.builder.message.content[-1]
            assert isinstance(last, ThinkingContent)
            last.redacted = True
        elif block.type == "tool_use":
            self.builder.tool_call_start(block.id, block.name)
            given = getattr(block, "input", None)
            self.raw[index] = ""
            if isinstance(given, dict) and given:
                self.start_input[index] = json.dumps(given)
        else:
            logger.debug("ignored content block of type %r", block.type)
            self.ignored.add(index)
            return
        self.blocks[index] = self.builder.message.content[-1]
        self.open_index = index

    def _delta(self, index: int, delta: Any) -> None:
        """A delta of the open block (or of a block never started: text and thinking open
        one).

        Raises:
            ValueError: tool input for a block that is no tool_use block the server started
                (a call needs the id and name only its start carries).
        """
        if delta.type == "text_delta":
            self.builder.text_delta(delta.text)
        elif delta.type == "thinking_delta":
            self.builder.thinking_delta(delta.thinking)
        elif delta.type == "signature_delta":
            self.builder.thinking_delta("", delta.signature)
        elif delta.type == "input_json_delta":
            if not isinstance(self.blocks.get(index), ToolCall):
                raise ValueError(
                    f"the server sent tool input (input_json_delta) for content block {index}, "
                    "which it did not start as a tool_use block"
                )
            if delta.partial_json:
                self.start_input.pop(index, None)  # the streamed input wins
                self.raw[index] = self.raw.get(index, "") + delta.partial_json
            self.builder.tool_call_delta(delta.partial_json)

    def _late_delta(
        self, index: int, block: TextContent | ThinkingContent | ToolCall, delta: Any
    ) -> None:
        """A delta of a block that is no longer open: completed in place, without events."""
        if delta.type == "text_delta" and isinstance(block, TextContent):
            block.text += delta.text
        elif delta.type == "thinking_delta" and isinstance(block, ThinkingContent):
            block.thinking += delta.thinking
        elif delta.type == "signature_delta" and isinstance(block, ThinkingContent):
            block.signature = (block.signature or "") + delta.signature
        elif (
            delta.type == "input_json_delta" and isinstance(block, ToolCall) and delta.partial_json
        ):
            self.start_input.pop(index, None)
            self.raw[index] += delta.partial_json
            complete_arguments(block, self.raw[index])

    def _wire_delta(self, index: int, delta: Any) -> None:
        kind = delta.type
        if kind == "citations_delta":
            block = self.wire.get(index)
            if block is not None:
                cited = delta.citation.model_dump(mode="json", exclude_unset=True)
                block["citations"] = [*(block.get("citations") or []), cited]
            return
        name = _WIRE_FIELDS.get(kind)
        if name is not None:
            self.wire_parts.setdefault((index, name), []).append(getattr(delta, _DELTA[name]))

    def _wire_content(self) -> list[dict[str, Any]]:
        """This response's content as the API sent it, its streamed fields whole."""
        for (index, name), parts in self.wire_parts.items():
            block = self.wire.get(index)
            if block is None:
                continue
            value = "".join(parts)
            if name == "input":
                if value:
                    try:
                        block["input"] = json.loads(value)
                    except ValueError:
                        logger.warning("a paused turn's tool input is not JSON: %.80s", value)
            else:
                block[name] = (block.get(name) or "") + value
        return [self.wire[index] for index in sorted(self.wire)]

    def continuation(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """After a response: the body that continues a turn the API paused (`pause_turn`):
        the request's messages and one assistant message holding what every paused
        response sent, as it was sent; None when the turn is over, or paused `MAX_PAUSES`
        times already (`finish` then says so)."""
        if self.stop_reason != "pause_turn" or self.pauses >= MAX_PAUSES:
            return None
        self.pauses += 1
        self.paused.extend(self._wire_content())
        if self.messages is None:
            self.messages = body["messages"]
        turn = {"role": "assistant", "content": list(self.paused)}
        self.before.add(self.usage)
        self.usage = Usage()
        self.stop_reason = None
        self.streamed = False  # the next request may be retried until it streams
        for by_index in (
            self.ignored,
            self.blocks,
            self.raw,
            self.start_input,
            self.wire,
            self.queued,
        ):
            by_index.clear()  # the next response numbers its blocks from 0
        self.open_index = None
        self.wire_parts.clear()
        return {**body, "messages": [*self.messages, turn]}

    def _usage(self, raw: Any) -> None:
        usage = self.usage
        if raw is None:
            return
        # The counts are cumulative: message_delta repeats or raises message_start's. Some
        # compatible servers send 0 in one of the two (sglang, gateways); a count never
        # falls, so a smaller one is no news.
        usage.input = max(usage.input, getattr(raw, "input_tokens", None) or 0)
        usage.output = max(usage.output, getattr(raw, "output_tokens", None) or 0)
        usage.cache_read = max(usage.cache_read, getattr(raw, "cache_read_input_tokens", None) or 0)
        usage.cache_write = max(
            usage.cache_write, getattr(raw, "cache_creation_input_tokens", None) or 0
        )
        long = getattr(getattr(raw, "cache_creation", None), "ephemeral_1h_input_tokens", None)
        if isinstance(long, int) and long > 0:
            self.long_writes = long
            self.builder.reprice = self._reprice
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
        if self.pauses:  # the paused responses' usage too
            total = Usage()
            total.add(self.before)
            total.add(usage)
            usage = total
        self.builder.set_usage(usage)

    def _reprice(self, cost: Cost, price: ModelCost) -> None:
        """One-hour cache writes cost twice the input price; the model's `cache_write`
        price (what the cost holds for them now) is the five-minute one."""
        extra = self.long_writes * (_LONG_WRITE_FACTOR * price.input - price.cache_write) / 1e6
        cost.cache_write += extra
        cost.total += extra

    def finish(self) -> None:
        self._release(every=True)
        reason = self.stop_reason
        if reason == "refusal":
            self.builder.fail("error", "the model refused to answer (stop reason: refusal)")
            return
        if reason is None:
            self.builder.fail("error", "the stream ended without a stop reason")
            return
        if reason == "pause_turn":
            self.builder.fail(
                "error",
                f"the API paused the turn (stop reason: pause_turn) {self.pauses + 1} times; "
                "its server tools did not finish",
            )
            return
        self.builder.done_by_wire_reason(reason, _STOP_REASONS, field="stop_reason")


_WIRE_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
    "input_json_delta": "input",
}
"""The block field each delta kind streams."""

_DELTA = {"text": "text", "thinking": "thinking", "signature": "signature", "input": "partial_json"}
"""The delta's attribute holding each field's piece."""


def _continuation(assembler: StreamAssembler, body: dict[str, Any]) -> dict[str, Any] | None:
    assert isinstance(assembler, _Assembler)
    return assembler.continuation(body)


async def _open_stream(
    client: AsyncAnthropic, body: dict[str, Any], idle_timeout_s: float | None
) -> Any:
    return await open_raw_stream(
        client.messages.with_raw_response.create,
        body,
        ("model", "messages", "max_tokens"),
        idle_timeout_s,
    )


def _classify(exc: BaseException, anthropic: ModuleType) -> RetryDecision | None:
    if isinstance(exc, anthropic.APIStatusError) and exc.status_code == 200:
        # an `error` event inside the stream
        kind = _error_type(exc.body)
        retryable = kind in ("overloaded_error", "api_error", "rate_limit_error")
        return RetryDecision(f"stream error {kind}") if retryable else None
    return sdk_retry_decision(exc, anthropic)


def _error_type(body: object) -> str | None:
    error = api_error(body)
    kind = error.get("type") if error is not None else None
    return str(kind) if kind else None


MESSAGES: SdkApi[AsyncAnthropic] = SdkApi(
    name="anthropic-messages",
    sdk="anthropic",
    client_class="AsyncAnthropic",
    env_var="ANTHROPIC_API_KEY",
    key_required=lambda model: model.base_url is None or "api.anthropic.com" in model.base_url,
    build_body=build_request_body,
    assembler=_Assembler,
    open_stream=_open_stream,
    classify=_classify,
    error_type=True,
    continuation=_continuation,
    base_url_tails=("/v1/messages", "/v1"),
)
