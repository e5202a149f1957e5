"""`yiem mcp ...` (DESIGN §12); the `--mcp` / `--mcp-url` options are `mcp_options`.

    yiem mcp list "python server.py"          # a server's tools, one a line
    yiem mcp list --url http://127.0.0.1:8000/mcp
    yiem mcp serve --tools ./my_tools         # tool files as an MCP server on stdio
    yiem mcp serve --tools ./my_tools --http 8000

Errors are `YiemAgentError`s (a server that does not start, a missing `mcp` extra), which
`yiem` prints as one line; this module imports nothing of the MCP SDK until a command runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import sys
from pathlib import Path
from typing import Annotated

import typer

from yiemagent.cli.mcp_options import mcp_servers
from yiemagent.cli.options import CliError
from yiemagent.errors import ConfigError

__all__ = ["mcp_app"]

mcp_app = typer.Typer(
    no_args_is_help=True,
    help="MCP: list an MCP server's tools, or serve a folder of tool files as an MCP server.",
)


@mcp_app.command("list")
def list_tools(
    command: Annotated[
        str | None, typer.Argument(help='The server\'s command line, e.g. "python server.py".')
    ] = None,
    url: Annotated[
        str | None, typer.Option("--url", help="A streamable-HTTP server's URL instead.")
    ] = None,
) -> None:
    """Print an MCP server's tools: name — description, one a line."""
    from yiemagent.cli.render import counted

    if command is not None and url is not None:
        raise ConfigError("give a command or --url URL, not both: one server is listed")
    if command is None and url is None:
        raise ConfigError('give a command (yiem mcp list "python server.py") or --url URL')
    commands = [command] if command is not None else []
    (server,) = mcp_servers(commands, [url] if url else [], url_option="--url")

    async def fetch() -> list[tuple[str, str]]:
        async with server:
            return [(t.name, " ".join((t.description or "").split())) for t in server.tools]

    tools = asyncio.run(fetch())
    for name, description in tools:
        print(f"{name} — {description}" if description else name)
    print(f"{counted(len(tools), 'tool')} from {server.label}", file=sys.stderr)


@mcp_app.command("serve")
def serve(
    tools: Annotated[Path, typer.Option("--tools", help="Folder of tool files to serve.")],
    http: Annotated[
        int | None,
        typer.Option("--http", min=0, max=65535, help="Serve streamable HTTP on this port."),
    ] = None,
    host: Annotated[
        str, typer.Option("--host", help="HTTP address (default: loopback only).")
    ] = "127.0.0.1",
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.001, help="Seconds a call may take.")
    ] = None,
) -> None:
    """Serve a folder of tool files as an MCP server (stdio unless --http)."""
    from yiemagent.cli.options import no_tool_files_note
    from yiemagent.cli.render import counted
    from yiemagent.cli.serve import load_served_tools
    from yiemagent.mcp import serve as serve_store
    from yiemagent.tools import ToolStore

    if not tools.is_dir():
        raise ConfigError(f"--tools {tools}: not a folder")
    note = no_tool_files_note(tools)
    if note:
        print(f"yiem: warning: {note}", file=sys.stderr)
    store = ToolStore("mcp-serve")
    with contextlib.redirect_stdout(sys.stderr):  # a tool file's prints must not hit stdout
        load_served_tools(store, tools)
    store.unregister("listTools")  # an MCP client lists the tools itself

    def ready(where: str) -> None:
        if where != "stdio":
            served = counted(len(store), "tool")
            print(f"yiem: serving {served} over MCP at {where}", file=sys.stderr)
            sys.stderr.flush()

    try:
        asyncio.run(
            serve_store(
                store,
                "http" if http is not None else "stdio",
                host=host,
                port=http or 0,
                tool_timeout_s=timeout,
                on_ready=ready,
            )
        )
    except OSError as exc:  # the port is taken, or below 1024 for a user: say what to do
        if http is None or exc.errno not in (errno.EADDRINUSE, errno.EACCES):
            raise
        hint = "give another port: --http PORT (--http 0 picks a free one)"
        raise CliError(f"{exc}; {hint}") from None
