"""Two agents whose `writeTool`s share one folder (DESIGN R-4.15): each runs the version of
a written tool it registered. The second agent's `writeTool` replaces the file on disk;
the first agent's tool, in a worker process as in a thread, still runs the code it was
loaded with, matching the schema and description its store offers. A worker process
imported the file as it was on disk at the call, so each agent ran the other's code. Real
worker processes on the faux model."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest

from yiemagent import Agent, ToolResultMessage, write_tool_tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

pytestmark = pytest.mark.timeout(120)


def spec(says: str) -> dict[str, Any]:
    return {
        "name": "greet",
        "label": "Greet",
        "description": f"Says {says}",
        "inputSchema": {"type": "object"},
        "executeCode": f"return {says!r}",
        "overwrite": True,
    }


def agent(folder: Path, isolation: Literal["thread", "process"], says: str) -> Agent:
    """An agent that writes `greet` (answering `says`) into `folder`, then calls it."""
    fm = FauxModel(
        [
            faux_message(faux_tool_call("writeTool", spec(says))),
            "written",
            faux_message(faux_tool_call("greet", {})),
            "called",
        ]
    )
    made = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[])
    store = made.tool_store
    store.register(write_tool_tool(store, folder, timeout_s=60, isolation=isolation))
    return made


def results(made: Agent) -> list[str]:
    return [text_of(m.content) for m in made.state.messages if isinstance(m, ToolResultMessage)]


@pytest.mark.parametrize("isolation", ["process", "thread"])
async def test_each_agent_runs_the_version_of_a_shared_tool_file_it_wrote(
    tmp_path: Path, isolation: Literal["thread", "process"]
) -> None:
    folder = tmp_path / "tools"
    first, second = agent(folder, isolation, "from the first"), agent(folder, isolation, "two")
    assert (await first.prompt("write greet")).text == "written"
    assert (await second.prompt("write greet")).text == "written"  # replaces greet.py
    assert "'two'" in (folder / "greet.py").read_text()
    assert (await first.prompt("call greet")).text == "called"
    assert (await second.prompt("call greet")).text == "called"
    assert results(first)[1] == "from the first"
    assert results(second)[1] == "two"
    assert first.tool_store.tools["greet"].description == "Says from the first"
