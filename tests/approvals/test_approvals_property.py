"""Property (DESIGN §14): whatever calls are held, approved or rejected, in
parallel or sequential batches, every tool call ends with exactly one result, each approved
or unheld call runs exactly once, each rejected or held-then-rejected call never runs, and
every transcript the provider receives pairs each call with one result."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from yiemagent import Agent, AgentEndEvent, AgentTool, InMemorySessionStore, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

from ._kit import transcript_problems

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "hold": {"type": "boolean"}},
    "required": ["n", "hold"],
}

turns = st.lists(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=4),
                 min_size=1, max_size=4)  # fmt: skip
"""Each turn: its calls as (held?, approved if held?)."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=turns, mode=st.sampled_from(["parallel", "sequential"]), stored=st.booleans())
def test_every_call_answered_once_whatever_is_held(
    plan: list[list[tuple[bool, bool]]], mode: str, stored: bool
) -> None:
    asyncio.run(_run(plan, mode, stored))


async def _run(plan: list[list[tuple[bool, bool]]], mode: str, stored: bool) -> None:
    runs: dict[str, int] = {}
    decision: dict[str, bool] = {}

    async def execute(call_id: str, args: dict[str, Any], *_: Any) -> str:
        runs[call_id] = runs.get(call_id, 0) + 1
        await asyncio.sleep(0)
        return f"ran {call_id}"

    tool = AgentTool(
        "t", "t", "t", SCHEMA, execute, parallel=True, requires_approval=lambda a: a["hold"]
    )
    responses: list[Any] = []
    for t, calls in enumerate(plan):
        blocks = []
        for i, (held, approved) in enumerate(calls):
            call_id = f"t{t}c{i}"
            blocks.append(faux_tool_call("t", {"n": i, "hold": held}, id=call_id))
            if held:
                decision[call_id] = approved
        responses.append(faux_message(*blocks))
    responses.append("finished")
    fm = FauxModel(responses)
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[tool],
        tool_execution=mode,
        session_store=InMemorySessionStore() if stored else None,
    )
    ends: list[str] = []
    agent.subscribe(lambda e, _s: ends.append(e.reason) if isinstance(e, AgentEndEvent) else None)

    answer = await agent.prompt("go")
    rounds = 0
    while agent.pending_approvals:
        rounds += 1
        assert ends[-1] == "awaiting_approval"
        for pending in agent.pending_approvals:
            if decision[pending.tool_call_id]:
                agent.approve(pending.tool_call_id)
            else:
                agent.reject(pending.tool_call_id, reason="no")
        answer = await agent.resume()
    assert answer.text == "finished" and ends[-1] == "stop"
    assert rounds == sum(1 for calls in plan if any(held for held, _ in calls))

    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    all_ids = [f"t{t}c{i}" for t, calls in enumerate(plan) for i in range(len(calls))]
    assert sorted(m.tool_call_id for m in results) == sorted(all_ids)  # exactly once each
    should_run = {cid for cid in all_ids if decision.get(cid, True)}
    assert runs == dict.fromkeys(should_run, 1)
    for m in results:
        assert m.is_error == (m.tool_call_id not in should_run)
    assert transcript_problems(agent.state.messages) == []
    for context in fm.contexts:
        assert transcript_problems(context.messages) == []
