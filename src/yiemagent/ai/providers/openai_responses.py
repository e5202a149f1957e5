"""The `openai-responses` provider: OpenAI's Responses API, streamed over the official
`openai` SDK (DESIGN §21).

`stream_openai_responses` returns an `AssistantMessageEventStream` at once and never raises;
failures end it with an `error` event (HTTP status included, key scrubbed); retries are
ours (`_sdk_call`), as for the other SDK providers.

Requests are stateless: `store` is false, and a reasoning model's reasoning items come back
with their `encrypted_content` (`include: ["reasoning.encrypted_content"]`). Each reasoning
item becomes a `ThinkingContent` (its summary as the text) whose `signature` holds the whole
item as received, as JSON; on the next turn the same model gets the item back exactly so,
before the function calls it led to (without it the API answers 404 for an item it did not
store, or reasons from nothing); an item that came with neither its encrypted content nor
its reasoning text is not sent back (by its id alone the API refuses it). Messages: user
text as `input_text`, images as `input_image` (data URLs, `detail` "auto": the API's
schema requires the field, and servers that check it, vLLM's, refuse an image without
it), PDFs as `input_file`
(`file_data`); assistant text as an
assistant message, tool calls as `function_call` items (`call_id` = `ToolCall.id`), tool
results as `function_call_output` (with images, as a list of `input_text` and
`input_image`). A model that reads no images or PDFs gets the attachments' text stand-ins.

Stream events: output text and refusal deltas → text (a message whose text came in no delta,
only in its `done` event or its finished item, gets it from there, once); `function_call`
items and their argument deltas → tool calls (deltas routed by item: some servers stream
several calls at once; arguments sent only whole, in `function_call_arguments.done`, are
taken from there; a final item's whole arguments win; deltas for an item never added as a
`function_call` end the call in an error naming it); reasoning summary (or reasoning
text) deltas → thinking; `response.completed` → usage (cached input tokens as cache reads)
and the stop reason ("toolUse" when a call was made); `response.incomplete` → the stop
reason of its reason (`_INCOMPLETE_REASONS`; an error for a content filter);
`response.failed` and `error` events → an error (a transient one — `server_error`,
`rate_limit_exceeded`, … — before any output is retried like the HTTP status it stands for).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from yiemagent.ai._retry import RetryDecision
from yiemagent.ai._sanitize import image_base64
from yiemagent.ai.attachments import attachment_stand_in, image_type_stand_in
from yiemagent.ai.builder import DoneReason, MessageBuilder, complete_arguments
from yiemagent.ai.openai_wire import (
    function_fields,
    is_openai_proper,
    openai_only_fields,
    signature_object,
    strict_schema_allowed,
    usage_from_openai,
)
from yiemagent.ai.providers._refused_settings import open_adapting
from yiemagent.ai.providers._sdk_call import SdkApi, StreamFailed, open_raw_stream, stream_sdk
from yiemagent.ai.providers._sdk_failures import sdk_retry_decision
from yiemagent.ai.providers.openai_completions import openai_tool_call_id
from yiemagent.ai.transform import transform_messages
from yiemagent.types.messages import (
    AssistantMessage,
    DocumentContent,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import AssistantMessageEventStream, Context, Model, StreamOptions

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "MIN_OUTPUT_TOKENS",
    "RESPONSES",
    "build_request_body",
    "convert_input",
    "stream_openai_responses",
]

logger = logging.getLogger(__name__)


def stream_openai_responses(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one Responses API call (the `openai-responses` `StreamFn`).

    Args:
        model: `base_url` selects the server (OpenAI's by default); `reasoning` whether
            reasoning items are asked for.
        context: System prompt (`instructions`), messages (repaired with
            `transform_messages`), tools (function tools).
        options: `reasoning` (effort), `max_tokens` (`max_output_tokens`, at least
            `MIN_OUTPUT_TOKENS`), `temperature`,
            `session_id` (`prompt_cache_key`), `cache_retention`, `metadata`, …

    Returns:
        The event stream; it always ends with `done` or `error`.
    """
    return stream_sdk(RESPONSES, model, context, options)


# ── request ──────────────────────────────────────────────────────────────────


