"""Sub-agent runs nested without end (DESIGN §17): opencode #18100 (an `explore` subagent
that hands its task to another `explore`, twenty levels deep). Here an agent that is its own
tool, or two agents that are each other's, with a model that always delegates, nested runs
until Python's recursion limit broke the event relay: a storm of `RecursionError`s and a
prompt that never returned. A call that would nest more than 8 runs is now an error result
the model reads, and every level answers."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from yiemagent import Agent, Context, NestedAgentEvent, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

pytestmark = pytest.mark.timeout(120)


def delegating_model(tool: str) -> FauxModel:
    """A model that hands every task to `tool`, and answers once its call is refused or
    answered: with the refusal's text at the deepest level, "up: <answer>" above it."""
    ids = itertools.count()

    def reply(context: Context) -> Any:
        last = context.messages[-1]
        if isinstance(last, ToolResultMessage):
            text = text_of(last.content)
            return text if last.is_error else f"up: {text}"
        return faux_message(faux_tool_call(tool, {"input": "explore"}, id=f"c{next(ids)}"))

    return FauxModel([reply] * 40)


async def test_an_agent_that_is_its_own_tool_stops_nesting_after_eight_runs() -> None:
    fm = delegating_model("explore")
    agent = Agent("Explore.", model=fm.model, stream_fn=fm.stream_fn, name="explore")
    agent.tool_store.register(agent.as_tool())
    paths: list[tuple[str, ...]] = []
    agent.subscribe(
        lambda e, _s: paths.append(e.agent_path) if isinstance(e, NestedAgentEvent) else None
    )

    reply = await agent.prompt("look around")

    assert max(len(p) for p in paths) == 9  # the entry, then 8 nested runs
    assert reply.text.startswith("up: " * 8 + "agent 'explore' not run: 8 agent runs")
    assert reply.text.endswith("do this part yourself")
    assert fm.call_count == 2 * 9  # each level delegates once, then answers


async def test_two_agents_that_are_each_others_tool_stop_nesting_too() -> None:
    fa, fb = delegating_model("ask_b"), delegating_model("ask_a")
    a = Agent("A.", model=fa.model, stream_fn=fa.stream_fn, name="a")
    b = Agent("B.", model=fb.model, stream_fn=fb.stream_fn, name="b")
    a.tool_store.register(b.as_tool("ask_b"))
    b.tool_store.register(a.as_tool("ask_a"))

    reply = await a.prompt("go")

    refused = "agent 'b' not run: 8 agent runs are already nested here (a > b > a > b > a > b"
    assert refused in reply.text
    assert fa.call_count + fb.call_count == 2 * 9
