"""A server that streams its call in the legacy `function_call` delta field (OpenAI's
functions API, which the older servers built on it keep: FastChat, ChatGLM3's and Qwen's
first API servers, Azure OpenAI before API version 2023-12-01-preview) and ends with
`finish_reason: "function_call"`. The call was dropped: the turn ended as an empty answer
with stop reason "stop", the tool never ran. It is one tool call (that field holds one),
through an Agent, against `ReplayServer` on 127.0.0.1 and the real `openai` SDK."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.tools import tool
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"


@tool
def weather(city: str) -> str:
    """The weather in `city`."""
    return f"sunny in {city}"


def function_call_stream(*pieces: dict[str, Any]) -> list[str]:
    return openai_chunks(*({"function_call": p} for p in pieces), finish_reason="function_call")


def model(server: ReplayServer) -> Model:
    return Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")


async def test_a_function_call_in_pieces_is_one_tool_call(server: ReplayServer) -> None:
    server.enqueue(
        sse_reply(
            function_call_stream(
                {"name": "weather", "arguments": ""},
                {"arguments": '{"city": '},
                {"arguments": '"Paris"}'},
            )
        )
    )
    stream = stream_openai_completions(
        model(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    message = await stream.result()
    assert message.error_message is None
    assert message.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("weather", {"city": "Paris"})]


async def test_an_agent_runs_the_call_and_answers(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    server.enqueue(
        sse_reply(function_call_stream({"name": "weather", "arguments": '{"city": "Oslo"}'})),
        sse_reply(openai_chunks({"content": "It is sunny."})),
    )
    agent = Agent("x", model=model(server), tools=[weather])
    answer = await agent.prompt("weather in Oslo?")
    assert answer.text == "It is sunny."
    sent = server.requests[1].body["messages"]
    call = sent[-2]["tool_calls"][0]
    assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == (
        "weather",
        {"city": "Oslo"},
    )
    assert sent[-1] == {"role": "tool", "tool_call_id": call["id"], "content": "sunny in Oslo"}
