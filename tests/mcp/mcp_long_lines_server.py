"""An MCP server written with the official SDK's `MCPServer`, over stdio, whose tool
`long_text(size)` answers `size` characters of `long_text` below: each result is one line
of tens of MB on the server's stdout, as a file, a page or a base64 image can be.

    python mcp_long_lines_server.py
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("long-lines", log_level="WARNING")

_PIECE = 'é"\\☃\t𝄞\n<ü>'
"""Characters JSON escapes (a quote, a backslash, a tab, a newline) and ones UTF-8 writes in
two, three and four bytes, so a pipe read ends inside a character or an escape."""


def long_text(size: int) -> str:
    """`size` characters, numbered pieces of `_PIECE`: a piece lost, doubled or moved shows."""
    pieces = (f"{index:08d}{_PIECE}" for index in range(size // (8 + len(_PIECE)) + 1))
    return "".join(pieces)[:size]


@server.tool(
    name="long_text",
    description="Answer `size` characters of numbered text.",
    structured_output=False,
)
def long_text_tool(size: int) -> str:
    return long_text(size)


if __name__ == "__main__":
    server.run()
