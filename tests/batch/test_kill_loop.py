"""`yiem batch` killed (SIGKILL) again and again at seeded random moments: while it
starts, while it reads back the results file, once tasks have written lines (half the
kills; DESIGN §8, §16). After every kill each whole line of the results file is a
result, the lines that were whole before it are unchanged, and no task recorded before it
runs again; the command run to the end then finishes the batch with each id once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.batch._kit import assert_each_id_once

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
KILLS = 12
TASKS = 300


def test_a_batch_killed_twelve_times_loses_and_repeats_nothing(tmp_path: Path) -> None:
    rng = random.Random(20261207)
    log = tmp_path / "attempts.log"
    meta = {"kind": "ok", "delay_s": 0.1, "log": str(log)}
    tasks = tmp_path / "tasks.jsonl"
    ids = [f"t{i}" for i in range(TASKS)]
    tasks.write_text(
        "".join(json.dumps({"id": i, "prompt": "p", "metadata": meta}) + "\n" for i in ids)
    )
    out = tmp_path / "results.jsonl"
    argv = [sys.executable, "-m", "yiemagent.cli.main", "batch", str(tasks), "--out", str(out)]
    argv += ["--agent", "tests.batch._agents:make_faux_agent", "--workers", "tasks"]
    argv += ["--concurrency", "2"]
    whole = b""
    for round_ in range(KILLS + 1):  # the last run is not killed
        recorded = {json.loads(line)["id"] for line in whole.splitlines()}
        seen = len(_attempts(log))
        batch = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        if round_ < KILLS:
            if round_ % 2:  # while tasks run: once a new line is written, a moment later
                _wait_for_more(out, len(whole), batch)
                time.sleep(rng.uniform(0.0, 1.0))
            else:  # at any moment, starting and repairing the file included
                time.sleep(rng.uniform(0.2, 3.0))
            os.kill(batch.pid, signal.SIGKILL)
        assert batch.wait(300) in (0, -signal.SIGKILL)
        data = out.read_bytes() if out.exists() else b""
        now = data[: data.rfind(b"\n") + 1]
        assert now.startswith(whole), "a line whole before the kill was changed"
        assert all(json.loads(line)["status"] == "ok" for line in now.splitlines())
        ran_again = recorded & set(_attempts(log)[seen:])
        assert not ran_again, f"tasks recorded before a kill ran again: {sorted(ran_again)}"
        whole = now
    assert batch.returncode == 0
    assert_each_id_once(out, ids)


def _wait_for_more(out: Path, size: int, batch: subprocess.Popen[bytes]) -> None:
    """Wait until `out` holds more than `size` bytes (up to 120 s), the batch running."""
    deadline = time.monotonic() + 120
    while not (out.exists() and out.stat().st_size > size):
        assert batch.poll() is None and time.monotonic() < deadline, "no new result line"
        time.sleep(0.01)


def _attempts(log: Path) -> list[str]:
    """The task ids of every attempt so far, in order (the log's lines are "<id> <pid>")."""
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []
