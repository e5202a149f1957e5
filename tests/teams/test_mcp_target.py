"""MCP tools of a handoff target (DESIGN §12, §17), built from an agent file as `yiem
serve --agent` builds each session's agent: the target's server, shared by every agent
the file builds, dies during the target's call. That call is answered with the server's
failure, the target's next call reconnects, and the next session's agent finds the
server running again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.loop import transcript_problems
from yiemagent.teams import AgentFile
from yiemagent.types import ToolResultMessage, text_of

pytest.importorskip("mcp", reason="the mcp extra is not installed")
pytestmark = pytest.mark.timeout(120)


async def test_a_targets_mcp_server_that_dies_is_one_failed_call(tmp_path: Path) -> None:
    from tests.mcp.conftest import SERVER

    command = f"{sys.executable} {SERVER}"
    team = tmp_path / "team.toml"
    team.write_text(
        '[agents.router]\nhandoffs = ["billing"]\n'
        f"[agents.billing]\nmcp = [{json.dumps(command)}]\n"
    )
    fm = FauxModel(
        [
            faux_message(faux_tool_call("transfer_to_billing", {})),
            faux_message(faux_tool_call("crash", {})),
            faux_message(faux_tool_call("echo", {"text": "back"})),
            "billing: the server is back",
            faux_message(faux_tool_call("echo", {"text": "again"})),
            "billing: still here",
        ]
    )
    async with AgentFile(team, model=fm.model) as file:
        first = file.build()
        reply = await first.prompt("bill me")
        assert (reply.agent, reply.text) == ("billing", "billing: the server is back")
        results = [m for m in first.state.messages if isinstance(m, ToolResultMessage)]
        crash, echo = results[1:]
        assert crash.is_error and "closed the connection" in text_of(crash.content)
        assert not echo.is_error and text_of(echo.content) == "back"
        assert transcript_problems(first.state.messages) == []
        await first.close()

        second = file.build()
        second.state.active_agent = "billing"
        assert (await second.prompt("again")).text == "billing: still here"
        [result] = [m for m in second.state.messages if isinstance(m, ToolResultMessage)]
        assert text_of(result.content) == "again"
        await second.close()
