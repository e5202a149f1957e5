"""`yiem` in a child process, as a user runs it: what the CLI tests that need a real
process (its own argument parsing, exit status and output) start."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def yiem_in(
    folder: Path,
    *args: str,
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
    timeout: float = 150,
) -> subprocess.CompletedProcess[str]:
    """`yiem ARGS` run in `folder`, with `folder/data` as its data folder (sessions, logs:
    none of the user's own); its stdout and stderr captured as text.

    Args:
        folder: the working folder.
        args: the command line after `yiem`.
        env: variables set (a value) or removed (None) on top of this process's own
            (an API key for a fake server, or none at all).
        input: what standard input holds; None: nothing (no terminal, so nothing is
            asked: approvals are not given, the chat refuses to start).
        timeout: seconds before `subprocess.TimeoutExpired` is raised.
    """
    variables = {**os.environ, "YIEM_DATA_DIR": str(folder / "data")}
    for name, value in (env or {}).items():
        if value is None:
            variables.pop(name, None)
        else:
            variables[name] = value
    return subprocess.run(
        [sys.executable, "-m", "yiemagent.cli.main", *args],
        capture_output=True,
        text=True,
        env=variables,
        cwd=folder,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        timeout=timeout,
    )
