"""`yiem chat --mcp-url URL` (docs/mcp.md): a streamable-HTTP MCP server's tools in the chat,
as `yiem run --mcp-url` has them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.cli.chat._tmux import TOOLS, Pane, after
from tests.mcp.conftest import HttpTestServer


def test_chat_mcp_url_offers_the_server_s_tools(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    markers = tmp_path / "markers"
    markers.mkdir()
    http = HttpTestServer(markers)
    http.start()
    try:
        pane = Pane(data_dir, ["--tools", str(TOOLS), "--mcp-url", http.url])
        try:
            pane.ready()
            pane.wait(lambda s: f'MCP server "127.0.0.1:{http.port}": ' in s and "(echo, " in s)
            pane.type("mcp echo over http")
            pane.wait(lambda s: after(s, "✓ echo(text=over http) → over http", "tokens:"))
        finally:
            pane.close()
    finally:
        http.kill()


def test_chat_mcp_url_that_does_not_answer_is_one_line_and_the_chat_goes_on(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--mcp-url", "http://127.0.0.1:9/mcp"])
    try:
        pane.ready()
        screen = pane.wait(lambda s: "nothing listens at" in s or "ConnectError" in s)
        said = " ".join(screen.split())
        assert (
            'MCP server "127.0.0.1:9": connection refused, nothing listens at 127.0.0.1:9' in said
        )
        assert said.count('MCP server "127.0.0.1:9"') == 1  # named once, not twice
        assert "Traceback" not in screen
        pane.type("hello")
        pane.wait(lambda s: after(s, "› hello", "Hello! I am"))
    finally:
        pane.close()


def test_a_url_given_to_chat_mcp_names_mcp_url(tmp_path: Path) -> None:
    """Started as a program, the URL failed as "FileNotFoundError: ... 'http://...'", which
    does not say that a URL has an option of its own; `yiem run --mcp URL` names it."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    url = "http://127.0.0.1:9/mcp"
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--mcp", url])
    try:
        pane.ready()
        screen = pane.wait(lambda s: "is a URL" in s or "failed:" in s)
        said = " ".join(screen.split())
        assert f"'{url}' is a URL, not a command to start: give it as --mcp-url {url}" in said
        pane.type("hello")
        pane.wait(lambda s: after(s, "› hello", "Hello! I am"))
    finally:
        pane.close()


def test_a_chat_servers_tool_replaces_the_folders_and_says_so(tmp_path: Path) -> None:
    """As `yiem run --mcp` and an agent file's `mcp` do: the chat refused the server
    ("pass prefix=... to add_server", which a chat cannot) and went on without its tools."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    served = f"{sys.executable} -m yiemagent.cli.main mcp serve --tools {TOOLS}"
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--mcp", served])
    try:
        pane.ready()
        screen = pane.wait(lambda s: "from the tools folder" in s or "failed:" in s)
        said = " ".join(screen.split())
        assert "failed:" not in said, said
        assert "tool 'slow' replaces the tool of that name from the tools folder" in said, said
    finally:
        pane.close()


pytestmark = pytest.mark.timeout(120)


def test_chat_mcp_timeout_bounds_a_silent_call(tmp_path: Path) -> None:
    """`--mcp-timeout` reaches the chat's servers: a call that sends nothing for that long
    fails as silent, and the chat goes on."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    server = Path(__file__).resolve().parents[2] / "mcp" / "mcp_test_server.py"
    command = f"{sys.executable} {server}"
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--mcp", command, "--mcp-timeout", "1"])
    try:
        pane.ready()
        pane.wait(lambda s: f'MCP server "{command}": ' in s and "(echo, " in s)
        pane.type("mcp sleep")  # an hour, without progress
        screen = pane.wait(lambda s: after(s, "✗ sleep() error: MCP server", "tokens:"))
        assert "nothing came for 1 s (--mcp-timeout)" in " ".join(screen.split())
        pane.type("hello")
        pane.wait(lambda s: after(s, "› hello", "Hello! I am"))
    finally:
        pane.close()
