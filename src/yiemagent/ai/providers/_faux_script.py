"""Building faux responses: `faux_text`, `faux_thinking`, `faux_tool_call`, `faux_message`
and the fault presets (DESIGN §7, §8). Re-exported by `yiemagent.ai.providers.faux`, whose docstring
describes each; import them from there."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from yiemagent.ai._partial_json import parse_partial_json
from yiemagent.types.messages import (
    AssistantContent,
    AssistantMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

__all__ = [
    "FauxStall",
    "faux_duplicate_id_calls",
    "faux_empty_arguments_call",
    "faux_error_mid_stream",
    "faux_malformed_tool_call",
    "faux_message",
    "faux_stall",
    "faux_text",
    "faux_text_then_tool_call",
    "faux_thinking",
    "faux_tool_call",
    "faux_truncated_tool_call",
]


@dataclass(slots=True, frozen=True)
class FauxStall:
    """A response that stops sending after `after_chunks` chunks (see `faux_stall`)."""

    message: AssistantMessage
    after_chunks: int


def as_message(response: object) -> AssistantMessage:
    """A response as a message: a `str` becomes a one-text answer.

    Raises:
        TypeError: neither an `AssistantMessage` nor a `str`.
    """
    if isinstance(response, AssistantMessage):
        return response
    if isinstance(response, str):
        return faux_message(faux_text(response))
    raise TypeError(
        f"a faux response must be an AssistantMessage, a str or a function returning one, "
        f"got {type(response).__name__}"
    )


# ── helpers and presets ──────────────────────────────────────────────────────


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def faux_text(text: str) -> TextContent:
    """A text block."""
    return TextContent(text)


def faux_thinking(text: str, signature: str | None = None) -> ThinkingContent:
    """A thinking block."""
    return ThinkingContent(text, signature)


def faux_tool_call(
    name: str, arguments: dict[str, Any] | None = None, id: str | None = None
) -> ToolCall:
    """A tool call; `id=None` gets a unique id."""
    return ToolCall(id=_new_id() if id is None else id, name=name, arguments=dict(arguments or {}))


def faux_message(
    *content: AssistantContent | str,
    stop_reason: StopReason | None = None,
    usage: Usage | None = None,
    error_message: str | None = None,
) -> AssistantMessage:
    """An assistant message of `content` (a `str` is a text block); stop reason defaults to
    "toolUse" when it holds a tool call, else "stop"."""
    blocks: list[AssistantContent] = [TextContent(c) if isinstance(c, str) else c for c in content]
    if stop_reason is None:
        stop_reason = "toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop"
    return AssistantMessage(
        content=blocks,
        api="faux",
        provider="faux",
        model="faux",
        usage=usage if usage is not None else Usage(),
        stop_reason=stop_reason,
        error_message=error_message,
    )


def _streamed_call(name: str, raw: str, id: str | None) -> ToolCall:
    """A call whose streamed argument text `raw` did not parse as a JSON object, as a
    provider leaves it: `arguments` the best partial parse, `partial_json` the text."""
    return ToolCall(
        id=_new_id() if id is None else id,
        name=name,
        arguments=parse_partial_json(raw),
        partial_json=raw,
    )


def faux_malformed_tool_call(name: str, raw_json: str, id: str | None = None) -> AssistantMessage:
    """A call whose argument text `raw_json` is not a JSON object (stop reason "toolUse")."""
    return faux_message(_streamed_call(name, raw_json, id))


def faux_empty_arguments_call(name: str, id: str | None = None) -> AssistantMessage:
    """A call that streams no argument text at all (`arguments == {}`)."""
    call = ToolCall(id=_new_id() if id is None else id, name=name, arguments={}, partial_json="")
    return faux_message(call)


def faux_duplicate_id_calls(
    name: str, arguments_list: Iterable[dict[str, Any]], *, id: str = "call_dup"
) -> AssistantMessage:
    """Several calls of `name` that all carry `id` (`""` for empty ids)."""
    return faux_message(*(faux_tool_call(name, args, id=id) for args in arguments_list))


def faux_text_then_tool_call(
    text: str, name: str, arguments: dict[str, Any] | None = None, id: str | None = None
) -> AssistantMessage:
    """Text followed by a tool call in the same message."""
    return faux_message(faux_text(text), faux_tool_call(name, arguments, id))


def faux_truncated_tool_call(
    name: str, arguments: dict[str, Any], *, keep: float = 0.5, id: str | None = None
) -> AssistantMessage:
    """A call whose argument JSON is cut after `keep` (0..1) of its characters, stop reason
    "length" (the output token limit hit mid-call, R-5.6)."""
    raw = json.dumps(arguments)
    cut = raw[: max(1, min(len(raw) - 1, int(len(raw) * keep)))]
    return faux_message(_streamed_call(name, cut, id), stop_reason="length")


def faux_stall(after_chunks: int = 1, response: AssistantMessage | str | None = None) -> FauxStall:
    """Stream `after_chunks` chunks of `response` (default a short text), then nothing until
    the consumer aborts (R-5.8 idle timeout tests)."""
    message = as_message("This response stalls and never ends." if response is None else response)
    return FauxStall(message, after_chunks)


def faux_error_mid_stream(text_before: str, error_message: str) -> AssistantMessage:
    """Text, then the stream ends with an `error` event carrying `error_message`."""
    return faux_message(faux_text(text_before), stop_reason="error", error_message=error_message)
