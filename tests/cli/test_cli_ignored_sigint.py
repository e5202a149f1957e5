"""A `yiem` started with SIGINT ignored keeps ignoring it (DESIGN §8): a shell without job
control starts `yiem run ... &` and `yiem batch ... &` so (POSIX), and a Ctrl-C meant for
the script's foreground command then reaches them too. They used to take SIGINT over
anyway: the run was aborted, the batch stopped half done. Python itself leaves an ignored
SIGINT ignored; so does yiem now. Real processes on the faux model; the Ctrl-C of a
`yiem` started as usual is in test_cli_ctrl_c_*.py and tests/batch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]

SLOW_ANSWER = "word " * 200
"""Streamed 4 characters a chunk, 0.02 s apart: about 5 s."""

SCRIPT = textwrap.dedent(
    f"""
    import sys

    import yiemagent.cli.main as m
    from yiemagent.ai.providers.faux import FauxModel

    fm = FauxModel([{SLOW_ANSWER!r}], delay_s=0.02)
    m.resolve_model = lambda *args, **kwargs: fm.model
    sys.exit(m.main(sys.argv[1:]))
    """
)


def _ignoring_sigint() -> None:
    """In the child before it runs Python: what `command &` does without job control."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("how", ["--tools", "--agent"])
def test_yiem_run_started_ignoring_sigint_answers_through_a_sigint(
    tmp_path: Path, how: str
) -> None:
    script = tmp_path / "run_faux.py"
    script.write_text(SCRIPT)
    tools = tmp_path / "tools"
    tools.mkdir()
    team = tmp_path / "team.toml"
    team.write_text('[agents.helper]\nsystem_prompt = "Help."\ntools = ["tools"]\n')
    run = subprocess.Popen(
        [sys.executable, str(script), "run", "hi", how, str(tools if how == "--tools" else team)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,  # the byte read first is all that communicate() does not read
        env={**os.environ, "YIEM_DATA_DIR": str(tmp_path / "data")},
        preexec_fn=_ignoring_sigint,
    )
    try:
        assert run.stdout is not None
        first = run.stdout.read(1)  # the answer is streaming: the run is under way
        run.send_signal(signal.SIGINT)
        rest, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, err.decode()
    assert (first + rest).decode().strip() == SLOW_ANSWER.strip()
    assert b"interrupted" not in err, err.decode()


def test_yiem_batch_started_ignoring_sigint_finishes_every_task(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    meta = {"kind": "ok", "delay_s": 0.3}
    lines = [json.dumps({"id": f"t{i}", "prompt": "p", "metadata": meta}) for i in range(8)]
    tasks.write_text("\n".join(lines) + "\n")
    out = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "yiemagent.cli.main", "batch", str(tasks), "--out", str(out)]
    command += ["--agent", "tests.batch._agents:make_faux_agent", "--workers", "tasks"]
    command += ["--concurrency", "2"]
    batch = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignoring_sigint,
    )
    try:
        deadline = time.monotonic() + 120
        while not out.exists() or not out.read_text().strip():
            assert batch.poll() is None, batch.communicate()
            assert time.monotonic() < deadline, "no task finished"
            time.sleep(0.05)
        batch.send_signal(signal.SIGINT)
        _, err = batch.communicate(timeout=120)
    finally:
        if batch.poll() is None:
            batch.kill()
            batch.wait()
    assert batch.returncode == 0, err
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["id"] for r in results) == sorted(f"t{i}" for i in range(8))
    assert {r["status"] for r in results} == {"ok"}, results
