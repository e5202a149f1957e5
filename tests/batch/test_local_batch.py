"""DESIGN §16 on the local backend: many tasks at once on the faux model, each id written
exactly once with the right status; a driver killed with SIGKILL mid-batch loses nothing it
wrote, and a rerun finishes the rest without redoing any."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.batch._agents import make_faux_agent, make_plain_agent
from tests.batch._kit import EXPECTED, assert_each_id_once, mixed_tasks, result_lines, write_tasks
from yiemagent.batch import read_results, run_batch, summarize_results

ROOT = Path(__file__).resolve().parents[2]


def test_200_tasks_concurrency_16_each_id_once_with_its_status(tmp_path: Path) -> None:
    tasks = mixed_tasks(200, "c16")
    out = tmp_path / "results.jsonl"
    report = run_batch(
        tasks, make_faux_agent, results=out, concurrency=16, timeout_s=1.0, retries=1
    )
    lines = assert_each_id_once(out, [t["id"] for t in tasks])
    by_id = {line["id"]: line for line in lines}
    for task in tasks:
        status, attempts, kind = EXPECTED[task["metadata"]["kind"]]
        line = by_id[task["id"]]
        assert (line["status"], line["attempts"], line["error_kind"]) == (status, attempts, kind), (
            line
        )
        if status == "ok":
            assert line["text"] == f"answer {task['id']}"
            assert line["usage"]["total_tokens"] == 15
            assert line["error"] is None
        else:
            assert line["error"]
    wanted = sum(EXPECTED[t["metadata"]["kind"]][0] == "ok" for t in tasks)
    assert (report.ok, report.failed, report.total) == (wanted, 200 - wanted, 200)
    assert report.timed_out == sum(t["metadata"]["kind"] == "slow" for t in tasks)
    assert report.complete and report.workers == "tasks"
    assert report.cost_usd == pytest.approx(0.001 * wanted)
    again = run_batch(tasks, make_faux_agent, results=out, concurrency=16)
    assert (again.skipped, again.ok, again.failed) == (200, 0, 0)
    assert len(result_lines(out)) == 200


def test_rerun_after_sigkill_of_the_driver_finishes_the_rest_without_redoing_any(
    tmp_path: Path,
) -> None:
    log = tmp_path / "attempts.log"
    tasks = mixed_tasks(200, "kill", delay_s=0.05, log=str(log))
    for task in tasks:  # no slow tasks: the kill must land while tasks are running
        if task["metadata"]["kind"] == "slow":
            task["metadata"]["kind"] = "ok"
    tasks_file = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "results.jsonl"
    script = (
        "import sys; from tests.batch._agents import make_faux_agent; "
        "from yiemagent.batch import run_batch; "
        "run_batch(sys.argv[1], make_faux_agent, results=sys.argv[2], concurrency=16)"
    )
    driver = subprocess.Popen([sys.executable, "-c", script, str(tasks_file), str(out)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if out.exists() and out.read_bytes().count(b"\n") >= 40:
                break
            assert driver.poll() is None, "the driver ended before it was killed"
            time.sleep(0.01)
        os.kill(driver.pid, signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait(30)
    first = out.read_bytes()
    whole = first[: first.rfind(b"\n") + 1]
    done_first = {json.loads(line)["id"] for line in whole.splitlines()}
    assert 40 <= len(done_first) < 200, "the kill must land mid-batch"
    attempts_first = log.read_text().splitlines()
    log.unlink()

    report = run_batch(tasks_file, make_faux_agent, results=out, concurrency=16)

    assert report.skipped == len(done_first)
    assert report.skipped + report.ok + report.failed == 200
    assert out.read_bytes().startswith(whole), "lines written before the crash were changed"
    assert_each_id_once(out, [t["id"] for t in tasks])
    rerun = {line.split()[0] for line in log.read_text().splitlines()}
    assert not rerun & done_first, "a task done before the crash ran again"
    assert rerun == {t["id"] for t in tasks} - done_first
    assert len(attempts_first) >= len(done_first)


def test_a_factory_without_arguments_and_an_iterable_of_tasks(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    report = run_batch(
        ({"id": i, "prompt": "hi", "session": f"s{i}"} for i in range(5)),
        make_plain_agent,
        results=out,
    )
    assert report.ok == 5
    assert [r.text for r in read_results(out)] == ["plain"] * 5
    assert {r.id for r in read_results(out)} == {"0", "1", "2", "3", "4"}


def test_summary_counts_failures_by_reason_tokens_and_cost(tmp_path: Path) -> None:
    tasks = mixed_tasks(40, "sum")
    out = tmp_path / "r.jsonl"
    run_batch(tasks, make_faux_agent, results=out, concurrency=8, timeout_s=0.5, retries=1)
    summary = summarize_results(out)
    kinds = [t["metadata"]["kind"] for t in tasks]
    ok = sum(EXPECTED[k][0] == "ok" for k in kinds)
    assert summary.tasks == 40
    assert summary.by_status.get("ok") == ok
    expected = {
        "model_error": kinds.count("fail"),
        "timeout": kinds.count("slow"),
        "exception": kinds.count("raise"),
    }
    assert summary.failures == {reason: n for reason, n in expected.items() if n}
    assert summary.total_tokens == 15 * ok
    assert summary.cost_usd == pytest.approx(0.001 * ok)
    assert any(line.startswith("failures by reason:") for line in summary.lines())
    # the tokens an answer spent reasoning, kept on its line and read back
    assert [r.usage["reasoning"] for r in read_results(out) if r.status == "ok"] == [2] * ok
    assert (summary.output_tokens, summary.reasoning_tokens) == (5 * ok, 2 * ok)
    [tokens] = [line for line in summary.lines() if line.startswith("tokens:")]
    assert tokens.endswith(f"; reasoning {2 * ok} of the output"), tokens


def test_rerun_failed_runs_failed_and_timed_out_tasks_again_and_keeps_one_line_each(
    tmp_path: Path,
) -> None:
    tasks = mixed_tasks(30, "again")
    out = tmp_path / "r.jsonl"
    first = run_batch(tasks, make_faux_agent, results=out, concurrency=8, timeout_s=0.5)
    assert first.failed > 0
    ok_lines = [
        line for line in out.read_bytes().splitlines(keepends=True) if b'"status":"ok"' in line
    ]
    fixed = [{**t, "metadata": {"kind": "ok"}} for t in tasks]  # what failed now works
    plain = run_batch(fixed, make_faux_agent, results=out)
    assert plain.skipped == 30 and plain.skipped_failed == first.failed
    report = run_batch(fixed, make_faux_agent, results=out, rerun_failed=True)
    assert (report.skipped, report.ok) == (30 - first.failed, first.failed)
    lines = assert_each_id_once(out, [t["id"] for t in tasks])
    assert all(line["status"] == "ok" for line in lines)
    assert out.read_bytes().startswith(b"".join(ok_lines)), "ok lines kept byte for byte"


def test_importing_the_batch_package_imports_neither_ray_nor_a_model_runtime() -> None:
    code = (
        "import sys, yiemagent, yiemagent.batch; from yiemagent import run_batch; "
        "heavy = [m for m in ('ray', 'xllamacpp', 'openai', 'anthropic') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


def test_run_batch_takes_run_batch_async_s_arguments_and_its_stop_event(tmp_path: Path) -> None:
    """`run_batch` is `run_batch_async` run to the end: one parameter list, `stop` included
    (a stop already set starts no task; the rerun then does them all)."""
    import asyncio
    import inspect

    from yiemagent.batch import run_batch_async

    assert inspect.signature(run_batch) == inspect.signature(run_batch_async)
    assert run_batch.__name__ == "run_batch" and "blocking" in (run_batch.__doc__ or "")
    tasks = mixed_tasks(20, "stop")
    out = tmp_path / "results.jsonl"
    stop = asyncio.Event()
    stop.set()
    report = run_batch(tasks, make_plain_agent, results=out, stop=stop)
    assert (report.ok, report.failed, report.not_started) == (0, 0, 20)
    assert not report.complete and result_lines(out) == []
    again = run_batch(tasks, make_plain_agent, results=out)
    assert again.complete and again.ok + again.failed == 20
    assert_each_id_once(out, [t["id"] for t in tasks])


async def test_run_batch_inside_an_event_loop_says_to_use_run_batch_async(
    tmp_path: Path,
) -> None:
    with pytest.raises(RuntimeError, match="use run_batch_async"):
        run_batch(mixed_tasks(1, "loop"), make_plain_agent, results=tmp_path / "r.jsonl")
