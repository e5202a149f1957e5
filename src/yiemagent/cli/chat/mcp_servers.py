"""`yiem chat --mcp "command args"`: tools from MCP servers (DESIGN §12).

Each server is started and listed into the chat's tool store when the chat starts (after the
input line is up, so a slow server does not hold the prompt). A server that fails to start,
or dies later, is one line; the chat goes on with the other tools (a call to a dead
server's tool gets an error result). Uses `yiemagent.mcp` (`MCPServerStdio`,
`add_server`, `MCPServer.close`); without that package the option is refused in one line.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from yiemagent.cli.chat.host import ChatHost

__all__ = ["close_mcp_servers", "start_mcp_servers"]


def _mcp() -> Any:
    return importlib.import_module("yiemagent.mcp")


async def start_mcp_servers(app: ChatHost) -> None:
    """Connect each `--mcp` server and register its tools; failures are one line each."""
    specs = app.setup.options.mcp
    if not specs:
        return
    mcp = _mcp()
    for spec in specs:
        server = mcp.MCPServerStdio(spec)
        try:
            names = await mcp.add_server(app.setup.store, server)
        except Exception as exc:
            app.say(f"MCP server {spec!r} failed: {' '.join(str(exc).split())}", "red")
            with contextlib.suppress(Exception):
                await server.close()
            continue
        app.setup.mcp_servers.append(server)
        app.say(f"MCP server {spec!r}: {len(names)} tools ({', '.join(names)})")


async def close_mcp_servers(app: ChatHost) -> None:
    """Stop the servers the chat started."""
    for server in app.setup.mcp_servers:
        with contextlib.suppress(Exception):
            await server.close()
    app.setup.mcp_servers.clear()
