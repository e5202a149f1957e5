"""A local server's thinking model (`get_model("ollama/…", reasoning=True)`, docs/providers.md):
the agent's reasoning level reaches the server as `reasoning_effort`; without the switch
nothing says the model thinks and the level is left out with a warning. A replay server on
127.0.0.1 speaking the OpenAI wire format."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from tests.ai.servers import ReplayServer, Reply, openai_chunks
from yiemagent import Agent, ProviderError
from yiemagent.ai import get_model

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


@pytest.mark.parametrize("name", ["ollama/qwen3", "openai-compatible/qwen3"])
async def test_a_thinking_local_model_is_sent_the_agent_s_level(
    server: ReplayServer, name: str
) -> None:
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hi."})))
    model = get_model(name, base_url=server.url + "/v1", reasoning=True)
    assert model.reasoning
    agent = Agent(model=model, reasoning="low")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "reasoning is ignored"
        reply = await agent.prompt("Hi")
    assert reply.text == "Hi."
    assert server.requests[0].body["reasoning_effort"] == "low"


async def test_without_the_switch_the_level_is_left_out(server: ReplayServer) -> None:
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hi."})))
    model = get_model("ollama/qwen3", base_url=server.url + "/v1")
    agent = Agent(model=model, reasoning="low")
    with pytest.warns(UserWarning, match="reasoning is ignored"):
        await agent.prompt("Hi")
    assert "reasoning_effort" not in server.requests[0].body


def test_reasoning_for_a_hosted_model_is_refused() -> None:
    with pytest.raises(ProviderError, match=r"^reasoning is for local servers .*'openai/gpt-4o'"):
        get_model("openai/gpt-4o", reasoning=True)
