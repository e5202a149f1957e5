"""OpenTelemetry spans of a run, after the GenAI semantic conventions (DESIGN §13).

- `invoke_agent {name}` (INTERNAL) per run: `gen_ai.operation.name` "invoke_agent",
  `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.agent.name`,
  `gen_ai.agent.description` (when the agent has one), `gen_ai.conversation.id` (the session
  id), `gen_ai.output.type` "json" for a run with an output type,
  `gen_ai.request.temperature` / `max_tokens` when set, and at the end the summed
  `gen_ai.usage.input_tokens` / `output_tokens` (the summaries a `Compactor` wrote for the
  run's calls included) and `yiemagent.end_reason`.
- `chat {model}` (CLIENT) per model call, a child of the run's span: operation "chat",
  provider, `gen_ai.request.model`, `gen_ai.request.temperature` / `max_tokens` when set,
  `server.address` / `server.port` of a hosted model, then `gen_ai.response.model` (for a
  `FallbackModel`, the model that answered), `gen_ai.usage.input_tokens` (cache reads and
  writes included, as the conventions ask), `gen_ai.usage.output_tokens`,
  `gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_creation.input_tokens` and
  `gen_ai.usage.reasoning.output_tokens` (each when not 0),
  `gen_ai.response.finish_reasons`; when a summary was written for the call
  (`AssistantMessage.compaction_usage`), its tokens in `yiemagent.compaction.input_tokens`
  / `output_tokens`; what the embedded model's rules did in `yiemagent.local_rules` (the
  calls they name only with `capture_content`).
- `execute_tool {name}` (INTERNAL) per tool call, a child of the run's span (siblings of the
  chat spans, also when tools run in parallel): operation "execute_tool",
  `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type` "function",
  `gen_ai.tool.description`.

Failures: a failed or aborted model call, tool call or run ends its span with status ERROR
and `error.type`: the provider's failure class (`"500"`, `"connection"`, …) or "error" /
"aborted" for a model call; for a tool call why the pipeline answered it with an error
(`ToolFailure`: "tool_not_found", "invalid_arguments", "blocked", "rejected",
"usage_limit", "timeout", "aborted", else "tool_error"), never read from the error text,
which a tool writes as it likes; the end reason ("error", "aborted",
"usage_limit", "max_turns") for a run. A failed tool call's status message is its error text
only with `capture_content=True` (that text is the call's result), else the error class; a
run that ended in error says why only with it too (a model call's provider error stays on
its chat span).

Content — `gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`,
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result` — is recorded only with
`capture_content=True` (it may hold personal data), each value at most `content_max_chars`
characters (and no longer than the SDK's attribute length limit) and still valid JSON
(`_content`); a span whose content was shortened says so in `yiemagent.content.truncated`
(the attributes shortened), `yiemagent.content.elided_messages` (older messages left out
of `gen_ai.input.messages`) and `yiemagent.content.elided_chars` (characters cut out of
the texts kept, each cut marked in its text).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar
from urllib.parse import urlsplit

from opentelemetry import context as otel_context, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from yiemagent.telemetry._content import (
    Bounded,
    bounded_json,
    bounded_messages,
    bounded_text,
    sdk_length_limit,
)
from yiemagent.types.config import DEFAULT_TRACE_CONTENT_MAX_CHARS
from yiemagent.types.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    text_of,
)
from yiemagent.types.observe import ToolFailure, tracing_content

if TYPE_CHECKING:
    from yiemagent.types.config import AgentLoopConfig
    from yiemagent.types.messages import AgentMessage
    from yiemagent.types.model import Context, Model, StreamOptions
    from yiemagent.types.tools import AgentTool, AgentToolResult

__all__ = ["OtelObserver"]

_FINISH = {"stop": "stop", "length": "length", "toolUse": "tool_call", "error": "error"}
_FAILED_RUN = ("error", "aborted", "usage_limit", "max_turns", "guardrail")

logger = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")


def _guarded(fallback: Callable[[], T]) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Tracing never changes a run: a hook that raises is logged and gives `fallback()`
    (a span that records nothing, or None)."""

    def wrap(method: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(method)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return method(*args, **kwargs)
            except Exception:
                logger.exception("tracing failed in %s; the run goes on", method.__qualname__)
                return fallback()

        return guarded

    return wrap


def _nothing() -> None:
    return None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("yiemagent")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0"


class OtelObserver:
    """A `RunObserver` that records OpenTelemetry spans through `tracer_provider` (None:
    the global one, `opentelemetry.trace.get_tracer_provider()`); with `capture_content`
    each content attribute is at most `content_max_chars` characters (None: no bound of
    its own) and never longer than the SDK's `SpanLimits` (or the
    `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT` environment variable) allow."""

    __slots__ = ("_content", "_tracer")

    def __init__(
        self,
        tracer_provider: Any = None,
        *,
        capture_content: bool = False,
        content_max_chars: int | None = DEFAULT_TRACE_CONTENT_MAX_CHARS,
    ) -> None:
        self._tracer = trace.get_tracer("yiemagent", _version(), tracer_provider=tracer_provider)
        limits = [n for n in (content_max_chars, sdk_length_limit(self._tracer)) if n is not None]
        self._content = _Content(min(limits) if limits else None) if capture_content else None

    def run(self, config: AgentLoopConfig, system_prompt: str) -> _RunSpan:
        """Open the run's `invoke_agent` span (GenAI semantic conventions; the system
        prompt only with `capture_content`); its chat and tool spans are its children."""
        model = config.model
        name = config.agent_name or "yiemagent"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": model.provider,
            "gen_ai.request.model": model.id,
            "gen_ai.agent.name": name,
        }
        if config.agent_description:
            attributes["gen_ai.agent.description"] = config.agent_description
        if config.session_id:
            attributes["gen_ai.conversation.id"] = config.session_id
        if config.output_type is not None:
            attributes["gen_ai.output.type"] = "json"
        if config.temperature is not None:
            attributes["gen_ai.request.temperature"] = config.temperature
        if config.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = config.max_tokens
        content = self._content.new() if self._content is not None else None
        if content is not None and system_prompt:
            content.put(attributes, "gen_ai.system_instructions", [_part_text(system_prompt)])
        span = self._tracer.start_span(
            f"invoke_agent {name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        return _RunSpan(self._tracer, span, content, config.agent_name)


class _RunSpan:
    """A run's `invoke_agent` span (`yiemagent.types.observe.RunSpan`): opens its chat and
    tool spans as its children, and sums the run's usage into it at the end."""

    __slots__ = ("_agent", "_content", "_context", "_span", "_tracer")

    def __init__(
        self, tracer: trace.Tracer, span: Span, content: _Content | None, agent: str | None
    ) -> None:
        self._tracer = tracer
        self._span = span
        self._content = content
        self._context = trace.set_span_in_context(span)
        self._agent = agent
        """The run's agent, named on its chat spans (a team names the speaker over it)."""

    def activate(self) -> AbstractContextManager[object]:
        return _attached(self._context, self._content is not None)

    @_guarded(lambda: _ChatSpan(trace.INVALID_SPAN, None))
    def chat(self, model: Model, context: Context, options: StreamOptions) -> _ChatSpan:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": model.provider,
            "gen_ai.request.model": model.id,
        }
        if self._agent:
            attributes["gen_ai.agent.name"] = self._agent
        if options.temperature is not None:
            attributes["gen_ai.request.temperature"] = options.temperature
        if options.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = options.max_tokens
        if model.base_url:
            parts = urlsplit(model.base_url)
            if parts.hostname:
                attributes["server.address"] = parts.hostname
                port = parts.port or (443 if parts.scheme == "https" else 80)
                attributes["server.port"] = port
        content = self._content.new() if self._content is not None else None
        if content is not None:
            content.put(
                attributes, "gen_ai.input.messages", [_message(m) for m in context.messages]
            )
            if context.system_prompt:
                content.put(
                    attributes, "gen_ai.system_instructions", [_part_text(context.system_prompt)]
                )
        span = self._tracer.start_span(
            f"chat {model.id}", context=self._context, kind=SpanKind.CLIENT, attributes=attributes
        )
        return _ChatSpan(span, content)

    @_guarded(lambda: _ToolSpan(trace.INVALID_SPAN, None))
    def tool(self, call: ToolCall, tool: AgentTool | None) -> _ToolSpan:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if tool is not None and tool.description:
            attributes["gen_ai.tool.description"] = tool.description
        content = self._content.new() if self._content is not None else None
        if content is not None:
            content.put(attributes, "gen_ai.tool.call.arguments", call.arguments)
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            context=self._context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        return _ToolSpan(span, content)

    @_guarded(_nothing)
    def end(self, reason: str, messages: Sequence[AgentMessage], error: str | None) -> None:
        span = self._span
        input_tokens = output_tokens = 0
        for message in messages:
            if isinstance(message, AssistantMessage):
                for usage in (message.usage, message.compaction_usage):
                    if usage is not None:
                        input_tokens += usage.prompt_tokens
                        output_tokens += usage.output
        span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
        span.set_attribute("yiemagent.end_reason", reason)
        if reason in _FAILED_RUN:
            span.set_attribute("error.type", reason)
            if reason == "error" and self._content is None:
                # the text may quote content (an output that failed validation, a hook's
                # exception); a failed model call's own span keeps the provider's error
                error = "the run ended in error"
            span.set_status(Status(StatusCode.ERROR, error or reason))
        span.end()


