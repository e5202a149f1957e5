"""Every request body each SDK provider sends, checked against the official SDK's own
request types (DESIGN §21): images of each API type, a PDF, a tool's image, reasoning of
the same model and cache marks, recorded by a server on 127.0.0.1 and validated with
pydantic against `openai`'s and `anthropic`'s `*CreateParamsStreaming` TypedDicts, which
are generated from each API's published schema. A field the schema requires and the body
lacks, or a value of the wrong shape, fails here before a real server refuses it."""

from __future__ import annotations

import base64
import json
from functools import cache
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.ai.test_attachments import PDF, PNG, responses_done, responses_sse
from yiemagent import AgentTool, AgentToolResult
from yiemagent.ai import Context, StreamOptions, complete, get_model
from yiemagent.ai.attachments import load_attachment
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
from yiemagent.types.model import Model

pytestmark = pytest.mark.timeout(180)

KEY = "sk-test-0123456789abcdef"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 8
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8 " + b"\x00" * 14


@cache
def _adapter(api: str) -> TypeAdapter[Any]:
    """The SDK's type of a streamed request body on `api` (built once: it takes seconds)."""
    if api == "openai-responses":
        from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

        return TypeAdapter(ResponseCreateParamsStreaming)
    if api == "anthropic-messages":
        from anthropic.types.message_create_params import MessageCreateParamsStreaming

        return TypeAdapter(MessageCreateParamsStreaming)
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

    return TypeAdapter(CompletionCreateParamsStreaming)


def assert_valid(api: str, body: dict[str, Any]) -> None:
    """`body` is a request the SDK's published types accept; else the fields it lacks,
    each with where in the body it is (pydantic tries every member of a union: only the
    members whose `type` or `role` fits the item are reported)."""
    try:
        _adapter(api).validate_python(body)
    except ValidationError as error:
        errors = error.errors()
    else:
        return
    # a union member whose `type` or `role` does not match the item is not the one meant
    others = {
        e["loc"][:-1]
        for e in errors
        if e["loc"][-1] in ("type", "role") and e["type"] in ("literal_error", "missing")
    }
    reasons = {
        ".".join(str(p) for p in e["loc"] if "[" not in str(p)) + ": " + e["msg"]
        for e in errors
        if e["type"] == "missing"
        and not any(e["loc"][:n] in others for n in range(1, len(e["loc"])))
    }
    pytest.fail(f"{api} body breaks the SDK's types:\n" + "\n".join(sorted(reasons)[:12]))


def _transcript(model: Model, reasoning: list[ThinkingContent]) -> list[Message]:
    """A user turn with one image of each type the APIs take and a PDF, an answer of
    `model` with its reasoning and a tool call, a result carrying an image, and a follow-up."""
    attachments = [load_attachment(b) for b in (PNG, JPEG, GIF, WEBP, PDF)]
    call = ToolCall(id="call_1", name="shot", arguments={"page": 1})
    return [
        UserMessage([TextContent("What is in these?"), *attachments]),
        AssistantMessage(
            [*reasoning, TextContent("Let me look."), call],
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason="toolUse",
        ),
        ToolResultMessage(
            "call_1",
            "shot",
            [TextContent("here"), ImageContent(base64.b64encode(PNG).decode(), "image/png")],
        ),
        UserMessage([TextContent("And now?")]),
    ]


async def _shot(*_: Any) -> AgentToolResult:
    return AgentToolResult([TextContent("unused")])


TOOLS = [
    AgentTool(
        "shot",
        "shot",
        "A screenshot of a page.",
        {"type": "object", "properties": {"page": {"type": "integer"}}},
        _shot,
    )
]


async def _request(server: ReplayServer, model: Model, messages: list[Message]) -> Any:
    options = StreamOptions(api_key=KEY, max_tokens=64, session_id="s1")
    reply = await complete(model, Context("Be brief.", messages, TOOLS), options)
    assert reply.stop_reason == "stop", reply.error_message
    return server.requests[-1].body


