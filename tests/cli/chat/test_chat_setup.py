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


def test_the_embedded_model_gets_no_stream_idle_limit_in_the_chat() -> None:
    """The embedded model streams nothing while it reads a long prompt; on a busy machine the
    120 s idle limit cut the chat's first writeTool turn ("The model stream sent nothing for
    120 s"). Its own generation deadline bounds it instead; hosted models keep 120 s."""
    from yiemagent.ai.models import DEFAULT_MODEL, get_model
    from yiemagent.cli.chat.setup import stream_idle_limit

    assert get_model(DEFAULT_MODEL).api == "local"
    assert stream_idle_limit(get_model(DEFAULT_MODEL)) is None
    assert stream_idle_limit(get_model("openai/gpt-4o-mini")) == 120.0