def convert_input(model: Model, context: Context) -> list[dict[str, Any]]:
    """The `input` items for `context.messages` (see the module docstring)."""
    images_ok, pdfs_ok = "image" in model.input, "pdf" in model.input
    items: list[dict[str, Any]] = []
    messages = transform_messages(
        context.messages,
        model,
        normalize_tool_call_id=openai_tool_call_id,
        tool_names=[tool.name for tool in context.tools or ()],
    )
    for message in messages:
        if isinstance(message, UserMessage):
            content = [_input_part(b, images_ok, pdfs_ok) for b in message.content]
            # the API refuses an empty list ("minimum length 1"): no blocks go as no text
            items.append(
                {"role": "user", "content": content or [{"type": "input_text", "text": ""}]}
            )
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(message, model))
        elif isinstance(message, ToolResultMessage):
            items.append(_tool_output(message, images_ok))
    return items


def _input_part(
    block: TextContent | ImageContent | DocumentContent, images_ok: bool, pdfs_ok: bool
) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "input_text", "text": block.text}
    if isinstance(block, ImageContent) and images_ok:
        data, mime_type = image_base64(block.data, block.mime_type)
        stand_in = image_type_stand_in(mime_type, "the Responses API")
        if stand_in is not None:
            return {"type": "input_text", "text": stand_in}
        return {
            "type": "input_image",
            "image_url": f"data:{mime_type};base64,{data}",
            "detail": "auto",
        }
    if isinstance(block, DocumentContent) and pdfs_ok:
        return {
            "type": "input_file",
            "filename": block.name or "document.pdf",
            "file_data": f"data:{block.mime_type};base64,{block.data}",
        }
    return {"type": "input_text", "text": attachment_stand_in(block)}


def _assistant_items(message: AssistantMessage, model: Model) -> list[dict[str, Any]]:
    same_model = message.api == model.api and message.model == model.id
    items: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                items.append({"role": "assistant", "content": block.text})
        elif isinstance(block, ThinkingContent):
            item = _reasoning_item(block.signature) if same_model else None
            if item is not None:
                items.append(item)  # exactly as received
        else:
            arguments = block.arguments if isinstance(block.arguments, dict) else {}
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": json.dumps(arguments, ensure_ascii=False),
                }
            )
    # A reasoning item must be followed by the output it led to; one left alone (a turn cut
    # off while reasoning, or ending in blank text) makes the API refuse the request.
    while items and items[-1].get("type") == "reasoning":
        items.pop()
    return items


def _reasoning_item(signature: str | None) -> dict[str, Any] | None:
    """The reasoning item a thinking block's signature holds, or None, also for one that
    carries neither its `encrypted_content` (a model not marked as reasoning, whose content
    was not asked for) nor its reasoning text (`content`, which compatible servers send and
    want back): with `store` false the API keeps nothing, and an item sent back by its id
    alone is refused, "Item with id 'rs_...' not found", on every later request."""
    item = signature_object(signature)
    if item is None or item.get("type") != "reasoning":
        return None
    return item if item.get("encrypted_content") or item.get("content") else None


def _tool_output(message: ToolResultMessage, images_ok: bool) -> dict[str, Any]:
    texts = [b.text for b in message.content if isinstance(b, TextContent) and b.text.strip()]
    images = [b for b in message.content if isinstance(b, ImageContent)]
    output: str | list[dict[str, Any]]
    if images and images_ok:
        output = [{"type": "input_text", "text": text} for text in texts]
        output += [_input_part(image, True, False) for image in images]
    else:
        text = "\n".join(texts + [attachment_stand_in(image) for image in images])
        output = text or ("(error)" if message.is_error else "(no output)")
    return {"type": "function_call_output", "call_id": message.tool_call_id, "output": output}


_INCOMPLETE_REASONS: Final[Mapping[str, DoneReason]] = {
    "max_output_tokens": "length",
    "max_messages": "stop",
    "steered": "stop",
}
"""An incomplete response's `incomplete_details.reason` → its stop reason. Only the token
limit cuts an item short ("length": its calls are not run). A response stopped at the API's
limit on messages, or at a safe output boundary after a `response.steer` (a WebSocket
client's new input), ends on whole items: "stop", or "toolUse" when it made calls, which
run. No reason, or one not listed, is "length": nothing says its last item is whole.
"content_filter" ends the message as an error instead."""

MIN_OUTPUT_TOKENS = 16
"""The least `max_output_tokens` the API takes: a smaller `StreamOptions.max_tokens` is
sent as this, since OpenAI (and Azure) refuse the whole request otherwise (HTTP 400
"integer below minimum value. Expected a value >= 16")."""


