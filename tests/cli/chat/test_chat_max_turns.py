"""`yiem chat --max-turns N` bounds the model calls of each run, as in `yiem run` and
`yiem serve` (the chat had a fixed 24). A real terminal (tmux) on the faux model, whose
"loop" calls a tool after each result until the run's turn limit ends it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane, after
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import AssistantMessage

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize(("option", "calls"), [(["--max-turns", "3"], 3), ([], 24)])
def test_max_turns_bounds_each_run(tmp_path: Path, option: list[str], calls: int) -> None:
    pane = Pane(tmp_path, ["--session", "t", *option])
    try:
        pane.ready()
        pane.type("loop")
        pane.wait(lambda s: after(s, "› loop", "tokens:"))
        pane.keys("C-d")
        assert pane.exit_code() == 0
    finally:
        pane.close()
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        messages = store.load("t")
    assert sum(isinstance(m, AssistantMessage) for m in messages) == calls


def test_a_bad_max_turns_is_one_line(tmp_path: Path) -> None:
    pane = Pane(tmp_path, ["--max-turns", "0"])
    try:
        assert pane.exit_code() == 2
        screen = pane.screen()
    finally:
        pane.close()
    assert "yiem: error: Invalid value for '--max-turns'" in screen, screen
