"""An image a tool returns is checked before the transcript keeps it: one whose data is not
base64 becomes a text naming it, whatever the tool's source (a Python tool here; MCP tools
go through the same step)."""

from __future__ import annotations

from typing import Any

from tests.agent._kit import faux_agent, make_tool
from yiemagent import AgentToolResult, ImageContent, TextContent, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def image_tool(data: str) -> Any:
    def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("here"), ImageContent(data, "image/png")])

    return make_tool("shot", execute)


async def test_an_image_that_is_not_base64_becomes_a_text_naming_it() -> None:
    fm = FauxModel([faux_message(faux_tool_call("shot", {}, id="c1")), "seen", "again"])
    agent = faux_agent(fm, tools=[image_tool("not base64!")])
    await agent.prompt("take a screenshot")
    await agent.prompt("once more")

    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert not result.is_error
    assert result.content[0] == TextContent("here")
    note = result.content[1]
    assert isinstance(note, TextContent), result.content
    assert note.text.startswith("[image image/png left out: ") and "base64" in note.text
    for context in fm.contexts[1:]:  # every later model call gets the text, not the image
        sent = [m for m in context.messages if isinstance(m, ToolResultMessage)]
        assert not any(isinstance(b, ImageContent) for m in sent for b in m.content)


async def test_a_valid_image_is_kept() -> None:
    fm = FauxModel([faux_message(faux_tool_call("shot", {}, id="c1")), "seen"])
    agent = faux_agent(fm, tools=[image_tool(PNG_1X1)])
    await agent.prompt("take a screenshot")
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.content[1] == ImageContent(PNG_1X1, "image/png")
