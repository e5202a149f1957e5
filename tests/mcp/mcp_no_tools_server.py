"""An MCP server that offers no tools, for the tests of DESIGN §12: the official SDK's
low-level `Server` over its stdio transport, offering resources or prompts only, so its
capabilities hold no `tools` and `tools/list` is answered "Method not found".

    python mcp_no_tools_server.py resources|prompts
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[types.Resource(uri="file:///notes.txt", name="notes")]
    )


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[types.Prompt(name="summarise")])


def server(offers: str) -> Server[Any]:
    if offers == "resources":
        return Server("yiem-resources-only", on_list_resources=list_resources)
    return Server("yiem-prompts-only", on_list_prompts=list_prompts)


async def main() -> None:
    served = server(sys.argv[1])
    async with stdio_server() as (read, write):
        await served.run(read, write, served.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
