"""`yiem batch` stopped by SIGTERM mid-work (a supervisor, `timeout`, a job scheduler's
cancel; DESIGN §8): it stops as for Ctrl-C (running tasks recorded "interrupted", every
line of the results file whole), says so in one line, exits 143, and the same command
then finishes the batch with every task done exactly once. Real processes: the CLI with
its local pool of worker processes, and with a Ray cluster on 127.0.0.1; the faux model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests._signals import stop_when_ready
from tests.batch._ray import python_path

pytestmark = pytest.mark.timeout(600)  # worker processes start and import yiemagent

ROOT = Path(__file__).resolve().parents[2]


def _sigterm_mid_batch_then_rerun(tmp_path: Path, backend: list[str]) -> str:
    """Returns what the stopped batch printed on stderr."""
    tasks = tmp_path / "tasks.jsonl"
    meta = {"kind": "ok", "delay_s": 0.4}
    lines = [json.dumps({"id": f"t{i}", "prompt": "p", "metadata": meta}) for i in range(30)]
    tasks.write_text("\n".join(lines) + "\n")
    out = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "yiemagent.cli.main", "batch", str(tasks), "--out", str(out)]
    command += ["--agent", "tests.batch._agents:make_faux_agent", "--concurrency", "2", *backend]
    env = {**os.environ, "PYTHONPATH": python_path()}

    def three_done(_: object) -> bool:
        return out.exists() and len(out.read_text().splitlines()) >= 3

    ended = stop_when_ready(command, signal.SIGTERM, three_done, env=env, cwd=ROOT)
    err = ended.err
    assert ended.code == 143, err
    assert err.strip().splitlines()[-1] == (
        "yiem: terminated; run the same command again to finish"
    ), err
    assert "Traceback" not in err and "SIGTERM received" not in err, err
    first = [json.loads(line) for line in out.read_text().splitlines()]  # every line whole
    assert 3 <= sum(r["status"] == "ok" for r in first) < 30
    assert any(r["status"] == "interrupted" for r in first), first
    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert again.returncode == 0, again.stderr
    done = Counter(
        r["id"] for r in map(json.loads, out.read_text().splitlines()) if r["status"] == "ok"
    )
    assert done == Counter({f"t{i}": 1 for i in range(30)})
    return err


def test_sigterm_stops_a_local_pool_batch_as_ctrl_c_does_and_a_rerun_finishes_it(
    tmp_path: Path,
) -> None:
    """SIGTERM used to kill the driver where it stood: no line, status -15, the running
    tasks not recorded, and each worker printing a BrokenPipeError traceback."""
    err = _sigterm_mid_batch_then_rerun(tmp_path, ["--workers", "pool", "--processes", "2"])
    assert "(SIGTERM again to quit)" in err and "Ctrl-C" not in err, err  # it said Ctrl-C


@pytest.mark.slow
def test_sigterm_stops_a_ray_batch_as_ctrl_c_does_and_a_rerun_finishes_it(
    cluster: str, tmp_path: Path
) -> None:
    """`ray.init` took SIGTERM over (`sys.exit(15)`, and a C++ stack dump of the signal on
    stderr), so the running tasks were not recorded and no line said why."""
    _sigterm_mid_batch_then_rerun(tmp_path, ["--ray", cluster])


def test_workers_of_a_killed_driver_exit_without_a_traceback(tmp_path: Path) -> None:
    """`kill -9` of the driver: its worker processes find it gone and exit, each without
    printing "Task exception was never retrieved ... BrokenPipeError" on the terminal they
    share with it (they used to, once per running task)."""
    tasks = tmp_path / "tasks.jsonl"
    meta = {"kind": "ok", "delay_s": 0.4}
    lines = [json.dumps({"id": f"t{i}", "prompt": "p", "metadata": meta}) for i in range(30)]
    tasks.write_text("\n".join(lines) + "\n")
    out = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "yiemagent.cli.main", "batch", str(tasks), "--out", str(out)]
    command += ["--agent", "tests.batch._agents:make_faux_agent", "--concurrency", "2"]
    command += ["--workers", "pool", "--processes", "2"]
    env = {**os.environ, "PYTHONPATH": python_path()}
    batch = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 240
        while not out.exists() or len(out.read_text().splitlines()) < 3:
            assert batch.poll() is None
            assert time.monotonic() < deadline, "no task finished"
            time.sleep(0.05)
        batch.kill()
        assert batch.stderr is not None
        err = batch.stderr.read().decode()  # to its end: when every worker has exited
    finally:
        if batch.poll() is None:
            batch.kill()
        batch.wait()
    assert "Traceback" not in err and "never retrieved" not in err, err
