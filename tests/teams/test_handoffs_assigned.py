"""`agent.handoffs = [...]` after the agents exist, the way a team whose agents name each
other in a cycle is built (DESIGN §17, §8): the list takes what `Agent(handoffs=...)` takes
(plain Agents too) and is checked the same way when it is assigned, so a wrong item is a
`ConfigError` there and the old list stays, never an AttributeError in the middle of a run."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import AgentTool, ConfigError, Handoff, ToolResultMessage
from yiemagent.ai.providers.faux import faux_message, faux_tool_call

from ._kit import scripted


async def test_a_cycle_of_plain_agents_assigned_after_they_exist_runs() -> None:
    a, _ = scripted("A", [faux_message(faux_tool_call("transfer_to_B", {})), "unused"])
    b, _ = scripted("B", [faux_message(faux_tool_call("transfer_to_A", {})), "B again"])
    a.handoffs = [b]
    b.handoffs = [a]
    assert [h.agent for h in a.handoffs] == [b] and isinstance(a.handoffs[0], Handoff)

    a.max_handoffs = 1  # the second transfer (back to A) is refused: B answers itself
    reply = await a.prompt("go")

    assert (reply.text, reply.agent) == ("B again", "B")
    results = [m for m in a.state.messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False, True]


@pytest.mark.parametrize(
    ("items", "said"),
    [
        ("a name", "give Agents or Handoff"),
        ("a handoff to a name", "give Agents or Handoff"),
        ("twice", "names the agent 'B' twice"),
        ("namesake", "two agents named 'C'"),
        ("own tool", "transfer_to_B"),
    ],
)
def test_a_wrong_handoff_list_is_refused_when_assigned_and_the_old_one_stays(
    items: str, said: str
) -> None:
    tool = AgentTool("transfer_to_B", "T", "t", {"type": "object"}, lambda *a: "x")
    a, _ = scripted("A", [], tools=[tool] if items == "own tool" else [])
    b, _ = scripted("B", [])
    c1, _ = scripted("C", [])
    c2, _ = scripted("C", [])
    d, _ = scripted("D", [], handoffs=[c2])
    kept = a.handoffs
    given: Any = {
        "a name": ["B"],
        "a handoff to a name": [Handoff("B")],
        "twice": [b, Handoff(b)],
        "namesake": [c1, d],
        "own tool": [b],
    }[items]
    with pytest.raises(ConfigError, match=said):
        a.handoffs = given
    assert a.handoffs is kept
