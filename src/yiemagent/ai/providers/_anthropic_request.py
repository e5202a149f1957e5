"""The request side of the `anthropic-messages` provider (DESIGN §7, R-5.10): the transcript as
Messages API blocks, the request body (system prompt, tools, thinking budgets, prompt-cache
marks), as `anthropic_messages` describes.
"""

from __future__ import annotations

import logging
from typing import Any

from yiemagent.ai._sanitize import image_base64
from yiemagent.types.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import Context, Model, StreamOptions

__all__ = ["THINKING_BUDGETS", "build_request_body", "convert_messages"]

logger = logging.getLogger(__name__)

THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32000,
}
"""Default thinking budget (tokens) per reasoning level."""

_IMAGE_OMITTED = "(image omitted: this model reads no images)"


def _cache_control(options: StreamOptions) -> dict[str, str] | None:
    retention = options.cache_retention or "short"
    if retention == "none":
        return None
    if retention == "long":
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def convert_messages(model: Model, context: Context) -> list[dict[str, Any]]:
    """The Messages API `messages` (R-5.10 repair; consecutive tool results share one user
    message, as the API requires)."""
    from yiemagent.ai.transform import anthropic_tool_call_id, transform_messages

    out: list[dict[str, Any]] = []
    images_ok = "image" in model.input
    for message in transform_messages(
        context.messages, model, normalize_tool_call_id=anthropic_tool_call_id
    ):
        if isinstance(message, UserMessage):
            blocks = _blocks(message.content, images_ok)
            if blocks:
                out.append({"role": "user", "content": blocks})
        elif isinstance(message, AssistantMessage):
            blocks = _assistant_blocks(message, model)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        elif isinstance(message, ToolResultMessage):
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": _blocks(message.content, images_ok)
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


def _blocks(content: list[Any], images_ok: bool) -> list[dict[str, Any]]:
    """Text and image blocks; the API rejects empty or whitespace-only text, and a model
    that reads no images gets a note in place of each image."""
    blocks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            if images_ok:
                data, mime_type = image_base64(block.data, block.mime_type)
                source = {"type": "base64", "media_type": mime_type, "data": data}
                blocks.append({"type": "image", "source": source})
            else:
                blocks.append({"type": "text", "text": _IMAGE_OMITTED})
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
    if context.system_prompt:
        system: dict[str, Any] = {"type": "text", "text": context.system_prompt}
        if cache:
            system["cache_control"] = cache
        body["system"] = [system]
    if cache:
        for message in reversed(body["messages"]):
            if message["role"] == "user":
                message["content"][-1]["cache_control"] = cache
                break
    if context.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in context.tools
        ]
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
    if thinking and _open_tool_turn_without_thinking(body["messages"]):
        # The API refuses thinking when the assistant turn being continued (tool use, then
        # results) does not start with a thinking block: reasoning switched on, or the model
        # switched, in the middle of a tool loop. This one request goes without thinking.
        logger.info("thinking left off: the open tool-use turn has no thinking block")
        thinking = False
    if thinking:
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
    if not thinking and options.temperature is not None:
        body["temperature"] = options.temperature  # the API refuses it with thinking on
    if options.metadata and options.metadata.get("user_id"):
        body["metadata"] = {"user_id": str(options.metadata["user_id"])}
    return body


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
