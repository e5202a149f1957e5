"""AG-UI's sub-agent invocations across a hold (DESIGN §17, §18; docs/serve.md "AG-UI"):
the lead asks `mid` twice in one reply, each `mid` asks `leaf`, and each leaf's `launch`
is held for approval; one input approves both. AG-UI's `subagentRunId` names one
invocation, which "a later run may continue": the resumed run streams each invocation
under the id the held run gave it (the held run closes it as suspended), and each leaf is
attributed to its own `mid`. The resumed run gave every invocation a new id (results
under them kept the old ids), and with two `mid` invocations running, neither could be
told as the leaf's caller, so the leaves were attributed to the top run. Through Uvicorn
on 127.0.0.1."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui

from tests.serve._kit import SCHEMA, serving, text_of
from tests.serve.test_protocols import agui_run, check_agui_order
from yiemagent import Agent, AgentTool, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)


def lead(context: Context) -> Any:
    """Asks `mid` about mars and venus at once, then says what it heard."""
    results = [m for m in context.messages if m.role == "toolResult"]
    if results:
        return faux_message(faux_text("lead: " + "; ".join(text_of(m) for m in results)))
    return faux_message(
        faux_tool_call("mid", {"input": "mars"}, id="ask_0"),
        faux_tool_call("mid", {"input": "venus"}, id="ask_1"),
    )


def relay(next_tool: str, key: str) -> Any:
    """Passes what it is asked on to `next_tool`, then says its result."""

    def reply(context: Context) -> Any:
        last = context.messages[-1]
        if last.role == "toolResult":
            return faux_message(faux_text(f"{context.system_prompt} {text_of(last)}"))
        return faux_message(faux_tool_call(next_tool, {key: text_of(last)}))

    return reply


def started_of(events: list[Any]) -> dict[str, Any]:
    """The `SUBAGENT_STARTED` events of a stream by the invocation's `subagentRunId`."""
    return {e.subagent_run_id: e for e in events if e.type.value == "SUBAGENT_STARTED"}


def test_two_resumed_invocations_keep_their_ids_and_their_callers() -> None:
    store = InMemorySessionStore()
    launched: list[str] = []

    async def launch(call_id: str, args: dict[str, Any], *_: Any) -> str:
        """Waits for the other launch (at most 30 s): both invocations run at once."""
        launched.append(args["city"])
        for _tick in range(3000):
            if len(launched) == 2:
                break
            await asyncio.sleep(0.01)
        return f"launched {args['city']}"

    replies = {"lead": lead, "mid": relay("leaf", "input"), "leaf": relay("launch", "city")}
    models = {name: FauxModel([reply] * 20) for name, reply in replies.items()}

    def agent(name: str, tools: list[AgentTool], **options: Any) -> Agent[Any]:
        fm = models[name]
        return Agent(
            f"{name}:", fm.model, stream_fn=fm.stream_fn, name=name, tools=tools, **options
        )

    def make_agent(session_id: str) -> Agent[Any]:
        held = AgentTool("launch", "Launch", "launch", SCHEMA, launch, requires_approval=True)
        mid = agent("mid", [agent("leaf", [held]).as_tool()])
        return agent("lead", [mid.as_tool()], session_store=store, session_id=session_id)

    def run_input(run_id: str, **fields: Any) -> agui.RunAgentInput:
        given: dict[str, Any] = {"messages": [], "tools": [], "context": [], **fields}
        return agui.RunAgentInput(
            thread_id="t", run_id=run_id, state={}, forwarded_props={}, **given
        )

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        user = agui.UserMessage(id="u1", role="user", content="go")
        held = agui_run(client, run_input("r1", messages=[user]))
        interrupts = held[-1].outcome.interrupts
        assert len(interrupts) == 2
        resume = [agui.ResumeEntry(interrupt_id=i.id, status="resolved") for i in interrupts]
        resumed = agui_run(client, run_input("r2", resume=resume))

    for events in (held, resumed):
        check_agui_order(events)
    before, after = started_of(held), started_of(resumed)
    assert sorted(e.name for e in before.values()) == ["leaf", "leaf", "mid", "mid"]
    # each invocation is continued under its id, with its caller as the held run gave it
    assert set(after) == set(before)
    for run_id, event in after.items():
        was = before[run_id]
        assert (event.name, event.parent_subagent_run_id) == (
            was.name,
            was.parent_subagent_run_id,
        )
        assert event.parent_tool_call_id == was.parent_tool_call_id
    for started in (before, after):
        for event in started.values():
            parent = started.get(event.parent_subagent_run_id or "")
            assert (parent.name if parent else None) == {"mid": None, "leaf": "mid"}[event.name]
    # the held run's segments end suspended; the resumed run's with success
    finished = {e.subagent_run_id: e for e in held if e.type.value == "SUBAGENT_FINISHED"}
    assert set(finished) == set(before)
    assert {e.outcome.type for e in finished.values() if e.outcome} == {"suspended"}
    assert all(e.outcome is not None for e in finished.values())
    ended = [e for e in resumed if e.type.value == "SUBAGENT_FINISHED"]
    assert sorted(e.subagent_run_id for e in ended) == sorted(before)
    assert all(e.outcome is None or e.outcome.type == "success" for e in ended)
    # every event of an invocation is attributed to one the client was told of
    attributed = {getattr(e, "subagent_run_id", None) for e in resumed} - {None}
    assert attributed <= set(before)
    streamed = {e.tool_call_id for e in [*held, *resumed] if e.type.value == "TOOL_CALL_START"}
    results = {e.tool_call_id for e in resumed if e.type.value == "TOOL_CALL_RESULT"}
    assert results <= streamed
    assert sorted(launched) == ["mars", "venus"]
    answer = "".join(e.delta for e in resumed if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert answer.endswith("lead: mid: leaf: launched mars; mid: leaf: launched venus")
