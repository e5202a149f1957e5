"""A run's own tools, `prompt(tools=...)` / `resume(tools=...)` (docs/teams.md): offered
beside the agent's own to every agent that speaks in the run, a handoff's target too; a
call of one held for approval is held and resumed the same way whoever made it; they last
that run only. Bad `tools` are one `ConfigError` before anything is sent. The run's own
system text, `prompt(instructions=...)`, reaches every agent that speaks the same way."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import AgentTool, ConfigError, ToolResultMessage
from yiemagent.types import Context

from ._kit import calls, scripted

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def client_tool(seen: list[str]) -> AgentTool:
    def paint(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        seen.append(call_id)
        return "painted"

    return AgentTool("paint", "Paint", "paint the page", SCHEMA, paint, requires_approval=True)


def offered(context: Context) -> list[str]:
    return [tool.name for tool in context.tools or []]


async def test_the_target_of_a_handoff_sees_the_run_s_tools_and_its_call_is_held() -> None:
    ran: list[str] = []
    paint = client_tool(ran)
    designer, designer_fm = scripted("designer", [calls(("paint", {})), "Painted teal."])
    router, router_fm = scripted(
        "router", [calls(("transfer_to_designer", {}))], handoffs=[designer]
    )

    held = await router.prompt("make it teal", tools=[paint])

    assert held.agent == "designer" and ran == []
    assert offered(router_fm.contexts[0]) == ["paint", "transfer_to_designer"]
    assert offered(designer_fm.contexts[0]) == ["paint"]
    [pending] = router.pending_approvals
    assert pending.tool_name == "paint"

    router.approve(pending.tool_call_id)
    reply = await router.resume(tools=[paint])

    assert reply.text == "Painted teal." and reply.agent == "designer"
    assert ran == [pending.tool_call_id]
    results = [m for m in router.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.is_error) for r in results][-1] == ("paint", False)


async def test_the_run_s_tools_last_that_run_only() -> None:
    agent, fm = scripted("solo", ["one", "two"])
    await agent.prompt("hi", tools=[client_tool([])])
    await agent.prompt("again")
    assert [offered(c) for c in fm.contexts] == [["paint"], []]
    assert agent.state.tools == []


@pytest.mark.parametrize(
    ("tools", "match"),
    [
        (["paint"], "not a tool: give an AgentTool"),
        ("paint", "a list of AgentTool"),
        ([client_tool([]), client_tool([])], "two tools named 'paint'"),
    ],
)
async def test_bad_run_tools_are_one_config_error_before_anything_is_sent(
    tools: Any, match: str
) -> None:
    agent, fm = scripted("solo", ["never"])
    with pytest.raises(ConfigError, match=match):
        await agent.prompt("hi", tools=tools)
    assert fm.call_count == 0 and agent.state.messages == [] and not agent.is_busy


async def test_a_run_tool_named_as_the_speaker_s_own_tool_is_a_config_error() -> None:
    own = AgentTool("paint", "Paint", "the agent's own", SCHEMA, lambda *a: "mine")
    agent, fm = scripted("solo", ["never"], tools=[own])
    with pytest.raises(ConfigError, match="name of a tool given to this run"):
        await agent.prompt("hi", tools=[client_tool([])])
    assert fm.call_count == 0


async def test_the_run_s_instructions_reach_the_target_of_a_handoff_that_run_only() -> None:
    """`prompt(instructions=...)`: the run's own system text, for every agent that speaks."""
    designer, designer_fm = scripted("designer", ["Teal it is.", "Footer done."])
    router, router_fm = scripted(
        "router", [calls(("transfer_to_designer", {}))], handoffs=[designer]
    )

    reply = await router.prompt("make it teal", instructions="The brand color is teal.")

    assert reply.agent == "designer"
    assert router_fm.contexts[0].system_prompt == "You are router.\n\nThe brand color is teal."
    assert designer_fm.contexts[0].system_prompt == (
        "You are designer.\n\nThe brand color is teal."
    )
    assert router.state.system_prompt == "You are router."  # the agent's own is unchanged

    await router.prompt("and the footer")
    assert designer_fm.contexts[1].system_prompt == "You are designer."
