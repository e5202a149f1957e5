"""A connection reset while the model streams a tool call (DESIGN §8, §21), through an Agent
on each wire format and its official SDK against a replay server: the run ends in one
clear error saying the connection closed mid-stream and that it was not retried; the half
call never runs; the next prompt sends nothing of the broken answer."""

from __future__ import annotations

import json

import pytest

from tests.ai.servers import ReplayServer, Reply, load_sse, openai_chunks
from yiemagent import Agent, AgentRunError, tool
from yiemagent.ai import get_model
from yiemagent.types.messages import AssistantMessage

pytestmark = pytest.mark.timeout(120)


def half_a_call(api: str) -> list[str]:
    """An answer's events up to the middle of its tool call's arguments."""
    if api == "anthropic":
        events = load_sse("anthropic_thinking_tool_use.sse")
        middle = next(i for i, e in enumerate(events) if '{\\"city\\": \\"San' in e)
        return events[: middle + 1]
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "San'}}  # fmt: skip
    events = openai_chunks(
        {"role": "assistant", "content": "Let me check."}, {"tool_calls": [call]}
    )
    return events[:2]  # no finish reason, no [DONE]


def an_answer(api: str) -> list[str]:
    if api == "anthropic":
        return load_sse("anthropic_text.sse")
    return openai_chunks({"role": "assistant", "content": "Hello there."})


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_reset_inside_a_tool_call_runs_nothing_and_leaves_nothing_half(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch, api: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    server.enqueue(Reply(events=half_a_call(api), reset=True), Reply(events=an_answer(api)))
    name = "anthropic/claude-sonnet-4-5" if api == "anthropic" else "openai/gpt-4o"
    base_url = server.url if api == "anthropic" else server.url + "/v1"
    ran: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return "sunny"

    agent = Agent(model=get_model(name, base_url=base_url), tools=[get_weather])
    with pytest.raises(AgentRunError) as caught:
        await agent.prompt("Weather in San Francisco?")
    text = str(caught.value)
    assert "closed the connection mid-stream" in text and "not retried" in text
    assert "\n" not in text
    assert ran == []
    broken = agent.state.messages[1]
    assert isinstance(broken, AssistantMessage) and broken.stop_reason == "error"
    assert len(server.requests) == 1  # part of the answer had arrived: not asked again

    answer = await agent.prompt("Thanks anyway.")
    assert answer.text == "Hello there."
    sent = json.dumps(server.requests[1].body["messages"])
    for half in ("city", "get_weather", "Let me check", "I should check"):
        assert half not in sent
