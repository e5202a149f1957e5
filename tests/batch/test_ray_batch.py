"""The Ray backend (DESIGN §16) against a real Ray cluster that this module starts on
127.0.0.1 (`ray start --head --block`, 2 CPUs, no dashboard, no usage stats) and stops at the
end: 50 tasks with failures and timeouts; a worker process killed mid-task (its task runs
again elsewhere, its id written once); the driver killed mid-batch (a rerun resumes); the
embedded model on an actor pool of 2 actors answering 10 tasks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.batch._agents import make_embedded_agent, make_faux_agent, make_model_not_agent
from tests.batch._kit import EXPECTED, assert_each_id_once, mixed_tasks, write_tasks
from tests.batch._ray import CLUSTER_ENV, python_path
from yiemagent.batch import Workers, run_batch
from yiemagent.batch._execute import WORKER_DEATH_RETRIES
from yiemagent.errors import BatchError

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_50_tasks_on_ray_each_id_once_with_its_status(cluster: str, tmp_path: Path) -> None:
    tasks = mixed_tasks(50, "ray50")
    out = tmp_path / "r.jsonl"
    report = run_batch(
        tasks,
        make_faux_agent,
        results=out,
        backend="ray",
        address=cluster,
        concurrency=4,
        timeout_s=1.0,
        retries=1,
    )
    lines = {line["id"]: line for line in assert_each_id_once(out, [t["id"] for t in tasks])}
    for task in tasks:
        status, attempts, kind = EXPECTED[task["metadata"]["kind"]]
        line = lines[task["id"]]
        assert (line["status"], line["attempts"], line["error_kind"]) == (status, attempts, kind)
    assert report.complete and report.backend == "ray" and report.workers == "tasks"
    again = run_batch(tasks, make_faux_agent, results=out, backend="ray", address=cluster)
    assert again.skipped == 50 and again.ok == 0


@pytest.mark.parametrize("workers", ["tasks", "pool"])
def test_a_factory_making_no_agent_stops_a_ray_batch_with_chosen_workers_at_once(
    workers: Workers, cluster: str, tmp_path: Path
) -> None:
    """With a chosen `workers` the driver does not call the factory (it may work on the
    cluster only), so each task reported the mistake as its own failure, twice with its
    retry. The cluster now checks it first: one Ray task, or the first actor's start."""
    tasks = mixed_tasks(3, "not")
    out = tmp_path / "r.jsonl"
    with pytest.raises(BatchError) as stopped:
        run_batch(
            tasks,
            make_model_not_agent,
            results=out,
            backend="ray",
            address=cluster,
            workers=workers,
            num_cpus=1,
        )
    where = "in a batch worker process" if workers == "pool" else "for task 'not-0' on the cluster"
    assert str(stopped.value) == (
        "make_agent (tests.batch._agents:make_model_not_agent) must return an Agent, not "
        f"Model (it returned that {where}); no task was run"
    )
    assert out.read_bytes() == b""
    done = run_batch(tasks, make_faux_agent, results=out, backend="ray", address=cluster)
    assert done.ok + done.failed == 3  # the cluster is fine for the next batch


def test_a_worker_killed_mid_task_has_its_task_rerun_and_its_id_written_once(
    cluster: str, tmp_path: Path
) -> None:
    log = tmp_path / "attempts.log"
    tasks = [
        {"id": f"w{i}", "prompt": "p", "metadata": {"kind": "ok", "delay_s": 0.05, "log": str(log)}}
        for i in range(12)
    ]
    tasks[3]["metadata"]["delay_s"] = 0.5  # "answer w3": 3 chunks, 1.5 s to kill it in
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            if log.exists():
                for line in log.read_text().splitlines():
                    if line.startswith("w3 "):
                        pid = int(line.split()[1])
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                        return
            time.sleep(0.01)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    out = tmp_path / "r.jsonl"
    report = run_batch(
        tasks, make_faux_agent, results=out, backend="ray", address=cluster, concurrency=2
    )
    thread.join(10)
    assert killed, "the victim never started"
    lines = {line["id"]: line for line in assert_each_id_once(out, [t["id"] for t in tasks])}
    assert report.ok == 12
    assert lines["w3"]["status"] == "ok" and lines["w3"]["text"] == "answer w3"
    assert lines["w3"]["attempts"] == 2
    runs = [int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("w3 ")]
    assert runs[0] == killed[0] and runs[1] != killed[0], "rerun on another worker process"


