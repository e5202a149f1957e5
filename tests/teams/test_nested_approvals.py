"""A sub-agent's call held for approval (DESIGN §14): it holds the parent's call, is
listed in the parent's `pending_approvals` with its `agent_path`, and the parent's
approve/reject and `resume()` continue the sub-run — also in another process after the
first one was killed, where the approved tool runs exactly once."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from yiemagent import NestedAgentEvent, ToolResultMessage

from ..approvals._kit import recording_tool, transcript_problems
from ..approvals.test_held_across_processes import run_child
from ._kit import calls, scripted


def team(ran: list[str]) -> tuple[Any, Any, Any]:
    researcher, sub_fm = scripted(
        "researcher",
        [calls(("charge", {"n": 5})), "charged 5"],
        tools=[recording_tool("charge", ran, requires_approval=True)],
    )
    lead, lead_fm = scripted(
        "lead",
        [calls(("researcher", {"input": "charge 5"}), ("log", {"n": 1})), "all done"],
        tools=[researcher.as_tool(), recording_tool("log", ran)],
    )
    return lead, lead_fm, sub_fm


async def test_a_held_sub_run_call_is_the_parents_to_decide_and_resume() -> None:
    ran: list[str] = []
    lead, lead_fm, _ = team(ran)

    reply = await lead.prompt("charge me")

    assert reply.stop_reason == "toolUse"  # the run ended awaiting approval
    [pending] = lead.pending_approvals
    assert (pending.tool_name, pending.arguments, pending.agent_path) == (
        "charge",
        {"n": 5},
        ("lead", "researcher"),
    )
    assert len(ran) == 1  # "log" ran; "charge" waits
    assert not any(
        isinstance(m, ToolResultMessage) and m.tool_name == "researcher"
        for m in lead.state.messages
    )  # the parent's call is held: no result yet
    events: list[Any] = []
    lead.subscribe(lambda event, signal: events.append(event))

    lead.approve(pending.tool_call_id)
    assert (await lead.resume()).text == "all done"

    assert len(ran) == 2 and lead.pending_approvals == []
    result = next(
        m for m in lead.state.messages
        if isinstance(m, ToolResultMessage) and m.tool_name == "researcher"
    )  # fmt: skip
    assert result.content[0].text == "charged 5"  # type: ignore[union-attr]
    assert transcript_problems(lead_fm.contexts[-1].messages) == []
    nested = [e for e in events if isinstance(e, NestedAgentEvent)]
    assert nested and nested[0].event.type == "agent_start"  # the resumed sub-run streams


async def test_a_call_held_after_a_handoff_inside_a_sub_run_names_its_maker() -> None:
    """`PendingApproval.agent_path` names the agent that made the call. A sub-agent that
    handed off before the held call listed it under its own name: the person asked to
    approve a payment was told "front" asked for it, when "back" did."""
    ran: list[str] = []
    back, _ = scripted(
        "back",
        [calls(("pay", {"n": 1})), "paid"],
        tools=[recording_tool("pay", ran, requires_approval=True)],
    )
    front, _ = scripted("front", [calls(("transfer_to_back", {}))], handoffs=[back])
    lead, _ = scripted(
        "lead", [calls(("front", {"input": "pay"})), "done"], tools=[front.as_tool()]
    )

    await lead.prompt("pay it")

    [pending] = lead.pending_approvals
    assert (pending.tool_name, pending.agent_path) == ("pay", ("lead", "back"))
    assert pending.assistant_message.agent == "back"
    lead.approve(pending.tool_call_id)
    assert (await lead.resume()).text == "done"
    assert len(ran) == 1


async def test_a_rejected_sub_run_call_gets_the_reason_and_the_sub_run_goes_on() -> None:
    ran: list[str] = []
    lead, _, sub_fm = team(ran)
    await lead.prompt("charge me")
    [pending] = lead.pending_approvals

    lead.reject(pending.tool_call_id, "too expensive")
    assert (await lead.resume()).text == "all done"

    assert len(ran) == 1  # only "log"
    sub_results = [m for m in sub_fm.contexts[-1].messages if isinstance(m, ToolResultMessage)]
    assert sub_results[-1].is_error and "too expensive" in sub_results[-1].content[0].text  # type: ignore[union-attr]


CHILD = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from yiemagent import Agent, AgentTool
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
    from yiemagent.sessions import SqliteSessionStore

    db, role, runs = sys.argv[1], sys.argv[2], sys.argv[3]

    def charge(call_id, args, signal, on_update):
        with open(runs, "a") as f:
            f.write(call_id + "\\n")
        return "charged"

    if role == "first":
        sub_script = [faux_message(faux_tool_call("charge", {"n": 5}, id="sub1"))]
        lead_script = [faux_message(faux_tool_call("researcher", {"input": "charge"}, id="c1"))]
    else:
        sub_script, lead_script = ["charged 5"], ["all done"]
    sub_fm, lead_fm = FauxModel(sub_script), FauxModel(lead_script)
    tool = AgentTool("charge", "charge", "charge", {"type": "object"}, charge,
                     requires_approval=True)
    researcher = Agent(model=sub_fm.model, stream_fn=sub_fm.stream_fn, name="researcher",
                       tools=[tool])
    lead = Agent(model=lead_fm.model, stream_fn=lead_fm.stream_fn, name="lead",
                 tools=[researcher.as_tool()], session_store=SqliteSessionStore(db),
                 session_id="team")

    async def main():
        pending = [(p.tool_call_id, p.tool_name, list(p.agent_path))
                   for p in lead.pending_approvals]
        if role == "first":
            await lead.prompt("charge me")
            print("HELD", json.dumps([p.tool_call_id for p in lead.pending_approvals]),
                  flush=True)
            time.sleep(120)  # killed here, holding the session
        elif role == "approve":
            lead.approve("sub1")
            print("DECIDED", json.dumps(pending), flush=True)
        else:
            answer = await lead.resume()
            print("DONE", json.dumps({"pending": pending, "answer": answer.text,
                                      "left": len(lead.pending_approvals)}), flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.timeout(180)
async def test_a_sub_run_approval_survives_sigkill_and_runs_once(tmp_path: Path) -> None:
    db, runs, script = tmp_path / "s.db", tmp_path / "runs.txt", tmp_path / "child.py"
    script.write_text(CHILD)
    first = await run_child(script, str(db), "first", str(runs), kill_after=b"HELD")
    assert first.split(None, 1) == ["HELD", '["sub1"]\n']
    assert not runs.exists()

    decided = await run_child(script, str(db), "approve", str(runs))
    assert json.loads(decided.split(None, 1)[1]) == [["sub1", "charge", ["lead", "researcher"]]]
    done = await run_child(script, str(db), "resume", str(runs))

    assert done.startswith("DONE"), done
    report = json.loads(done.split(None, 1)[1])
    assert report == {
        "pending": [["sub1", "charge", ["lead", "researcher"]]],
        "answer": "all done",
        "left": 0,
    }
    assert runs.read_text().split() == ["sub1"]  # the approved tool ran exactly once


async def test_a_sub_run_held_twice_runs_each_call_once_with_its_own_decision() -> None:
    """A sub-run whose first batch runs one call and holds another, then holds a second
    call in a later turn: resuming never runs a call again, and the first decision is not
    taken for the second hold."""
    ran: list[str] = []
    researcher, _ = scripted(
        "researcher",
        [calls(("lookup", {"n": 1}), ("charge", {"n": 5})), calls(("refund", {"n": 2})), "done"],
        tools=[
            recording_tool("lookup", ran),
            recording_tool("charge", ran, requires_approval=True),
            recording_tool("refund", ran, requires_approval=True),
        ],
    )
    lead, lead_fm = scripted(
        "lead",
        [calls(("researcher", {"input": "settle it"})), "settled"],
        tools=[researcher.as_tool()],
    )

    await lead.prompt("settle my account")
    [charge] = lead.pending_approvals
    assert charge.tool_name == "charge" and len(ran) == 1  # lookup ran, charge waits

    lead.approve(charge.tool_call_id)
    held = await lead.resume()  # held again, before the lead's model was asked anything
    assert held.stop_reason == "toolUse" and held.tool_calls[0].name == "researcher"
    [refund] = lead.pending_approvals
    assert refund.tool_name == "refund" and refund.agent_path == ("lead", "researcher")
    assert len(ran) == 2  # charge ran once; lookup not again; refund waits

    lead.reject(refund.tool_call_id, "no refunds today")
    assert (await lead.resume()).text == "settled"
    assert len(ran) == 2 and lead.pending_approvals == []
    assert transcript_problems(lead_fm.contexts[-1].messages) == []
