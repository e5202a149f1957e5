"""The human-in-the-loop cases pydantic-ai's tests/test_agent.py checks for deferred tools
(`test_hitl_tool_approval`, the duplicate-id cases, `test_run_with_deferred_tool_results_errors`,
`test_user_prompt_with_deferred_tool_results`, `test_run_with_unapproved_tool_call_in_history`),
on our approvals (docs/approvals.md).

Where ours differs by choice (docs/approvals.md): two held calls sharing an id are not
refused; the second gets an id of its own (R-4.1), so a decision names exactly one call; a
prompt while calls are held is refused (`ApprovalPendingError`), where pydantic-ai takes a
prompt beside the decisions; and a history that ends with an unanswered call of an approval
tool is not held again by `resume()` (docs/agent.md, "Prompts")."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import (
    Agent,
    ApprovalPendingError,
    AssistantMessage,
    ConfigError,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import recording_tool


def results_by_id(agent: Agent[Any]) -> dict[str, str]:
    return {
        m.tool_call_id: text_of(m.content)
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    }


async def test_one_call_runs_one_approved_runs_one_rejected_is_answered() -> None:
    ran: list[str] = []
    calls = [
        faux_tool_call("create_file", {"n": 1}, id="create_file"),
        faux_tool_call("delete_file", {"n": 2}, id="ok_to_delete"),
        faux_tool_call("delete_file", {"n": 3}, id="never_delete"),
    ]
    fm = FauxModel([faux_message(*calls), "Done!"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[
            recording_tool("create_file", ran),
            recording_tool("delete_file", ran, requires_approval=True),
        ],
    )
    held = await agent.prompt("Create one file and delete two")

    assert held.stop_reason == "toolUse"
    assert ran == ["create_file"]
    assert [p.tool_call_id for p in agent.pending_approvals] == ["ok_to_delete", "never_delete"]
    agent.approve("ok_to_delete")
    agent.reject("never_delete", reason="never delete that one")
    answer = await agent.resume()

    assert answer.text == "Done!"
    assert ran == ["create_file", "ok_to_delete"]
    texts = results_by_id(agent)
    assert texts["never_delete"] == "Tool call rejected by the user: never delete that one"
    assert texts["ok_to_delete"].startswith("delete_file ran")
    assert agent.pending_approvals == []


async def test_two_held_calls_sharing_an_id_are_decided_one_by_one() -> None:
    ran: list[str] = []
    calls = [
        faux_tool_call("safe_tool", {"n": 1}, id="duplicate-id"),
        faux_tool_call("danger_tool", {"n": 2}, id="duplicate-id"),
    ]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[
            recording_tool("safe_tool", ran, requires_approval=True),
            recording_tool("danger_tool", ran, requires_approval=True),
        ],
    )
    await agent.prompt("approve the safe operation")

    pending = {p.tool_name: p.tool_call_id for p in agent.pending_approvals}
    assert len(set(pending.values())) == 2 and pending["safe_tool"] == "duplicate-id"
    agent.approve(pending["safe_tool"])
    with pytest.raises(ApprovalPendingError):  # the danger call is not decided by that
        await agent.resume()
    agent.reject(pending["danger_tool"])
    await agent.resume()

    assert ran == ["duplicate-id"]
    texts = results_by_id(agent)
    assert texts[pending["danger_tool"]].startswith("Tool call rejected by the user")


async def test_a_prompt_while_calls_are_held_is_refused_and_loses_nothing() -> None:
    ran: list[str] = []
    fm = FauxModel(
        [faux_message(faux_tool_call("update_file", {"n": 1}, id="u1")), "Approved and on"]
    )
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[recording_tool("update_file", ran, requires_approval=True)],
    )
    await agent.prompt("Update .env file")
    before = list(agent.state.messages)

    with pytest.raises(ApprovalPendingError) as raised:
        await agent.prompt("continue with the operation")
    assert "u1" in str(raised.value)
    assert agent.state.messages == before and fm.call_count == 1

    agent.approve("u1")
    assert (await agent.resume()).text == "Approved and on"
    assert ran == ["u1"]


async def test_deciding_with_nothing_held_names_what_is_wrong() -> None:
    fm = FauxModel(["Hello to you too!"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    await agent.prompt("Hello")
    with pytest.raises(ConfigError, match="create_file"):
        agent.approve("create_file")
    with pytest.raises(ConfigError):
        await agent.resume()
    assert fm.call_count == 1


async def test_an_unanswered_approval_call_in_a_given_history_is_not_run_by_resume() -> None:
    ran: list[str] = []
    fm = FauxModel(["never asked"])
    history = [
        UserMessage("Hello"),
        AssistantMessage([ToolCall("c1", "delete_file", {})], stop_reason="toolUse"),
    ]
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        messages=history,
        tools=[recording_tool("delete_file", ran, requires_approval=True)],
    )
    with pytest.raises(ConfigError):
        await agent.resume()
    assert ran == [] and fm.call_count == 0
    assert agent.pending_approvals == []
