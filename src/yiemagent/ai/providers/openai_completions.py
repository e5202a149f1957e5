"""The `openai-completions` provider: streaming Chat Completions over the official `openai`
SDK, for OpenAI and any OpenAI-compatible server (llama.cpp, vLLM, Ollama, OpenRouter…)
(DESIGN §7).

`stream_openai_completions` returns an `AssistantMessageEventStream` at once and streams on a
task of the running event loop. It never raises: every failure (HTTP status, connection,
abort, idle timeout, a hook that raised) ends the stream with an `error` event whose
`error_message` says what happened (HTTP status included, API key scrubbed). Retries are
ours (`_retry.py`, in the SDK call of `_sdk_call.py`), the SDK's are off.

Decisions for compatible servers: `temperature` goes to every model but OpenAI's reasoning
ones (o3, gpt-5: they refuse it); `max_tokens` is sent only when `StreamOptions.max_tokens`
is set (as `max_completion_tokens` to OpenAI itself, `max_tokens` elsewhere: llama.cpp, vLLM
and Ollama read that one, and vLLM rejects a value larger than the context); a server that
refuses either for its model (OpenAI's reasoning models on Azure) gets the request again as
it says (`_refused_settings`);
`prompt_cache_key` (the session id; none with `cache_retention="none"`),
`prompt_cache_retention="24h"` (`cache_retention="long"`) and the `developer` role go to
OpenAI only, `metadata` nowhere (OpenAI refuses it for a completion it does not store, and
stores none; a warning says so once); reasoning effort
goes as `reasoning_effort` (OpenRouter: `reasoning.effort`; one the server refuses for the
model goes again as the nearest it takes, `_refused_settings`; its `reasoning_details`,
Claude's signed and redacted thinking, Gemini's entry for a call and OpenAI's reasoning
summary and item, go back to the same model as the entries they came as, in order).
Thinking received in a `reasoning_content`/`reasoning`/`reasoning_text` delta field is
stored with that field name as its signature and sent back in the same field to the same
model (unless an entry of `reasoning_details` came for it); thinking a LiteLLM proxy
also sends as `thinking_blocks` (Claude's, signed; redacted blocks too) goes back to the same
model as those entries; other models' thinking is not sent. Reasoning written into the
`content` string as its `<think>…</think>` opening (a server with no reasoning parser) is
a thinking block with no signature (`ai/_think_tags.py`), sent back to no server.
`on_payload(body)` may return a
new body; `on_response` gets `{"status": int, "headers": dict}` of the response.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any

from yiemagent.ai._retry import RetryDecision, is_retryable_status
from yiemagent.ai._think_tags import ThinkTagSplitter
from yiemagent.ai.builder import MessageBuilder, complete_arguments
from yiemagent.ai.openai_wire import (
    EXTRA_CONTENT,
    FINISH_REASONS,
    REASONING_FIELDS,
    is_mistral,
    is_openai_proper,
    messages_to_openai,
    openai_only_fields,
    openai_tool,
    signature_object,
    strict_schema_allowed,
    usage_from_openai,
)
from yiemagent.ai.providers._refused_settings import open_adapting
from yiemagent.ai.providers._sdk_call import SdkApi, open_raw_stream, stream_sdk
from yiemagent.ai.providers._sdk_failures import (
    api_error,
    json_body_text,
    sdk_retry_decision,
)
from yiemagent.ai.transform import transform_messages
from yiemagent.types.messages import ThinkingContent, ToolCall
from yiemagent.types.model import AssistantMessageEventStream, Context, Model, StreamOptions

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "CHAT_COMPLETIONS",
    "build_request_body",
    "mistral_tool_call_id",
    "openai_tool_call_id",
    "stream_openai_completions",
]

logger = logging.getLogger(__name__)


def stream_openai_completions(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one Chat Completions call (the `openai-completions` `StreamFn`).

    Args:
        model: `base_url` selects the server (None: OpenAI); `provider` the API key variable.
        context: System prompt, messages (repaired with `transform_messages`), tools.
        options: Per-call options; see the module docstring for how each is sent.

    Returns:
        The event stream; it always ends with `done` or `error`.
    """
    return stream_sdk(CHAT_COMPLETIONS, model, context, options)


