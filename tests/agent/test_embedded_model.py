"""DESIGN R-6.1 and R-6.7 on the real embedded model: `Agent()` with no model and no key runs
a tool-using prompt offline, from plain code, twice in a row (each `prompt_sync` its own
event loop). Slow (the model runs on the CPU): marked `local_model` and `slow`."""

from __future__ import annotations

import importlib.util

import pytest

from yiemagent import Agent, AssistantMessage, ToolResultMessage, tool


def _embedded_model_installed() -> bool:
    if importlib.util.find_spec("xllamacpp") is None:
        return False
    from yiemagent.ai.providers.local.weights import is_installed, local_spec

    return is_installed(local_spec("qwen2.5-coder-0.5b"))


pytestmark = [
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.skipif(not _embedded_model_installed(), reason="the local extra is not installed"),
    pytest.mark.timeout(900),  # two runs of the real model on 2 shared cores
]


@tool
def get_weather(city: str) -> str:
    """Fetch the current weather for a city.

    Args:
        city: The city name.
    """
    return f"Weather in {city}: Sunny, 22°C"


def test_r6_1_default_agent_runs_offline_on_the_embedded_model_twice() -> None:
    agent = Agent(tools=[get_weather])
    first = agent.prompt_sync("What's the weather in Tokyo?")
    second = agent.prompt_sync("And in Paris?")
    assert agent.state.model is not None and agent.state.model.provider == "local"
    for answer in (first, second):
        assert answer.stop_reason == "stop", answer.error_message
        assert answer.text.strip()
    calls = [
        c.id for m in agent.state.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    results = [m.tool_call_id for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert results == calls  # each call answered once, in order
    assert not agent.is_busy
