"""Property (DESIGN §14, §17): a router that may hand over to `billing`, which may ask a
`helper` sub-agent; each of them calls a tool whose calls may be held. Whatever is held
where, approved or rejected, decided by the same agent or by a new one on the session (a
second process): each approved or unheld call runs exactly once, a rejected one never,
every call of every agent has one result, every transcript a model is sent pairs each call
with its result, and the run ends with the agent the handoff made active."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from yiemagent import Agent, AgentTool, InMemorySessionStore, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import Context

from ..approvals._kit import transcript_problems

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"hold": {"type": "boolean"}},
    "required": ["hold"],
}

Plan = list[tuple[str, bool]]
"""One reply's calls: (kind, approved if held). Kinds: "held" and "free" calls of the
tool `act`; the router's "transfer" to billing; billing's "helper" sub-agent call."""


def replies(kinds: list[str]) -> Any:
    return st.lists(st.tuples(st.sampled_from(kinds), st.booleans()), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    router=replies(["held", "free", "transfer"]),
    billing=replies(["held", "free", "helper"]),
    helper=replies(["held", "free"]),
    reopen=st.booleans(),
)
def test_each_call_of_a_team_runs_once_whatever_is_held_where(
    router: Plan, billing: Plan, helper: Plan, reopen: bool
) -> None:
    asyncio.run(_run(_once(router, "transfer"), _once(billing, "helper"), helper, reopen))


def _once(plan: Plan, kind: str) -> Plan:
    """`plan` with at most one call of `kind` (a second transfer to the same agent, or a
    second sub-run of the same scripted helper, is another test's subject)."""
    first = next((i for i, (k, _) in enumerate(plan) if k == kind), None)
    return [(k, a) for i, (k, a) in enumerate(plan) if k != kind or i == first]


def _message(prefix: str, plan: Plan) -> Any:
    calls = []
    for i, (kind, _) in enumerate(plan):
        call_id = f"{prefix}{i}"
        if kind == "transfer":
            calls.append(faux_tool_call("transfer_to_billing", {}, id=call_id))
        elif kind == "helper":
            calls.append(faux_tool_call("helper", {"input": "help"}, id=call_id))
        else:
            calls.append(faux_tool_call("act", {"hold": kind == "held"}, id=call_id))
    return faux_message(*calls)


async def _run(router: Plan, billing: Plan, helper: Plan, reopen: bool) -> None:
    runs: dict[str, int] = {}
    store = InMemorySessionStore()

    async def execute(call_id: str, args: dict[str, Any], *_: Any) -> str:
        runs[call_id] = runs.get(call_id, 0) + 1
        await asyncio.sleep(0)
        return f"ran {call_id}"

    def first_turn_then(prefix: str, plan: Plan, done: str) -> Any:
        def reply(context: Context) -> Any:
            return _message(prefix, plan) if context.messages[-1].role == "user" else done

        return reply

    billing_turns: list[int] = []

    def billing_reply(context: Context) -> Any:
        billing_turns.append(1)
        return _message("b", billing) if len(billing_turns) == 1 else "billing done"

    models = {
        "router": FauxModel([first_turn_then("r", router, "router done")] * 10),
        "billing": FauxModel([billing_reply] * 10),
        "helper": FauxModel([first_turn_then("h", helper, "helper done")] * 10),
    }

    def make() -> Agent[Any]:
        def agent(name: str, **options: Any) -> Agent[Any]:
            act = AgentTool(
                "act", "act", "act", SCHEMA, execute, parallel=True,
                requires_approval=lambda args: args["hold"],
            )  # fmt: skip
            fm = models[name]
            tools = [act, *options.pop("tools", [])]
            return Agent(name=name, model=fm.model, stream_fn=fm.stream_fn, tools=tools, **options)

        helper_agent = agent("helper")
        billing_agent = agent("billing", tools=[helper_agent.as_tool()])
        return agent("router", handoffs=[billing_agent], session_store=store, session_id="s")

    decisions = {f"{p}{i}": ok for p, plan in (("r", router), ("b", billing), ("h", helper))
                 for i, (kind, ok) in enumerate(plan) if kind == "held"}  # fmt: skip
    team = make()
    answer = await team.prompt("go")
    while team.pending_approvals:
        if reopen:
            await team.close()
            team = make()
        for pending in team.pending_approvals:
            if decisions[pending.tool_call_id]:
                team.approve(pending.tool_call_id)
            else:
                team.reject(pending.tool_call_id, reason="no")
        answer = await team.resume()

    handed = any(kind == "transfer" for kind, _ in router)
    asked = handed and any(kind == "helper" for kind, _ in billing)
    made = [("r", router)] + [("b", billing)] * handed + [("h", helper)] * asked
    ids = [f"{p}{i}" for p, plan in made for i in range(len(plan))]
    acts = {f"{p}{i}": kind for p, plan in made for i, (kind, _) in enumerate(plan)
            if kind in ("held", "free")}  # fmt: skip
    assert runs == {i: 1 for i, kind in acts.items() if kind == "free" or decisions[i]}
    messages = team.state.messages
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert sorted(m.tool_call_id for m in results) == sorted(
        i for i in ids if not i.startswith("h")
    )
    for m in results:
        assert m.is_error == (acts.get(m.tool_call_id) == "held" and not decisions[m.tool_call_id])
    assert transcript_problems(messages) == []
    for fm in models.values():
        for context in fm.contexts:
            assert transcript_problems(context.messages) == []
    assert (answer.text, team.state.active_agent) == (
        ("billing done", "billing") if handed else ("router done", "router")
    )
    await team.close()
