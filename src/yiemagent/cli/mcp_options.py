"""The `--mcp "command"`, `--mcp-url URL`, `--mcp-timeout S` and `--mcp-max-message-bytes N`
options of `yiem run`, `yiem chat` and `yiem serve` (DESIGN §12): the MCP servers they name,
connected, and their tools added.

Errors are `YiemAgentError`s (a server that does not start, a missing `mcp` extra), which
`yiem` prints as one line; this module imports nothing of the MCP SDK until a server is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from yiemagent.errors import ConfigError

if TYPE_CHECKING:
    from yiemagent.mcp import MCPServer
    from yiemagent.types import AgentContext, AgentTool

__all__ = [
    "KEEP_BOTH",
    "add_mcp_tools",
    "attach_servers",
    "close_all",
    "mcp_servers",
    "refuse_lone_bounds",
    "refuse_url_command",
]

_URL = re.compile(r"\s*https?://\S*\s*$", re.IGNORECASE)

KEEP_BOTH = (
    "to keep both, name the servers in an agent file (--agent FILE), where "
    '{ command = "...", prefix = "..." } gives one of them a prefix'
)
"""How the command line keeps both tools of a name two `--mcp` servers share."""


def mcp_servers(
    commands: Sequence[str],
    urls: Sequence[str],
    *,
    url_option: str = "--mcp-url",
    timeout_s: float | None = None,
    max_message_bytes: int | None = None,
) -> list[MCPServer]:
    """One server a command (stdio) and a URL (streamable HTTP); `timeout_s` (`--mcp-timeout`,
    seconds) is how long each may stay silent about a call, `max_message_bytes`
    (`--mcp-max-message-bytes`) the largest message each may send; None for the servers'
    defaults.

    Raises:
        ConfigError: an empty command, one that is a URL (`refuse_url_command`), or one
            that does not split into words.
    """
    from yiemagent.mcp import MCPServerHTTP, MCPServerStdio
    from yiemagent.mcp.servers import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_TIMEOUT_S, masked_line

    silence_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    size = DEFAULT_MAX_MESSAGE_BYTES if max_message_bytes is None else max_message_bytes
    servers: list[MCPServer] = []
    for command in commands:
        if not command.strip():
            raise ConfigError('--mcp needs a command, e.g. --mcp "python server.py"')
        refuse_url_command(command, url_option)
        try:
            program, *args = shlex.split(command)
        except ValueError as exc:  # an unclosed quote
            shown = masked_line(command)  # no key in the message (`--api-key ***`)
            raise ConfigError(f"--mcp {shown!r}: cannot split it into words: {exc}") from None
        servers.append(MCPServerStdio(program, args, timeout_s=silence_s, max_message_bytes=size))
    servers.extend(MCPServerHTTP(url, timeout_s=silence_s, max_message_bytes=size) for url in urls)
    for server in servers:
        server.timeout_option = "--mcp-timeout"
    return servers


def refuse_lone_bounds(
    commands: Sequence[str] | None,
    urls: Sequence[str] | None,
    *,
    timeout_s: float | None = None,
    max_message_bytes: int | None = None,
) -> None:
    """Refuse `--mcp-timeout` or `--mcp-max-message-bytes` given without a `--mcp` or
    `--mcp-url` server it would bound, rather than leave it unused (an agent file's server
    takes `timeout_s` and `max_message_bytes` in its table).

    Raises:
        ConfigError: naming the first bound given, when neither `commands` nor `urls` is.
    """
    given = {"--mcp-timeout": timeout_s, "--mcp-max-message-bytes": max_message_bytes}
    lone = [option for option, value in given.items() if value is not None]
    if lone and not commands and not urls:
        raise ConfigError(f"{lone[0]} goes with --mcp or --mcp-url: it bounds their servers")


def refuse_url_command(command: str, url_option: str = "--mcp-url") -> None:
    """Refuse a command that is an http(s) URL, naming `url_option`: started as a program it
    failed as `FileNotFoundError: ... 'http://...'`, which does not say that a URL has an
    option of its own.

    Raises:
        ConfigError: `command` is a URL; the text shows it with any password as `***`.
    """
    if _URL.match(command):
        from yiemagent.mcp.servers import masked_line

        shown = masked_line(command.strip())
        raise ConfigError(
            f"{shown!r} is a URL, not a command to start: give it as {url_option} {shown}"
        )


async def close_all(servers: Sequence[MCPServer]) -> None:
    for server in servers:
        with contextlib.suppress(Exception):
            await server.close()


def attach_servers(
    context: AgentContext,
    commands: Sequence[str],
    urls: Sequence[str],
    timeout_s: float | None = None,
    max_message_bytes: int | None = None,
) -> Callable[[], None]:
    """`add_mcp_tools` on `context.tools` (`yiem run`): the servers' tools join them.

    Returns:
        A function that closes every connection (call it when the run is over).
    """
    context.tools, close = add_mcp_tools(
        context.tools, commands, urls, timeout_s, max_message_bytes
    )
    return close


def add_mcp_tools(
    tools: Sequence[AgentTool],
    commands: Sequence[str],
    urls: Sequence[str],
    timeout_s: float | None = None,
    max_message_bytes: int | None = None,
) -> tuple[list[AgentTool], Callable[[], None]]:
    """Connect each `--mcp` command and `--mcp-url` (`yiem run`, `yiem serve`), and return
    `tools` with their tools added; `timeout_s` and `max_message_bytes` are `mcp_servers`'.

    A command starting with `python` (or `python3`) runs on the Python that runs yiem,
    which has the MCP SDK. The servers' tools join by `add_servers`' rule: a server's tool
    named like one of the `--tools` folder's replaces it, and a note on stderr says so;
    two servers with a tool of the same name are a clash.

    The connections live on their own threads, so they serve a later event loop (a run's,
    or each request's of a server).

    Returns:
        The tools, and a function that closes every connection (call it when done).

    Raises:
        ConfigError: the `mcp` extra is missing, an empty command, or two servers share a
            tool name.
        MCPConnectionError: a server did not start or answer; the others are closed.
    """
    from yiemagent.mcp import add_servers
    from yiemagent.tools import ToolStore

    servers = mcp_servers(commands, urls, timeout_s=timeout_s, max_message_bytes=max_message_bytes)
    store = ToolStore("cli")
    for tool in tools:
        store.register(tool)

    async def connect() -> None:
        try:
            pairs = [(server, None) for server in servers]
            _, notes = await add_servers(store, pairs, keep_both=KEEP_BOTH)
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
        except BaseException:
            await close_all(servers)
            raise

    asyncio.run(connect())
    return list(store.tools.values()), lambda: asyncio.run(close_all(servers))
