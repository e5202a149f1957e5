"""An agent file's `mcp` key takes URLs as well as commands (DESIGN §17): a table naming a
streamable-HTTP MCP server (the official SDK's, a process on 127.0.0.1) gets its tools, a
sub-agent of the team calls one through its parent, and closing the agent leaves the
server running (it is not the agent's process to stop)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.mcp.conftest import HttpTestServer
from yiemagent import ToolResultMessage, load_agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import Context, text_of

pytestmark = pytest.mark.timeout(120)


def brain(context: Context) -> object:
    """The lead asks the helper; the helper echoes through the MCP server; each then
    answers with the tool result it got."""
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(f"{context.system_prompt} got: {text_of(last.content)}")
    if context.system_prompt == "Lead.":
        return faux_message(faux_tool_call("helper", {"input": "say hello"}))
    return faux_message(faux_tool_call("echo", {"text": "hello over http"}))


async def test_an_mcp_url_in_an_agent_file_gives_its_agent_the_servers_tools(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    markers = tmp_path / "markers"
    markers.mkdir()
    server = HttpTestServer(markers)
    server.start()
    try:
        team = tmp_path / "team.toml"
        team.write_text(
            '[agents.lead]\nsystem_prompt = "Lead."\nas_tools = ["helper"]\n\n'
            '[agents.helper]\nsystem_prompt = "Help."\ndescription = "Echoes."\n'
            f"mcp = [{json.dumps(server.url)}]\n"
        )
        fm = FauxModel([brain] * 10)
        lead = load_agent(team, model=fm.model)
        assert "echo" not in lead.tool_store.tools and "helper" in lead.tool_store.tools

        reply = await lead.prompt("go")

        assert reply.text == "Lead. got: Help. got: hello over http"
        [result] = [m for m in lead.state.messages if isinstance(m, ToolResultMessage)]
        assert not result.is_error and result.details["agent"] == "helper"
        helper_tools = [t.name for t in fm.contexts[1].tools or []]
        assert "echo" in helper_tools
        await lead.close()
        assert server.proc is not None and server.proc.poll() is None  # still serving
    finally:
        server.kill()
