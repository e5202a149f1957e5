"""A tool `prepare_context` leaves out of a model call, in the cases pydantic-ai's
`test_dynamic_tools_agent_wide` / `prepare_tools` and openai-agents' `is_enabled` check.

By choice (docs/agent.md, "Construction"): `prepare_context` shapes what the model is sent,
not what may run; a call of a tool it left out still runs, as the loop answers calls from
the agent's tools (pydantic-ai and openai-agents answer such a call "unknown tool"). What
refuses a call is `before_tool_call`, shown here as the way to do it."""

from __future__ import annotations

from typing import Any

from yiemagent import Agent, AgentContext, AgentTool, BeforeToolCallResult, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def tools(ran: list[str]) -> list[AgentTool]:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(call_id)
        return "done"

    return [
        AgentTool("delete", "delete", "deletes", SCHEMA, execute),
        AgentTool("read", "read", "reads", SCHEMA, execute),
    ]


def hide_delete(state: Any) -> AgentContext:
    offered = [t for t in state.tools if t.name != "delete"]
    return AgentContext(state.system_prompt, state.messages, offered)


async def test_a_hidden_tool_is_not_offered_but_a_call_of_it_still_runs() -> None:
    ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("delete", {}, id="d1")), "ok"])
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=tools(ran), prepare_context=hide_delete
    )
    await agent.prompt("go")

    assert [t.name for t in fm.contexts[0].tools] == ["read"]
    assert ran == ["d1"]


async def test_before_tool_call_refuses_what_was_not_offered() -> None:
    ran: list[str] = []
    offered: set[str] = set()

    def remember(state: Any) -> AgentContext:
        context = hide_delete(state)
        offered.clear()
        offered.update(t.name for t in context.tools)
        return context

    def only_offered(ctx: Any) -> BeforeToolCallResult | None:
        if ctx.tool_call.name in offered:
            return None
        return BeforeToolCallResult(block=True, reason=f"{ctx.tool_call.name} is not available")

    fm = FauxModel([faux_message(faux_tool_call("delete", {}, id="d1")), "ok"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=tools(ran),
        prepare_context=remember,
        before_tool_call=only_offered,
    )
    await agent.prompt("go")

    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert ran == [] and result.is_error and text_of(result.content) == "delete is not available"