def build_request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body of the streaming Responses request (before `on_payload`)."""
    body: dict[str, Any] = {
        "model": model.id,
        "input": convert_input(model, context),
        "stream": True,
        "store": False,
    }
    if context.system_prompt:
        body["instructions"] = context.system_prompt
    if context.tools:
        body["tools"] = [
            {"type": "function", **function_fields(tool), "strict": False} for tool in context.tools
        ]
    if options.output_schema is not None:  # native structured output
        schema = dict(options.output_schema)
        strict = strict_schema_allowed(schema)
        body["text"] = {
            "format": {
                "type": "json_schema",
                "name": "final_result",
                "schema": schema,
                "strict": strict,
            }
        }
    if options.max_tokens is not None:
        body["max_output_tokens"] = max(options.max_tokens, MIN_OUTPUT_TOKENS)
    thinking = bool(options.reasoning and str(options.reasoning) != "off")
    if model.reasoning:
        body["include"] = ["reasoning.encrypted_content"]
        if thinking:
            body["reasoning"] = {"effort": options.reasoning, "summary": "auto"}
    if options.temperature is not None and not model.reasoning:
        body["temperature"] = options.temperature  # reasoning models refuse it
    body.update(openai_only_fields(model, options))
    return body


# ── streaming ────────────────────────────────────────────────────────────────


@dataclass(slots=True)
class _Assembler:
    """Turns Responses stream events into builder calls."""

    builder: MessageBuilder
    streamed: bool = False
    status: str | None = None
    incomplete: str | None = None
    failure: str | None = None
    calls: dict[str, ToolCall] = field(default_factory=dict)
    """Function-call items by item id."""
    raw: dict[str, str] = field(default_factory=dict)
    """The argument text each function-call item has received, by item id."""
    thinking: dict[str, ThinkingContent] = field(default_factory=dict)
    """Reasoning items by id."""
    summary_parts: dict[str, int] = field(default_factory=dict)
    open_key: str | None = None
    """The function-call item whose block was opened last."""
    waiting: list[str] = field(default_factory=list)
    """Function-call items added while the open one's arguments were unfinished (a server
    streaming several calls at once), in order, each with a detached block: each opens once
    the one before it is done, so every call streams all of its arguments between its
    start and its end."""
    finals: dict[str, str] = field(default_factory=dict)
    """The arguments of the items that were done while waiting, by item id."""
    texted: set[str] = field(default_factory=set)
    """Message items whose text has been taken (from deltas, or whole from a done event)."""

    def feed(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind == "response.output_item.added":
            self._item_added(event.item)
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            self._text(event.item_id, event.delta)
        elif kind == "response.output_text.done" and event.item_id not in self.texted:
            self._text(event.item_id, event.text)  # a server that sent no deltas
        elif kind == "response.refusal.done" and event.item_id not in self.texted:
            self._text(event.item_id, event.refusal)
        elif kind == "response.function_call_arguments.delta":
            self._arguments(event.item_id, event.delta)
        elif kind == "response.function_call_arguments.done":
            if event.item_id in self.calls and not self.raw[event.item_id]:
                self._arguments(event.item_id, event.arguments)  # a server sent no deltas
        elif kind == "response.reasoning_summary_part.added":
            count = self.summary_parts.get(event.item_id, 0)
            self.summary_parts[event.item_id] = count + 1
            if count and event.item_id in self.thinking:
                self.builder.thinking_delta("\n\n")
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            if event.item_id in self.thinking and event.delta:
                self.builder.thinking_delta(event.delta)
        elif kind == "response.output_item.done":
            self._item_done(event.item)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self._ended(event.response)
        elif kind == "error":
            self._failed(getattr(event, "code", None), event.message)

    def _item_added(self, item: Any) -> None:
        if item.type == "function_call":
            self.streamed = True
            key = item.id or item.call_id
            self.raw[key] = ""
            if self.waiting or not self._open_call_done():
                self.calls[key] = ToolCall(item.call_id or "", item.name or "", {})
                self.waiting.append(key)
                return
            self.builder.tool_call_start(item.call_id or "", item.name or "")
            block = self.builder.message.content[-1]
            assert isinstance(block, ToolCall)
            self.calls[key] = block
            self.open_key = key
        elif item.type == "reasoning":
            self.streamed = True
            self._open_waiting()
            self.builder.thinking_delta("")
            block = self.builder.message.content[-1]
            assert isinstance(block, ThinkingContent)
            self.thinking[item.id] = block
        elif item.type == "message":
            self.streamed = True
            self._open_waiting()
            self.builder.end_block()
        else:
            logger.debug("ignored output item of type %r", item.type)

    def _text(self, item_id: str, text: str) -> None:
        """Text of the message item `item_id`: a delta, or its whole text when a server
        streamed none (it sent only `output_text.done` or the finished item)."""
        self.streamed = True
        self._open_waiting()
        self.texted.add(item_id)
        if text:
            self.builder.text_delta(text)

    def _arguments(self, key: str, delta: str) -> None:
        """An argument delta, routed by its item: servers may stream several calls at once
        (every call opened before any is closed, deltas interleaved).

        Raises:
            ValueError: arguments for an item the server did not add as a `function_call`
                item (a call needs the call id and name only its item carries).
        """
        call = self.calls.get(key)
        if call is None:
            raise ValueError(
                f"the server sent function call arguments for output item {key!r}, "
                "which it did not add as a function_call item"
            )
        if not delta:
            return
        self.raw[key] += delta
        if self.builder.open_block is call:
            self.builder.tool_call_delta(delta)
            if self.waiting and "}" in delta and self._open_call_done():
                self._open_waiting(every=False)
        else:  # waiting, or a late fragment of a call already closed: completed in place
            complete_arguments(call, self.raw[key])

    def _open_call_done(self) -> bool:
        """Whether no call is open, or the open call's arguments are a whole JSON object."""
        key = self.open_key
        if key is None or self.builder.open_block is not self.calls.get(key):
            return True
        try:
            return isinstance(json.loads(self.raw[key]), dict)
        except ValueError:
            return False

    def _open_waiting(self, *, every: bool = True) -> None:
        """Open the waiting calls in order, each with the arguments it has so far (one done
        already is closed at once); with `every` false, only while the one just opened is
        done (the rest wait for it)."""
        while self.waiting:
            key = self.waiting.pop(0)
            waited = self.calls[key]
            self.builder.tool_call_start(waited.id, waited.name)  # closes the one before
            block = self.builder.message.content[-1]
            assert isinstance(block, ToolCall)
            self.calls[key] = block
            self.open_key = key
            if self.raw[key]:
                self.builder.tool_call_delta(self.raw[key])
            if key in self.finals:
                self._close_call(key, self.finals.pop(key))
            elif not every and not self._open_call_done():
                break

    def _close_call(self, key: str, whole: str) -> None:
        """The function-call item `key` is done, its arguments `whole` as the item says."""
        call = self.calls[key]
        if self.builder.open_block is call:
            self.builder.end_block()
        if whole and whole != self.raw[key]:  # the final item's arguments win
            complete_arguments(call, whole)

    def _item_done(self, item: Any) -> None:
        key = item.id or getattr(item, "call_id", None)
        if item.type == "function_call" and key not in self.calls:
            self._item_added(item)  # a server that sent the finished call alone
        if item.type == "function_call" and key in self.calls:
            whole = item.arguments or ""
            if not self.raw[key] and whole:  # no deltas: the arguments come whole here
                self._arguments(key, whole)
            if key in self.waiting:
                self.finals[key] = whole
                return
            self._close_call(key, whole)
            if self.waiting and self._open_call_done():
                self._open_waiting(every=False)
        elif item.type == "message" and item.id not in self.texted:
            parts = item.content or ()
            whole = "".join(getattr(p, "text", None) or getattr(p, "refusal", None) or ""
                            for p in parts)  # fmt: skip
            self._text(item.id, whole)
        elif item.type == "reasoning" and item.id in self.thinking:
            block = self.thinking[item.id]
            # The item exactly as received (summary, encrypted_content): sent back as is.
            block.signature = json.dumps(item.model_dump(mode="json", exclude_none=True))
            if not block.thinking:  # no summary streamed: take it from the item
                block.thinking = "\n\n".join(part.text for part in item.summary or ())
            self.builder.end_block()

    def _failed(self, code: str | None, message: str) -> None:
        """A failure the API reported in the stream: retried while nothing has been
        streamed when it is a transient one (`StreamFailed`), else the message's error."""
        status = _TRANSIENT.get(str(code))
        text = f"{code or 'error'}: {message}"
        if status is not None and not self.streamed:
            raise StreamFailed(text, status)
        self.failure = text

    def _ended(self, response: Any) -> None:
        error = getattr(response, "error", None)
        if error is not None:
            self._failed(error.code, error.message)
        self.status = response.status
        details = getattr(response, "incomplete_details", None)
        self.incomplete = getattr(details, "reason", None)
        usage = getattr(response, "usage", None)
        if usage is not None:
            result = usage_from_openai(usage)
            result.total_tokens = (
                result.input + result.output + result.cache_read + result.cache_write
            )
            self.builder.set_usage(result)

    def finish(self) -> None:
        self._open_waiting()
        if self.failure is not None or self.status == "failed":
            self.builder.fail("error", self.failure or "the response failed")
        elif self.status == "incomplete":
            if self.incomplete == "content_filter":
                self.builder.fail("error", "the provider's content filter stopped the response")
            else:
                stop = _INCOMPLETE_REASONS.get(self.incomplete or "", "length")
                self.builder.done_by_content(stop)
        elif self.status is None:
            self.builder.fail("error", "the stream ended before the response was complete")
        else:
            self.builder.done_by_content("stop")


