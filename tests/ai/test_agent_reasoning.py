"""`Agent(reasoning=...)` (DESIGN §21): the level goes with every model call of a run, the
first one included, through the official SDKs to local servers speaking the Anthropic
Messages and OpenAI Responses wire formats; the thinking that comes back stays in the
transcript. A bad level is one `ConfigError`; a model that cannot think gets a warning."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_openai_responses import a_call_with_reasoning, an_answer
from yiemagent import Agent, AgentTool
from yiemagent.ai import get_model
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.errors import ConfigError
from yiemagent.types import AssistantMessage, ThinkingContent

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")


def tools() -> list[AgentTool]:
    return [
        AgentTool(name, name, name, {"type": "object"}, lambda *_: "sunny, 18 C at noon")
        for name in ("get_weather", "get_time")
    ]


def thinking_blocks(agent: Agent[Any]) -> list[ThinkingContent]:
    return [
        block
        for message in agent.state.messages
        if isinstance(message, AssistantMessage)
        for block in message.content
        if isinstance(block, ThinkingContent)
    ]


async def test_claude_thinks_from_the_first_call(server: ReplayServer) -> None:
    server.enqueue(sse_reply("anthropic_thinking_tool_use.sse"), sse_reply("anthropic_text.sse"))
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    agent = Agent(model=claude, tools=tools(), reasoning="low")
    await agent.prompt("Weather in San Francisco?")

    assert len(server.requests) == 2
    for request in server.requests:  # the first call too, not only from the second on
        assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    kept = thinking_blocks(agent)
    assert kept and kept[0].thinking == "I should check the weather."
    assert kept[0].signature  # kept to go back on the next turn


async def test_a_level_set_on_the_state_reaches_the_next_run(server: ReplayServer) -> None:
    server.enqueue(sse_reply("anthropic_text.sse"), sse_reply("anthropic_text.sse"))
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    agent = Agent(model=claude)
    await agent.prompt("Hi")
    agent.state.reasoning = "high"
    await agent.prompt("Again")

    assert "thinking" not in server.requests[0].body
    assert server.requests[1].body["thinking"]["type"] == "enabled"


async def test_responses_reasoning_is_asked_for_from_the_first_call(
    server: ReplayServer,
) -> None:
    server.enqueue(sse_reply(a_call_with_reasoning()), sse_reply(an_answer()))
    gpt = get_model("openai-responses/gpt-5-mini", base_url=server.url + "/v1")
    agent = Agent(model=gpt, tools=tools(), reasoning="minimal")
    answer = await agent.prompt("What time is it in Oslo?")

    assert answer.text == "It is noon in Oslo."
    for request in server.requests:
        assert request.body["reasoning"] == {"effort": "minimal", "summary": "auto"}
    kept = thinking_blocks(agent)
    assert kept and kept[0].thinking == "The user wants Oslo's time."


async def test_a_model_that_cannot_think_is_warned_and_asked_nothing(
    server: ReplayServer,
) -> None:
    server.enqueue(sse_reply("anthropic_text.sse"))
    haiku = get_model("anthropic/claude-3-5-haiku-latest", base_url=server.url)
    assert not haiku.reasoning
    agent = Agent(model=haiku, reasoning="medium")
    with pytest.warns(UserWarning, match="not a reasoning model"):
        await agent.prompt("Hi")
    assert "thinking" not in server.requests[0].body


async def test_an_agent_called_as_a_tool_thinks_at_its_current_level(
    server: ReplayServer,
) -> None:
    server.enqueue(sse_reply("anthropic_text.sse"))
    claude = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    researcher = Agent(model=claude, name="researcher")
    researcher.state.reasoning = "medium"  # after construction: the copy run takes it too
    lead_model = FauxModel(
        [faux_message(faux_tool_call("researcher", {"input": "Weather?"})), "Sunny."]
    )
    lead = Agent(model=lead_model.model, tools=[researcher.as_tool()])
    assert (await lead.prompt("Ask the researcher")).text == "Sunny."
    assert server.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 8192}


@pytest.mark.parametrize("level", ["max", "LOW", 1, True, ""])
def test_a_bad_level_is_one_config_error(level: object) -> None:
    with pytest.raises(ConfigError, match=r"^reasoning must be one of 'minimal', 'low'"):
        Agent(reasoning=level)  # type: ignore[arg-type]
    agent = Agent()
    with pytest.raises(ConfigError, match=r"^state.reasoning must be one of"):
        agent.state.reasoning = level
    assert agent.state.reasoning is None


def test_off_is_no_thinking() -> None:
    agent = Agent(reasoning="off")  # type: ignore[arg-type]
    assert agent.state.reasoning is None
    agent.state.reasoning = "xhigh"
    assert agent.state.reasoning == "xhigh"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.state.reasoning = None
