"""An agent file's MCP server given as a table takes `max_message_bytes` (docs/teams.md),
the largest message it may send, as `--mcp-max-message-bytes` sets it for the command
line's servers: the file had no place for it, so its servers' bound was always 64 MiB.
Real server subprocesses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from yiemagent import ConfigError, load_agent

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import SERVER

COMMAND = json.dumps(f"{sys.executable} {SERVER}")


def _file(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(f"[agents.helper]\nmcp = [{server}]\n", encoding="utf-8")
    return path


async def test_a_servers_max_message_bytes_bounds_its_answers(tmp_path: Path) -> None:
    table = f"{{ command = {COMMAND}, max_message_bytes = 50000 }}"
    agent = load_agent(_file(tmp_path, table))
    try:
        long, short = await run_calls(
            agent.tool_store, ("echo", {"text": "x" * 100_000}), ("echo", {"text": "ok"})
        )
        assert long.is_error and "max_message_bytes (50000 bytes)" in text(long), text(long)
        assert not short.is_error and text(short) == "ok"
    finally:
        await agent.close()


@pytest.mark.parametrize(
    ("given", "shown"),
    [("0", "0"), ("-1", "-1"), ("1.5", "1.5"), ('"1000"', "'1000'"), ("true", "True")],
)
def test_a_max_message_bytes_that_is_no_positive_whole_number_is_one_message(
    tmp_path: Path, given: str, shown: str
) -> None:
    url = '"http://127.0.0.1:9/mcp"'
    path = _file(tmp_path, f"{{ url = {url}, max_message_bytes = {given} }}")
    with pytest.raises(ConfigError) as raised:
        load_agent(path)
    said = str(raised.value)
    assert said.endswith(f"max_message_bytes must be a whole number >= 1, not {shown}"), said
    assert "\n" not in said
