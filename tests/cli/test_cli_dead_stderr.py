"""`yiem run` whose stderr is gone when it ends (DESIGN §8): the terminal hung up (a pty
whose other end closed: each write fails with EIO) or the reader of its stderr pipe died
(EPIPE). The line saying why cannot be written; the exit status still says it, 143 after
SIGTERM, as for a usage error 2. Real processes on a faux model that streams slowly."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.test_cli_agent_file_sigterm import SCRIPT

pytestmark = pytest.mark.timeout(120)


@contextmanager
def dead_stderr(how: str) -> Iterator[tuple[int, Callable[[], None]]]:
    """(the descriptor to give the child as its stderr, a function that closes its other
    end): the other end of a pty (the child's writes then fail with EIO) or the read end
    of a pipe (EPIPE)."""
    if how == "pty":
        other_end, child_end = pty.openpty()  # the terminal's side, the program's side
    else:
        other_end, child_end = os.pipe()  # the reader's end, the writer's end
    open_ends = {child_end, other_end}

    def close_other_end() -> None:
        os.close(other_end)
        open_ends.discard(other_end)

    try:
        yield child_end, close_other_end
    finally:
        for fd in open_ends:
            os.close(fd)


@pytest.mark.parametrize("how", ["pty", "pipe"])
def test_sigterm_with_stderr_gone_still_ends_with_143(tmp_path: Path, how: str) -> None:
    """Writing "yiem: terminated" raised (OSError: EIO or EPIPE) out of the handler, so
    the status was 1, a failure, not the termination it was."""
    script = tmp_path / "run_faux.py"
    script.write_text(SCRIPT)
    (tmp_path / "tools").mkdir()
    with dead_stderr(how) as (stderr, close_other_end):
        proc = subprocess.Popen(
            [sys.executable, str(script), "run", "hi", "--tools", str(tmp_path / "tools")],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        try:
            assert proc.stdout is not None
            assert proc.stdout.read(10) == "word word "  # the answer is streaming
            close_other_end()
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 143


@pytest.mark.parametrize("how", ["pty", "pipe"])
def test_a_usage_error_with_stderr_gone_ends_with_2(tmp_path: Path, how: str) -> None:
    with dead_stderr(how) as (stderr, close_other_end):
        close_other_end()
        done = subprocess.run(
            [sys.executable, "-m", "yiemagent.cli.main", "run", "--no-such-option"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            timeout=60,
        )
    assert done.returncode == 2
