"""A typed function given where tools are taken is the tool `@tool` makes of it (DESIGN
R-4.3), as pydantic-ai's `Agent(tools=[func])` takes one: `Agent(tools=...)` (a list or a
name → tool dict), `agent.state.tools`, a run's own `tools=` and `ToolStore.register`. The
model is offered the same definition and the call runs the function; a function `@tool`
refuses gets `@tool`'s message; anything else is one `ConfigError` that says what to give."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from yiemagent import Agent, ConfigError, ToolResultMessage, ToolStore, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


def get_weather(city: str, unit: str = "C") -> str:
    """The weather in a city.

    Args:
        city: the city's name.
        unit: C or F.
    """
    return f"{city}: 21 {unit}, sunny"


async def get_weather_async(city: str, unit: str = "C") -> str:
    """The weather in a city, looked up without blocking.

    Args:
        city: the city's name.
        unit: C or F.
    """
    await asyncio.sleep(0)
    return f"{city}: 19 {unit}, cloudy"


def spread(*cities: str) -> str:
    """A function @tool refuses: the model sends one arguments object, not *args."""
    return ", ".join(cities)


def faux_weather_run(name: str) -> FauxModel:
    return FauxModel([faux_message(faux_tool_call(name, {"city": "Paris"})), "It is sunny."])


def run_with(fm: FauxModel, place: str, func: Callable[..., Any]) -> Agent:
    """Run one prompt with `func` given bare at `place`; the agent after the run."""
    base: dict[str, Any] = {"model": fm.model, "stream_fn": fm.stream_fn}
    name = func.__name__
    if place == "Agent(tools=[...])":
        agent = Agent(tools=[func], **base)
    elif place == "Agent(tools={...})":
        agent = Agent(tools={name: func}, **base)
    elif place == "state.tools":
        agent = Agent(**base)
        agent.state.tools = [func]
    elif place == "ToolStore.register":
        store = ToolStore("mine")
        registered = store.register(func)
        assert registered.name == name and store.tools[name] is registered
        agent = Agent(tool_store=store, **base)
    else:
        agent = Agent(**base)
        asyncio.run(agent.prompt("Weather in Paris?", tools=[func]))
        return agent
    asyncio.run(agent.prompt("Weather in Paris?"))
    return agent


PLACES = [
    "Agent(tools=[...])",
    "Agent(tools={...})",
    "state.tools",
    "ToolStore.register",
    "prompt(tools=[...])",
]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(
    ("func", "said"),
    [(get_weather, "Paris: 21 C, sunny"), (get_weather_async, "Paris: 19 C, cloudy")],
    ids=["plain", "async"],
)
def test_a_bare_function_is_the_tool_tool_makes(
    place: str, func: Callable[..., Any], said: str
) -> None:
    fm = faux_weather_run(func.__name__)
    agent = run_with(fm, place, func)
    [offered] = fm.contexts[0].tools or []
    decorated = tool(func)
    assert (offered.name, offered.label, offered.description, offered.input_schema) == (
        decorated.name,
        decorated.label,
        decorated.description,
        decorated.input_schema,
    )
    assert offered.input_schema["required"] == ["city"]
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert (result.tool_name, result.is_error, text_of(result.content)) == (
        func.__name__,
        False,
        said,
    )
    assert agent.state.messages[-1].text == "It is sunny."  # type: ignore[union-attr]


def refusal(build: Callable[[], Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        build()
    return str(caught.value)


def every_place(item: Any) -> list[Callable[[], Any]]:
    """Each place given `item`, as a call that raises before any model call."""
    idle = FauxModel([])
    base: dict[str, Any] = {"model": idle.model, "stream_fn": idle.stream_fn}

    def state_tools() -> None:
        Agent(**base).state.tools = [item]

    return [
        lambda: Agent(tools=[item], **base),
        lambda: Agent(tools={"spread": item}, **base),
        state_tools,
        lambda: ToolStore("mine").register(item),
        lambda: asyncio.run(Agent(**base).prompt("Hi", tools=[item])),
    ]


def test_a_function_tool_refuses_gets_tools_message_everywhere() -> None:
    expected = refusal(lambda: tool(spread))
    assert "*args" in expected
    for build in every_place(spread):
        assert refusal(build) == expected


@pytest.mark.parametrize(
    "item",
    [object(), 42, "get_weather", ToolStore, Agent(llm_call=print)],
    ids=["object", "int", "str", "class", "agent"],
)
def test_anything_else_is_one_line_saying_what_to_give(item: Any) -> None:
    for build in every_place(item):
        message = refusal(build)
        assert f"tools holds {type(item).__name__} " in message, message
        assert "not a tool: give an AgentTool or a typed function" in message
        assert "agent.as_tool()" in message and "\n" not in message
