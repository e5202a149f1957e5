"""After a handoff the target's own tool hooks guard its tools too (DESIGN §17: the run goes
on in the target's configuration), as openai-agents asks its run hooks and then the agent's
own hooks (tests/test_agent_hooks.py, test_run_hooks.py). The entry agent's hooks are the
run's and still see every call; they used to be the only ones, so a billing agent's block
on payments never ran when the router handed over to it."""

from __future__ import annotations

from typing import Any

from yiemagent import (
    AfterToolCallResult,
    AgentTool,
    BeforeToolCallResult,
    Handoff,
    ToolResultMessage,
)
from yiemagent.types import text_of

from ._kit import SCHEMA, calls, scripted


def recording_tool(name: str, ran: list[str]) -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(name)
        return f"{name} done"

    return AgentTool(name, name, f"the {name} tool", SCHEMA, execute)


def results(agent: Any) -> dict[str, str]:
    found = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    return {m.tool_name: text_of(m.content) for m in found}


async def test_the_targets_before_tool_call_guards_its_tools_after_a_handoff() -> None:
    asked: list[tuple[str, str]] = []
    ran: list[str] = []

    def guard(agent: str) -> Any:
        def before(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
            asked.append((agent, ctx.tool_call.name))
            if agent == "billing" and ctx.tool_call.name == "pay":
                return BeforeToolCallResult(block=True, reason="payments need a person")
            return None

        return before

    billing, _ = scripted(
        "billing",
        [calls(("pay", {})), "I could not pay it.", calls(("pay", {})), "Still not paid."],
        tools=[recording_tool("pay", ran)],
        before_tool_call=guard("billing"),
    )
    router, _ = scripted(
        "router",
        [calls(("note", {}), ("transfer_to_billing", {}))],
        tools=[recording_tool("note", ran)],
        handoffs=[Handoff(billing)],
        before_tool_call=guard("router"),
    )

    reply = await router.prompt("pay my bill")

    assert reply.text == "I could not pay it." and reply.agent == "billing"
    assert ran == ["note"]  # the payment never ran
    assert asked == [
        ("router", "note"),
        ("router", "transfer_to_billing"),
        ("router", "pay"),  # the entry's hook is the run's: it sees every call
        ("billing", "pay"),
    ]
    assert results(router)["pay"] == "payments need a person"

    # the next prompt starts with billing speaking: billing's guard again
    assert router.state.active_agent == "billing"
    assert (await router.prompt("try again")).text == "Still not paid."
    assert ran == ["note"] and asked[-1] == ("billing", "pay")


async def test_the_targets_after_tool_call_has_the_last_word_on_its_calls() -> None:
    seen: list[tuple[str, str]] = []

    def tag(agent: str) -> Any:
        def after(ctx: Any, signal: Any) -> AfterToolCallResult:
            seen.append((agent, ctx.tool_call.name))
            return AfterToolCallResult(content=f"{ctx.tool_call.name} seen by {agent}")

        return after

    ran: list[str] = []
    billing, _ = scripted(
        "billing",
        [calls(("pay", {})), "paid"],
        tools=[recording_tool("pay", ran)],
        after_tool_call=tag("billing"),
    )
    support, _ = scripted(
        "support", [calls(("lookup", {})), "found"], tools=[recording_tool("lookup", ran)]
    )
    router, _ = scripted(
        "router",
        [calls(("transfer_to_billing", {}))],
        handoffs=[Handoff(billing), Handoff(support)],
        after_tool_call=tag("router"),
    )

    reply = await router.prompt("pay my bill")

    assert reply.text == "paid" and ran == ["pay"]
    assert seen == [("router", "transfer_to_billing"), ("router", "pay"), ("billing", "pay")]
    assert results(router)["pay"] == "pay seen by billing"

    # an agent without a hook of its own: the entry's alone
    router.state.active_agent = "support"
    assert (await router.prompt("look it up")).text == "found"
    assert results(router)["lookup"] == "lookup seen by router"
    assert seen[-1] == ("router", "lookup")