async def _open_stream(
    client: AsyncOpenAI, body: dict[str, Any], idle_timeout_s: float | None
) -> Any:
    """The raw streamed response to `body`. A reasoning effort or a cache retention the
    server refuses for the model is replaced or left out (`open_adapting`). A reasoning summary
    the server has refused for this key and model (`_NO_SUMMARY`) is left out of the
    request; one it refuses now (a 400 about the parameter `reasoning.summary`) is
    remembered, told once on one line (a warning of this module's logger), left out, and
    the request sent once more. `body` itself loses the summary, so a retry of the call
    does not ask for it again."""
    import openai

    create = client.responses.with_raw_response.create
    refused = _summary_key(client, body)
    if refused in _NO_SUMMARY:
        _drop_summary(body)

    def open_once() -> Awaitable[Any]:
        return open_raw_stream(create, body, ("model", "input"), idle_timeout_s)

    try:
        return await open_adapting(open_once, str(client.base_url), body)
    except openai.BadRequestError as exc:
        if exc.param != "reasoning.summary" or not _drop_summary(body):
            raise
        _NO_SUMMARY.add(refused)
        logger.warning(
            "%s: reasoning summaries refused, so the request goes without them and the "
            "model thinks out of sight: %s",
            body["model"],
            " ".join(_error_text(exc).split()),
        )
    return await open_adapting(open_once, str(client.base_url), body)