class _OpenSpan:
    """A started span and how it records content (None: it does not); what a chat and a
    tool span share."""

    __slots__ = ("_content", "_span")

    def __init__(self, span: Span, content: _Content | None) -> None:
        self._span = span
        self._content = content

    def activate(self) -> AbstractContextManager[object]:
        return _attached(trace.set_span_in_context(self._span), self._content is not None)


class _ChatSpan(_OpenSpan):
    """A model call's `chat` span (`yiemagent.types.observe.ChatSpan`): the answer's model,
    usage, finish reason and failure are set at the end."""

    __slots__ = ()

    @_guarded(_nothing)
    def end(self, message: AssistantMessage, error_type: str | None) -> None:
        span = self._span
        usage = message.usage
        span.set_attribute("gen_ai.response.model", message.model)
        span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.output)
        if usage.cache_read:
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read)
        if usage.cache_write:
            span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write)
        if usage.reasoning:
            span.set_attribute("gen_ai.usage.reasoning.output_tokens", usage.reasoning)
        compaction = message.compaction_usage
        if compaction is not None:  # a summary written for this call, by a call of its own
            span.set_attribute("yiemagent.compaction.input_tokens", compaction.prompt_tokens)
            span.set_attribute("yiemagent.compaction.output_tokens", compaction.output)
        reason = message.stop_reason
        span.set_attribute("gen_ai.response.finish_reasons", [_FINISH.get(reason, reason)])
        content = self._content
        attributes: dict[str, Any] = {}
        if content is not None:
            content.put(attributes, "gen_ai.output.messages", [_message(message)])
        steps = message.details.get("local_rules")
        if steps:  # what the embedded provider's rules repaired or dropped
            if content is not None:  # the calls they name, bounded as the content is
                content.put(attributes, "yiemagent.local_rules", steps)
            else:  # "what" names a call with its arguments: content
                attributes["yiemagent.local_rules"] = _json(list(map(_without_what, steps)))
        span.set_attributes(attributes)
        if reason in ("error", "aborted"):
            span.set_attribute("error.type", error_type or reason)
            span.set_status(Status(StatusCode.ERROR, message.error_message or reason))
        span.end()


