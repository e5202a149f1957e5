"""A stored session opened by an agent other than the one that wrote it (docs/sessions.md,
docs/approvals.md "Across processes", docs/teams.md "Handoffs"): held calls are the
session's, so the new agent lists and decides them; an approved call whose tool the new
agent lacks is answered "not found" and nothing runs; a call held inside a sub-agent that
now lacks its tool likewise; and a specialist the new entry's handoffs do not reach hands
the next prompt to the entry. The transcript stays valid throughout. On SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yiemagent import Agent, Handoff, ToolResultMessage
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import text_of

from ..approvals._kit import recording_tool, transcript_problems
from ..teams._kit import calls, scripted


def results(agent: Agent[Any]) -> list[tuple[str, bool, str]]:
    return [
        (m.tool_name, m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


async def test_a_held_call_decided_by_an_agent_without_its_tool_runs_nothing(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    with SqliteSessionStore(tmp_path / "s.db") as store:
        first, _ = scripted(
            "first",
            [calls(("refund", {"n": 1}))],
            tools=[recording_tool("refund", ran, requires_approval=True)],
            session_store=store,
            session_id="s",
        )
        await first.prompt("refund it")
        await first.close()

        other, _ = scripted(
            "other",
            ["I could not refund"],
            tools=[recording_tool("lookup", ran)],
            session_store=store,
            session_id="s",
        )
        [held] = other.pending_approvals
        assert (held.tool_name, held.arguments) == ("refund", {"n": 1})
        other.approve(held.tool_call_id)
        reply = await other.resume()
        await other.close()

    assert reply.text == "I could not refund" and ran == []
    assert results(other) == [("refund", True, 'Tool "refund" not found. Available tools: lookup')]
    assert transcript_problems(other.state.messages) == []  # type: ignore[arg-type]
    assert other.pending_approvals == []


async def test_a_sub_agents_held_call_resumed_without_its_tool_runs_nothing(tmp_path: Path) -> None:
    ran: list[str] = []
    with SqliteSessionStore(tmp_path / "s.db") as store:
        helper, _ = scripted(
            "helper",
            [calls(("charge", {"n": 5}))],
            tools=[recording_tool("charge", ran, requires_approval=True)],
        )
        lead, _ = scripted(
            "lead",
            [calls(("helper", {"input": "charge 5"}))],
            tools=[helper.as_tool()],
            session_store=store,
            session_id="s",
        )
        await lead.prompt("charge me")
        await lead.close()

        changed, helper_fm = scripted("helper", ["no charge tool here"])
        again, _ = scripted(
            "lead", ["lead done"], tools=[changed.as_tool()], session_store=store, session_id="s"
        )
        [held] = again.pending_approvals
        assert held.agent_path == ("lead", "helper")
        again.approve(held.tool_call_id)
        reply = await again.resume()
        await again.close()

    assert reply.text == "lead done" and ran == []
    assert results(again) == [("helper", False, "no charge tool here")]
    [sub_result] = [
        m for m in helper_fm.contexts[0].messages if isinstance(m, ToolResultMessage)
    ]  # what the helper read about its held call
    assert sub_result.is_error
    assert text_of(sub_result.content) == 'Tool "charge" not found. Available tools: none'


async def test_a_specialist_the_new_entry_cannot_reach_leaves_the_prompt_to_it(
    tmp_path: Path,
) -> None:
    with SqliteSessionStore(tmp_path / "s.db") as store:
        billing, _ = scripted("billing", ["billing answers"])
        router, _ = scripted(
            "router",
            [calls(("transfer_to_billing", {}))],
            handoffs=[Handoff(billing)],
            session_store=store,
            session_id="s",
        )
        assert (await router.prompt("my invoice")).agent == "billing"
        await router.close()

        support, _ = scripted("support", ["support answers"])
        plain, _ = scripted(
            "router", ["router answers"], handoffs=[support], session_store=store, session_id="s"
        )
        assert plain.state.active_agent == "router"  # billing is out of its reach
        reply = await plain.prompt("and the refund?")
        await plain.close()

    assert (reply.agent, reply.text) == ("router", "router answers")
