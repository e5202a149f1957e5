"""What a call to an MCP server raises (DESIGN §12): `MCPCallError`, `MCPCallAborted` and
`MCPToolError` (public through `yiemagent.mcp`), and `UndeliveredCall`, the connection's own
signal that a request may be sent again. `MCPConnectionError` (connecting failed) is in
`yiemagent.errors`."""

from __future__ import annotations

from yiemagent.errors import YiemAgentError

__all__ = ["MCPCallAborted", "MCPCallError", "MCPToolError", "UndeliveredCall"]


class MCPCallError(YiemAgentError):
    """A `tools/call` could not be answered: the connection closed, reconnecting failed, or
    the server answered with a protocol error. Raised by `MCPServer.call_tool`; inside a tool
    call it becomes the call's error result."""


class UndeliveredCall(MCPCallError):
    """The connection was lost before the server got the request: safe to send again.
    Raised and caught inside `MCPServer` (not public)."""


class MCPCallAborted(MCPCallError):
    """The call's signal was aborted; `notifications/cancelled` was sent to the server."""


class MCPToolError(YiemAgentError):
    """The MCP server answered a call with `isError: true`; the text is the server's. Raised
    by `_convert.result_from_mcp`; inside a tool call it becomes the call's error result."""
