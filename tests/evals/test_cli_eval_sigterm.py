"""`yiem eval --results` stopped by SIGTERM mid-run (DESIGN §8): it stops as for Ctrl-C,
says how to go on in one line, exits 143, and the same command then runs only what is
missing. Real processes on the faux model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests._signals import stop_when_ready

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]


def _a_case_done(process: subprocess.Popen[str]) -> bool:
    """Whether the next line of the eval's progress counts a first or second case done."""
    assert process.stderr is not None
    line = process.stderr.readline()
    return "1/12" in line or "2/12" in line


def test_sigterm_stops_the_eval_as_ctrl_c_does_and_the_same_command_finishes(
    tmp_path: Path,
) -> None:
    """SIGTERM used to kill `yiem eval` where it stood: no line, status -15."""
    cases = "".join(
        f"  - name: c{i}\n    input: hi\n    metadata: {{kind: ok, delay_s: 0.3}}\n"
        for i in range(12)
    )
    data = tmp_path / "d.yaml"
    data.write_text("cases:\n" + cases)
    runs = tmp_path / "runs.jsonl"
    command = [sys.executable, "-m", "yiemagent.cli.main", "eval", str(data), "--agent"]
    command += ["tests.batch._agents:make_faux_agent", "--concurrency", "1"]
    command += ["--results", str(runs)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ended = stop_when_ready(command, signal.SIGTERM, _a_case_done, env=env, cwd=ROOT)
    stderr = ended.err
    assert ended.code == 143, stderr
    assert stderr.strip().splitlines()[-1] == (
        f"yiem: terminated; run the same command again to finish (the runs done are kept in {runs})"
    )
    assert "Traceback" not in stderr
    kept = [json.loads(line) for line in runs.read_text().splitlines()]  # every line whole
    assert 1 <= sum(r["status"] == "ok" for r in kept) < 12
    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    done = Counter(
        r["id"] for r in map(json.loads, runs.read_text().splitlines()) if r["status"] == "ok"
    )
    assert sorted(done.values()) == [1] * 12, done
