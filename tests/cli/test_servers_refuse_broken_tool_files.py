"""A tools folder with one broken file: `yiem serve` and `yiem mcp serve` refuse to start,
in one line naming the file, its error and why a server refuses, while `yiem run` warns and
loads the rest (docs/tools.md "Loading a folder from the CLI"). Real processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._yiem import yiem_in

GOOD = '''
from yiemagent import tool

@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b

def get_tool():
    return add
'''


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "add.py").write_text(GOOD)
    (tools / "broken.py").write_text("def broken(:\n")
    return tools


def keyless() -> dict[str, str | None]:
    """No API key in the environment: the run reaches the model call and stops there."""
    return {name: None for name in os.environ if name.endswith("_API_KEY")}


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--port", "0", "--model", "openai/gpt-4o-mini"],
        ["mcp", "serve"],
        ["mcp", "serve", "--http", "0"],
    ],
    ids=["serve", "mcp-stdio", "mcp-http"],
)
def test_a_server_refuses_a_broken_tool_file_in_one_line(folder: Path, command: list[str]) -> None:
    done = yiem_in(folder.parent, *command, "--tools", "tools", env=keyless())
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "yiem: error: --tools tools: tools/broken.py: import failed: SyntaxError: invalid "
        "syntax (line 1); a server starts only when every tool file loads (its clients expect "
        "them): fix each file named, or move it out of the folder"
    ]


def test_run_warns_and_loads_the_rest(folder: Path) -> None:
    """The contrast the docs state: a one-off command goes on with the good tools."""
    model = ["--model", "openai/gpt-4o-mini"]
    done = yiem_in(folder.parent, "run", "hi", "--tools", "tools", *model, env=keyless())
    warning = "yiem: warning: tool file tools/broken.py not loaded: import failed: SyntaxError"
    assert warning in done.stderr
    # it went on to the model call (which has no key here), past the tool files
    assert "OPENAI_API_KEY" in done.stderr or "openai SDK is not installed" in done.stderr
