"""`repr(agent)` says what the agent is, as a REPL or a notebook shows it: its name, model,
tools, handoffs, how many messages it holds and its session. It was
`<yiemagent.agent._agent.Agent object at 0x…>`."""

from __future__ import annotations

from yiemagent import Agent, tool
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.sessions import InMemorySessionStore


@tool
def multiply(a: int, b: int) -> str:
    """Multiply two whole numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return str(a * b)


def test_the_repr_names_model_tools_and_messages() -> None:
    fm = FauxModel(["391"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[multiply])
    assert (
        repr(agent) == "Agent(name='assistant', model='faux/faux', tools=['multiply'], messages=0)"
    )
    agent.prompt_sync("What is 17 * 23?")
    assert repr(agent).endswith("tools=['multiply'], messages=2)")


def test_the_repr_names_handoffs_and_the_session() -> None:
    math = Agent(name="math", model="local/qwen2.5-coder-0.5b")
    router = Agent(
        name="router",
        model="local/qwen2.5-coder-0.5b",
        handoffs=[math],
        session_store=InMemorySessionStore(),
        session_id="s1",
    )
    assert repr(router) == (
        "Agent(name='router', model='local/qwen2.5-coder-0.5b', tools=[], handoffs=['math'], "
        "messages=0, session_id='s1')"
    )
