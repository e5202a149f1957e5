"""Property (DESIGN §14, §17): a router that may hand over to `billing`, which may ask a
`helper` sub-agent; each of them calls a tool whose calls may be held. Whatever is held
where, approved or rejected, decided by the same agent or by a new one on the session (a
second process), with ids of their own or numbered `call_0`, `call_1` … in each reply (as
many servers give them, so a sub-agent's held call shares the id of the parent's): each
approved or unheld call runs exactly once, a rejected one never, every call of every agent
has one result, every transcript a model is sent pairs each call with its result, and the
run ends with the agent the handoff made active."""

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
    "properties": {"hold": {"type": "boolean"}, "call": {"type": "string"}},
    "required": ["hold", "call"],
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
    numbered=st.booleans(),
)
def test_each_call_of_a_team_runs_once_whatever_is_held_where(
    router: Plan, billing: Plan, helper: Plan, reopen: bool, numbered: bool
) -> None:
    plans = (_once(router, "transfer"), _once(billing, "helper"), helper)
    asyncio.run(_run(*plans, reopen, numbered))


def _once(plan: Plan, kind: str) -> Plan:
    """`plan` with at most one call of `kind` (a second transfer to the same agent, or a
    second sub-run of the same scripted helper, is another test's subject)."""
    first = next((i for i, (k, _) in enumerate(plan) if k == kind), None)
    return [(k, a) for i, (k, a) in enumerate(plan) if k != kind or i == first]


def _message(prefix: str, plan: Plan, numbered: bool) -> Any:
    """The reply of the agent `prefix` names ("r", "b", "h"): each `act` call's `call`
    argument names it ("b1": billing's second call) whatever its id."""
    calls = []
    for i, (kind, _) in enumerate(plan):
        call_id = f"call_{i}" if numbered else f"{prefix}{i}"
        if kind == "transfer":
            calls.append(faux_tool_call("transfer_to_billing", {}, id=call_id))
        elif kind == "helper":
            calls.append(faux_tool_call("helper", {"input": "help"}, id=call_id))
        else:
            arguments = {"hold": kind == "held", "call": f"{prefix}{i}"}
            calls.append(faux_tool_call("act", arguments, id=call_id))
    return faux_message(*calls)


async def _run(router: Plan, billing: Plan, helper: Plan, reopen: bool, numbered: bool) -> None:
    runs: dict[str, int] = {}
    store = InMemorySessionStore()

    async def execute(call_id: str, args: dict[str, Any], *_: Any) -> str:
        runs[args["call"]] = runs.get(args["call"], 0) + 1
        await asyncio.sleep(0)
        return f"ran {args['call']}"

    def first_turn_then(prefix: str, plan: Plan, done: str) -> Any:
        def reply(context: Context) -> Any:
            first = context.messages[-1].role == "user"
            return _message(prefix, plan, numbered) if first else done

        return reply

    billing_turns: list[int] = []

    def billing_reply(context: Context) -> Any:
        billing_turns.append(1)
        return _message("b", billing, numbered) if len(billing_turns) == 1 else "billing done"

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
        pending_ids = [pending.tool_call_id for pending in team.pending_approvals]
        assert len(set(pending_ids)) == len(pending_ids), pending_ids  # each decidable
        for pending in team.pending_approvals:
            if decisions[pending.arguments["call"]]:
                team.approve(pending.tool_call_id)
            else:
                team.reject(pending.tool_call_id, reason="no")
        answer = await team.resume()

    handed = any(kind == "transfer" for kind, _ in router)
    asked = handed and any(kind == "helper" for kind, _ in billing)
    made = [("r", router)] + [("b", billing)] * handed + [("h", helper)] * asked
    acts = {f"{p}{i}": kind for p, plan in made for i, (kind, _) in enumerate(plan)
            if kind in ("held", "free")}  # fmt: skip
    assert runs == {c: 1 for c, kind in acts.items() if kind == "free" or decisions[c]}
    messages = team.state.messages
    top = [(p, plan) for p, plan in made if p != "h"]
    answered = 0
    for message, results in _batches(messages):
        calls = {call.id: call for call in message.tool_calls}
        assert sorted(r.tool_call_id for r in results) == sorted(calls)  # one result each
        for result in results:
            act = calls[result.tool_call_id].arguments.get("call")
            assert result.is_error == (acts.get(act) == "held" and not decisions[act])
        answered += len(results)
    assert answered == sum(len(plan) for _, plan in top)
    assert transcript_problems(messages) == []
    for fm in models.values():
        for context in fm.contexts:
            assert transcript_problems(context.messages) == []
    assert (answer.text, team.state.active_agent) == (
        ("billing done", "billing") if handed else ("router done", "router")
    )
    await team.close()


def _batches(messages: list[Any]) -> list[tuple[Any, list[ToolResultMessage]]]:
    """Each assistant message that made calls, with the results that follow it."""
    batches: list[tuple[Any, list[ToolResultMessage]]] = []
    for message in messages:
        if isinstance(message, ToolResultMessage):
            batches[-1][1].append(message)
        elif getattr(message, "role", None) == "assistant" and message.tool_calls:
            batches.append((message, []))
    return batches