# ── the request ──────────────────────────────────────────────────────────────

_ID_OK = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def openai_tool_call_id(tool_call_id: str) -> str:
    """A tool-call id OpenAI accepts (≤ 40 of `[A-Za-z0-9_-]`), stable for a given input."""
    if _ID_OK.fullmatch(tool_call_id):
        return tool_call_id
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", tool_call_id)
    if 0 < len(clean) <= 40:
        return clean
    return "call_" + hashlib.sha256(tool_call_id.encode(errors="replace")).hexdigest()[:32]


_KIMI_ID = re.compile(r"^functions\.[A-Za-z0-9_-]+:\d+$")


def _compatible_tool_call_id(tool_call_id: str) -> str:
    """A tool-call id for a compatible server: as `openai_tool_call_id`, but Kimi's own
    ids (`functions.<name>:<n>`) go back as they came: Kimi K2 reads them from the
    history, and one rewritten is a call it does not recognise."""
    return tool_call_id if _KIMI_ID.fullmatch(tool_call_id) else openai_tool_call_id(tool_call_id)


_MISTRAL_ID_OK = re.compile(r"^[A-Za-z0-9]{9}$")


def mistral_tool_call_id(tool_call_id: str) -> str:
    """A tool-call id Mistral accepts (exactly 9 of `[A-Za-z0-9]`), stable for a given input."""
    if _MISTRAL_ID_OK.fullmatch(tool_call_id):
        return tool_call_id
    return hashlib.sha256(tool_call_id.encode(errors="replace")).hexdigest()[:9]


_MISTRAL_MODEL = re.compile(
    r"mistral|mixtral|ministral|magistral|devstral|codestral|pixtral|voxtral", re.IGNORECASE
)
"""A model id naming one of Mistral's models: on any server (vLLM's `mistral-common` check,
their chat templates in llama.cpp and others) they take only ids of 9 letters and digits."""


def build_request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body of the streaming Chat Completions request (before `on_payload`)."""
    proper = is_openai_proper(model)
    normalize = (
        mistral_tool_call_id
        if is_mistral(model) or _MISTRAL_MODEL.search(model.id)
        else openai_tool_call_id
        if proper
        else _compatible_tool_call_id
    )
    messages = transform_messages(
        context.messages,
        model,
        normalize_tool_call_id=normalize,
        tool_names=[tool.name for tool in context.tools or ()],
    )
    body: dict[str, Any] = {
        "model": model.id,
        "messages": messages_to_openai(messages, system_prompt=context.system_prompt, model=model),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if context.tools:
        body["tools"] = [openai_tool(tool) for tool in context.tools]
    if options.output_schema is not None:  # native structured output
        schema = dict(options.output_schema)
        wanted: dict[str, Any] = {"name": "final_result", "schema": schema}
        if proper:  # compatible servers constrain decoding by the schema as it is
            wanted["strict"] = strict_schema_allowed(schema)
        body["response_format"] = {"type": "json_schema", "json_schema": wanted}
    if options.temperature is not None and not (proper and model.reasoning):
        body["temperature"] = options.temperature  # OpenAI's reasoning models refuse it
    if options.max_tokens is not None:
        body["max_completion_tokens" if proper else "max_tokens"] = options.max_tokens
    if options.reasoning and str(options.reasoning) != "off" and model.reasoning:  # "off": None
        if model.provider == "openrouter" or "openrouter.ai" in (model.base_url or ""):
            body["reasoning"] = {"effort": options.reasoning}
        else:
            body["reasoning_effort"] = options.reasoning
    fields = openai_only_fields(model, options)
    if fields.pop("metadata", None) is not None:
        _metadata_not_sent(model)
    body.update(fields)
    return body


_told_metadata: set[str] = set()
"""Model ids whose call's `metadata` has been said to go unsent, in this process."""


