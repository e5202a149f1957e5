"""A mistyped slash command in `yiem chat` (tmux) names the command meant, as `yiem rnu`
names `run`: `/tols` answered only "unknown command /tols; /help lists the commands"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.chat._tmux import TOOLS, Pane

pytestmark = pytest.mark.timeout(120)


def test_a_typo_names_the_command_meant_and_nonsense_does_not(tmp_path: Path) -> None:
    pane = Pane(tmp_path, ["--tools", str(TOOLS)])
    try:
        pane.ready()
        pane.type("/tols")
        pane.wait("unknown command /tols; did you mean /tools? /help lists the commands")
        pane.type("/quit")
        pane.wait("unknown command /quit; did you mean /exit? /help lists the commands")
        pane.type("/frobnicate")
        screen = pane.wait("unknown command /frobnicate; /help lists the commands")
    finally:
        pane.close()
    assert "/frobnicate; did you mean" not in screen