class _ToolSpan(_OpenSpan):
    """A tool call's `execute_tool` span (`yiemagent.types.observe.ToolSpan`): its failure,
    and its result with `capture_content`, are set at the end."""

    __slots__ = ()

    @_guarded(_nothing)
    def end(self, result: AgentToolResult, is_error: bool, failure: ToolFailure) -> None:
        span = self._span
        content = result.content
        text = content if isinstance(content, str) else text_of(list(content or ()))
        if self._content is not None:
            attributes: dict[str, Any] = {}
            self._content.put(attributes, "gen_ai.tool.call.result", text)
            span.set_attributes(attributes)
        if is_error:
            span.set_attribute("error.type", failure)
            # the error text is the call's result: a tool's exception, or the arguments a
            # validation failure echoes back to the model, so content only when asked
            description = (
                text[:500] if self._content is not None else f"tool call failed: {failure}"
            )
            span.set_status(Status(StatusCode.ERROR, description))
        span.end()

    @_guarded(_nothing)
    def held(self) -> None:
        """End the span of a call held for approval: left open, it would never be exported,
        and the spans under it (a sub-agent's run) would name a parent no trace holds."""
        self._span.set_attribute("yiemagent.tool.awaiting_approval", True)
        self._span.end()


@contextmanager
def _attached(ctx: otel_context.Context, content: bool) -> Iterator[object]:
    token = otel_context.attach(ctx)
    try:
        with tracing_content(content):
            yield ctx
    finally:
        otel_context.detach(token)


