"""The timeline's sub-agent lanes (DESIGN §13, §17), as a property over `yiem run --json` logs
of any tree of sub-agent runs whose models number their calls: every run gets a lane of its
own, right under the call that ran it, even when two runs of one agent path each make a call
`call_0` (and one of them the lead's own `call_0` above)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from hypothesis import given, strategies as st

from yiemagent import MessageEndEvent, NestedAgentEvent, UserMessage, event_to_dict
from yiemagent.ai.providers.faux import faux_message, faux_text, faux_tool_call
from yiemagent.telemetry import timeline_from_event_lines
from yiemagent.types import AgentMessage, TextContent, ToolResultMessage

Tree = list[tuple[str, Any]]
"""The sub-agents a run calls, in one batch: each its name and the run's own tree."""


def trees(depth: int = 1) -> st.SearchStrategy[Tree]:
    if depth == 4:
        return st.just([])
    child = st.tuples(st.sampled_from(["mid", "leaf"]), trees(depth + 1))
    return st.lists(child, max_size=2)


def log(tree: Tree) -> tuple[list[str], list[tuple[tuple[str, ...], tuple[str, ...], int]]]:
    """The event lines of a lead whose run is `tree`, and each run's agent path, call path
    (empty for the lead's) and number of assistant and tool result messages (a bar each)."""
    clock: Iterator[int] = itertools.count(1_000, 10)
    lines: list[str] = []
    runs: list[tuple[tuple[str, ...], tuple[str, ...], int]] = []

    def emit(agents: tuple[str, ...], calls: tuple[str, ...], message: AgentMessage) -> int:
        message.timestamp = next(clock)
        event: Any = MessageEndEvent(message)
        if calls:
            event = NestedAgentEvent(agents, calls[-1], event, calls)
        lines.append(json.dumps(event_to_dict(event)))
        return 1

    def run(agents: tuple[str, ...], calls: tuple[str, ...], children: Tree) -> None:
        said = 0
        if children:
            asks = [
                faux_tool_call(name, {"input": "x"}, id=f"call_{i}")
                for i, (name, _) in enumerate(children)
            ]
            said += emit(agents, calls, faux_message(*asks))
            for ask, (name, grandchildren) in zip(asks, children, strict=True):
                run((*agents, name), (*calls, ask.id), grandchildren)
                answer = ToolResultMessage(ask.id, name, [TextContent("ok")], duration_ms=5)
                said += emit(agents, calls, answer)
        said += emit(agents, calls, faux_message(faux_text("done")))
        runs.append((agents, calls, said))

    emit(("lead",), (), UserMessage("go"))
    run(("lead",), (), tree)
    return lines, runs


@given(trees())
def test_each_sub_agent_run_is_a_lane_right_under_the_call_that_ran_it(tree: Tree) -> None:
    lines, runs = log(tree)
    bars = [bar for turn in timeline_from_event_lines(lines).turns for bar in turn.bars]

    ids = [bar.id for bar in bars]
    assert len(set(ids)) == len(ids)
    assert len(bars) == sum(count for *_, count in runs)
    for agents, calls, count in runs[:-1]:  # the lead's is last
        lane = " › ".join(agents[1:])
        prefix = f"{'/'.join(calls)}/{lane}/"
        own = [i for i, bar in enumerate(bars) if bar.id.startswith(prefix)]
        assert len(own) == count
        assert all(bars[i].lane == lane for i in own)
        above = " › ".join(agents[1:-1])
        caller = bars[own[0] - 1]
        parent = f"{'/'.join(calls[:-1])}/{above}/{calls[-1]}" if above else calls[-1]
        assert (caller.id, caller.kind, caller.label) == (parent, "tool", agents[-1])
