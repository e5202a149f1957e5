"""The model's own tool format for the embedded model (DESIGN §20): Qwen2.5's chat-template
tool prompt, with a grammar that holds each call to the tools' schemas and leaves the
answer free.

The system prompt lists the tools as the template does (`<tools>` with one JSON function
signature a line, then the instruction to answer calls in `<tool_call>` blocks); earlier
calls are shown as `<tool_call>` blocks, results as `<tool_response>` blocks in a user
turn. The grammar (`native_grammar`, llguidance's lark syntax as llama.cpp's `grammar`)
admits either free text that does not begin with `<`, or one or more
`<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>` blocks, each JSON held to
one tool's schema. The reply is read by the shared text-call parser
(`yiemagent.ai._text_tool_calls`, through `MessageBuilder.recover_text_tool_calls`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from yiemagent.ai.providers.local.prompt import (
    call_branch,
    content_text,
    identity,
)
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.tools import AgentTool

__all__ = ["native_grammar", "native_messages", "native_system_prompt"]

_TOOLS_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def _signature(tool: AgentTool) -> str:
    function = {"name": tool.name, "description": tool.description, "parameters": tool.input_schema}
    return json.dumps({"type": "function", "function": function}, ensure_ascii=False)


def native_system_prompt(base: str, tools: Sequence[AgentTool], model_name: str = "") -> str:
    """The system prompt: the identity (with `model_name`), `base`, then the template's
    tool section (each tool's signature as JSON, and the `<tool_call>` instruction)."""
    parts = [identity(model_name)] if model_name else []
    if base.strip():
        parts.append(base.strip())
    head = "\n".join(parts)
    if not tools:
        return head
    section = _TOOLS_HEAD + "".join("\n" + _signature(t) for t in tools) + _TOOLS_TAIL
    return f"{head}\n\n{section}" if head else section


def _call_block(name: str, arguments: Any) -> str:
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def native_messages(system: str, messages: Sequence[Message]) -> list[dict[str, str]]:
    """The chat messages as Qwen2.5's template frames them: earlier calls as `<tool_call>`
    blocks after the reply's text, each round's results as one user turn of
    `<tool_response>` blocks (errors prefixed "Error: "), thinking left out."""
    out: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            blocks = [f"<tool_response>\n{text}\n</tool_response>" for text in pending]
            out.append({"role": "user", "content": "\n".join(blocks)})
            pending.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            text = content_text(message.content) or "(no output)"
            pending.append(f"Error: {text}" if message.is_error else text)
            continue
        flush()
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": content_text(message.content)})
        elif isinstance(message, AssistantMessage):
            parts = [b.text for b in message.content if isinstance(b, TextContent) and b.text]
            parts += [_call_block(call.name, call.arguments) for call in message.tool_calls]
            if parts:
                out.append({"role": "assistant", "content": "\n".join(parts)})
    flush()
    return out


def native_grammar(tools: Sequence[AgentTool]) -> str:
    """The llguidance grammar of one reply: free text not beginning with `<`, or one or
    more `<tool_call>` blocks, one a line, each holding a call of one of `tools` (its
    arguments held to the tool's input schema)."""
    if not tools:
        return "%llguidance {}\nstart: TEXT\nTEXT: /[^<](.|\\n)*/\n"
    calls = [call_branch(tool) for tool in tools]
    item = calls[0] if len(calls) == 1 else {"anyOf": calls}
    return (
        "%llguidance {}\n"
        "start: TEXT | calls\n"
        'calls: call ("\\n" call)*\n'
        'call: "<tool_call>\\n" body "\\n</tool_call>"\n'
        f"body: %json {json.dumps(item, ensure_ascii=False)}\n"
        "TEXT: /[^<](.|\\n)*/\n"
    )
