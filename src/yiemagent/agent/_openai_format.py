"""The seeds' simple model path for `Agent(llm_call=...)`: the context in the OpenAI chat
format and what `llm_call` may answer (DESIGN R-6.1).

`format_openai_messages(context)` turns a context into `{"messages": [...], "tools": [...]}`,
the dicts the `openai-completions` provider sends (both come from `yiemagent.ai.openai_wire`);
`parse_llm_response(answer)` normalises what an `llm_call` returned. Public names are
re-exported by `yiemagent.agent`, with the wire module's `user_message_from_openai`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from yiemagent.ai.openai_wire import (
    FINISH_REASONS,
    messages_to_openai,
    openai_tool,
    usage_from_openai,
)
from yiemagent.types import (
    AgentContext,
    AssistantMessage,
    Context,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = ["ParsedResponse", "format_openai_messages", "parse_llm_response"]


def format_openai_messages(context: AgentContext | Context) -> dict[str, Any]:
    """The default `format_messages`: a context in the OpenAI chat format (the seeds'
    formatMsgForLLM), the very dicts the `openai-completions` provider sends.

    The system prompt comes first as a `system` message; `content` is a string, except a
    user message with images (a list of `text` and `image_url` parts, images as base64
    `data:` URLs); an assistant message has its text as `content` (`None` when it only calls
    tools) and `tool_calls` with JSON-string `arguments`; a tool result is a `tool` message
    with its `tool_call_id` ("(error)", "(see attached image)" or "(no output)" when it has
    no text), and the images of a batch's results follow its last result as a user message.
    Thinking blocks and custom message roles are left out (the loop's `convert_to_llm` has
    already turned bash/summary messages into user text).

    Args:
        context: an `AgentContext` or a provider `Context`.

    Returns:
        `{"messages": [...], "tools": [...]}`; each tool is `{"type": "function", "function":
        {"name", "description", "parameters"}}`. `tools` may be empty: leave it out of the
        request then (OpenAI rejects an empty list).
    """
    llm = UserMessage | AssistantMessage | ToolResultMessage
    messages = [m for m in context.messages if isinstance(m, llm)]
    return {
        "messages": messages_to_openai(messages, system_prompt=context.system_prompt),
        "tools": [openai_tool(tool) for tool in context.tools or []],
    }


# ── llm_call's answer → parts ──────────────────────────────────────────────

PartKind: TypeAlias = Literal["text", "thinking", "tool_call"]


@dataclass(slots=True)
class _Part:
    kind: PartKind
    text: str = ""
    signature: str | None = None
    id: str = ""
    name: str = ""
    arguments: str = "{}"
    """Tool-call arguments as JSON text (parsed by the builder like streamed arguments)."""


@dataclass(slots=True)
class ParsedResponse:
    """What `llm_call` returned, normalised: content parts, stop reason, usage, error."""

    parts: list[_Part] = field(default_factory=list)
    stop_reason: StopReason | None = None
    usage: Usage | None = None
    error_message: str | None = None
    api: str = ""
    provider: str = ""
    model: str = ""


_FINISH_REASONS: dict[str, StopReason] = {
    **FINISH_REASONS,
    "content_filter": "error",
    # an `AssistantMessage`'s own stop reasons, as `llm_call` may return them in a dict
    "toolUse": "toolUse",
    "error": "error",
    "aborted": "aborted",
}


def _stop_reason(value: Any) -> StopReason | None:
    text = str(value)
    return _FINISH_REASONS.get(text) or _FINISH_REASONS.get(text.lower())


def _arguments_json(arguments: Any) -> str:
    if arguments is None or arguments == "":
        return "{}"
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, default=str, ensure_ascii=False)


def _tool_call_part(data: Mapping[str, Any]) -> _Part:
    function = data.get("function")
    source = function if isinstance(function, Mapping) else data
    call_id = data.get("id") or str(uuid.uuid4())
    name = source.get("name") or ""
    return _Part(
        "tool_call",
        id=str(call_id),
        name=str(name),
        arguments=_arguments_json(source.get("arguments", source.get("args"))),
    )


def _block_parts(block: Any) -> list[_Part]:
    if isinstance(block, TextContent):
        return [_Part("text", text=block.text)]
    if isinstance(block, ThinkingContent):
        return [_Part("thinking", text=block.thinking, signature=block.signature)]
    if isinstance(block, ToolCall):
        return [
            _Part(
                "tool_call",
                id=block.id or str(uuid.uuid4()),
                name=block.name,
                arguments=_arguments_json(block.arguments),
            )
        ]
    if isinstance(block, str):
        return [_Part("text", text=block)]
    if not isinstance(block, Mapping):
        raise ValueError(f"unknown content block {block!r}")
    kind = block.get("type")
    if kind in ("text", "output_text"):
        return [_Part("text", text=str(block.get("text") or ""))]
    if kind in ("thinking", "reasoning"):
        text = block.get("thinking", block.get("text", ""))
        signature = block.get("signature")  # text, as the message keeps it (not a number)
        signature = None if signature is None else str(signature)
        return [_Part("thinking", text=str(text), signature=signature)]
    if kind == "tool_calls":
        return [_tool_call_part(call) for call in _tool_calls(block.get("tool_calls"))]
    if kind in ("tool_call", "toolCall", "function"):
        return [_tool_call_part(block)]
    raise ValueError(
        f"unknown content block type {kind!r}: expected text, thinking, tool_calls or tool_call"
    )


def _usage_from_openai(data: Any) -> Usage | None:
    if isinstance(data, Usage):
        return data
    return usage_from_openai(data) if isinstance(data, Mapping) else None


def _tool_calls(value: Any) -> list[Any]:
    """A response's `tool_calls`: a list of dicts (None or empty: no calls).

    Raises:
        ValueError: it is something else (a number, a string, one call's dict), or holds
            something else than a dict: said so, where iterating over it failed with
            "'int' object is not iterable" and reading a call with "'int' object has no
            attribute 'get'".
    """
    if not value:
        return []
    if not isinstance(value, list | tuple):
        raise ValueError(f"tool_calls must be a list of tool calls, not {type(value).__name__}")
    for call in value:
        if not isinstance(call, Mapping):
            raise ValueError(f"a tool call must be a dict, not {call!r}")
    return list(value)


def _parse_message_dict(data: Mapping[str, Any], parsed: ParsedResponse) -> None:
    reasoning = data.get("reasoning_content") or data.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parsed.parts.append(_Part("thinking", text=reasoning))
    content = data.get("content")
    if isinstance(content, str):
        if content:
            parsed.parts.append(_Part("text", text=content))
    elif isinstance(content, list):
        for block in content:
            parsed.parts.extend(_block_parts(block))
    elif content is not None:
        raise ValueError(
            f"an assistant message's content must be a string or a list, not "
            f"{type(content).__name__}"
        )
    for call in _tool_calls(data.get("tool_calls")):
        parsed.parts.append(_tool_call_part(call))
    if data.get("stop_reason") is not None:
        parsed.stop_reason = _stop_reason(data["stop_reason"])
    if data.get("error_message"):
        parsed.error_message = str(data["error_message"])
    if "usage" in data:
        parsed.usage = _usage_from_openai(data["usage"])


def parse_llm_response(response: Any) -> ParsedResponse:
    """Normalise what `llm_call` returned (the answer shapes the seeds allow).

    Accepted: an `AssistantMessage` (its content may hold the seed's dict blocks); an OpenAI
    chat message dict (`content` str/list/None, `tool_calls`); a whole chat completion
    (`{"choices": [{"message": ..., "finish_reason": ...}], "usage": ...}`); an object with
    `model_dump()` (the `openai` SDK's responses); a plain `str` (a text answer). Content
    blocks: `text`, `thinking`, `{"type": "tool_calls", "tool_calls": [...]}` (each with
    `function.name`/`function.arguments` or flat `name`/`arguments`) and `{"type":
    "tool_call", "id", "name", "arguments"}`. A missing id gets a UUID.

    Raises:
        ValueError: a shape that is none of these; the text says what was received.
    """
    parsed = ParsedResponse()
    if hasattr(response, "model_dump") and not isinstance(response, Mapping):
        response = response.model_dump()
    if isinstance(response, AssistantMessage):
        for block in response.content:
            parsed.parts.extend(_block_parts(block))
        parsed.stop_reason = response.stop_reason
        parsed.usage = response.usage
        parsed.error_message = response.error_message
        parsed.api, parsed.provider, parsed.model = (
            response.api,
            response.provider,
            response.model,
        )
        return parsed
    if isinstance(response, str):
        parsed.parts.append(_Part("text", text=response))
        return parsed
    if not isinstance(response, Mapping):
        raise ValueError(
            f"llm_call returned a {type(response).__name__}; return an AssistantMessage, an "
            "OpenAI chat message dict or a chat completion dict"
        )
    if "choices" in response:
        choices = response.get("choices") or []
        if not choices or not isinstance(choices[0], Mapping):
            raise ValueError("llm_call returned a chat completion without choices")
        _parse_message_dict(choices[0].get("message") or {}, parsed)
        finish = choices[0].get("finish_reason")
        if finish is not None:
            parsed.stop_reason = _stop_reason(finish)
        parsed.usage = _usage_from_openai(response.get("usage")) or parsed.usage
        parsed.model = str(response.get("model") or "")
        return parsed
    if "content" not in response and "tool_calls" not in response:
        raise ValueError(
            f"llm_call returned a dict without content, tool_calls or choices: "
            f"{str(dict(response))[:200]}"
        )
    _parse_message_dict(response, parsed)
    return parsed
