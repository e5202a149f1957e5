"""What the embedded model sees: chat messages, the tool prompt and the reply schema
(DESIGN §7, LOCAL-MODEL.md "Tool calling with these models").

The small Qwen models do not emit native tool calls, so tool use is JSON-schema-constrained
generation: the reply is one JSON object, either `{"name": <tool>, "arguments": {...}}` (one
branch per tool, its arguments constrained by the tool's input schema) or
`{"name": "answer", "text": "..."}`. Making the answer one more value of `name` lets the
model decide on the tool's name itself rather than on a key: measured on the 0.5B model with
10 prompts, this picked the right tool (or answered) 10/10 times, against 4-7/10 with a
separate `{"answer": ...}` key. The system prompt lists the tools in one line each: prompt
tokens cost ~12 ms each on 2 cores.

Loop guards: the 0.5B model often repeats the identical call after receiving its result,
or chains new calls on the result (17 * 23 → 391 → calculator("391") → ...). After
`LocalModelSpec.max_tool_rounds` tool rounds since the last user message (`tool_rounds`),
only the answer branch is offered. Also,
`answered_calls` collects the (name, arguments) pairs that already have a result; the provider
holds back a call of such a tool until it is complete and, when it is identical, generates
again with that tool's branch dropped (`reply_schema(..., drop=...)`), so the run moves on to
an answer instead of looping.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from yiemagent.types.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.tools import AgentTool

__all__ = [
    "ANSWER_TEXT",
    "answer_name",
    "answered_calls",
    "call_key",
    "chat_messages",
    "reply_schema",
    "system_prompt",
    "tool_rounds",
]

ANSWER_TEXT = "text"
"""The key holding the answer in the answer branch."""

_REPLY_RULE = (
    'Reply in JSON: {{"name": "<tool>", "arguments": {{...}}}} to call a tool that helps with '
    "the request. To talk to the user (greetings, questions no tool helps with, or a tool "
    'result to report): {{"name": "{answer}", "text": "<your answer>"}}.'
)


def answer_name(tools: Sequence[AgentTool]) -> str:
    """The `name` value of the answer branch: "answer" unless a tool is called that."""
    names = {tool.name for tool in tools}
    for candidate in ("answer", "final_answer", "reply_to_user"):
        if candidate not in names:
            return candidate
    return "answer_" + "_".join(sorted(names))[:40]


def _signature(tool: AgentTool) -> str:
    properties = tool.input_schema.get("properties")
    params = ", ".join(properties) if isinstance(properties, dict) else ""
    description = " ".join(tool.description.split())
    return f"- {tool.name}({params}): {description}"


def system_prompt(base: str, tools: Sequence[AgentTool]) -> str:
    """The system prompt: `base`, then (with tools) one line per tool and the reply rule."""
    if not tools:
        return base
    lines = [base.strip()] if base.strip() else []
    lines.append("Tools:")
    lines.extend(_signature(tool) for tool in tools)
    lines.append(_REPLY_RULE.format(answer=answer_name(tools)))
    return "\n".join(lines)


def _arguments_schema(tool: AgentTool) -> dict[str, Any]:
    # Descriptions and titles only cost grammar size; the prompt already has the description.
    schema = {k: v for k, v in tool.input_schema.items() if k not in ("title", "description")}
    schema.setdefault("type", "object")
    return schema


def reply_schema(tools: Sequence[AgentTool], *, drop: Collection[str] = ()) -> dict[str, Any]:
    """The JSON Schema of one reply: a call of any tool not in `drop`, or a final answer.

    Args:
        tools: The tools offered, in order.
        drop: Names of tools whose branch is left out (the repeat guard).

    Returns:
        `{"anyOf": [call branch per tool..., {"name": "answer", "text": string}]}`; with every
        tool dropped, only the answer branch remains.
    """
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": _arguments_schema(tool)},
            "required": ["name", "arguments"],
        }
        for tool in tools
        if tool.name not in drop
    ]
    branches.append(
        {
            "type": "object",
            "properties": {"name": {"const": answer_name(tools)}, ANSWER_TEXT: {"type": "string"}},
            "required": ["name", ANSWER_TEXT],
        }
    )
    return {"anyOf": branches}


def call_key(name: str, arguments: Any) -> tuple[str, str]:
    """A hashable identity of a call: its name and canonical JSON arguments."""
    return name, json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)


def answered_calls(messages: Sequence[Message]) -> set[tuple[str, str]]:
    """`call_key`s of the tool calls in `messages` that have a tool result."""
    result_ids = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    return {
        call_key(call.name, call.arguments)
        for m in messages
        if isinstance(m, AssistantMessage)
        for call in m.tool_calls
        if call.id in result_ids
    }


def tool_rounds(messages: Sequence[Message]) -> int:
    """Assistant messages with tool calls after the last user message (the current prompt's
    tool rounds so far)."""
    rounds = 0
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage) and message.tool_calls:
            rounds += 1
    return rounds


def _content_text(content: Sequence[TextContent | ImageContent]) -> str:
    parts = [
        block.text if isinstance(block, TextContent) else "[image omitted]" for block in content
    ]
    return "\n".join(parts)


def _call_json(call: ToolCall) -> str:
    return json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)


def chat_messages(system: str, messages: Sequence[Message]) -> list[dict[str, str]]:
    """The chat-completions messages for the runtime.

    Tool calls of earlier turns are shown as the JSON the model produced, tool results as
    `tool` messages (the Qwen template wraps them in `<tool_response>`; on the 0.5B model its
    answers then quote the result more fully than from user text). Images are replaced by a
    note (the models read text only); thinking is left out.
    """
    out: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _content_text(message.content)})
        elif isinstance(message, AssistantMessage):
            parts = [b.text for b in message.content if isinstance(b, TextContent) and b.text]
            parts.extend(_call_json(call) for call in message.tool_calls)
            if parts:
                out.append({"role": "assistant", "content": "\n".join(parts)})
        elif isinstance(message, ToolResultMessage):
            text = _content_text(message.content) or "(no output)"
            if message.is_error:
                text = f"Error: {text}"
            out.append({"role": "tool", "content": text})
    return out
