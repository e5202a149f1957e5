"""A tool raising `SystemExit` (a wrapped CLI's `sys.exit`) whose code is an exception
that cannot be turned into text (R-4.5; after openai-agents' tests/test_tracing_errors.py::
test_run_propagates_exception_whose_str_raises): its result names the exit like any
other, "Tool x raised SystemExit". Writing that text raised inside the handler, and the
call was answered "Tool call failed: internal error: str exploded"."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import Agent, AgentTool, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str exploded")


def exits(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    raise SystemExit(Unprintable())


async def exits_async(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    raise SystemExit(Unprintable())


@pytest.mark.parametrize("execute", [exits, exits_async])
async def test_an_exit_with_an_unprintable_code_is_named(execute: Any) -> None:
    fm = FauxModel([faux_message(faux_tool_call("cli", {})), "done"])
    tool = AgentTool("cli", "cli", "runs a CLI", {"type": "object", "properties": {}}, execute)
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool])
    assert (await agent.prompt("go")).text == "done"
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and text_of(result.content) == "Tool cli raised SystemExit"
