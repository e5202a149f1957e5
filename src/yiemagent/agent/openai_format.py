"""The seeds' simple model path for `Agent(llm_call=...)`: the OpenAI chat format both ways and
what `llm_call` may answer (DESIGN R-6.1, seed 000 §6, §7, §14).

`format_openai_messages(context)` turns a context into `{"messages": [...], "tools": [...]}`;
`user_message_from_openai(dict)` turns an OpenAI user message into a `UserMessage`;
`parse_llm_response(answer)` normalises what an `llm_call` returned. Public names are
re-exported by `yiemagent.agent`.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from yiemagent.types import (
    AgentContext,
    AssistantMessage,
    Context,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = [
    "ParsedResponse",
    "format_openai_messages",
    "parse_llm_response",
    "user_message_from_openai",
]


# ── context → OpenAI chat format ───────────────────────────────────────────


def _image_part(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"},
    }


def _user_parts(content: Sequence[Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(_image_part(block))
    return parts


def _assistant_to_openai(message: AssistantMessage) -> dict[str, Any]:
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in message.content
        if isinstance(call, ToolCall)
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


def _tool_result_to_openai(message: ToolResultMessage) -> list[dict[str, Any]]:
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    images = [b for b in message.content if isinstance(b, ImageContent)]
    out: list[dict[str, Any]] = [
        {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": text or ("(see attached image)" if images else "(no output)"),
        }
    ]
    if images:
        # The chat format has no images in tool messages: they follow as a user message.
        parts = [{"type": "text", "text": f"Image(s) returned by {message.tool_name}:"}]
        out.append({"role": "user", "content": parts + [_image_part(i) for i in images]})
    return out


def format_openai_messages(context: AgentContext | Context) -> dict[str, Any]:
    """The default `format_messages`: a context in the OpenAI chat format (seed 000 §14).

    The system prompt comes first as a `system` message; user content is a list of `text` and
    `image_url` parts (images as base64 `data:` URLs); an assistant message has its text as
    `content` (`None` when it only calls tools) and `tool_calls` with JSON-string
    `arguments`; a tool result is a `tool` message with its `tool_call_id` (its images follow
    as a user message). Thinking blocks and custom message roles are left out (the loop's
    `convert_to_llm` has already turned bash/summary messages into user text).

    Args:
        context: an `AgentContext` or a provider `Context`.

    Returns:
        `{"messages": [...], "tools": [...]}`; each tool is `{"type": "function", "function":
        {"name", "description", "parameters"}}`. `tools` may be empty: leave it out of the
        request then (OpenAI rejects an empty list).
    """
    from yiemagent.ai.providers._openai_request import (
        openai_tool,  # loaded on first use, not by the import
    )

    messages: list[dict[str, Any]] = []
    if context.system_prompt:
        messages.append(
            {"role": "system", "content": [{"type": "text", "text": context.system_prompt}]}
        )
    for message in context.messages:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": _user_parts(message.content)})
        elif isinstance(message, AssistantMessage):
            messages.append(_assistant_to_openai(message))
        elif isinstance(message, ToolResultMessage):
            messages.extend(_tool_result_to_openai(message))
    tools = [openai_tool(tool) for tool in context.tools or []]
    return {"messages": messages, "tools": tools}


# ── OpenAI user message → UserMessage ──────────────────────────────────────


def _image_from_url(url: str) -> ImageContent:
    if not url.startswith("data:") or ";base64," not in url:
        raise ValueError(
            f"image_url {url[:60]!r} is not a base64 data: URL; download the image and pass "
            "it as data:<mime>;base64,<data> or as ImageContent"
        )
    header, data = url[len("data:") :].split(";base64,", 1)
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"image_url holds invalid base64 data: {exc}") from exc
    return ImageContent(data=data, mime_type=header or "image/png")


def user_message_from_openai(message: Mapping[str, Any]) -> UserMessage:
    """An OpenAI chat user message as a `UserMessage` (seed 000 §6 OpenAiToUserMessage).

    Args:
        message: `{"role": "user", "content": str | [parts]}`; parts are `{"type": "text",
            "text"}`, `{"type": "image_url", "image_url": {"url": "data:<mime>;base64,..."}}`
            (or the URL string directly) and `{"type": "image", "data", "mime_type"}`.
            `role` may be left out.

    Returns:
        The user message, timestamped now.

    Raises:
        ValueError: another role, content that is neither a string nor a list of parts, an
            unknown part type, or an image that is not a base64 data URL.
    """
    if not isinstance(message, Mapping):
        raise ValueError(f"expected an OpenAI message dict, got {type(message).__name__}")
    role = message.get("role", "user")
    if role != "user":
        raise ValueError(f"expected a message with role 'user', got role {role!r}")
    content = message.get("content")
    if isinstance(content, str):
        return UserMessage(content)
    if not isinstance(content, list):
        raise ValueError(
            "a user message's content must be a string or a list of text/image_url parts, "
            f"got {type(content).__name__}"
        )
    blocks: list[TextContent | ImageContent] = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            blocks.append(TextContent(part["text"]))
        elif kind == "image_url":
            image_url = part.get("image_url")
            url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
            if not isinstance(url, str):
                raise ValueError("an image_url part needs image_url.url (a data: URL)")
            blocks.append(_image_from_url(url))
        elif kind == "image" and isinstance(part.get("data"), str):
            mime = part.get("mime_type") or part.get("mimeType") or "image/png"
            blocks.append(ImageContent(data=part["data"], mime_type=mime))
        else:
            raise ValueError(
                f"unknown user content part {part!r}: use {{'type': 'text', 'text': ...}} or "
                "{'type': 'image_url', 'image_url': {'url': 'data:...'}}"
            )
    return UserMessage(blocks)


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
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "toolUse": "toolUse",
    "tool_use": "toolUse",
    "error": "error",
    "aborted": "aborted",
    "content_filter": "error",
}


def _arguments_json(arguments: Any) -> str:
    if arguments is None or arguments == "":
        return "{}"
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, default=str)


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
        return [_Part("thinking", text=str(text), signature=block.get("signature"))]
    if kind == "tool_calls":
        return [_tool_call_part(call) for call in block.get("tool_calls") or []]
    if kind in ("tool_call", "toolCall", "function"):
        return [_tool_call_part(block)]
    raise ValueError(
        f"unknown content block type {kind!r}: expected text, thinking, tool_calls or tool_call"
    )


def _usage_from_openai(data: Any) -> Usage | None:
    if isinstance(data, Usage):
        return data
    if not isinstance(data, Mapping):
        return None
    prompt = int(data.get("prompt_tokens", data.get("input_tokens", 0)) or 0)
    output = int(data.get("completion_tokens", data.get("output_tokens", 0)) or 0)
    details = data.get("prompt_tokens_details")
    cached = int(details.get("cached_tokens", 0) or 0) if isinstance(details, Mapping) else 0
    total = int(data.get("total_tokens", prompt + output) or 0)
    return Usage(input=prompt - cached, output=output, cache_read=cached, total_tokens=total)


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
    for call in data.get("tool_calls") or []:
        if not isinstance(call, Mapping):
            raise ValueError(f"a tool call must be a dict, not {call!r}")
        parsed.parts.append(_tool_call_part(call))
    if data.get("stop_reason") is not None:
        parsed.stop_reason = _FINISH_REASONS.get(str(data["stop_reason"]))
    if data.get("error_message"):
        parsed.error_message = str(data["error_message"])
    if "usage" in data:
        parsed.usage = _usage_from_openai(data["usage"])


def parse_llm_response(response: Any) -> ParsedResponse:
    """Normalise what `llm_call` returned (DESIGN R-6.1, seed 000 §7).

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
            parsed.stop_reason = _FINISH_REASONS.get(str(finish))
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
