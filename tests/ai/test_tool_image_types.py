"""A tool that returns an image of a type the hosted APIs do not read (an SVG chart, a BMP
screenshot; DESIGN §8, §21): Anthropic's Messages API and OpenAI's APIs take PNG, JPEG,
GIF and WebP only, and refuse the request otherwise — and, the image being kept in the
transcript, every later request of the session. Such an image goes as a text naming it;
a readable one goes as an image; a local server, which may read more types, gets it as it
is. Through an Agent and each official SDK against a replay server."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, Reply, openai_chunks, sse_reply
from tests.ai.test_anthropic_compat import sse
from tests.ai.test_attachments import responses_done, responses_sse
from tests.ai.test_openai_responses import an_answer
from yiemagent import Agent, AgentTool, AgentToolResult
from yiemagent.ai import get_model
from yiemagent.types.messages import ImageContent, TextContent

pytestmark = pytest.mark.timeout(120)

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
SVG = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>').decode()
BMP = base64.b64encode(b"BM" + bytes(60)).decode()


def a_call_then_an_answer(api: str) -> list[Reply]:
    if api == "anthropic":
        block = {"type": "tool_use", "id": "toolu_1", "name": "chart", "input": {}}
        call = sse(
            ("content_block_start", {"index": 0, "content_block": block}),
            ("content_block_stop", {"index": 0}),
            stop="tool_use",
        )
        return [sse_reply(call), sse_reply("anthropic_text.sse")]
    if api == "responses":
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "chart",
                "arguments": "{}", "status": "completed"}  # fmt: skip
        events = responses_sse(
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            responses_done(),
        )
        return [sse_reply(events), sse_reply(an_answer())]
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "chart", "arguments": "{}"}}  # fmt: skip
    return [
        Reply(
            events=openai_chunks(
                {"role": "assistant", "tool_calls": [call]}, finish_reason="tool_calls"
            )
        ),
        Reply(events=openai_chunks({"role": "assistant", "content": "A chart."})),
    ]


MODELS = {
    "anthropic": ("anthropic/claude-sonnet-4-5", ""),
    "openai": ("openai/gpt-4o", "/v1"),
    "responses": ("openai-responses/gpt-4o", "/v1"),
}


@pytest.mark.parametrize("api", list(MODELS))
async def test_an_image_type_the_api_refuses_goes_as_a_text_naming_it(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch, api: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    server.enqueue(*a_call_then_an_answer(api))

    async def chart(*_: Any) -> AgentToolResult:
        return AgentToolResult(
            [
                TextContent("three images"),
                ImageContent(SVG, "image/svg+xml"),
                ImageContent(BMP, "image/bmp"),
                ImageContent(PNG, "image/png"),
            ]
        )

    name, path = MODELS[api]
    tool = AgentTool("chart", "chart", "Draws a chart.", {"type": "object"}, chart)
    agent = Agent(model=get_model(name, base_url=server.url + path), tools=[tool])
    await agent.prompt("Draw it.")
    sent = json.dumps(server.requests[1].body)
    assert SVG not in sent and BMP not in sent
    assert "image/svg+xml" in sent and "image/bmp" in sent  # named in the text
    assert PNG in sent  # the readable one goes as an image
    assert "PNG, JPEG, GIF and WebP" in sent
    assert agent.state.messages[2].content[1] == ImageContent(SVG, "image/svg+xml")  # kept


async def test_a_local_server_gets_every_image_type(server: ReplayServer) -> None:
    """llama.cpp and vLLM decode more types than the hosted APIs: they decide."""
    server.enqueue(*a_call_then_an_answer("openai"))

    async def chart(*_: Any) -> AgentToolResult:
        return AgentToolResult([ImageContent(BMP, "image/bmp")])

    model = get_model("openai-compatible/vision", base_url=server.url + "/v1")
    vision = replace(model, input=("text", "image"))
    agent = Agent(model=vision, tools=[AgentTool("chart", "chart", "c", {"type": "object"}, chart)])
    await agent.prompt("Draw it.")
    assert f"data:image/bmp;base64,{BMP}" in json.dumps(server.requests[1].body)
