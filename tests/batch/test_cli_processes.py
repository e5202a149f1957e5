"""`yiem batch --processes N`: the local pool's size from the command line. `--concurrency 2`
alone runs one worker on a 2-core machine (one process per two cores, docs/batch.md), and
the CLI had no way to ask for more, as `run_batch(processes=...)` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yiemagent.cli.main import main

pytestmark = pytest.mark.timeout(300)  # worker processes start and import yiemagent


def test_processes_sets_the_pool_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("yiemagent.batch._pool.default_processes", lambda: 1)  # a 2-core host
    log = tmp_path / "attempts.log"
    tasks = tmp_path / "tasks.jsonl"
    meta = {"kind": "ok", "delay_s": 0.05, "log": str(log)}
    lines = [json.dumps({"id": f"t{i}", "prompt": "p", "metadata": meta}) for i in range(12)]
    tasks.write_text("\n".join(lines) + "\n")
    out = tmp_path / "results.jsonl"
    argv = ["batch", str(tasks), "--out", str(out), "--workers", "pool"]
    argv += ["--agent", "tests.batch._agents:make_faux_agent", "--processes", "2"]
    assert main([*argv, "--concurrency", "2"]) == 0, capsys.readouterr().err
    pids = {line.split()[1] for line in log.read_text().splitlines()}
    assert len(pids) == 2, pids  # one worker process without --processes


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--workers", "tasks"], "it does not go with --workers tasks"),
        (["--ray"], "it does not go with --ray (its actors are --concurrency)"),
        (["--processes", "0"], "Invalid value for '--processes'"),
    ],
)
def test_processes_outside_a_local_pool_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], said: str
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": 1, "prompt": "p"}\n')
    argv = ["batch", str(tasks), "--out", str(tmp_path / "r.jsonl"), "--processes", "2", *extra]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r.jsonl").exists()
