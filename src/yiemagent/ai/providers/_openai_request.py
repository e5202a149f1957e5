"""The request side of the `openai-completions` provider (DESIGN §7, R-5.10): the transcript as
Chat Completions messages and the request body, with the decisions for compatible servers
that `openai_completions` describes; tool-call ids made acceptable to OpenAI and Mistral.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from yiemagent.ai.providers._sanitize import image_base64
from yiemagent.types.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import Context, Model, StreamOptions

if TYPE_CHECKING:
    from yiemagent.types.tools import AgentTool

__all__ = [
    "REASONING_FIELDS",
    "build_request_body",
    "convert_messages",
    "is_mistral",
    "is_openai_proper",
    "mistral_tool_call_id",
    "openai_tool",
    "openai_tool_call_id",
]

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
"""The delta fields compatible servers stream thinking in; sent back in the same one."""
_ID_OK = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_IMAGE_OMITTED = "(image omitted: this model reads no images)"


def is_openai_proper(model: Model) -> bool:
    """Whether `model` is OpenAI's own (provider "openai", also behind a proxy base URL)
    rather than a compatible server."""
    return model.provider == "openai"


def openai_tool_call_id(tool_call_id: str) -> str:
    """A tool-call id OpenAI accepts (≤ 40 of `[A-Za-z0-9_-]`), stable for a given input."""
    if _ID_OK.match(tool_call_id):
        return tool_call_id
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", tool_call_id)
    if 0 < len(clean) <= 40:
        return clean
    return "call_" + hashlib.sha256(tool_call_id.encode(errors="replace")).hexdigest()[:32]


_MISTRAL_ID_OK = re.compile(r"^[A-Za-z0-9]{9}$")


def mistral_tool_call_id(tool_call_id: str) -> str:
    """A tool-call id Mistral accepts (exactly 9 of `[A-Za-z0-9]`), stable for a given input."""
    if _MISTRAL_ID_OK.match(tool_call_id):
        return tool_call_id
    return hashlib.sha256(tool_call_id.encode(errors="replace")).hexdigest()[:9]


def is_mistral(model: Model) -> bool:
    """Whether `model` is served by Mistral's API (its own rules for ids and tool messages)."""
    return model.provider == "mistral" or "mistral.ai" in (model.base_url or "")


def convert_messages(model: Model, context: Context) -> list[dict[str, Any]]:
    """The Chat Completions `messages` for `context` (system prompt first; R-5.10 repair)."""
    from yiemagent.ai.transform import transform_messages

    out: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if is_openai_proper(model) and model.reasoning else "system"
        out.append({"role": role, "content": context.system_prompt})
    images_ok = "image" in model.input
    held: list[dict[str, Any]] = []  # image messages of tool results, after all the results
    for message in transform_messages(
        context.messages,
        model,
        normalize_tool_call_id=mistral_tool_call_id if is_mistral(model) else openai_tool_call_id,
    ):
        converted = _convert_message(message, model, images_ok)
        if isinstance(message, ToolResultMessage):
            # The tool messages answering one assistant message must follow it with nothing
            # in between: a result's images wait until the last result.
            out.append(converted[0])
            held.extend(converted[1:])
            continue
        out.extend(held)
        held.clear()
        out.extend(converted)
    out.extend(held)
    return out


def _convert_message(message: Message, model: Model, images_ok: bool) -> list[dict[str, Any]]:
    if isinstance(message, UserMessage):
        return [{"role": "user", "content": _user_content(message.content, images_ok)}]
    if isinstance(message, AssistantMessage):
        return _assistant(message, model)
    if isinstance(message, ToolResultMessage):
        text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
        images = [b for b in message.content if isinstance(b, ImageContent)]
        if images and not images_ok:
            text = (text + "\n" if text.strip() else "") + _IMAGE_OMITTED
        tool_message = {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            # Servers reject empty or whitespace-only content: a placeholder keeps the pair.
            "content": text if text.strip() else ("(error)" if message.is_error else "(no output)"),
        }
        if is_mistral(model):
            tool_message["name"] = message.tool_name
        if not (images and images_ok):
            return [tool_message]
        # Tool messages cannot carry images: hand them over in a user message right after.
        parts = [TextContent(f"Images returned by the tool call {message.tool_call_id}:")]
        return [tool_message, {"role": "user", "content": _user_content([*parts, *images], True)}]
    return []


def _user_content(blocks: list[Any], images_ok: bool) -> str | list[dict[str, Any]]:
    if all(isinstance(b, TextContent) for b in blocks):
        return "\n".join(b.text for b in blocks)
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif images_ok:
            data, mime_type = image_base64(block.data, block.mime_type)
            url = f"data:{mime_type};base64,{data}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            parts.append({"type": "text", "text": _IMAGE_OMITTED})
    return parts


def _assistant(message: AssistantMessage, model: Model) -> list[dict[str, Any]]:
    same_model = message.provider == model.provider and message.model == model.id
    # Blocks apart (text around a call, another model's thinking turned into text) are
    # joined by a newline so that their words do not run together.
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent) and b.text)
    out: dict[str, Any] = {"role": "assistant", "content": text if text.strip() else None}
    thinking = [b for b in message.content if isinstance(b, ThinkingContent) and not b.redacted]
    if same_model and thinking:
        field_name = thinking[0].signature
        if field_name in REASONING_FIELDS:
            out[field_name] = "\n".join(b.thinking for b in thinking)
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    if calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(
                        call.arguments if isinstance(call.arguments, dict) else {}
                    ),
                },
            }
            for call in calls
        ]
    if out["content"] is None and not calls:
        return []
    return [out]


def openai_tool(tool: AgentTool) -> dict[str, Any]:
    """`tool` as a Chat Completions function tool: `{"type": "function", "function": {"name",
    "description", "parameters"}}` (the request body's and `format_openai_messages`'s)."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema,
        },
    }


def build_request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body of the streaming Chat Completions request (before `on_payload`)."""
    proper = is_openai_proper(model)
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if context.tools:
        body["tools"] = [openai_tool(tool) for tool in context.tools]
    if options.output_schema is not None:  # native structured output (DESIGN §14)
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "final_result", "schema": dict(options.output_schema)},
        }
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["max_completion_tokens" if proper else "max_tokens"] = options.max_tokens
    if options.reasoning and str(options.reasoning) != "off" and model.reasoning:  # "off": None
        if model.provider == "openrouter" or "openrouter.ai" in (model.base_url or ""):
            body["reasoning"] = {"effort": options.reasoning}
        else:
            body["reasoning_effort"] = options.reasoning
    if proper and options.cache_retention != "none":
        if options.session_id:
            body["prompt_cache_key"] = options.session_id
        if options.cache_retention == "long":
            body["prompt_cache_retention"] = "24h"
    if proper and options.metadata:
        body["metadata"] = {str(k): str(v) for k, v in options.metadata.items()}
    return body
