"""`yiem run` in a terminal says that it is waiting for the model: the embedded model takes
10 s and more before its first word on 2 cores, and the screen stayed still after "loaded
in 2.0 s" meanwhile. A dim status line, `waiting for MODEL… N s`, shows while a model call
has printed nothing yet, on stderr and only on a terminal; it is gone once the answer or a
tool line comes, and nothing of it is left on the screen. Piped, stderr is as before."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane

pytestmark = pytest.mark.timeout(180)

SCRIPT = textwrap.dedent(
    """
    import asyncio
    import sys

    import yiemagent.cli.main as m
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

    async def slow_answer(context):
        await asyncio.sleep(4)
        return "The answer is 42."

    async def slow_call(context):
        await asyncio.sleep(2)
        return faux_message(faux_tool_call("calculator", {"expression": "6 * 7"}))

    fm = FauxModel([slow_call, slow_answer])
    m.resolve_model = lambda *args, **kwargs: fm.model
    sys.exit(m.main(sys.argv[1:]))
    """
)


def test_a_terminal_shows_the_wait_and_keeps_nothing_of_it(tmp_path: Path) -> None:
    (tmp_path / "run_faux.py").write_text(SCRIPT)
    command = ["sh", "-c", f"cd {tmp_path} && exec {sys.executable} run_faux.py run '6 * 7?'"]
    pane = Pane(tmp_path / "data", command=command, faux=False)
    try:
        waiting = pane.wait(lambda s: "waiting for faux…" in s and "→ calculator" in s)
        assert " s" in waiting.split("waiting for faux…", 1)[1].splitlines()[0]
        assert pane.exit_code() == 0
        screen = pane.screen()
    finally:
        pane.close()
    assert "The answer is 42." in screen and "tokens:" in screen, screen
    assert "waiting for" not in screen, screen
    lines = [line for line in screen.splitlines() if line.strip()]
    assert lines[:3] == [
        '→ calculator {"expression": "6 * 7"}',
        lines[1],
        "The answer is 42.",
    ], screen
    assert lines[1].startswith("← calculator: 6 * 7 = 42"), screen


def test_piped_stderr_shows_no_status(tmp_path: Path) -> None:
    (tmp_path / "run_faux.py").write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, "run_faux.py", "run", "6 * 7?"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The answer is 42.\n"
    assert "waiting for" not in done.stderr and "\x1b" not in done.stderr, done.stderr


def test_ctrl_c_while_waiting_leaves_no_status_and_the_cursor_shown(tmp_path: Path) -> None:
    (tmp_path / "run_faux.py").write_text(SCRIPT)
    command = ["sh", "-c", f"cd {tmp_path} && exec {sys.executable} run_faux.py run '6 * 7?'"]
    pane = Pane(tmp_path / "data", command=command, faux=False)
    try:
        pane.wait(lambda s: "waiting for faux…" in s and "← calculator" in s)
        pane.keys("C-c")
        assert pane.exit_code() == 130
        screen = pane.screen()
        cursor = pane._tmux("display", "-p", "-t", "chat", "#{cursor_flag}").strip()
    finally:
        pane.close()
    assert "waiting for" not in screen and "yiem: interrupted" in screen, screen
    assert cursor == "1"  # the status line hid the cursor while it showed
