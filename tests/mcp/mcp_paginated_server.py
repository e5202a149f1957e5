"""An MCP server that lists its tools over three pages (DESIGN §12), as openai-agents'
`tests/mcp/servers/paginated.py` does.

    python mcp_paginated_server.py

The official SDK's low-level `Server` over stdio. `tools/list` without a cursor gives
`first_page_tool` and the cursor `""` (an empty cursor is still a cursor: the spec makes it
opaque, and only a missing one ends the list); `""` gives `second_page_tool` and `"loop"`;
`"loop"` gives `third_page_tool` and `""` again, a cursor already followed. Every tool
answers `called:<its name>`.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

NO_INPUT: dict[str, Any] = {"type": "object", "properties": {}}
PAGES: dict[str | None, tuple[str, str]] = {
    None: ("first_page_tool", ""),
    "": ("second_page_tool", "loop"),
    "loop": ("third_page_tool", ""),
}


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    name, next_cursor = PAGES[params.cursor if params is not None else None]
    tool = types.Tool(name=name, description=f"{name}.", input_schema=NO_INPUT)
    return types.ListToolsResult(tools=[tool], next_cursor=next_cursor)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"called:{params.name}")]
    )


server = Server("yiem-paginated-server", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
