"""An agent file's MCP server given as a table takes `requires_approval` (docs/teams.md): the
server's tools whose calls wait for a person's decision, as `add_server(...,
requires_approval=...)` holds them. An agent file had no place for it, so `yiem serve
--agent` and `yiem chat --agent` could not hold an MCP tool's calls at all. A real server
subprocess, the faux model, and an `AgentFile` build on a SQLite session whose held call a
second build approves and resumes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from yiemagent import ConfigError, ToolResultMessage, load_agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.sessions import SqliteSessionStore
from yiemagent.teams import AgentFile

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from tests.mcp.conftest import SERVER

COMMAND = json.dumps(f"{sys.executable} {SERVER}")


def _file(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(f"[agents.helper]\nmcp = [{server}]\n", encoding="utf-8")
    return path


async def test_the_named_tool_is_held_and_a_later_build_resumes_it(tmp_path: Path) -> None:
    path = _file(tmp_path, f'{{ command = {COMMAND}, prefix = "t", requires_approval = ["add"] }}')
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("t_add", {"a": 2, "b": 3}), faux_tool_call("t_echo", {"text": "x"})
            ),
            "The sum is 5.",
        ]
    )
    store = SqliteSessionStore(tmp_path / "sessions.db")
    async with AgentFile(path) as team:
        first = team.build(model=fm.model, stream_fn=fm.stream_fn, session_store=store,
                           session_id="s")  # fmt: skip
        await first.prompt("Add 2 and 3, echo x.")
        assert [p.tool_name for p in first.pending_approvals] == ["t_add"]
        await first.close()
        second = team.build(model=fm.model, stream_fn=fm.stream_fn, session_store=store,
                            session_id="s")  # fmt: skip
        [held] = second.pending_approvals
        second.approve(held.tool_call_id)
        assert (await second.resume()).text == "The sum is 5."
        results = {
            m.tool_name: m for m in second.state.messages if isinstance(m, ToolResultMessage)
        }
        assert results["t_add"].details == {"sum": 5} and not results["t_echo"].is_error
        await second.close()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ('"add"', "requires_approval must be true, false or a list of tool names, not 'add'"),
        ("[1]", "requires_approval must be true, false or a list of tool names, not [1]"),
        ('["ad"]', "requires_approval names no tool of MCP server"),
    ],
)
def test_a_bad_requires_approval_is_one_message(tmp_path: Path, given: str, said: str) -> None:
    path = _file(tmp_path, f"{{ command = {COMMAND}, requires_approval = {given} }}")
    with pytest.raises(ConfigError) as raised:
        load_agent(path)
    text = str(raised.value)
    assert text.startswith(f"{path}: [agents.helper] mcp: ") and said in text, text
    assert "\n" not in text
