"""The local process pool (DESIGN §16; what the embedded model uses): tasks spread over
worker processes, a worker that dies mid-task has its task run again on a fresh worker and
the id is still written once; an unpicklable make_agent is one clear error."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.batch._agents import DiesAtStart, make_faux_agent
from tests.batch._kit import assert_each_id_once
from yiemagent.batch import BatchError, run_batch
from yiemagent.batch._execute import WORKER_DEATH_RETRIES


def test_pool_spreads_tasks_and_reruns_the_task_of_a_dead_worker(tmp_path: Path) -> None:
    log = tmp_path / "attempts.log"
    marker = tmp_path / "died"
    tasks = [
        {"id": f"p{i}", "prompt": "p", "metadata": {"kind": "ok", "delay_s": 0.01, "log": str(log)}}
        for i in range(20)
    ]
    tasks[7]["metadata"] = {"kind": "die_once", "marker": str(marker), "log": str(log)}
    out = tmp_path / "r.jsonl"
    report = run_batch(
        tasks, make_faux_agent, results=out, workers="pool", processes=2, concurrency=2
    )
    assert report.workers == "pool" and report.ok == 20, report
    lines = {line["id"]: line for line in assert_each_id_once(out, [t["id"] for t in tasks])}
    assert lines["p7"]["status"] == "ok"
    assert lines["p7"]["attempts"] == 2  # the death counts as an attempt
    dead_pid = marker.read_text()
    pids = {line.split()[1] for line in log.read_text().splitlines()}
    assert len(pids) >= 2, "tasks ran in more than one worker process"
    retried = [line.split()[1] for line in log.read_text().splitlines() if line.startswith("p7 ")]
    assert retried[0] == dead_pid and retried[1] != dead_pid
    assert json.loads(out.read_text().splitlines()[0])["status"] == "ok"


def test_a_task_that_kills_every_worker_is_recorded_worker_died_once(tmp_path: Path) -> None:
    """Each death runs the task again on a fresh worker, `WORKER_DEATH_RETRIES` times; then
    its one line says so (status "error", kind "worker_died", the exit code, every attempt
    counted) and the other tasks are unaffected."""
    tasks = [
        {"id": "dies", "prompt": "p", "metadata": {"kind": "die", "mark": 1}},
        {"id": "fine", "prompt": "p", "metadata": {"kind": "ok"}},
    ]
    out = tmp_path / "r.jsonl"
    report = run_batch(tasks, make_faux_agent, results=out, workers="pool", processes=1)
    assert (report.ok, report.failed, report.interrupted) == (1, 1, 0), report
    lines = {line["id"]: line for line in assert_each_id_once(out, ["dies", "fine"])}
    died = lines["dies"]
    assert (died["status"], died["error_kind"]) == ("error", "worker_died"), died
    assert died["attempts"] == 1 + WORKER_DEATH_RETRIES
    assert died["error"] == "the worker died while running the task (exit code 17)", died
    assert died["metadata"] == {"kind": "die", "mark": 1}
    assert lines["fine"]["status"] == "ok"


def test_an_unpicklable_make_agent_is_one_clear_error(tmp_path: Path) -> None:
    def local_factory() -> None:  # not importable by a child process
        raise AssertionError("never called")

    with pytest.raises(BatchError, match="must be picklable"):
        run_batch(
            [{"id": 1, "prompt": "p"}], local_factory, results=tmp_path / "r.jsonl", workers="pool"
        )


@pytest.mark.parametrize(
    ("affinity", "cpu_max"), [(2, None), (8, "200000 100000\n")], ids=["taskset", "cgroup"]
)
def test_the_default_pool_counts_the_cpus_the_process_may_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, affinity: int, cpu_max: str | None
) -> None:
    """The default pool size (one process per two cores) was read from `os.cpu_count()`,
    every CPU of the host: under `taskset -c 0,1`, or in a container given two CPUs' time,
    an 8-core host got 4 processes competing for 2 cores. It counts the usable ones, as the
    embedded model's threads do."""
    import yiemagent.batch._pool as pool
    from yiemagent.ai.providers.local import runtime

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(affinity)))
    quota = tmp_path / "cpu.max"
    if cpu_max is not None:
        quota.write_text(cpu_max)
    monkeypatch.setattr(runtime, "CGROUP_CPU_MAX", quota)
    sizes: list[int] = []
    real = pool.run_in_pool

    async def spied(*args: Any, processes: int, **kwargs: Any) -> None:
        sizes.append(processes)
        await real(*args, processes=processes, **kwargs)

    monkeypatch.setattr(pool, "run_in_pool", spied)
    tasks = [{"id": f"c{i}", "prompt": "p", "metadata": {"kind": "ok"}} for i in range(4)]
    report = run_batch(
        tasks, make_faux_agent, results=tmp_path / "r.jsonl", workers="pool", concurrency=4
    )
    assert report.ok == 4, report
    assert sizes == [1]


