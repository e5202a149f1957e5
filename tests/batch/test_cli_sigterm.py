"""`yiem batch` stopped by SIGTERM mid-work (a supervisor, `timeout`, a job scheduler's
cancel; DESIGN §8): it stops as for Ctrl-C (running tasks recorded "interrupted", every
line of the results file whole), says so in one line, exits 143, and the same command
then finishes the batch with every task done exactly once. Real processes: the CLI and
its local pool of worker processes, on the faux model."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)  # worker processes start and import yiemagent

ROOT = Path(__file__).resolve().parents[2]


def test_sigterm_stops_the_batch_as_ctrl_c_does_and_a_rerun_finishes_it(tmp_path: Path) -> None:
    """SIGTERM used to kill the driver where it stood: no line, status -15, the running
    tasks not recorded, and each worker printing a BrokenPipeError traceback."""
    tasks = tmp_path / "tasks.jsonl"
    meta = {"kind": "ok", "delay_s": 0.4}
    lines = [json.dumps({"id": f"t{i}", "prompt": "p", "metadata": meta}) for i in range(30)]
    tasks.write_text("\n".join(lines) + "\n")
    out = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "yiemagent.cli.main", "batch", str(tasks), "--out", str(out)]
    command += ["--agent", "tests.batch._agents:make_faux_agent", "--workers", "pool"]
    command += ["--processes", "2", "--concurrency", "2"]
    batch = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not out.exists() or len(out.read_text().splitlines()) < 3:
            assert batch.poll() is None, batch.communicate()
            assert time.monotonic() < deadline, "no task finished"
            time.sleep(0.05)
        batch.send_signal(signal.SIGTERM)
        _, err = batch.communicate(timeout=60)
    finally:
        if batch.poll() is None:
            batch.kill()
            batch.wait()
    assert batch.returncode == 143, err
    assert err.strip().splitlines()[-1] == (
        "yiem: terminated; run the same command again to finish"
    ), err
    assert "Traceback" not in err
    first = [json.loads(line) for line in out.read_text().splitlines()]  # every line whole
    assert 3 <= sum(r["status"] == "ok" for r in first) < 30
    assert any(r["status"] == "interrupted" for r in first), first
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert again.returncode == 0, again.stderr
    done = Counter(
        r["id"] for r in map(json.loads, out.read_text().splitlines()) if r["status"] == "ok"
    )
    assert done == Counter({f"t{i}": 1 for i in range(30)})
