"""Held calls that share an id across agents (DESIGN §14, §17). Many models and servers
number their calls `call_0`, `call_1` … in every reply, so a sub-agent's held call often
has the id of the parent's own held call, or of another sub-agent's. Each pending call
gets an id of its own, so `approve(id)` and `reject(id)` reach every one of them, and the
decisions apply to the calls they were given for, also in another process."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import ToolResultMessage
from yiemagent.ai.providers.faux import faux_message, faux_tool_call
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import text_of

from ..approvals._kit import recording_tool, transcript_problems
from ._kit import scripted


def numbered(*calls: tuple[str, dict[str, Any]]) -> Any:
    """One reply whose calls are numbered `call_0`, `call_1` … as llama.cpp numbers them."""
    return faux_message(*(faux_tool_call(n, a, id=f"call_{i}") for i, (n, a) in enumerate(calls)))


def sub_agent(name: str, ran: list[str], *, held: bool) -> Any:
    """An agent that holds one `launch_<name>` call, `call_0`, then answers (`held`: it
    already holds it, and answers)."""
    tool = recording_tool(f"launch_{name}", ran, requires_approval=True)
    script = [f"{name} done"] if held else [numbered((f"launch_{name}", {"n": 1})), f"{name} done"]
    agent, _ = scripted(name, script, tools=[tool])
    return agent


@pytest.mark.parametrize("reopened", [False, True])
async def test_every_call_held_under_one_id_gets_its_own_decision(reopened: bool) -> None:
    """The lead holds its `refund` (call_0) and runs two sub-agents that each hold their
    own call_0. All three were listed as `call_0`: `approve("call_0")` reached one
    sub-agent's call only, and the others could be neither approved nor rejected, so
    `resume()` raised `ApprovalPendingError` for ever."""
    store = InMemorySessionStore()
    ran: list[str] = []

    def lead(script: list[Any], *, held: bool = False) -> Any:
        """The lead on session "s"; `held`: another process, once the calls are held."""
        tools = [
            recording_tool("refund", ran, requires_approval=True),
            sub_agent("north", ran, held=held).as_tool(),
            sub_agent("south", ran, held=held).as_tool(),
        ]
        agent, _ = scripted("lead", script, tools=tools, session_store=store, session_id="s")
        return agent

    script = [
        numbered(("refund", {"n": 1}), ("north", {"input": "go"}), ("south", {"input": "go"}))
    ]
    agent = lead([*script, "all done"])
    await agent.prompt("refund, then launch both")
    pending = agent.pending_approvals
    assert [p.tool_name for p in pending] == ["refund", "launch_north", "launch_south"]
    assert len({p.tool_call_id for p in pending}) == 3, [p.tool_call_id for p in pending]
    assert pending[0].tool_call_id == "call_0"  # the lead's own call keeps its id
    # each call's path: the lead's calls that run its sub-agent (call_1, call_2), then its id
    assert [p.tool_call_path for p in pending] == [
        ("call_0",),
        ("call_1", pending[1].tool_call_id),
        ("call_2", pending[2].tool_call_id),
    ]
    if reopened:
        await agent.close()
        agent = lead(["all done"], held=True)
        assert agent.pending_approvals == pending
    ids = {p.tool_name: p.tool_call_id for p in pending}
    agent.approve(ids["refund"])
    agent.reject(ids["launch_north"], reason="not north")
    agent.approve(ids["launch_south"])

    reply = await agent.resume()

    assert reply.text == "all done"
    assert sorted(ran) == sorted([ids["refund"], ids["launch_south"]])  # each once
    results = {m.tool_name: text_of(m.content) for m in agent.state.messages
               if isinstance(m, ToolResultMessage)}  # fmt: skip
    assert results == {"refund": "refund ran with {'n': 1}", "north": "north done",
                       "south": "south done"}  # fmt: skip
    assert transcript_problems(agent.state.messages) == []
    await agent.close()