@pytest.mark.parametrize(("deaths", "processes"), [(1, 1), (2, 2)])
def test_workers_killed_while_they_start_do_not_stop_the_batch(
    tmp_path: Path, deaths: int, processes: int
) -> None:
    """A worker that died while it started (its model load killed, say) stopped the whole
    batch ("failed to start"). It is now started again once, and a slot whose worker
    cannot start leaves its tasks to the others: every task runs, each written once."""
    tasks = [{"id": f"s{i}", "prompt": "p"} for i in range(6)]
    out = tmp_path / "r.jsonl"
    factory = DiesAtStart(str(tmp_path), deaths)
    report = run_batch(tasks, factory, results=out, workers="pool", processes=processes)
    assert (report.ok, report.failed) == (6, 0), report
    assert_each_id_once(out, [t["id"] for t in tasks])
    assert len(list(tmp_path.glob("died*"))) == deaths


def test_no_worker_that_can_start_is_one_error_and_a_rerun_resumes(tmp_path: Path) -> None:
    tasks = [{"id": f"n{i}", "prompt": "p"} for i in range(3)]
    out = tmp_path / "r.jsonl"
    with pytest.raises(BatchError) as raised:
        run_batch(tasks, DiesAtStart(str(tmp_path), None), results=out, workers="pool", processes=1)
    assert str(raised.value) == (
        "a batch worker process failed to start (exit code 17), and no other worker is "
        "left; 3 task(s) not run (a rerun with the same results file runs them)"
    )
    report = run_batch(tasks, make_faux_agent, results=out, workers="pool", processes=1)
    assert report.ok == 3


def test_a_script_without_a_main_guard_is_told_to_add_one(tmp_path: Path) -> None:
    """A pool worker imports the driver's script to find `make_agent`; a script that calls
    run_batch at module level would start the batch again in each worker. That call says
    to add the `__main__` guard, instead of 'results file ... is in use by another batch'."""
    import subprocess
    import sys

    script = tmp_path / "no_guard.py"
    script.write_text(
        "from yiemagent import Agent\n"
        "from yiemagent.ai.providers.faux import FauxModel\n"
        "from yiemagent.batch import run_batch\n"
        "def make_agent(task):\n"
        "    fm = FauxModel(['ok'])\n"
        "    return Agent(model=fm.model, stream_fn=fm.stream_fn)\n"
        "run_batch([{'id': 1, 'prompt': 'p'}], make_agent, results='r.jsonl',\n"
        "          workers='pool', processes=1, progress=False)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert 'if __name__ == "__main__":' in done.stderr, done.stderr
    assert "in use by another running batch" not in done.stderr, done.stderr


@pytest.mark.parametrize("workers", ["pool", "tasks"])
def test_a_progress_line_counts_the_task_a_worker_goes_on_to_as_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: str
) -> None:
    """A line is written as a task ends; the worker that ran it takes the next one at once.
    With one worker (the embedded model's pool on 2 cores, or `--concurrency 1`) every line
    said "0 running, N queued" while a task was always running."""
    tasks = [{"id": f"r{i}", "prompt": "p", "metadata": {"kind": "ok"}} for i in range(3)]
    report = run_batch(
        tasks,
        make_faux_agent,
        results=tmp_path / "r.jsonl",
        workers=workers,  # type: ignore[arg-type]
        processes=1,
        concurrency=1,
        progress="lines",
    )
    assert report.ok == 3, report
    counts = [
        re.search(r"\), (\d+) running(?:, (\d+) queued)?,", line)
        for line in capsys.readouterr().err.splitlines()
        if " done (" in line
    ]
    assert [(m.group(1), m.group(2)) for m in counts if m] == [
        ("1", "1"),
        ("1", None),
        ("0", None),
    ]
