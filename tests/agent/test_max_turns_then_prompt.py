"""An Agent stopped by `max_turns` (R-5.5), the cases other frameworks' suites check: each
prompt gets its own budget of model calls, the stopped run's tool results stay in the
transcript so the next prompt can finish from them, and a run with an output type that
stops there raises, naming the limit."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from yiemagent import AgentRunError, AgentToolResult, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

from ._kit import faux_agent, make_tool


def lookup(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult(content="found it")


async def test_the_next_prompt_finishes_from_what_the_stopped_run_gathered() -> None:
    calling = faux_message(faux_tool_call("lookup", {}))
    fm = FauxModel([calling, calling, "from what I found: it", calling, "done"])
    agent = faux_agent(fm, tools=[make_tool("lookup", lookup)], max_turns=2)

    stopped = await agent.prompt("find it")
    assert fm.call_count == 2 and stopped.stop_reason == "toolUse"  # no answer yet
    assert sum(isinstance(m, ToolResultMessage) for m in agent.state.messages) == 2

    reply = await agent.prompt("Answer from what you have.")
    assert reply.text == "from what I found: it"
    seen = fm.contexts[2].messages
    assert [m.role for m in seen][-3:] == ["assistant", "toolResult", "user"]
    assert sum(m.role == "toolResult" for m in seen) == 2

    again = await agent.prompt("once more")  # a fresh budget: two model calls
    assert again.text == "done" and fm.call_count == 5


class Found(BaseModel):
    where: str


async def test_an_output_type_run_stopped_by_max_turns_raises_naming_it() -> None:
    fm = FauxModel([faux_message(faux_tool_call("lookup", {}))] * 3)
    agent = faux_agent(fm, tools=[make_tool("lookup", lookup)], max_turns=3)

    with pytest.raises(AgentRunError, match="max_turns"):
        await agent.prompt("find it", output_type=Found)
    assert fm.call_count == 3
    assert sum(isinstance(m, ToolResultMessage) for m in agent.state.messages) == 3
