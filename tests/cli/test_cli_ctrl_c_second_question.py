"""Ctrl-C at `yiem run`'s second approval question (DESIGN §14), in a real terminal (tmux):
the answer already given to the first question stands. The first call was approved, so
it is not "rejected by the user … instead of answering": the run was stopped before it
ran, and it did not run (Ctrl-C stops the run); one answered "n" keeps "the user said
no". Only the call whose question was stopped, and any after it, are rejected as
stopped. The same for `--tools DIR` (the loop) and `--agent FILE` (an Agent)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane
from tests.cli.test_cli_approvals_output import TOOL_FILE
from yiemagent.cli.approvals import STOPPED_REASON

pytestmark = pytest.mark.timeout(180)

SCRIPT = textwrap.dedent(
    """
    import sys

    import yiemagent.cli.main as m
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

    held = faux_message(
        faux_tool_call("delete_file", {"path": "a.log"}, id="d1"),
        faux_tool_call("delete_file", {"path": "b.log"}, id="d2"),
    )
    fm = FauxModel([held, "Done."])
    m.resolve_model = lambda *args, **kwargs: fm.model
    sys.exit(m.main(sys.argv[1:]))
    """
)


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """`tmp_path` with the approval-gated `delete_file` in `tools/`, an agent file using
    it, the files `a.log` and `b.log`, and the faux `yiem` script."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "delete_file.py").write_text(TOOL_FILE)
    (tmp_path / "agent.toml").write_text('[agents.cleaner]\ntools = ["tools"]\n')
    (tmp_path / "run_faux.py").write_text(SCRIPT)
    for name in ("a.log", "b.log"):
        (tmp_path / name).write_text("x")
    yield tmp_path


@pytest.mark.parametrize(
    ("where", "answer", "first_result"),
    [
        ("--tools", "y", "Tool call skipped: the run was aborted"),
        ("--agent", "y", "Tool call skipped: the run was aborted"),
        ("--tools", "n", "Tool call rejected by the user: the user said no"),
    ],
    ids=["tools-approved", "agent-file-approved", "tools-refused"],
)
def test_ctrl_c_at_the_second_question_keeps_the_first_answer(
    folder: Path, where: str, answer: str, first_result: str
) -> None:
    """Both calls were answered "rejected by the user: The user stopped the run (Ctrl-C)
    instead of answering": the answers given were dropped with the question Ctrl-C
    stopped."""
    named = "tools" if where == "--tools" else "agent.toml"
    command = ["sh", "-c", f"cd {folder} && exec {sys.executable} run_faux.py "
               f"run 'delete both' {where} {named}"]  # fmt: skip
    pane = Pane(folder / "data", command=command, faux=False)
    try:
        pane.wait('Run delete_file({"path": "a.log"})? [y/N]')
        pane.type(answer)
        pane.wait('Run delete_file({"path": "b.log"})? [y/N]')
        pane.keys("C-c")
        assert pane.exit_code() == 130
        screen = pane.screen()
    finally:
        pane.close()
    results = [line for line in screen.splitlines() if line.startswith("✗ delete_file")]
    assert len(results) == 2, screen
    assert first_result in results[0], screen
    assert f"Tool call rejected by the user: {STOPPED_REASON}" in results[1], screen
    assert (folder / "a.log").exists() and (folder / "b.log").exists()
    assert "yiem: interrupted" in screen and "Traceback" not in screen
