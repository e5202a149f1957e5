"""A tool name an agent file's MCP server shares with its tools folder, or with another of
its servers (docs/mcp.md "Names"): the server's tool replaces the folder's, as with `yiem run
--mcp` (a warning says so), and two servers sharing a name are refused with the file's own
way to keep both, a `prefix` in the server's `mcp` item. Real server subprocesses."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
from pathlib import Path

import pytest

from yiemagent import ConfigError, load_agent
from yiemagent.teams import AgentFile

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import SERVER

FOLDER_ADD = textwrap.dedent(
    """
    from yiemagent import tool

    @tool
    def add(a: int, b: int) -> str:
        \"\"\"Add two numbers.

        Args:
            a: the first.
            b: the second.
        \"\"\"
        return f"folder: {a + b}"

    def get_tool():
        return add
    """
)

COMMAND = json.dumps(f"{sys.executable} {SERVER}")


def _file(tmp_path: Path, mcp: str) -> Path:
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "add.py").write_text(FOLDER_ADD, encoding="utf-8")
    path = tmp_path / "team.toml"
    path.write_text(f'[agents.helper]\ntools = ["tools"]\nmcp = {mcp}\n', encoding="utf-8")
    return path


async def test_load_agent_gives_the_servers_tool_over_the_folders(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="yiemagent")
    agent = load_agent(_file(tmp_path, f"[{COMMAND}]"))
    try:
        [result] = await run_calls(agent.tool_store, ("add", {"a": 2, "b": 3}))
        assert not result.is_error and '"sum": 5' in text(result), text(result)
    finally:
        await agent.close()
    said = caplog.text
    assert "tool 'add' replaces the tool of that name from the tools folder" in said, said


async def test_an_agent_file_gives_the_servers_tool_over_the_folders(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="yiemagent")
    async with AgentFile(_file(tmp_path, f"[{COMMAND}]")) as team:
        for _ in range(2):
            agent = team.build()
            [result] = await run_calls(agent.tool_store, ("add", {"a": 2, "b": 3}))
            assert not result.is_error and '"sum": 5' in text(result), text(result)
            await agent.close()
    assert "tool 'add' replaces the tool of that name from the tools folder" in caplog.text


@pytest.mark.parametrize("build", ["load_agent", "AgentFile"])
async def test_two_servers_sharing_a_name_say_the_files_way_to_keep_both(
    tmp_path: Path, build: str
) -> None:
    path = _file(tmp_path, f"[{COMMAND}, {COMMAND}]")
    with pytest.raises(ConfigError) as raised:
        if build == "load_agent":
            load_agent(path)
        else:
            async with AgentFile(path) as team:
                team.build()
    said = str(raised.value)
    assert said.startswith(f"{path}: [agents.helper] mcp: "), said
    assert "prefix = " in said and "add_server" not in said, said


async def test_a_prefix_in_an_mcp_item_keeps_both_servers_tools(tmp_path: Path) -> None:
    path = _file(tmp_path, f'[{COMMAND}, {{ command = {COMMAND}, prefix = "two" }}]')
    agent = load_agent(path)
    try:
        assert {"add", "two_add", "two_echo"} <= set(agent.tool_store.tools)
        [one, two] = await run_calls(
            agent.tool_store, ("add", {"a": 1, "b": 1}), ("two_echo", {"text": "hi"})
        )
        assert '"sum": 2' in text(one) and text(two) == "hi", (text(one), text(two))
    finally:
        await agent.close()


@pytest.mark.parametrize(
    ("item", "said"),
    [
        (f"{{ command = {COMMAND}, prefx = 'x' }}", "unknown key 'prefx'"),
        ("{ url = 'ftp://host/mcp' }", "url must start with http:// or https://"),
        ("{ prefix = 'x' }", "a server table needs command = ... or url = ..."),
        (f"{{ command = {COMMAND}, prefix = 'a b' }}", "prefix must be 1+ characters"),
    ],
)
def test_a_bad_mcp_item_table_is_one_clear_error(tmp_path: Path, item: str, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_agent(_file(tmp_path, f"[{item}]"))
    assert str(raised.value).startswith(f"{tmp_path / 'team.toml'}: [agents.helper] mcp: ")
    assert said in str(raised.value), str(raised.value)
