"""An MCP server for the tests, written with the official SDK's `MCPServer` (DESIGN §12).

    python mcp_test_server.py                 # stdio
    python mcp_test_server.py --http PORT     # streamable HTTP on 127.0.0.1:PORT/mcp
    python mcp_test_server.py --never-answer  # starts, never answers initialize
    python mcp_test_server.py --slow-start S  # answers after S seconds
    python mcp_test_server.py --stderr-banner # logs a line on stderr first

Tools: text, an image, structured content, an embedded resource, `isError`, no content,
progress, a sleep that records its cancellation, tool-list changes, and a crash. With
`MCP_TEST_MARKERS=DIR` set, cancelled and started calls leave marker files in DIR so a test
can see what the server observed.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("yiem-test-server", log_level="WARNING")


def _mark(name: str, text: str = "1") -> None:
    folder = os.environ.get("MCP_TEST_MARKERS")
    if folder:
        Path(folder, name).write_text(text)


@server.tool(title="Echo", description="Return the text unchanged.")
def echo(text: str) -> str:
    return text


@server.tool(description="Do nothing and answer ok (for the overhead bench).")
def noop() -> str:
    return "ok"


@server.tool(description="Return a 1x1 PNG image.")
def image() -> Image:
    return Image(data=PNG, format="png")


@server.tool(description="Add two numbers; the result is structured content.")
def add(a: int, b: int) -> dict[str, int]:
    return {"sum": a + b}


@server.tool(description="Return images whose data is not base64.", structured_output=False)
def broken_image() -> list[Any]:
    return [
        ImageContent(type="image", data="not base64!", mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(uri="file:///a.png", mime_type="image/png", blob="%%"),
        ),
    ]


@server.tool(description="Return an embedded text resource.")
def resource() -> list[Any]:
    return [
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="hello notes"
            ),
        )
    ]


@server.tool(
    description="Return audio, a resource link, a PDF blob and a PNG blob.",
    structured_output=False,
)
def media() -> list[Any]:
    png = base64.b64encode(PNG).decode()
    return [
        AudioContent(
            type="audio", data=base64.b64encode(b"RIFF" * 4).decode(), mime_type="audio/wav"
        ),
        ResourceLink(
            type="resource_link", uri="file:///report.pdf", name="report", description="Q3 figures"
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri="file:///a.pdf",
                mime_type="application/pdf",
                blob=base64.b64encode(b"%PDF-1.4").decode(),
            ),
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(uri="file:///dot.png", mime_type="image/png", blob=png),
        ),
    ]


@server.tool(description="Always fails: the result has isError set.")
def fail(message: str) -> str:
    raise ToolError(message)


@server.tool(description="Return no content at all.", structured_output=False)
def empty() -> list[TextContent]:
    return []


@server.tool(description="Return `size` characters of text in two blocks, then an image.")
def huge(size: int, end: str = "") -> list[Any]:
    half = "x" * (size // 2)
    return [
        TextContent(type="text", text=half),
        TextContent(type="text", text=half[len(end) :] + end),
        ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
    ]


@server.tool(description="Report `steps` progress notifications, then answer done.")
async def progress(steps: int, ctx: Context) -> str:
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
        await anyio.sleep(0.01)
    return "done"


@server.tool(description="Sleep until cancelled (or `seconds`), recording the cancellation.")
async def sleep(seconds: float = 3600.0, tag: str = "sleep") -> str:
    _mark(f"{tag}.started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _mark(f"{tag}.cancelled")
        raise
    return f"slept {seconds} s"


def _added(text: str = "") -> str:
    return f"added tool says {text}"


@server.tool(description="Add a tool called `name` and announce the change.")
async def add_tool(name: str, ctx: Context) -> str:
    server.add_tool(_added, name=name, description=f"A tool added at run time: {name}")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool(description="Remove the tool called `name` and announce the change.")
async def remove_tool(name: str, ctx: Context) -> str:
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return f"removed {name}"


@server.tool(description="Announce a change of the tool list `times` times.")
async def announce(times: int, ctx: Context) -> str:
    for _ in range(times):
        await ctx.session.send_tool_list_changed()
    return f"announced {times} times"


@server.tool(description="Kill the server process at once (exit code 3).")
def crash() -> str:
    sys.stdout.flush()
    os._exit(3)


@server.tool(description="Wait `seconds`, then kill the server process (exit code 3).")
async def crash_later(seconds: float) -> str:
    await anyio.sleep(seconds)
    os._exit(3)


def _start_checks() -> None:
    """Record this process's pid; refuse a second start when MCP_TEST_START_ONCE is set."""
    _mark("pid", str(os.getpid()))
    once = os.environ.get("MCP_TEST_START_ONCE")
    if once:
        if Path(once).exists():
            sys.exit(4)
        Path(once).write_text("started")


if __name__ == "__main__":
    _start_checks()
    if sys.argv[1:] == ["--never-answer"]:
        time.sleep(120)  # reads nothing, answers nothing: initialize never completes
    elif len(sys.argv) == 3 and sys.argv[1] == "--slow-start":  # an npx download, say
        time.sleep(float(sys.argv[2]))
        server.run()
    elif sys.argv[1:] == ["--stderr-banner"]:  # as many servers log their start
        print("BANNER: the test server logs on stderr", file=sys.stderr, flush=True)
        server.run()
    elif len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