def _metadata_not_sent(model: Model) -> None:
    """Warn, once per model, that Chat Completions gets no `metadata`: OpenAI takes it only
    for a completion it stores ("The 'metadata' parameter is only allowed when 'store' is
    enabled", HTTP 400), and a call stores nothing."""
    if model.id in _told_metadata:
        return
    _told_metadata.add(model.id)
    logger.warning(
        "%s: metadata is not sent: OpenAI's Chat Completions takes it only for a stored"
        " completion (the Responses API, openai-responses/%s, takes it)",
        model.id,
        model.id,
    )


# ── streaming ────────────────────────────────────────────────────────────────


@dataclass(slots=True)
class _Call:
    call: ToolCall
    """The call's block in the message (a detached one while it waits to open)."""
    raw: str = ""


@dataclass(slots=True)
class _Assembler:
    """Turns chunks into builder calls; tool calls are assembled by `index` (parallel
    calls are never cross-wired, even when later chunks carry only the index)."""

    builder: MessageBuilder
    calls: dict[int, _Call] = field(default_factory=dict)
    """The calls in order of appearance (key = position)."""
    keys: dict[int, int] = field(default_factory=dict)
    """The wire `index` → the key of the call it currently names."""
    current: int | None = None
    waiting: list[int] = field(default_factory=list)
    """Calls that began while the open one's arguments were unfinished (a server that
    interleaves its calls), in order: each opens once the one before it is done, so every
    call streams all of its arguments between its start and its end."""
    finish_reason: str | None = None
    ended_with_done: bool = False
    """Whether the stream ended with `data: [DONE]`: whole, with or without a finish reason."""
    streamed: bool = False
    signatures: dict[str, str] = field(default_factory=dict)
    """Call id → the encrypted `reasoning_details` entry naming it, as JSON (OpenRouter)."""
    think_tags: ThinkTagSplitter = field(default_factory=ThinkTagSplitter)
    """The `content` string's `<think>…</think>` opening, read as thinking."""

    def feed(self, chunk: Any) -> None:
        usage = getattr(chunk, "usage", None)
        if usage is None:  # Groq sends it in `x_groq`
            usage = _field(getattr(chunk, "x_groq", None), "usage")
        if usage is not None:
            self.builder.set_usage(usage_from_openai(usage))
        for choice in chunk.choices or ():
            if choice.index:  # only the first choice (n=1); others would interleave
                continue
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
            delta = choice.delta
            if delta is None:
                continue
            said = False  # thinking text this delta gave in a reasoning field
            for name in REASONING_FIELDS:
                value = getattr(delta, name, None)
                if isinstance(value, str) and value:
                    self._before_text()
                    self.builder.thinking_delta(value, None if self._thinking_open() else name)
                    said = True
                    break
            for block in _field(delta, "thinking_blocks") or ():
                self._thinking_block(block, said=said)
            refusal = getattr(delta, "refusal", None)  # OpenAI: the model declines, in words
            content = refusal if isinstance(refusal, str) and refusal else delta.content
            if isinstance(content, list):  # Mistral: chunks of text and thinking
                self._content_parts(content)
            elif isinstance(content, str) and content:
                self._content_text(self.think_tags.feed(content))
            for tool_delta in delta.tool_calls or ():
                self.streamed = True
                self._tool_delta(tool_delta)
            function_call = _field(delta, "function_call")
            if function_call is not None:  # the functions API's one call, kept by old servers
                self.streamed = True
                self._tool_delta(
                    SimpleNamespace(index=_FUNCTION_CALL, id=None, function=function_call)
                )
            for detail in _field(delta, "reasoning_details") or ():
                self._reasoning_detail(detail, said=said)

    def _content_text(self, pieces: Sequence[tuple[str, str]]) -> None:
        """The `content` string's pieces: its `<think>` opening as thinking (a block with no
        signature, which goes back to no server), then the answer as text."""
        for kind, text in pieces:
            self._before_text()
            if kind == "thinking":
                self.builder.thinking_delta(text)
                continue
            if self.think_tags.reasoning_closed:
                self.builder.answer_follows()
            self.builder.text_delta(text)

    def _content_parts(self, parts: list[Any]) -> None:
        """`content` given as a list of parts: `{"type": "text", "text"}` and
        `{"type": "thinking", "thinking": [{"type": "text", "text"}, ...] | str}`."""
        for part in parts:
            kind = _field(part, "type")
            if kind == "text":
                text = _field(part, "text")
                if isinstance(text, str) and text:
                    self._before_text()
                    self.builder.text_delta(text)
            elif kind == "thinking":
                inner = _field(part, "thinking")
                pieces = inner if isinstance(inner, list) else [inner]
                for piece in pieces:
                    text = piece if isinstance(piece, str) else _field(piece, "text")
                    if isinstance(text, str) and text:
                        self._before_text()
                        self.builder.thinking_delta(text)

    def _thinking_block(self, block: Any, *, said: bool) -> None:
        """An entry of `thinking_blocks`, LiteLLM's form of Claude's thinking: a piece of a
        thinking block's text (LiteLLM also sends it as `reasoning_content`, `said`: taken
        from there already), the block's signature, which ends it, or a redacted block.
        A signed or redacted block's signature becomes the entry as JSON (without the
        text), so that the block goes back as the entry it came as: LiteLLM builds the
        next request's Anthropic thinking blocks from `thinking_blocks` alone."""
        kind = _field(block, "type")
        if kind == "redacted_thinking":
            data = _field(block, "data")
            if isinstance(data, str) and data:
                self._before_text()
                self.builder.end_block()  # a block of its own, apart from any thinking before
                entry = {"type": "redacted_thinking", "data": data}
                self.builder.thinking_delta("", json.dumps(entry))
                redacted = self.builder.message.content[-1]
                assert isinstance(redacted, ThinkingContent)
                redacted.redacted = True
                self.builder.end_block()
            return
        if kind != "thinking":
            return
        text = _field(block, "thinking")
        if isinstance(text, str) and text and not said:
            self._before_text()
            self.builder.thinking_delta(text)
        signature = _field(block, "signature")
        if isinstance(signature, str) and signature:
            self._sign_thinking(json.dumps({"type": "thinking", "signature": signature}))

    def _before_text(self) -> None:
        """Text or thinking streams next: the calls still waiting open first, so their
        blocks come before it, and no call stays current, so a late fragment of a call
        completes it in place instead of streaming into the text's block."""
        self.streamed = True
        self._open_waiting()
        self.current = None

    def _thinking_open(self) -> bool:
        content = self.builder.message.content
        return bool(content) and isinstance(content[-1], ThinkingContent)

    def _tool_delta(self, delta: Any) -> None:
        wire = delta.index
        function = delta.function
        name = (function.name if function else None) or ""
        fragment: Any = (function.arguments if function else None) or ""
        if not isinstance(fragment, str):  # some servers send the arguments as an object
            fragment = json.dumps(fragment)
        if wire is None:  # some servers omit the index: continue the last call
            key = self.current if self.current is not None else len(self.calls) - 1
        else:
            key = self.keys.get(wire, -1)
        entry = self.calls.get(key)
        # A different id opens a new call, also when a buggy server reuses the index; with an
        # index, only together with a name (a server that varies the id on every fragment of
        # one call sends the name once). So does a named new object after whole arguments.
        renamed = entry is not None and delta.id and entry.call.id and delta.id != entry.call.id
        following = entry is not None and bool(name) and _next_call(entry, name, fragment)
        if (renamed and (name or wire is None)) or following:
            entry = None
        if entry is None:
            key = len(self.calls)
            if self.waiting or not name or not self._open_call_done():
                # opens when the one before it is done and its name is known
                entry = _Call(ToolCall(delta.id or "", name, {}))
                self.waiting.append(key)
            else:
                self.builder.end_block()  # close the previous call before opening this one
                self.builder.tool_call_start(delta.id or "", name)
                entry = _Call(self.builder.message.content[-1])  # type: ignore[arg-type]
                self.current = key
            self.calls[key] = entry
            if wire is not None:
                self.keys[wire] = key
        else:
            if delta.id and not entry.call.id:
                entry.call.id = delta.id
            if name:
                entry.call.name = _fold_name(entry.call.name, name)
                if key in self.waiting and self._open_call_done():
                    self._open_waiting(every=False)
        signature = _thought_signature(_field(delta, "extra_content"))
        if signature:  # Gemini: sent back with the call
            entry.call.thought_signature = signature
        fragment = _new_part(entry.raw, fragment)
        if not fragment:
            return
        entry.raw += fragment
        if key == self.current:
            self.builder.tool_call_delta(fragment)
            if self.waiting and "}" in fragment and self._open_call_done():
                self._open_waiting(every=False)
        else:  # waiting, or a late fragment of a call already closed: complete it in place
            complete_arguments(entry.call, entry.raw)

    def _open_call_done(self) -> bool:
        """Whether no call is open, or the open call's arguments are a whole JSON object."""
        entry = self.calls.get(self.current) if self.current is not None else None
        content = self.builder.message.content
        if entry is None or not content or content[-1] is not entry.call:
            return True
        try:
            return isinstance(json.loads(entry.raw), dict)
        except ValueError:
            return False

    def _open_waiting(self, *, every: bool = True, last: bool = False) -> None:
        """Open the waiting calls in order, each with the arguments it has so far; with
        `every` false, only while the one just opened is done and the next has its name
        (the rest wait for it). A call without a name is no call to open: with `every` it
        is passed over and keeps waiting for its name, and with `last` (the stream has
        ended) it is dropped."""
        nameless: list[int] = []
        while self.waiting:
            key = self.waiting.pop(0)
            entry = self.calls[key]
            waited = entry.call
            if not waited.name:
                if not every:
                    self.waiting.insert(0, key)
                    break
                if not last:
                    nameless.append(key)
                continue
            self.builder.tool_call_start(waited.id, waited.name)  # closes the one before
            entry.call = self.builder.message.content[-1]  # type: ignore[assignment]
            entry.call.thought_signature = waited.thought_signature
            if entry.raw:
                self.builder.tool_call_delta(entry.raw)
            self.current = key
            if not every and not self._open_call_done():
                break
        self.waiting[:0] = nameless

    def _reasoning_detail(self, detail: Any, *, said: bool) -> None:
        """An entry of OpenRouter's `reasoning_details`, which must go back as it came for
        the model to take its own turn again: a `reasoning.text` piece of thinking (its
        text also came as `reasoning`, `said`) or its signature, which ends the block; an
        encrypted entry naming a call (Gemini's thought signature) goes back with that
        call; one naming none (Claude's redacted thinking) or a Responses reasoning item
        (OpenAI's o-series and GPT-5: its id is the item's, `rs_…`, no call's) is a
        redacted block, and so is one whose id named no call by the end (`finish`)."""
        if not isinstance(detail, dict):
            return
        kind = detail.get("type")
        if kind == "reasoning.text":
            text = detail.get("text")
            if isinstance(text, str) and text and not said:
                self._before_text()
                self.builder.thinking_delta(text)
            signature = detail.get("signature")
            if isinstance(signature, str) and signature:
                entry = {k: v for k, v in detail.items() if k != "text" and v is not None}
                self._sign_thinking(json.dumps(entry, ensure_ascii=False))
            return
        if kind == "reasoning.summary":
            self._summary(detail, said=said)
            return
        if kind != "reasoning.encrypted" or not detail.get("data"):
            return
        call_id = detail.get("id")
        if isinstance(call_id, str) and call_id and not _responses_item(detail):
            self.signatures[call_id] = json.dumps(detail, ensure_ascii=False)
            return
        self._redacted(detail)

    def _summary(self, detail: dict[str, Any], *, said: bool) -> None:
        """A piece of a `reasoning.summary` entry (OpenAI's reasoning models through
        OpenRouter: its text also came as `reasoning`, `said`): the thinking block it
        streams into becomes that entry, its first piece's fields as the signature, and
        goes back as one entry with the block's whole text."""
        text = detail.get("summary")
        if isinstance(text, str) and text and not said:
            self._before_text()
            self.builder.thinking_delta(text)
        block = self.builder.open_block
        if isinstance(block, ThinkingContent) and signature_object(block.signature) is None:
            entry = {k: v for k, v in detail.items() if k != "summary" and v is not None}
            block.signature = json.dumps(entry, ensure_ascii=False)

    def _redacted(self, detail: dict[str, Any]) -> None:
        """A redacted thinking block holding the encrypted entry `detail`, as JSON."""
        self._before_text()
        self.builder.end_block()  # a block of its own, apart from any thinking before
        self.builder.thinking_delta("", json.dumps(detail, ensure_ascii=False))
        redacted = self.builder.message.content[-1]
        assert isinstance(redacted, ThinkingContent)
        redacted.redacted = True
        self.builder.end_block()

    def _sign_thinking(self, signature: str) -> None:
        """Give the open thinking block (else the last one before, whose text came before a
        call) `signature`, and end it: thinking after a signature is another block."""
        signed = self.builder.open_block
        if not isinstance(signed, ThinkingContent):
            earlier = [
                b
                for b in self.builder.message.content
                if isinstance(b, ThinkingContent) and not b.redacted
            ]
            signed = earlier[-1] if earlier else None
        if signed is None:
            return
        signed.signature = signature
        if signed is self.builder.open_block:
            self.builder.end_block()

    def finish(self) -> None:
        self._content_text(self.think_tags.finish())
        nameless = [
            {"id": entry.call.id, "arguments": entry.raw}
            for entry in (self.calls[key] for key in self.waiting)
            if not entry.call.name and entry.raw.strip()
        ]
        self._open_waiting(last=True)
        if nameless:  # not run, but not silently gone either
            self.builder.message.details["nameless_tool_calls"] = nameless
        for entry in self.calls.values():
            signature = self.signatures.pop(entry.call.id, None)
            if signature is not None:
                entry.call.thought_signature = signature
        for unclaimed in self.signatures.values():  # named no call: kept, not dropped
            self._redacted(json.loads(unclaimed))
        reason = self.finish_reason
        if reason is None and self.ended_with_done:  # some gateways never send one
            reason = "stop"  # the stop reason follows the content: "toolUse" with calls
        if reason is None:
            self.builder.fail("error", "the stream ended without a finish reason (cut off?)")
            return
        said, reason = str(reason), str(reason).lower()
        failure = _FAILED_BY.get(reason)
        if failure is not None:
            self.builder.fail("error", f"{failure} (finish_reason: {said})")
            return
        message = self.builder.message
        if nameless and not message.text.strip() and not message.tool_calls:
            sent = "; ".join(f"id {c['id']!r}, arguments {c['arguments'][:200]}" for c in nameless)
            self.builder.fail(
                "error", f"the server sent only a tool call without a name ({sent}); not run"
            )
            return
        self.builder.done_by_wire_reason(reason, FINISH_REASONS, field="finish_reason")


