"""An `Agent` takes its model as an id ("openai/gpt-4o-mini"), looked up with `get_model` when
the agent is built, or as a list mixing ids and `Model`s tried in order; `state.model` takes
the same (docs/agent.md "Model")."""

from __future__ import annotations

import pytest

from tests.ai.servers import free_port
from yiemagent import Agent, AgentRunError, ConfigError, ProviderError, get_model
from yiemagent.ai import FallbackModel
from yiemagent.types.model import Model


def _dead_server_model() -> Model:
    """A model served at a port nothing listens on: its calls fail at once."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    return Model(id="gone", provider="vllm", api="openai-completions", base_url=url)


def test_a_model_id_is_the_model_get_model_gives() -> None:
    agent = Agent(model="openai/gpt-4o-mini")
    assert agent.state.model == get_model("openai/gpt-4o-mini")
    assert Agent(model="claude-sonnet-4-5").state.model == get_model("claude-sonnet-4-5")


def test_an_unknown_id_fails_in_the_constructor_with_get_models_error() -> None:
    with pytest.raises(ProviderError) as expected:
        get_model("openai/gpt-9-nope")
    with pytest.raises(ProviderError) as raised:
        Agent(model="openai/gpt-9-nope")
    assert str(raised.value) == str(expected.value)


@pytest.mark.parametrize("bad", [5, [], ["openai/gpt-4o", 3], {"id": "gpt-4o"}])
def test_what_is_not_a_model_says_what_is(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"model must be a model id such as 'openai/gpt-4o-mini'"):
        Agent(model=bad)  # type: ignore[arg-type]


def test_a_list_mixes_ids_and_models_in_order() -> None:
    dead = _dead_server_model()
    agent = Agent(model=[dead, "openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"])
    model = agent.state.model
    assert isinstance(model, FallbackModel)
    assert model.models == (
        dead,
        get_model("openai/gpt-4o-mini"),
        get_model("anthropic/claude-haiku-4-5"),
    )
    with pytest.raises(ProviderError, match="unknown model 'nope/x'"):
        Agent(model=[dead, "nope/x"])


async def test_a_run_calls_the_model_the_id_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run goes to the second model of the list, OpenAI's, whose missing key ends it."""
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = Agent(model=[_dead_server_model(), "openai/gpt-4o-mini"], max_retry_delay_ms=1)
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("hi")
    assert "vllm/gone" in str(raised.value) and "OPENAI_API_KEY" in str(raised.value)


def test_state_model_takes_an_id_too() -> None:
    agent = Agent(model=_dead_server_model())
    agent.state.model = "openai/gpt-4o"
    assert agent.state.model == get_model("openai/gpt-4o")
    agent.state.model = ["openai/gpt-4o", "anthropic/claude-haiku-4-5"]
    assert isinstance(agent.state.model, FallbackModel)
    agent.state.model = None
    assert agent.state.model is None
    with pytest.raises(ProviderError, match="unknown model"):
        agent.state.model = "openai/gpt-9-nope"
    assert agent.state.model is None  # a refused value changes nothing
    with pytest.raises(ConfigError, match=r"state\.model must be a model id"):
        agent.state.model = 7  # type: ignore[assignment]
