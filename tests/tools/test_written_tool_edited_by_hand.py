"""A written tool's file edited by hand, or removed, while its agent runs (DESIGN R-4.15,
§8): the agent's tool goes on running the code it was loaded with, in its worker process as
in a thread, since its store still offers that version's schema and description (the
process imported the file again and ran the edit, or failed on it). A tool file whose code
fails in the worker process only (it imports what only the agent's process has) gives a
call's error result that says it is the tool file and why. Real worker processes on the
faux model."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from yiemagent import Agent, ToolResultMessage, write_tool_tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

pytestmark = pytest.mark.timeout(120)

SPEC = {
    "name": "hello",
    "label": "Hello",
    "description": "Says hi",
    "inputSchema": {"type": "object"},
    "executeCode": "return 'hi'",
}


async def write_and_call_twice(
    folder: Path, spec: dict[str, Any], edit: Any = None
) -> list[ToolResultMessage]:
    """writeTool `spec`, call it, `edit()` the file, call it again: the three results."""
    calls = 0

    def edit_after_the_first_call(context: Any, signal: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 2 and edit is not None:  # writeTool, then hello answered
            edit()

    fm = FauxModel(
        [
            faux_message(faux_tool_call("writeTool", spec)),
            faux_message(faux_tool_call("hello", {})),
            faux_message(faux_tool_call("hello", {})),
            "done",
        ]
    )
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=[], after_tool_call=edit_after_the_first_call
    )
    agent.tool_store.register(write_tool_tool(agent.tool_store, folder, timeout_s=60))
    assert (await agent.prompt("write hello, call it twice")).text == "done"
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


@pytest.mark.parametrize(
    "edit",
    [
        "def (:\n",
        "import no_such_module_anywhere\n",
        "raise SystemExit(4)\n",
        None,
    ],
    ids=["syntax", "missing-import", "sys-exit", "removed"],
)
async def test_a_tool_whose_file_changed_runs_the_code_it_was_loaded_with(
    tmp_path: Path, edit: str | None
) -> None:
    file = tmp_path / "tools" / "hello.py"

    def change() -> None:
        if edit is None:
            file.unlink()
        else:
            file.write_text(edit + file.read_text())

    written, first, second = await write_and_call_twice(tmp_path / "tools", SPEC, change)
    assert not written.is_error
    assert (text_of(first.content), first.is_error) == ("hi", False)
    assert (text_of(second.content), second.is_error) == ("hi", False)


async def test_a_tool_file_that_fails_in_the_process_only_says_it_is_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "_only_in_this_process", ModuleType("_only_in_this_process"))
    spec = {**SPEC, "imports": "import _only_in_this_process"}
    written, first, _ = await write_and_call_twice(tmp_path / "tools", spec)
    assert not written.is_error and first.is_error
    text = text_of(first.content)
    file = tmp_path / "tools" / "hello.py"
    assert text.startswith(f"the tool file {file} failed to load in the tool's process"), text
    assert "No module named '_only_in_this_process'" in text, text