def _responses_item(detail: dict[str, Any]) -> bool:
    """Whether an encrypted `reasoning_details` entry is a reasoning item of a Responses API
    (OpenAI's, Azure's, xAI's through OpenRouter: format `…-responses-v1`, id `rs_…`),
    whose id names the item, never a call."""
    form, item_id = detail.get("format"), detail.get("id")
    return (isinstance(form, str) and form.endswith("-responses-v1")) or (
        isinstance(item_id, str) and item_id.startswith("rs_")
    )


_FUNCTION_CALL = -1
"""The wire index of the call a `function_call` delta field streams (it holds one call, with
no index and no id), apart from every `tool_calls` index."""


_BLOCKED = "the provider's content filter stopped the response"
_FAILED_BY: dict[str, str] = {
    "content_filter": _BLOCKED,
    # Gemini's, passed through by proxies and Vertex AI's endpoint
    **dict.fromkeys(
        ("safety", "recitation", "blocklist", "prohibited_content", "spii", "image_safety"),
        _BLOCKED,
    ),
    "malformed_function_call": "the model wrote a tool call the server could not read",
    "refusal": "the model refused to answer",  # Anthropic's, through a proxy
    "error": "the provider reported an error",  # OpenRouter: the upstream failed mid-response
}
"""A `finish_reason` (lower case) that ends the message as a failure → what it says."""


