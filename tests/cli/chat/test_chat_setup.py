"""`yiem chat` outside the terminal: what it imports, and bad starts as one line (§8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.chat._tmux import FAUX_SCRIPT


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_neither_yiemagent_nor_the_cli_imports_prompt_toolkit() -> None:
    code = (
        "import sys, yiemagent, yiemagent.compaction, yiemagent.cli.main; "
        "print(sorted(m for m in sys.modules if m.startswith(('prompt_toolkit', 'rich.live'))))"
    )
    assert _python(code) == "[]"


def _chat(tmp_path: Path, *args: str, faux: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "YIEM_DATA_DIR": str(tmp_path)}
    if faux:
        env["YIEM_CHAT_FAUX_SCRIPT"] = str(FAUX_SCRIPT)
    return subprocess.run(
        [sys.executable, "-m", "yiemagent.cli.main", "chat", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_without_a_terminal_chat_says_so_in_one_line(tmp_path: Path) -> None:
    done = _chat(tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        'yiem: error: yiem chat needs a terminal; for one prompt use: yiem run "..."'
    ]
