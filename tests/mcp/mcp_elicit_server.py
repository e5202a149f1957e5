"""An MCP server whose tools ask the client for input (`elicitation/create`, form mode) in
the middle of a call, as the MCP SDK's elicitation examples do.

    python mcp_elicit_server.py

The official SDK's low-level `Server` over stdio. Tools:
- `ask_then_fail`: asks, and lets the client's refusal fail the call (an exception);
- `ask_or_default`: asks, and goes on with a default when the client cannot answer.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

NO_INPUT: dict[str, Any] = {"type": "object", "properties": {}}
QUESTION: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=f"{name}.", input_schema=NO_INPUT)
            for name in ("ask_then_fail", "ask_or_default")
        ]
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "ask_then_fail":
        answer = await ctx.session.elicit_form("Delete the files?", QUESTION)
        said = f"the user said {answer.action}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=said)])
    try:
        answer = await ctx.session.elicit_form("Use the fast mode?", QUESTION)
        said = f"the user said {answer.action}"
    except Exception as exc:  # the client cannot answer questions: go on without
        said = f"went on with the default ({exc})"
    return types.CallToolResult(content=[types.TextContent(type="text", text=said)])


server = Server("yiem-elicit-server", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