def _next_call(entry: _Call, name: str, fragment: str) -> bool:
    """Whether a named delta whose `fragment` opens an object is the next call, not more of
    the call of `entry`, whose arguments are whole already: Gemini sends parallel calls
    whole in one chunk, with no index and an empty or repeated id. The same call's
    arguments sent again with its name (Mistral, GLM) are none."""
    if not fragment.lstrip().startswith("{") or not entry.raw or fragment.startswith(entry.raw):
        return False
    try:
        whole = json.loads(entry.raw)
    except ValueError:
        return False
    if not isinstance(whole, dict):
        return False
    try:
        again = json.loads(fragment) == whole and name == entry.call.name
    except ValueError:
        again = False
    return not again


def _thought_signature(extra: Any) -> str | None:
    """Gemini's thought signature in a call's `extra_content`: under `google` (the Gemini
    API) as it is; under `vertex` (Vertex AI's OpenAI-compatible API) as the whole
    `extra_content` object in JSON, so it goes back under the name it came with."""
    for vendor in ("google", "vertex"):
        signature = _field(_field(extra, vendor), "thought_signature")
        if isinstance(signature, str) and signature:
            if vendor == "google":
                return signature
            return json.dumps({EXTRA_CONTENT: {vendor: {"thought_signature": signature}}})
    return None


