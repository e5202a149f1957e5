"""Local OpenAI-compatible servers (llama.cpp's server, vLLM, Ollama) running small models
that write their tool calls as text (DESIGN §21).

`stream_text_calls` (api "openai-text-calls") is the `openai-completions` provider with one
change: the tool calls the model writes into its text (Qwen/Hermes `<tool_call>` tags,
Llama 3 JSON, Mistral `[TOOL_CALLS]`, fenced JSON) become tool-call blocks while the text
streams (`MessageBuilder.recover_text_tool_calls`). The tools go in the request's `tools`,
so the server's chat template shows them, and calls the server parses itself arrive as
`tool_calls` as usual. A server that refuses `tools` (llama.cpp without `--jinja` answers
"tools param requires --jinja flag") gets them in the system prompt instead, in the
Qwen/Hermes wording, with the transcript's calls and results written as `<tool_call>` and
`<tool_response>` text; that server is remembered, so later calls go so at once.

The request asks for `return_progress` (llama.cpp streams a chunk per prompt batch read, so
a long prompt on a slow machine does not look like an idle stream; other servers ignore
it). `ollama/<model>` and `get_model(..., tool_calls="text")` select it (`ai.models`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import TYPE_CHECKING, Any

from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.providers._sdk_call import SdkApi, StreamAssembler, stream_sdk
from yiemagent.ai.providers.openai_completions import CHAT_COMPLETIONS
from yiemagent.types.model import AssistantMessageEventStream, Context, Model, StreamOptions

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["TOOLS_PROMPT", "stream_text_calls", "tools_in_prompt"]

logger = logging.getLogger(__name__)

TOOLS_PROMPT = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{tools}
</tools>

For each function call, return a json object with function name and arguments within \
<tool_call></tool_call> XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>"""
"""The tools' part of the system prompt for a server that takes no `tools` (the wording of
the Qwen2.5 chat template, which Hermes-style models are trained on)."""

_TOOLS_REFUSED: set[str] = set()
"""Base URLs of servers that refused `tools`: they get the tools in the prompt."""


def stream_text_calls(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one Chat Completions call to a local server, reading tool calls written as
    text (the "openai-text-calls" `StreamFn`).

    Args:
        model: `base_url` is the server's OpenAI API root (e.g. http://127.0.0.1:8080/v1).
        context: As for `openai-completions`; untagged JSON in the reply is a call only
            when it names one of `context.tools`.
        options: As for `openai-completions`.

    Returns:
        The event stream; it always ends with `done` or `error`.
    """
    names = [tool.name for tool in context.tools or ()]

    def assembler(builder: MessageBuilder) -> StreamAssembler:
        if names:
            builder.recover_text_tool_calls(names)
        return CHAT_COMPLETIONS.assembler(builder)

    api: SdkApi[AsyncOpenAI] = dataclasses.replace(
        CHAT_COMPLETIONS,
        name="openai-text-calls",
        build_body=_build_body,
        assembler=assembler,
        open_stream=_open_stream,
    )
    return stream_sdk(api, model, context, options)


def _build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    body = CHAT_COMPLETIONS.build_body(model, context, options)
    # llama.cpp then streams a chunk per prompt batch it reads (others ignore the field): a
    # long prompt on a slow machine is progress, not an idle stream.
    body["return_progress"] = True
    return body


async def _open_stream(
    client: AsyncOpenAI, body: dict[str, Any], idle_timeout_s: float | None
) -> Any:
    import openai

    server = str(client.base_url)
    if body.get("tools") and server in _TOOLS_REFUSED:
        body = tools_in_prompt(body)
    try:
        return await CHAT_COMPLETIONS.open_stream(client, body, idle_timeout_s)
    except openai.APIStatusError as exc:
        refused = exc.status_code in (400, 422, 500, 501) and "tool" in str(exc.body or exc)
        if not (refused and body.get("tools")):
            raise
        logger.info("%s refuses tools (%s): they go in the system prompt", server, exc)
        _TOOLS_REFUSED.add(server)
        return await CHAT_COMPLETIONS.open_stream(client, tools_in_prompt(body), idle_timeout_s)


def tools_in_prompt(body: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions `body` rewritten for a server that takes no `tools`: the tools in
    the system prompt (`TOOLS_PROMPT`), assistant tool calls as `<tool_call>` text, tool
    results as user turns of `<tool_response>` text. Returns a new body."""
    tools = body.get("tools") or []
    listed = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    block = TOOLS_PROMPT.format(tools=listed)
    messages: list[dict[str, Any]] = []
    for message in body["messages"]:
        role = message.get("role")
        if role in ("system", "developer") and not messages:
            messages.append({"role": "system", "content": f"{_text(message)}\n\n{block}"})
            continue
        if not messages:
            messages.append({"role": "system", "content": block})
        if role == "assistant" and message.get("tool_calls"):
            calls = [_call_text(call) for call in message["tool_calls"]]
            text = "\n".join(part for part in [_text(message), *calls] if part)
            messages.append({"role": "assistant", "content": text})
        elif role == "tool":
            response = f"<tool_response>\n{_text(message)}\n</tool_response>"
            previous = messages[-1]
            if previous["role"] == "user" and str(previous["content"]).endswith("</tool_response>"):
                previous["content"] += "\n" + response
            else:
                messages.append({"role": "user", "content": response})
        else:
            messages.append(message)
    rest = {k: v for k, v in body.items() if k not in ("tools", "tool_choice", "messages")}
    return {**rest, "messages": messages}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return str(content or "")


def _call_text(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except ValueError:
        arguments = function.get("arguments")
    written = json.dumps({"name": function.get("name"), "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{written}\n</tool_call>"
