"""`yiem chat --mcp "command args"` and `--mcp-url URL`: tools from MCP servers (DESIGN §12).

Each server is started and listed into the chat's tool store when the chat starts (after the
input line is up, so a slow server does not hold the prompt). A server that fails to start,
or dies later, is one line; the chat goes on with the other tools (a call to a dead
server's tool gets an error result). The servers' stderr goes to `mcp.log` in the user data
folder, not to the terminal, where each log line of a server landed in the middle of the
chat's screen. Uses `yiemagent.mcp` (`MCPServerStdio`, `MCPServerHTTP`,
`add_servers`, `MCPServer.close`); without that package the option is refused in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from yiemagent.cli.mcp_options import KEEP_BOTH
from yiemagent.cli.render import counted

if TYPE_CHECKING:
    from yiemagent.cli.chat._host import ChatHost

__all__ = ["close_mcp_servers", "start_mcp_servers"]


def _mcp() -> Any:
    return importlib.import_module("yiemagent.mcp")


def _open_log(path: Path) -> TextIO:
    """The servers' log, appended to, a line at a time (a local file: opening it is quick)."""
    return path.open("a", buffering=1, encoding="utf-8")


def _stdio(mcp: Any, command: str, log: TextIO | None, bounds: dict[str, Any]) -> Any:
    """The `--mcp` server of `command`, its stderr going to `log`, with `bounds` (its
    `timeout_s` and `max_message_bytes`).

    Raises:
        ConfigError: `command` is a URL (it goes with `--mcp-url`) or does not split.
    """
    from yiemagent.cli.mcp_options import refuse_url_command

    refuse_url_command(command)
    return mcp.MCPServerStdio(command, stderr=log, **bounds)


async def start_mcp_servers(app: ChatHost) -> None:
    """Connect each `--mcp` command and `--mcp-url` server and register its tools; failures
    are one line each."""
    options = app.setup.options
    if not options.mcp and not options.mcp_urls:
        return
    mcp = _mcp()
    log_path = app.setup.history_path.parent / "mcp.log"
    if options.mcp and app.setup.mcp_log is None:
        app.setup.mcp_log = _open_log(log_path)
    defaults = importlib.import_module("yiemagent.mcp.servers")
    bounds = {
        "timeout_s": options.mcp_timeout_s or defaults.DEFAULT_TIMEOUT_S,
        "max_message_bytes": options.mcp_max_message_bytes or defaults.DEFAULT_MAX_MESSAGE_BYTES,
    }  # the options are None or above 0
    errlog = app.setup.mcp_log
    made: list[tuple[str, Callable[[], Any]]] = [
        *((spec, functools.partial(_stdio, mcp, spec, errlog, bounds)) for spec in options.mcp),
        *((url, functools.partial(mcp.MCPServerHTTP, url, **bounds)) for url in options.mcp_urls),
    ]
    folder = set(app.setup.store.tools)  # what a server's tool of the same name replaces
    for spec, make in made:
        server = None
        try:
            server = make()
            server.timeout_option = "--mcp-timeout"
            names, notes = await mcp.add_servers(
                app.setup.store, [(server, None)], keep_both=KEEP_BOTH, replacing=folder
            )
            folder.difference_update(names)
        except asyncio.CancelledError:  # the chat is closing: stop the process started
            if server is not None:
                with contextlib.suppress(Exception):
                    await server.close()
            raise
        except Exception as exc:
            from yiemagent.mcp.servers import masked_line

            shown = masked_line(spec.strip())  # an option's key as ***, as in server.label
            label = server.label if server is not None else f'MCP server "{shown}"'
            said = " ".join(str(exc).split())
            # an `MCPConnectionError` names its server itself
            app.say(said if said.startswith(label) else f"{label} failed: {said}", "red")
            if server is not None:
                with contextlib.suppress(Exception):
                    await server.close()
            continue
        app.setup.mcp_servers.append(server)
        tools = counted(len(names), "tool")
        log = f"; log: {log_path}" if isinstance(server, mcp.MCPServerStdio) else ""
        app.say(f"{server.label}: {tools} ({', '.join(names)}){log}")
        for note in notes:
            app.say(f"note: {note}")


async def close_mcp_servers(app: ChatHost) -> None:
    """Stop the servers the chat started."""
    for server in app.setup.mcp_servers:
        with contextlib.suppress(Exception):
            await server.close()
    app.setup.mcp_servers.clear()
    if app.setup.mcp_log is not None:
        app.setup.mcp_log.close()
        app.setup.mcp_log = None
