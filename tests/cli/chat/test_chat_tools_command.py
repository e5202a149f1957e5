"""`/tools` in `yiem chat` (DESIGN §15) in a narrow terminal (tmux): each tool on its lines,
a long description wrapped under itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.chat._tmux import TOOLS, Pane, after

pytestmark = pytest.mark.timeout(120)


def test_tools_wraps_a_long_description_under_itself(tmp_path: Path) -> None:
    # the second line of a wrapped description started at column 0, under the names
    pane = Pane(tmp_path, ["--tools", str(TOOLS)], width=60, height=30)
    try:
        pane.ready()
        pane.type("/tools")
        screen = pane.wait(lambda s: after(s, "› /tools", "listTools", "\n›"))
    finally:
        pane.close()
    listed = screen.split("› /tools\n", 1)[1].rsplit("\n›", 1)[0].splitlines()
    assert len(listed) > 2, listed  # listTools' description takes more than one line
    for line in listed:
        assert line.startswith("  "), listed
    start = listed[1].index("List the tools")
    assert all(line[:start].isspace() and line[start] != " " for line in listed[2:]), listed
