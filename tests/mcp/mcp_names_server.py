"""An MCP server whose tool names are not all valid tool names (DESIGN §12), as servers
written for other clients list them.

    python mcp_names_server.py

The official SDK's low-level `Server` over stdio. Tools: `search.v1` and `search_v1`
(alike once the dot becomes `_`), `搜索` and `读取` (alike once each character becomes
`_`), and `echo`. Every tool answers `called:<its name>`.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

NAMES = ["search.v1", "search_v1", "搜索", "读取", "echo"]
NO_INPUT: dict[str, Any] = {"type": "object", "properties": {}}


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=f"{name}.", input_schema=NO_INPUT) for name in NAMES
        ]
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = types.TextContent(type="text", text=f"called:{params.name}")
    return types.CallToolResult(content=[text])


server = Server("yiem-names-server", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
