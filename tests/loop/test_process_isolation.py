"""`AgentTool(isolation="process")` (DESIGN R-4.5; docs/tools.md "Timeouts, and stopping a
tool"): the tool runs in a worker process; results, updates and errors come back; a timeout
or an abort kills the process at once; a plain thread tool keeps R-4.2 meanwhile."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from yiemagent import (
    Agent,
    AgentTool,
    AgentToolResult,
    ConfigError,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def whoami(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> Any:
    on_update(AgentToolResult.text("halfway"))
    return AgentToolResult.text(f"pid {os.getpid()}", details={"args": args})


async def sleepy(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    await asyncio.sleep(0.01)
    return f"async pid {os.getpid()}"


def fails(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    raise ValueError("bad input: 7")


def forever(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    with open(args["pidfile"], "w") as handle:
        handle.write(str(os.getpid()))
    while True:
        pass


def process_tool(name: str, fn: Any, **kwargs: Any) -> AgentTool:
    return AgentTool(name, name, name, SCHEMA, fn, isolation="process", parallel=True, **kwargs)


def results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


@pytest.mark.timeout(90)
async def test_results_updates_and_errors_cross_the_process() -> None:
    calls = [faux_tool_call(n, {"k": 1}) for n in ("whoami", "sleepy", "fails")]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[
            process_tool("whoami", whoami),
            process_tool("sleepy", sleepy),
            process_tool("fails", fails),
        ],
    )
    updates: list[str] = []
    agent.subscribe(
        lambda e, s: (
            updates.append(text_of(e.partial_result.content))
            if isinstance(e, ToolExecutionUpdateEvent)
            else None
        )
    )
    assert (await agent.prompt("go")).text == "done"
    first, second, third = results(agent)
    assert text_of(first.content).startswith("pid ") and not first.is_error
    assert int(text_of(first.content).split()[1]) != os.getpid()
    assert first.details == {"args": {"k": 1}}
    assert text_of(second.content).startswith("async pid ")
    assert third.is_error and text_of(third.content) == "bad input: 7"
    assert updates == ["halfway"]


@pytest.mark.timeout(90)
async def test_an_abort_kills_the_process_at_once(tmp_path: Any) -> None:
    pidfile = tmp_path / "pid"
    fm = FauxModel([faux_message(faux_tool_call("forever", {"pidfile": str(pidfile)})), "x"])
    tool = AgentTool(
        "forever",
        "f",
        "f",
        {"type": "object", "properties": {"pidfile": {"type": "string"}}},
        forever,
        isolation="process",
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool])
    run = asyncio.create_task(agent.prompt("go"))
    deadline = time.monotonic() + 60
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    pid = int(pidfile.read_text())
    aborted = time.monotonic()
    agent.abort()
    await asyncio.wait_for(run, 30)
    assert time.monotonic() - aborted < 0.9  # no 1 s grace: the process is simply killed
    (result,) = results(agent)
    assert result.is_error and "process was stopped" in text_of(result.content)
    await asyncio.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_closure_cannot_be_isolated_and_says_why() -> None:
    fm = FauxModel([faux_message(faux_tool_call("inner", {})), "x"])
    tool = AgentTool("inner", "i", "i", SCHEMA, lambda *a: "no", isolation="process")
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool])
    await agent.prompt("go")
    (result,) = results(agent)
    assert result.is_error and "top level of a module" in text_of(result.content)
    with pytest.raises(ConfigError, match="isolation"):
        AgentTool("x", "x", "x", SCHEMA, whoami, isolation="fork")  # type: ignore[arg-type]
