"""A command stopped by a signal mid-work, as the SIGINT and SIGTERM tests of `yiem run`,
`yiem batch` and `yiem eval` stop it (DESIGN §8): start it, wait until it is where the
test means to stop it, send the signal, and read how it ended. A process still running
when the test fails is killed, never left behind."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Ended:
    """How a signalled command ended."""

    code: int
    """Its exit status (130 for SIGINT, 143 for SIGTERM as yiem exits)."""
    out: str
    """Its stdout after what `ready` read."""
    err: str
    """Its stderr after what `ready` read."""
    after_s: float
    """Seconds from the signal to its end."""


def stop_when_ready(
    command: Sequence[str],
    signum: int,
    ready: Callable[[subprocess.Popen[str]], bool],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    ready_within_s: float = 240.0,
    end_within_s: float = 120.0,
) -> Ended:
    """Run `command` (stdout and stderr as text pipes), call `ready(process)` every 0.05 s
    until it is true (it may read the pipes, blocking), then send `signum` and wait for
    the end.

    Args:
        ready_within_s: how long `ready` may take to hold, s (a bound, not a budget: a
            loaded machine starts Python and imports slowly).
        end_within_s: how long the command may take to end after the signal, s.

    Raises:
        AssertionError: the command ended, or `ready_within_s` passed, before `ready` held
            (its output in the message).
    """
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + ready_within_s
        while not ready(process):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, f"not ready within {ready_within_s:g} s"
            time.sleep(0.05)
        process.send_signal(signum)
        sent = time.monotonic()
        out, err = process.communicate(timeout=end_within_s)
        return Ended(process.returncode, out, err, time.monotonic() - sent)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
