"""MCP both ways (DESIGN §12): tools from any MCP server into a `ToolStore`, and a
`ToolStore` served as an MCP server.

Public: `MCPServer` (the base: a connection's lifetime), `MCPServerStdio`, `MCPServerHTTP`,
`add_server`, `add_servers` (the rule of the places that name servers for an agent),
`serve`, `MCPCallError`, `MCPCallAborted`, `MCPToolError`,
`MCPConnectionError` (also in `yiemagent.errors`), and `local_tool_name`. Every module
but `servers` is private; `servers` (the two servers and how a server is shown) stays
public because `yiem mcp` and the chat's `/mcp` print servers with `servers.masked_line`.

Needs the `mcp` extra (the official MCP SDK); importing this package does not import the
SDK, connecting or serving does (and says how to install it when it is missing).
"""

from yiemagent.errors import MCPConnectionError
from yiemagent.mcp._client import add_server, add_servers, local_tool_name
from yiemagent.mcp._connection import MCPServer
from yiemagent.mcp._errors import MCPCallAborted, MCPCallError, MCPToolError
from yiemagent.mcp._serve import serve
from yiemagent.mcp.servers import MCPServerHTTP, MCPServerStdio

__all__ = [
    "MCPCallAborted",
    "MCPCallError",
    "MCPConnectionError",
    "MCPServer",
    "MCPServerHTTP",
    "MCPServerStdio",
    "MCPToolError",
    "add_server",
    "add_servers",
    "local_tool_name",
    "serve",
]

# Exceptions name this package, their public path, in tracebacks and pickles (pickle finds
# them here); classes with annotations keep their module, where `get_type_hints` reads them.
for _error in (MCPCallAborted, MCPCallError, MCPToolError):
    _error.__module__ = __name__
del _error
