"""A written tool replaced by `writeTool` while a batch of calls that offered it runs
(DESIGN R-4.15): a call of the old tool later in that batch runs the old tool's code in its
worker process as in a thread, the version its store loaded, not the new file on disk,
which its schema and description do not describe. Real worker processes on the faux
model."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent, ToolResultMessage, write_tool_tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

pytestmark = pytest.mark.timeout(120)

OLD = {
    "name": "hello",
    "label": "Hello",
    "description": "Says hi",
    "inputSchema": {"type": "object"},
    "executeCode": "return 'hi'",
}
NEW = {**OLD, "description": "Says bye", "executeCode": "return 'bye'", "overwrite": True}


def collect_modules(context: Any, signal: Any) -> None:
    """The replaced tool's module, out of `sys.modules`, is collected at once."""
    gc.collect()


async def replace_then_call(folder: Path, isolation: str) -> list[ToolResultMessage]:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("writeTool", OLD)),
            faux_message(faux_tool_call("writeTool", NEW), faux_tool_call("hello", {})),
            faux_message(faux_tool_call("hello", {})),
            "done",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[], after_tool_call=collect_modules)
    agent.tool_store.register(
        write_tool_tool(agent.tool_store, folder, timeout_s=60, isolation=isolation)  # type: ignore[arg-type]
    )
    assert (await agent.prompt("write hello, replace it, call it")).text == "done"
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


@pytest.mark.parametrize("isolation", ["thread", "process"])
async def test_the_old_tool_called_after_its_replacement_runs_its_own_code(
    tmp_path: Path, isolation: str
) -> None:
    written, replaced, old_call, new_call = await replace_then_call(tmp_path / "tools", isolation)
    assert not written.is_error and not replaced.is_error, text_of(replaced.content)
    assert (text_of(old_call.content), old_call.is_error) == ("hi", False)
    assert (text_of(new_call.content), new_call.is_error) == ("bye", False)
