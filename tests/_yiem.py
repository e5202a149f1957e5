"""`yiem` in a child process, as a user runs it: what the CLI tests that need a real
process (its own argument parsing, exit status and output) start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def yiem_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`yiem ARGS` run in `folder`, with `folder/data` as its data folder (sessions, logs:
    none of the user's own); its stdout and stderr captured as text. Raises
    `subprocess.TimeoutExpired` after 150 s."""
    return subprocess.run(
        [sys.executable, "-m", "yiemagent.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "YIEM_DATA_DIR": str(folder / "data")},
        cwd=folder,
        timeout=150,
    )
