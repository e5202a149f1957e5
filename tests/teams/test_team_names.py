"""Every agent of a team has a name of its own (DESIGN §17): the speaker of each message,
`state.active_agent` and a reopened session name the agent that answers next, so a team in
which two agents share a name is refused when its agent is made. Before, it was accepted,
and after a handoff to the second agent of a name the next prompt went to the first."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from yiemagent import ConfigError

from ._kit import calls, scripted


def test_a_handoff_to_another_agent_of_the_entrys_name_is_refused() -> None:
    target, _ = scripted("router", ["I am the target"])
    with pytest.raises(ConfigError) as refused:
        scripted("router", [calls(("transfer_to_router", {}))], handoffs=[target])
    assert str(refused.value) == (
        "the agent 'router' hands off (through router -> router) to another agent named "
        "'router'; every agent of a team needs a name of its own"
    )


def test_an_agent_deeper_in_the_team_named_as_the_entry_is_refused() -> None:
    c, _ = scripted("A", ["I am C"])
    b, _ = scripted("B", [calls(("transfer_to_A", {}))], handoffs=[c])
    with pytest.raises(ConfigError, match=r"through A -> B -> A\) to another agent named 'A'"):
        scripted("A", [calls(("transfer_to_B", {}))], handoffs=[b])


def test_two_agents_of_one_name_on_two_branches_are_refused() -> None:
    x1, _ = scripted("x", ["first x"])
    x2, _ = scripted("x", ["second x"])
    b, _ = scripted("b", ["b"], handoffs=[x1])
    c, _ = scripted("c", ["c"], handoffs=[x2])
    with pytest.raises(ConfigError) as refused:
        scripted("entry", ["entry"], handoffs=[b, c])
    assert str(refused.value) == (
        "the team of agent 'entry' has two agents named 'x' (through entry -> b -> x and "
        "entry -> c -> x); every agent of a team needs a name of its own"
    )


async def test_one_agent_reached_twice_is_one_agent_and_answers_after_its_handoff() -> None:
    shared, shared_fm = scripted("shared", ["shared here", "shared again"])
    b, _ = scripted("b", ["b"], handoffs=[shared])
    entry, entry_fm = scripted("entry", [calls(("transfer_to_shared", {}))], handoffs=[b, shared])
    first = await entry.prompt("hi")
    assert (first.text, first.agent) == ("shared here", "shared")
    second = await entry.prompt("again")  # the agent handed to answers the next prompt
    assert (second.text, second.agent) == ("shared again", "shared")
    assert shared_fm.call_count == 2 and entry_fm.call_count == 1


@settings(max_examples=100, deadline=None)
@given(
    team=st.lists(
        st.tuples(st.sampled_from("abcd"), st.sets(st.integers(0, 5), max_size=3)),
        min_size=1,
        max_size=7,
    )
)
def test_an_agent_is_refused_exactly_when_two_of_its_team_share_a_name(
    team: list[tuple[str, set[int]]],
) -> None:
    """Agents made in order, each handing off to some of those made before it: each is
    refused exactly when two different agents of the team it heads (itself and every
    agent its handoffs reach) have one name."""
    made: list[Any] = []
    for name, picks in team:
        chosen = [made[i % len(made)] for i in picks] if made else []
        targets = list({id(t): t for t in chosen}.values())
        members = {id(a): a for t in targets for a in _team_of(t)}
        names = [a.name for a in members.values()] + [name]
        try:
            agent, _ = scripted(name, ["unused"], handoffs=targets)
        except ConfigError:
            assert len(set(names)) < len(names), names
            continue
        assert len(set(names)) == len(names), names
        made.append(agent)


def _team_of(agent: Any) -> list[Any]:
    """`agent` and every agent its handoffs reach, each once."""
    seen = [agent]
    for one in seen:
        for handoff in one.handoffs:
            if all(handoff.agent is not other for other in seen):
                seen.append(handoff.agent)
    return seen
