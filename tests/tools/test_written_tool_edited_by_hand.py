"""A written tool's file edited by hand into one that does not load, while its agent runs
(DESIGN R-4.15, §8): the tool's process imports the file again when it changed, and the
call's error result says that the tool file failed to load (or is gone) and why. It said
only the import's own error ("invalid syntax (hello.py, line 1)", "No module named ..."),
blamed the call ("Tool hello raised SystemExit: 4"), or could not "find the file that
defines execute", naming no file. Real worker processes on the faux model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent, ToolResultMessage, write_tool_tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SPEC = {
    "name": "hello",
    "label": "Hello",
    "description": "Says hi",
    "inputSchema": {"type": "object"},
    "executeCode": "return 'hi'",
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("edit", "cause"),
    [
        ("def (:\n", "SyntaxError: invalid syntax"),
        ("import no_such_module_anywhere\n", "No module named 'no_such_module_anywhere'"),
        ("raise SystemExit(4)\n", "SystemExit: 4"),
        (None, "is gone (removed or renamed after it was loaded)"),
    ],
    ids=["syntax", "missing-import", "sys-exit", "removed"],
)
async def test_a_call_of_a_tool_whose_file_no_longer_loads_says_so(
    tmp_path: Path, edit: str | None, cause: str
) -> None:
    folder = tmp_path / "tools"
    file = folder / "hello.py"
    calls = 0

    def edit_after_the_first_call(context: Any, signal: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:  # writeTool, then hello answered: now the file changes
            if edit is None:
                file.unlink()
            else:
                file.write_text(edit + file.read_text())

    fm = FauxModel(
        [
            faux_message(faux_tool_call("writeTool", SPEC)),
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
    written, first, second = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert not written.is_error and text_of(first.content) == "hi"
    assert second.is_error
    text = text_of(second.content)
    if edit is not None:
        assert text.startswith(f"the tool file {file} failed to load in the tool's process"), text
    assert f"the tool file {file}" in text and cause in text, text
