"""A results file (`--out`, `yiem eval --results`) that is no regular file: a named pipe
or a device such as /dev/null (DESIGN §8, §16). The file is read back on open (the done
tasks are skipped) and appended to, so a pipe, opened for reading and writing, waited for
ever for an end it held open itself: `yiem batch --out pipe` hung before any task, and
even SIGTERM did not end it. It is refused at once, in one line saying what the file is,
and the pipe is left as it was."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from yiemagent.batch import BatchError, ResultsFile

pytestmark = pytest.mark.timeout(150)

ROOT = Path(__file__).resolve().parents[2]
AGENT = "tests.batch._agents:make_faux_agent"


def test_a_named_pipe_is_refused_on_open_and_left_a_pipe(tmp_path: Path) -> None:
    pipe = tmp_path / "results.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(BatchError, match=r"results file .*results.jsonl is a named pipe, not a"):
        ResultsFile(pipe).open()
    assert stat.S_ISFIFO(pipe.stat().st_mode)


def test_a_device_is_refused_on_open(tmp_path: Path) -> None:
    with pytest.raises(BatchError, match=r"results file /dev/null is a device, not a file"):
        ResultsFile(Path("/dev/null")).open()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_yiem_batch_out_a_named_pipe_is_one_line_and_no_task_runs(tmp_path: Path) -> None:
    pipe = tmp_path / "r.jsonl"
    os.mkfifo(pipe)
    log = tmp_path / "attempts.log"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        f'{{"id": "a", "prompt": "p", "metadata": {{"kind": "ok", "log": "{log}"}}}}\n'
    )
    argv = ["batch", str(tasks), "--out", str(pipe), "--workers", "tasks"]
    done = subprocess.run(
        [sys.executable, "-m", "yiemagent.cli.main", *argv, "--agent", AGENT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,  # it hung for ever
    )
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("yiem: error: ") and "is a named pipe, not a file" in line, line
    assert not log.exists()