async def test_chat_completions_body_matches_the_sdk_types(server: ReplayServer) -> None:
    server.replies.put(sse_reply(openai_chunks({"content": "ok"})))
    model = get_model("openai/gpt-4o-mini", base_url=server.url + "/v1")
    body = await _request(server, model, _transcript(model, []))
    assert_valid(model.api, body)
    kinds = [part["type"] for part in body["messages"][1]["content"]]
    assert kinds == ["text", "image_url", "image_url", "image_url", "image_url", "file"]


async def test_anthropic_body_matches_the_sdk_types(server: ReplayServer) -> None:
    server.replies.put(sse_reply("anthropic_text.sse"))
    model = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    thinking = [
        ThinkingContent("I should look.", signature="c2lnbmF0dXJl"),
        ThinkingContent("", signature="cmVkYWN0ZWQ=", redacted=True),
    ]
    body = await _request(server, model, _transcript(model, thinking))
    assert_valid(model.api, body)
    kinds = [block["type"] for block in body["messages"][0]["content"]]
    assert kinds == ["text", "image", "image", "image", "image", "document"]
    assert [b["type"] for b in body["messages"][1]["content"]][:2] == [
        "thinking",
        "redacted_thinking",
    ]


async def test_responses_body_matches_the_sdk_types(server: ReplayServer) -> None:
    server.replies.put(
        sse_reply(
            responses_sse(
                {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ok"},
                responses_done(),
            )
        )
    )
    model = get_model("openai-responses/gpt-5-mini", base_url=server.url + "/v1")
    item = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "I should look."}],
        "encrypted_content": "ZW5jcnlwdGVk",
    }
    thinking = [ThinkingContent("I should look.", signature=json.dumps(item))]
    body = await _request(server, model, _transcript(model, thinking))
    assert_valid(model.api, body)
    images = [p for p in body["input"][0]["content"] if p["type"] == "input_image"]
    images += [p for p in body["input"][4]["output"] if p["type"] == "input_image"]
    assert len(images) == 5 and all(p["detail"] == "auto" for p in images)
    assert body["input"][1] == item  # the reasoning item exactly as it came


async def test_a_switch_claude_gpt_claude_sends_each_what_it_takes(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One session whose model goes Anthropic → OpenAI Responses → Anthropic, reasoning on
    throughout: each request fits its API's types; OpenAI gets Claude's thinking as text and
    no signature; Claude, back again, gets its own thinking exactly as it came, and the
    OpenAI reasoning as text without its encrypted content."""
    from tests.ai.test_openai_responses import REASONING_ITEM, a_call_with_reasoning, an_answer
    from tests.ai.test_reasoning_across_sessions import REDACTED, THINKING, weather_tools
    from yiemagent import Agent

    server.enqueue(
        sse_reply("anthropic_thinking_tool_use.sse"),
        sse_reply("anthropic_text.sse"),
        sse_reply(a_call_with_reasoning()),
        sse_reply(an_answer()),
        sse_reply("anthropic_text.sse"),
    )
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    gpt = get_model("openai-responses/gpt-5-mini", base_url=server.url + "/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    agent = Agent(model=claude, tools=weather_tools(), reasoning="low")
    await agent.prompt("Weather in San Francisco?")
    agent.state.model = gpt
    await agent.prompt("Time in Oslo?")
    agent.state.model = claude
    await agent.prompt("Tomorrow?")
    bodies = [request.body for request in server.requests]
    assert len(bodies) == 5
    for body, api in zip(bodies, [claude.api] * 2 + [gpt.api] * 2 + [claude.api], strict=True):
        assert_valid(api, body)
    to_gpt = json.dumps(bodies[3])
    assert THINKING["thinking"] in to_gpt
    assert THINKING["signature"] not in to_gpt and REDACTED["data"] not in to_gpt
    assert REASONING_ITEM in bodies[3]["input"]  # its own reasoning, exactly
    back = bodies[4]
    turns = [m["content"] for m in back["messages"] if m["role"] == "assistant"]
    assert turns[0][:2] == [THINKING, REDACTED]
    texts = [block.get("text") for turn in turns for block in turn]
    assert "The user wants Oslo's time." in texts
    assert REASONING_ITEM["encrypted_content"] not in json.dumps(back)
    assert back["thinking"]["type"] == "enabled"
