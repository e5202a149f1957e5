"""An agent file's MCP server given as a table takes `timeout_s` (docs/teams.md), the
seconds it may stay silent about a call, as `--mcp-timeout` sets it for the command line's
servers: with `--agent` that option does not apply, and the file had no place for it, so a
slow tool that sends no progress always failed after 30 s. Real server subprocesses."""

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


async def test_a_servers_timeout_s_bounds_its_silence(tmp_path: Path) -> None:
    agent = load_agent(_file(tmp_path, f"{{ command = {COMMAND}, timeout_s = 0.5 }}"))
    try:
        [slept] = await run_calls(agent.tool_store, ("sleep", {"seconds": 3}))
        assert slept.is_error and "nothing came for 0.5 s" in text(slept), text(slept)
    finally:
        await agent.close()


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("0", "0"),
        ("-1.5", "-1.5"),
        ("nan", "nan"),
        ("inf", "inf"),
        ('"30"', "'30'"),
        ("true", "True"),
    ],
)
def test_a_timeout_s_that_is_no_positive_number_is_one_message(
    tmp_path: Path, given: str, shown: str
) -> None:
    url = '"http://127.0.0.1:9/mcp"'
    path = _file(tmp_path, f"{{ url = {url}, timeout_s = {given} }}")
    with pytest.raises(ConfigError) as raised:
        load_agent(path)
    said = str(raised.value)
    assert said.endswith(f"timeout_s must be a number of seconds > 0, not {shown}"), said
    assert "\n" not in said