def test_a_task_that_kills_every_ray_worker_is_recorded_worker_died_once(
    cluster: str, tmp_path: Path
) -> None:
    """The pool's rule for a dead worker, on Ray: each death submits the task again,
    `WORKER_DEATH_RETRIES` times; then its one line says so (kind "worker_died", Ray's
    error, every attempt counted) and the other task is unaffected."""
    tasks = [  # "fine" first: the cluster checks the factory on the first task
        {"id": "fine", "prompt": "p", "metadata": {"kind": "ok"}},
        {"id": "dies", "prompt": "p", "metadata": {"kind": "die"}},
    ]
    out = tmp_path / "r.jsonl"
    report = run_batch(  # `workers="tasks"`: the driver makes no agent of its own first
        tasks, make_faux_agent, results=out, backend="ray", address=cluster, workers="tasks"
    )
    assert (report.ok, report.failed, report.interrupted) == (1, 1, 0), report
    lines = {line["id"]: line for line in assert_each_id_once(out, ["fine", "dies"])}
    died = lines["dies"]
    assert (died["status"], died["error_kind"]) == ("error", "worker_died"), died
    assert died["attempts"] == 1 + WORKER_DEATH_RETRIES
    assert died["error"].startswith("the worker died while running the task ("), died
    assert "Error" in died["error"], died  # Ray's error names how it died
    assert lines["fine"]["status"] == "ok"


def test_the_driver_killed_mid_batch_loses_nothing_and_a_rerun_resumes(
    cluster: str, tmp_path: Path
) -> None:
    tasks = [
        {"id": f"d{i}", "prompt": "p", "metadata": {"kind": "ok", "delay_s": 0.1}}
        for i in range(40)
    ]
    tasks_file = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "r.jsonl"
    script = (
        "import sys; from tests.batch._agents import make_faux_agent; "
        "from yiemagent.batch import run_batch; "
        "run_batch(sys.argv[1], make_faux_agent, results=sys.argv[2], backend='ray', "
        "address=sys.argv[3], concurrency=2)"
    )
    driver = subprocess.Popen(
        [sys.executable, "-c", script, str(tasks_file), str(out), cluster],
        cwd=ROOT,
        env={**os.environ, **CLUSTER_ENV, "PYTHONPATH": python_path()},
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if out.exists() and out.read_bytes().count(b"\n") >= 5:
                break
            assert driver.poll() is None, "the driver ended before it was killed"
            time.sleep(0.02)
        os.kill(driver.pid, signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait(30)
    before = out.read_bytes()
    whole = before[: before.rfind(b"\n") + 1]
    done = {json.loads(line)["id"] for line in whole.splitlines()}
    assert 5 <= len(done) < 40
    report = run_batch(
        tasks_file, make_faux_agent, results=out, backend="ray", address=cluster, concurrency=2
    )
    assert report.skipped == len(done) and report.ok == 40 - len(done)
    assert out.read_bytes().startswith(whole)
    assert_each_id_once(out, [t["id"] for t in tasks])


def _embedded_model_installed() -> bool:
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        return False
    from yiemagent.ai.providers.local.weights import is_installed, local_spec

    return is_installed(local_spec("qwen2.5-coder-0.5b"))


@pytest.mark.local_model
@pytest.mark.skipif(not _embedded_model_installed(), reason="the local extra is not installed")
def test_the_embedded_model_on_an_actor_pool_of_2_answers_10_tasks(
    cluster: str, tmp_path: Path
) -> None:
    log = tmp_path / "agents.log"
    questions = [
        "What is 2 + 2?",
        "Name a colour.",
        "Say hello.",
        "What is the capital of France?",
        "Name a fruit.",
    ]
    tasks = [
        {"id": f"m{i}", "prompt": questions[i % len(questions)], "metadata": {"log": str(log)}}
        for i in range(10)
    ]
    out = tmp_path / "r.jsonl"
    report = run_batch(
        tasks,
        make_embedded_agent,
        results=out,
        backend="ray",
        address=cluster,
        concurrency=2,
        num_cpus=1,
        timeout_s=120,
        retries=1,
    )
    assert report.workers == "pool", "the embedded model goes to the actor pool"
    lines = assert_each_id_once(out, [t["id"] for t in tasks])
    assert all(line["status"] == "ok" and line["text"].strip() for line in lines), lines
    assert all(line["usage"]["output"] > 0 for line in lines)
    driver = str(os.getpid())  # the driver builds one Agent to see which model it runs
    entries = [line.split() for line in log.read_text().splitlines()]
    on_actors = [(pid, flag) for _, pid, flag in entries if pid != driver]
    assert len(on_actors) == 10
    assert len({pid for pid, _ in on_actors}) == 2, "two actors answered"
    assert all(flag == "loaded=True" for _, flag in on_actors), "each actor loaded the model first"
