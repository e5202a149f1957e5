"""Handoffs in one batch (DESIGN §17), the cases other frameworks' suites check: a reply
that asks for two transfers goes to the first target only, the other transfer is answered
with an error saying so, and the transcript stays one a provider accepts; a tool of the
agent's own never shares its name with a transfer tool."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import AgentTool, ConfigError, ToolResultMessage
from yiemagent.types import text_of

from ..approvals._kit import transcript_problems
from ._kit import SCHEMA, calls, scripted


async def test_two_transfers_in_one_reply_go_to_the_first_target_only() -> None:
    billing, billing_fm = scripted("billing", ["billing here"])
    support, support_fm = scripted("support", ["support here"])
    router, router_fm = scripted(
        "router",
        [calls(("transfer_to_billing", {}), ("transfer_to_support", {"reason": "also"}))],
        handoffs=[billing, support],
    )

    reply = await router.prompt("help")

    assert reply.agent == "billing" and reply.text == "billing here"
    assert router.state.active_agent == "billing"
    assert (router_fm.call_count, billing_fm.call_count, support_fm.call_count) == (1, 1, 0)
    results = [m for m in router.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.is_error) for r in results] == [
        ("transfer_to_billing", False),
        ("transfer_to_support", True),
    ]
    assert "billing" in text_of(results[1].content)  # says who already has the conversation
    assert transcript_problems(router.state.messages) == []


async def test_the_same_transfer_twice_hands_over_once() -> None:
    billing, billing_fm = scripted("billing", ["billing here"])
    router, _ = scripted(
        "router",
        [calls(("transfer_to_billing", {}), ("transfer_to_billing", {}))],
        handoffs=[billing],
    )

    reply = await router.prompt("help")

    assert reply.agent == "billing" and billing_fm.call_count == 1
    results = [m for m in router.state.messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False, True]
    assert transcript_problems(router.state.messages) == []


def test_a_tool_named_like_a_transfer_is_a_clear_error_not_a_second_tool() -> None:
    ran: list[str] = []

    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(call_id)
        return "the user's own tool"

    own = AgentTool("transfer_to_billing", "mine", "not a handoff", SCHEMA, execute)
    billing, billing_fm = scripted("billing", ["billing here"])
    # providers refuse two tools of one name, and one of the two would never run
    with pytest.raises(ConfigError, match=r"'transfer_to_billing'.*handoff to 'billing'"):
        scripted(
            "router", [calls(("transfer_to_billing", {})), "x"], tools=[own], handoffs=[billing]
        )
    assert billing_fm.call_count == 0 and ran == []


async def test_a_tool_name_both_agents_have_runs_the_tool_of_the_agent_that_called_it() -> None:
    # openai-agents-python and crewAI users give two agents of a team a tool of one name
    # (each its own "lookup"). A call beside the transfer was written by the router and runs
    # the router's; the calls after it are billing's and run billing's; each model is
    # offered only its own agent's tool of that name.
    def lookup(owner: str) -> AgentTool:
        def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            return f"{owner} looked up {args['n']}"

        return AgentTool("lookup", "lookup", f"{owner}'s lookup", SCHEMA, execute)

    billing, billing_fm = scripted(
        "billing", [calls(("lookup", {"n": 2})), "billing done"], tools=[lookup("billing")]
    )
    router, router_fm = scripted(
        "router",
        [calls(("lookup", {"n": 1}), ("transfer_to_billing", {}))],
        tools=[lookup("router")],
        handoffs=[billing],
    )

    reply = await router.prompt("help")

    assert reply.agent == "billing" and reply.text == "billing done"
    results = [m for m in router.state.messages if isinstance(m, ToolResultMessage)]
    assert [text_of(r.content) for r in results if r.tool_name == "lookup"] == [
        "router looked up 1",
        "billing looked up 2",
    ]
    offered = [t.description for t in billing_fm.contexts[0].tools if t.name == "lookup"]
    assert offered == ["billing's lookup"]
    assert [t.description for t in router_fm.contexts[0].tools if t.name == "lookup"] == [
        "router's lookup"
    ]
    assert transcript_problems(router.state.messages) == []