# ── content, in the conventions' message shape ───────────────────────────────


class _Content:
    """How a span records content: each value within `limit` characters (None: whole),
    and what was shortened on this span so far (`yiemagent.content.*`)."""

    __slots__ = ("_elided_chars", "_elided_messages", "_limit", "_truncated")

    def __init__(self, limit: int | None) -> None:
        self._limit = limit
        self._truncated: tuple[str, ...] = ()
        self._elided_messages = 0
        self._elided_chars = 0

    def new(self) -> _Content:
        """The same bound with nothing shortened yet: one for each span."""
        return _Content(self._limit)

    def put(self, attributes: dict[str, Any], name: str, value: object) -> None:
        """Set `attributes[name]` to `value` within the bound: a list of messages
        (`gen_ai.input.messages`) keeps its newest whole, a text stays a text, anything
        else is JSON; when it was shortened, the span's `yiemagent.content.*` too."""
        bounded: Bounded
        if name == "gen_ai.input.messages" and isinstance(value, list):
            bounded = bounded_messages(value, self._limit)
        elif isinstance(value, str):
            bounded = bounded_text(value, self._limit)
        else:
            bounded = bounded_json(value, self._limit)
        if bounded.value is not None:
            attributes[name] = bounded.value
        if not bounded.shortened:
            return
        self._truncated = (*self._truncated, name)
        self._elided_messages += bounded.elided_messages
        self._elided_chars += bounded.elided_chars
        attributes["yiemagent.content.truncated"] = self._truncated
        if self._elided_messages:
            attributes["yiemagent.content.elided_messages"] = self._elided_messages
        if self._elided_chars:
            attributes["yiemagent.content.elided_chars"] = self._elided_chars


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _without_what(step: object) -> object:
    """A rule step (`{"rule", "action", "what"}`) without the call it names."""
    if isinstance(step, dict):
        return {key: value for key, value in step.items() if key != "what"}
    return step


def _part_text(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def _message(message: object) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        parts = [
            _part_text(b.text)
            if isinstance(b, TextContent)
            else {"type": "blob", "modality": "image"}
            for b in message.content
        ]
        return {"role": "user", "parts": parts}
    if isinstance(message, AssistantMessage):
        out: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, TextContent):
                out.append(_part_text(block.text))
            elif isinstance(block, ThinkingContent):
                out.append({"type": "reasoning", "content": block.thinking})
            elif isinstance(block, ToolCall):
                out.append(
                    {
                        "type": "tool_call",
                        "id": block.id,
                        "name": block.name,
                        "arguments": block.arguments,
                    }
                )
        reason = message.stop_reason
        return {"role": "assistant", "parts": out, "finish_reason": _FINISH.get(reason, reason)}
    if isinstance(message, ToolResultMessage):
        images = sum(isinstance(b, ImageContent) for b in message.content)
        response = text_of(message.content) + (f" ({images} image(s))" if images else "")
        part = {"type": "tool_call_response", "id": message.tool_call_id, "response": response}
        return {"role": "tool", "parts": [part]}
    return {"role": str(getattr(message, "role", "unknown")), "parts": []}
