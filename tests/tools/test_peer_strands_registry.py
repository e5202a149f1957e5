"""The tool-registry cases strands-agents checks (tests/strands/tools/test_registry.py), on
our `ToolStore` and an Agent's tools: a second tool of a name is refused unless it is to
replace the first, a replaced tool is the one that runs, the same tool (or function) given
twice is one tool, and tools given wrongly are refused with what to give, leaving the
agent's tools as they were.

Where ours differs by choice: names that differ only by `-` and `_` are two tools (strands
refuses the second, for providers that rewrite one into the other; the APIs here take
both); an `Agent` among the tools is refused with how to offer it (`agent.as_tool()`),
where strands wraps it itself (docs/tools.md "Defining a tool")."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import Agent, AgentTool, ConfigError, ToolResultMessage, ToolStore, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


def named(name: str, answer: str) -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return answer

    return AgentTool(name, name, f"answers {answer}", {"type": "object", "properties": {}}, execute)


def keep(x: int) -> str:
    """A tool the agent had before."""
    return "kept"


def faux_agent(fm: FauxModel, **kwargs: Any) -> Agent[Any]:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)


def test_a_second_tool_of_a_name_is_refused_unless_it_replaces_the_first() -> None:
    store = ToolStore("registry")
    store.register(named("my_tool", "old"))
    with pytest.raises(ConfigError, match="pass replace=True"):
        store.register(named("my_tool", "new"))
    assert store.tools["my_tool"].description == "answers old"
    store.register(named("my_tool", "new"), replace=True)
    assert store.tools["my_tool"].description == "answers new"


async def test_names_that_differ_by_dash_and_underscore_are_two_tools() -> None:
    tools = [named("tool-like-this", "dash"), named("tool_like_this", "underscore")]
    calls = [faux_tool_call("tool-like-this"), faux_tool_call("tool_like_this")]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=tools)
    await agent.prompt("both")
    texts = [text_of(m.content) for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert texts == ["dash", "underscore"]


def test_the_same_tool_or_function_given_twice_is_one_tool() -> None:
    fm = FauxModel([])
    same = named("calc", "one")
    for given, name in (([same, same], "calc"), ([keep, keep], "keep")):
        agent = faux_agent(fm, tools=given)
        assert [t.name for t in agent.state.tools] == [name]
        agent.state.tools = given
        assert [t.name for t in agent.state.tools] == [name]


def test_assigning_two_tools_of_one_name_is_refused_and_changes_nothing() -> None:
    agent = faux_agent(FauxModel([]), tools=[keep])
    with pytest.raises(ConfigError, match="two different tools named 'calc'") as info:
        agent.state.tools = [named("other", "o"), named("calc", "a"), named("calc", "b")]
    assert "replace=True" not in str(info.value)  # no such option where tools are assigned
    assert [t.name for t in agent.state.tools] == ["keep"]


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ([42], "tools holds int 42, not a tool"),
        ([[keep]], "tools holds list"),
    ],
)
def test_tools_given_wrongly_are_refused_with_what_to_give(given: Any, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        faux_agent(FauxModel([]), tools=given)
    assert "give an AgentTool or a typed function" in str(info.value)
    agent = faux_agent(FauxModel([]), tools=[keep])
    with pytest.raises(ConfigError, match=problem):
        agent.state.tools = given
    assert [t.name for t in agent.state.tools] == ["keep"]


def test_an_agent_among_the_tools_is_refused_with_how_to_offer_it() -> None:
    fm = FauxModel([])
    research_agent = faux_agent(fm, name="research_agent", description="Finds information")
    with pytest.raises(ConfigError, match=r"agent\.as_tool\(\)"):
        faux_agent(fm, tools=[research_agent])
    offered = research_agent.as_tool()
    assert (offered.name, offered.description) == ("research_agent", "Finds information")
    assert [t.name for t in faux_agent(fm, tools=[offered]).state.tools] == ["research_agent"]


def test_a_decorated_function_and_its_tool_are_one_name_and_refused_together() -> None:
    with pytest.raises(ConfigError, match="two different tools named 'keep'"):
        faux_agent(FauxModel([]), tools=[keep, tool(keep)])
