"""An `isolation="process"` tool (DESIGN R-4.5) raising an exception whose `__str__`
raises, after openai-agents' tests/test_tracing_errors.py::
test_run_propagates_exception_whose_str_raises: the call gets an error result naming the
exception, as a thread tool's does, and the worker lives on for the next call. The worker
wrote the error's text inside its handler, so it died, and the result blamed a dead
process ("the other side closed the pipe")."""

from __future__ import annotations

import os
from typing import Any

import pytest

from yiemagent import Agent, AgentTool, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str exploded")


def raises_unprintable(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    raise Unprintable


def exits_unprintably(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    raise SystemExit(Unprintable())


def whoami(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    return f"pid {os.getpid()}"


@pytest.mark.timeout(90)
async def test_an_unprintable_error_is_the_tools_result_and_the_worker_lives_on() -> None:
    def tool(name: str, fn: Any) -> AgentTool:
        return AgentTool(name, name, name, SCHEMA, fn, isolation="process")

    calls = [faux_tool_call(n, {}) for n in ("who", "bad", "who", "exits", "who")]
    fm = FauxModel([faux_message(call) for call in calls] + ["done"])
    tools = [tool("who", whoami), tool("bad", raises_unprintable), tool("exits", exits_unprintably)]
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools, tool_execution="sequential")
    await agent.prompt("go")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    said = [(m.tool_name, m.is_error, text_of(m.content)) for m in results]
    pid = said[0][2]
    assert said == [
        ("who", False, pid),
        ("bad", True, "Unprintable"),
        ("who", False, pid),  # the same worker
        ("exits", True, "Tool exits raised SystemExit"),
        ("who", False, pid),
    ]