_NO_SUMMARY: set[tuple[str, str, str]] = set()
"""(base URL, SHA-256 of the API key, model id) whose reasoning summaries the server
refused in this process: OpenAI refuses them to an organization it has not verified, and
verification is per organization, so per key."""


def _summary_key(client: AsyncOpenAI, body: dict[str, Any]) -> tuple[str, str, str]:
    digest = hashlib.sha256(str(client.api_key).encode()).hexdigest()
    return str(client.base_url), digest, str(body.get("model"))


def _drop_summary(body: dict[str, Any]) -> bool:
    """Take `reasoning.summary` out of `body`; whether it was there."""
    reasoning = body.get("reasoning")
    if not isinstance(reasoning, dict) or "summary" not in reasoning:
        return False
    body["reasoning"] = {k: v for k, v in reasoning.items() if k != "summary"}
    return True


def _error_text(exc: Any) -> str:
    """The server's own words in an SDK error: its `message` field, else the SDK's text."""
    body = exc.body
    said = body.get("message") if isinstance(body, dict) else None
    return said if isinstance(said, str) else str(exc)


_TRANSIENT: dict[str, int] = {
    "server_error": 500,
    "internal_error": 500,
    "server_overloaded": 503,
    "overloaded_error": 503,
    "rate_limit_exceeded": 429,
}
"""Failure codes of the stream that are the server's trouble, not the request's, and the
HTTP status each stands for."""


def _classify(exc: BaseException, openai: ModuleType) -> RetryDecision | None:
    if isinstance(exc, StreamFailed):
        return RetryDecision(f"stream error {exc.status_code}")
    return sdk_retry_decision(exc, openai)


RESPONSES: SdkApi[AsyncOpenAI] = SdkApi(
    name="openai-responses",
    sdk="openai",
    client_class="AsyncOpenAI",
    env_var="OPENAI_API_KEY",
    key_required=is_openai_proper,
    build_body=build_request_body,
    assembler=_Assembler,
    open_stream=_open_stream,
    classify=_classify,
    base_url_tails=("/responses",),
)
"""The Responses API call as `stream_sdk` makes it."""
