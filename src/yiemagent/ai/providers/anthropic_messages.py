"""The `anthropic-messages` provider: the streaming Messages API over the official `anthropic`
SDK (DESIGN §7, seed 002 §3).

`stream_anthropic_messages` returns an `AssistantMessageEventStream` at once and streams on a
task of the running event loop; it never raises (failures end the stream with an `error`
event, HTTP status included, API key scrubbed). Retries are ours (`retry.py`, in the call
SDK call of `sdk_call.py`: 429, 5xx and 529 overloaded, `retry-after` honoured up to
`max_retry_delay_ms`), the SDK's are off.

Mapping: text, thinking (with its signature), redacted thinking (its opaque `data` kept as the
signature, `redacted=True`), tool_use with streamed `input_json_delta` arguments; usage with
cache reads and writes; stop reasons end_turn/stop_sequence/pause_turn → stop, max_tokens and
model_context_window_exceeded → length, tool_use → toolUse, refusal → error. Prompt caching
(`cache_retention`: "none"; "short" (the default) → `cache_control` ephemeral; "long" → ttl
1h) marks the system prompt and the last user message. Thinking is enabled for reasoning
models when `StreamOptions.reasoning` is set, with a budget from `thinking_budgets` or
`THINKING_BUDGETS`; it is sent back only to the model that produced it, with its signature.
Content blocks of other kinds (server tools) are skipped with their deltas.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from yiemagent.ai.builder import DoneReason, MessageBuilder
from yiemagent.ai.providers._anthropic_request import build_request_body
from yiemagent.ai.providers._sdk_call import SdkApi, open_raw_stream, stream_sdk
from yiemagent.ai.providers._sdk_failures import sdk_retry_decision
from yiemagent.ai.retry import RetryDecision
from yiemagent.types.messages import ThinkingContent, Usage
from yiemagent.types.model import AssistantMessageEventStream, Context, Model, StreamOptions

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["stream_anthropic_messages"]

logger = logging.getLogger(__name__)

_STOP_REASONS: dict[str, DoneReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}


def stream_anthropic_messages(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one Messages API call (the `anthropic-messages` `StreamFn`).

    Args:
        model: `base_url` selects the server (None: Anthropic); `max_tokens` the default
            output limit (the API requires one).
        context: System prompt, messages (repaired with `transform_messages`, R-5.10, tool-call
            ids normalised with `anthropic_tool_call_id`), tools.
        options: Per-call options (see the module docstring).

    Returns:
        The event stream; it always ends with `done` or `error`.
    """
    return stream_sdk(_API, model, context, options)


# ── streaming ────────────────────────────────────────────────────────────────


@dataclass(slots=True)
class _Assembler:
    """Turns Messages API stream events into builder calls."""

    builder: MessageBuilder
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    streamed: bool = False
    ignored: set[int] = field(default_factory=set)
    """Indexes of blocks we do not map (server tools, results): their deltas are skipped."""
    start_input: str | None = None
    """The open tool_use's `input` from its start event, as JSON, when not empty: some
    Anthropic-compatible servers send the whole input there and no `input_json_delta`."""

    def feed(self, event: Any) -> None:
        kind = event.type
        if kind in ("content_block_delta", "content_block_stop") and event.index in self.ignored:
            return
        if kind == "message_start":
            self._usage(event.message.usage)
        elif kind == "content_block_start":
            self.streamed = True
            block = event.content_block
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
                self.start_input = json.dumps(given) if isinstance(given, dict) and given else None
            else:
                logger.debug("ignored content block of type %r", block.type)
                self.ignored.add(event.index)
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                self.builder.text_delta(delta.text)
            elif delta.type == "thinking_delta":
                self.builder.thinking_delta(delta.thinking)
            elif delta.type == "signature_delta":
                self.builder.thinking_delta("", delta.signature)
            elif delta.type == "input_json_delta":
                if delta.partial_json:
                    self.start_input = None  # the streamed input wins
                self.builder.tool_call_delta(delta.partial_json)
        elif kind == "content_block_stop":
            if self.start_input is not None:
                self.builder.tool_call_delta(self.start_input)
                self.start_input = None
            self.builder.end_block()
        elif kind == "message_delta":
            if event.delta.stop_reason:
                self.stop_reason = event.delta.stop_reason
            self._usage(event.usage)

    def _usage(self, raw: Any) -> None:
        usage = self.usage
        if raw is None:
            return
        if getattr(raw, "input_tokens", None) is not None:
            usage.input = raw.input_tokens
        if getattr(raw, "output_tokens", None) is not None:
            usage.output = raw.output_tokens
        if getattr(raw, "cache_read_input_tokens", None) is not None:
            usage.cache_read = raw.cache_read_input_tokens
        if getattr(raw, "cache_creation_input_tokens", None) is not None:
            usage.cache_write = raw.cache_creation_input_tokens
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
        self.builder.set_usage(usage)

    def finish(self) -> None:
        reason = self.stop_reason
        if reason == "refusal":
            self.builder.fail("error", "the model refused to answer (stop reason: refusal)")
            return
        if reason is None:
            self.builder.fail("error", "the stream ended without a stop reason")
            return
        self.builder.done_by_wire_reason(reason, _STOP_REASONS, field="stop_reason")


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
    error = body.get("error", body) if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return str(kind) if kind else None


_API: SdkApi[AsyncAnthropic] = SdkApi(
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
)
