"""DESIGN R-5.10: a model that calls a tool by a name no API takes back in a transcript
(GPT-4's `multi_tool_use.parallel`, a dotted `functions.get_time`, a name with a space)
gets its "not found" result, and the conversation goes on: the next request sends the
call under a name OpenAI's `^[a-zA-Z0-9_-]+$`, Anthropic's and Bedrock's `{1,64}` accept.
The name went back as the model wrote it, and the API refused that request and every
later one of the conversation with HTTP 400."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, anthropic_events, openai_chunks, sse_reply
from yiemagent import (
    Agent,
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai import Model
from yiemagent.ai.transform import transform_messages, wire_tool_name
from yiemagent.tools import tool
from yiemagent.types import TextContent, text_of

pytestmark = pytest.mark.timeout(120)

ACCEPTED = re.compile(r"[A-Za-z0-9_-]{1,64}")
MADE_UP = ["multi_tool_use.parallel", "functions.get_time", "get time", "get.time"]


@tool
def get_time(city: str) -> str:
    """The time in a city."""
    return f"12:00 in {city}"


def _openai_turn() -> list[str]:
    calls = [
        {"index": i, "id": f"c{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps({"city": "Oslo"})}}
        for i, name in enumerate(["get_time", *MADE_UP])
    ]  # fmt: skip
    return openai_chunks({"role": "assistant", "tool_calls": calls}, finish_reason="tool_calls")


def _anthropic_turn() -> list[str]:
    blocks = [
        {"type": "tool_use", "id": f"c{i}", "name": name, "input": {"city": "Oslo"}}
        for i, name in enumerate(["get_time", *MADE_UP, ""])
    ]
    return anthropic_events(*blocks, stop_reason="tool_use")


def _sent_names(api: str, body: dict[str, Any]) -> list[str]:
    if api == "openai-completions":
        return [
            call["function"]["name"]
            for message in body["messages"]
            for call in message.get("tool_calls") or []
        ]
    return [
        block["name"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_use"
    ]


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
async def test_a_made_up_tool_name_goes_back_as_one_the_api_accepts(
    server: ReplayServer, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0123456789")
    if api == "openai-completions":
        model = Model(id="m", provider="vllm", api=api, base_url=server.url + "/v1")
        server.enqueue(sse_reply(_openai_turn()), sse_reply(openai_chunks({"content": "Noon."})))
    else:
        model = Model(id="claude-x", provider="anthropic", api=api, base_url=server.url)
        text = {"type": "text", "text": "Noon."}
        server.enqueue(sse_reply(_anthropic_turn()), sse_reply(anthropic_events(text)))
    agent = Agent("x", model=model, tools=[get_time])
    answer = await agent.prompt("What time is it in Oslo?")
    assert answer.text == "Noon."
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert text_of(results[0].content) == "12:00 in Oslo"
    made_up = MADE_UP if api == "openai-completions" else [*MADE_UP, ""]
    for result, name in zip(results[1:], made_up, strict=True):
        assert result.is_error and f'Tool "{name}" not found' in text_of(result.content)
    sent = _sent_names(api, server.requests[1].body)
    assert len(sent) == 1 + len(made_up)
    assert sent[0] == "get_time"
    assert all(ACCEPTED.fullmatch(name) for name in sent), sent
    # "get.time" is not sent as the real get_time, which would then read as failing
    assert "get_time" not in sent[1:], sent


@given(st.text(max_size=80))
def test_every_name_is_sent_as_an_accepted_one_and_a_good_one_unchanged(name: str) -> None:
    history: list[Message] = [
        UserMessage("go"),
        AssistantMessage([ToolCall("c1", name, {})], stop_reason="toolUse"),
        ToolResultMessage("c1", name, [TextContent("not found")], is_error=True),
    ]
    model = Model(id="m", provider="p", api="openai-completions")
    _, assistant, result = transform_messages(history, model)
    assert isinstance(assistant, AssistantMessage) and isinstance(result, ToolResultMessage)
    [call] = assistant.content
    assert isinstance(call, ToolCall)
    assert ACCEPTED.fullmatch(call.name)
    assert result.tool_name == call.name
    if ACCEPTED.fullmatch(name):
        assert assistant is history[1] and result is history[2]


@given(st.text(max_size=80), st.lists(st.from_regex(ACCEPTED, fullmatch=True), max_size=5))
def test_a_rewritten_name_is_never_that_of_a_tool_offered(name: str, others: list[str]) -> None:
    # "get.time" sent as "get_time" beside a real get_time tool showed that tool's call
    # failing "not found" in the history the model reads.
    offered = [*others, wire_tool_name(name)]
    for _ in range(3):  # the names a collision turns to, taken too
        offered.append(wire_tool_name(name, offered))
    history: list[Message] = [
        UserMessage("go"),
        AssistantMessage([ToolCall("c1", name, {})], stop_reason="toolUse"),
        ToolResultMessage("c1", name, [TextContent("not found")], is_error=True),
    ]
    model = Model(id="m", provider="p", api="openai-completions")
    _, assistant, result = transform_messages(history, model, tool_names=offered)
    assert isinstance(assistant, AssistantMessage) and isinstance(result, ToolResultMessage)
    [call] = assistant.content
    assert isinstance(call, ToolCall)
    assert ACCEPTED.fullmatch(call.name)
    assert result.tool_name == call.name
    if call.name != name:
        assert call.name not in offered