def _new_part(raw: str, fragment: str) -> str:
    """What `fragment` adds to a call's argument text `raw`. Servers send the next piece
    (OpenAI), but some resend all the text so far in every chunk (DeepSeek, Qianfan) or the
    whole object once more at the end (Mistral, GLM): a fragment holding all of `raw` adds
    only what follows it. (A piece that repeats all the text so far would have to open a
    nested object restating every key before it.)"""
    if raw and fragment.startswith(raw):
        return fragment[len(raw) :]
    return fragment


def _fold_name(name: str, fragment: str) -> str:
    """A tool call's name after one more `function.name` of its deltas. Servers send it
    once (OpenAI), restate it whole on every fragment (MiniMax on NVIDIA NIM), restate a
    growing prefix, or send it in pieces like the arguments (Gemini's compatible API): a
    restated name is kept, a longer restatement replaces it, and a piece is appended."""
    if fragment == name:
        return name
    if fragment.startswith(name):
        return fragment
    return name + fragment


def _field(value: Any, name: str) -> Any:
    """`value[name]` of a dict, else the attribute (None when missing)."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


async def _open_stream(
    client: AsyncOpenAI, body: dict[str, Any], idle_timeout_s: float | None
) -> Any:
    """The raw streamed response to `body`; a reasoning effort or a cache retention the
    server refuses for the model is replaced or left out (`open_adapting`)."""
    return await open_adapting(
        lambda: _open_with_stream_options(client, body, idle_timeout_s), str(client.base_url), body
    )


async def _open_with_stream_options(
    client: AsyncOpenAI, body: dict[str, Any], idle_timeout_s: float | None
) -> Any:
    import openai

    if str(client.base_url) in _NO_STREAM_OPTIONS:
        body.pop("stream_options", None)
    try:
        return await _create(client, body, idle_timeout_s)
    except openai.APIStatusError as exc:
        # Strict servers (Mistral, Azure serverless, older Groq) refuse `stream_options` with
        # 400/422: send the request again without it, and leave it out for that server.
        refused = exc.status_code in (400, 422) and "stream_options" in str(exc.body or exc)
        if not (refused and body.pop("stream_options", None) is not None):
            raise
        logger.info("%s refuses stream_options; usage may be missing", client.base_url)
        _NO_STREAM_OPTIONS.add(str(client.base_url))
        return await _create(client, body, idle_timeout_s)


_NO_STREAM_OPTIONS: set[str] = set()
"""Base URLs of servers that refused `stream_options`."""


async def _create(client: AsyncOpenAI, body: dict[str, Any], idle_timeout_s: float | None) -> Any:
    create = client.chat.completions.with_raw_response.create
    return await open_raw_stream(create, body, ("model", "messages"), idle_timeout_s)


def _classify(exc: BaseException, openai: ModuleType) -> RetryDecision | None:
    if (
        isinstance(exc, openai.APIError)
        and not isinstance(exc, openai.APIStatusError | openai.APIConnectionError)
        and isinstance(exc.body, dict)
    ):
        # An `{"error": ...}` event in the stream (OpenRouter passes upstream failures so):
        # retried like the HTTP status it names, while nothing has been streamed.
        code = exc.body.get("code")
        kind = exc.body.get("type")
        if (isinstance(code, int) and is_retryable_status(code)) or kind in (
            "server_error",
            "overloaded_error",
            "rate_limit_error",
        ):
            return RetryDecision(f"stream error {code or kind}")
        return None
    if isinstance(exc, openai.APIStatusError) and _tool_use_failed(exc):
        return RetryDecision("HTTP 400 tool_use_failed")
    return sdk_retry_decision(exc, openai)


def _tool_use_failed(exc: Any) -> bool:
    """Groq's 400 for a tool call its model wrote but it could not parse: the request is
    fine, and the next sample of the model usually parses."""
    error = api_error(exc.body)
    return exc.status_code == 400 and error is not None and error.get("code") == "tool_use_failed"


def _whole_completion(data: Any) -> list[Any]:
    """A whole chat completion (from a server that ignored `stream: true`) as the one
    chunk it stands for: each choice's message as its delta, each tool call with its
    `index`, the usage kept.

    Raises:
        ValueError: `data` is no chat completion (no list of choices), or one with no
            choice, so no answer.
    """
    from openai.types.chat import ChatCompletionChunk

    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list):
        raise ValueError(
            "the server answered with one JSON body that is no chat completion: "
            + json_body_text(data)
        )
    if not choices:
        raise ValueError(
            "the server answered with a chat completion without choices: " + json_body_text(data)
        )
    deltas = []
    for position, choice in enumerate(choices):
        message = dict(choice.get("message") or {}) if isinstance(choice, dict) else {}
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            listed = [call for call in calls if isinstance(call, dict)]
            message["tool_calls"] = [{**call, "index": i} for i, call in enumerate(listed)]
        index = choice.get("index", position) if isinstance(choice, dict) else position
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        deltas.append({"index": index, "delta": message, "finish_reason": finish})
    chunk = {**data, "object": "chat.completion.chunk", "choices": deltas}
    return [ChatCompletionChunk.construct(**chunk)]


def _ended_with_done(assembler: Any) -> None:
    if isinstance(assembler, _Assembler):
        assembler.ended_with_done = True


CHAT_COMPLETIONS: SdkApi[AsyncOpenAI] = SdkApi(
    name="openai-completions",
    sdk="openai",
    client_class="AsyncOpenAI",
    env_var="OPENAI_API_KEY",
    key_required=is_openai_proper,
    build_body=build_request_body,
    assembler=_Assembler,
    open_stream=_open_stream,
    classify=_classify,
    whole=_whole_completion,
    ended_with_done=_ended_with_done,
    base_url_tails=("/chat/completions",),
)
"""The Chat Completions call as `stream_sdk` makes it; local servers' variants replace parts."""
