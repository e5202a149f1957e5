"""An `isolation="process"` tool whose process ends mid-call (DESIGN R-4.5, §8): the error
result says how it ended, an exit status or the signal that killed it (a crash in C code,
the out-of-memory killer), where it said only "died (the other side closed the pipe)";
the next call gets a new worker. Real worker processes, real signals."""

from __future__ import annotations

import os
import re
import signal
from typing import Any

import pytest

from yiemagent import Agent, AgentTool, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def exits(tool_call_id: str, args: dict[str, Any], sig: Any, on_update: Any) -> str:
    os._exit(3)


def crashes(tool_call_id: str, args: dict[str, Any], sig: Any, on_update: Any) -> str:
    os.kill(os.getpid(), signal.SIGSEGV)
    return "not reached"


def answers(tool_call_id: str, args: dict[str, Any], sig: Any, on_update: Any) -> str:
    return "still here"


@pytest.mark.timeout(120)
async def test_the_result_says_how_the_tool_process_ended_and_the_next_call_runs() -> None:
    tools = [
        AgentTool(name, name, name, SCHEMA, fn, isolation="process")
        for name, fn in (("exits", exits), ("crashes", crashes), ("answers", answers))
    ]
    calls = [faux_tool_call(name, {}) for name in ("exits", "crashes", "answers")]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    assert (await agent.prompt("go")).text == "done"
    exited, crashed, answered = [
        m for m in agent.state.messages if isinstance(m, ToolResultMessage)
    ]
    assert exited.is_error and re.fullmatch(
        r"the tool process \d+ ended before it answered: it exited with status 3",
        text_of(exited.content),
    ), text_of(exited.content)
    assert crashed.is_error and re.fullmatch(
        r"the tool process \d+ ended before it answered: it was killed by SIGSEGV",
        text_of(crashed.content),
    ), text_of(crashed.content)
    assert not answered.is_error and text_of(answered.content) == "still here"
