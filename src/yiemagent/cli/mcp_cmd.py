"""`yiem mcp ...` and the `--mcp` / `--mcp-url` options of `yiem run` (DESIGN §12).

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
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from yiemagent.cli.options import CliError
from yiemagent.errors import ConfigError

if TYPE_CHECKING:
    from yiemagent.mcp import MCPServer
    from yiemagent.types import AgentContext

__all__ = ["attach_servers", "mcp_app"]

_URL = re.compile(r"\s*https?://\S*\s*$", re.IGNORECASE)

mcp_app = typer.Typer(
    no_args_is_help=True,
    help="MCP: list an MCP server's tools, or serve a folder of tool files as an MCP server.",
)


def _servers(
    commands: Sequence[str], urls: Sequence[str], *, url_option: str = "--mcp-url"
) -> list[MCPServer]:
    """One server a command (stdio) and a URL (streamable HTTP).

    A command that is an http(s) URL is refused, naming `url_option`: started as a
    program it failed as `FileNotFoundError: ... 'http://...'`, which does not say that
    a URL has an option of its own.
    """
    from yiemagent.mcp import MCPServerHTTP, MCPServerStdio
    from yiemagent.mcp.servers import masked_line

    servers: list[MCPServer] = []
    for command in commands:
        if not command.strip():
            raise ConfigError('--mcp needs a command, e.g. --mcp "python server.py"')
        if _URL.match(command):
            shown = masked_line(command.strip())
            raise ConfigError(
                f"{shown!r} is a URL, not a command to start: give it as {url_option} {shown}"
            )
        try:
            program, *args = shlex.split(command)
        except ValueError as exc:  # an unclosed quote
            shown = masked_line(command)  # no key in the message (`--api-key ***`)
            raise ConfigError(f"--mcp {shown!r}: cannot split it into words: {exc}") from None
        servers.append(MCPServerStdio(program, args))
    servers.extend(MCPServerHTTP(url) for url in urls)
    return servers


async def _close_all(servers: Sequence[MCPServer]) -> None:
    for server in servers:
        with contextlib.suppress(Exception):
            await server.close()


def attach_servers(
    context: AgentContext,
    commands: Sequence[str],
    urls: Sequence[str],
) -> Callable[[], None]:
    """Connect each `--mcp` command and `--mcp-url`, and add their tools to `context.tools`.

    A command starting with `python` (or `python3`) runs on the Python that runs yiem,
    which has the MCP SDK. A server's tool named like one of the `--tools` folder's
    replaces it (asking for a server is asking for its tools), and a note on stderr says
    so; two servers with a tool of the same name are a clash.

    The connections live on their own threads, so they serve the run's event loop later.

    Returns:
        A function that closes every connection (call it when the run is over).

    Raises:
        ConfigError: the `mcp` extra is missing, an empty command, or two servers share a
            tool name.
        MCPConnectionError: a server did not start or answer; the others are closed.
    """
    from yiemagent.mcp import add_server, local_tool_name
    from yiemagent.tools import ToolStore

    servers = _servers(commands, urls)
    store = ToolStore("cli")
    for tool in context.tools:
        store.register(tool)
    folder_tools = set(store.tools)

    async def connect() -> None:
        try:
            for server in servers:
                await server.connect()
                for remote in server.tools:
                    name = local_tool_name(remote.name, None)
                    if name in folder_tools and store.unregister(name) is not None:
                        folder_tools.discard(name)
                        print(
                            f"note: {server.label}'s tool {name!r} replaces the tool of "
                            "that name from the tools folder",
                            file=sys.stderr,
                        )
                await add_server(store, server)
        except BaseException:
            await _close_all(servers)
            raise

    asyncio.run(connect())
    context.tools = list(store.tools.values())
    return lambda: asyncio.run(_close_all(servers))


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
    (server,) = _servers(commands, [url] if url else [], url_option="--url")

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
