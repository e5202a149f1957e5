"""Property (DESIGN §16): whatever mix of failures, timeouts, retries, concurrency and
interruptions a batch meets, once it has been run to the end (rerun after a stop) its
results file holds each id exactly once, every line whole, with the status its task's
behaviour calls for."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from tests.batch._agents import make_faux_agent
from tests.batch._kit import assert_each_id_once, result_lines
from yiemagent.batch import run_batch_async

KINDS = ("ok", "fail", "flaky", "slow", "raise")


def _expected_status(kind: str, retries: int) -> str:
    if kind == "ok" or (kind == "flaky" and retries >= 1):
        return "ok"
    return "timeout" if kind == "slow" else "error"


def _lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


async def _run(
    path: Path,
    tasks: list[dict[str, object]],
    concurrency: int,
    retries: int,
    stop_after: int | None,
) -> None:
    stop = asyncio.Event()

    async def stopper() -> None:
        while stop_after is not None:
            if _lines_in(path) >= stop_after:
                stop.set()
                return
            await asyncio.sleep(0.005)

    watcher = asyncio.ensure_future(stopper())
    first = await run_batch_async(
        tasks,
        make_faux_agent,
        results=path,
        concurrency=concurrency,
        timeout_s=0.15,
        retries=retries,
        stop=stop,
        fsync=False,
    )
    watcher.cancel()
    for line in result_lines(path):  # whole lines only, even right after a stop
        assert line["status"] in ("ok", "error", "timeout", "interrupted")
    if not first.complete:
        second = await run_batch_async(
            tasks,
            make_faux_agent,
            results=path,
            concurrency=concurrency,
            timeout_s=0.15,
            retries=retries,
            fsync=False,
        )
        assert second.complete
        assert second.skipped == first.skipped + first.ok + first.failed


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=10),
    concurrency=st.integers(1, 6),
    retries=st.integers(0, 2),
    stop_after=st.one_of(st.none(), st.integers(0, 6)),
)
def test_each_id_exactly_once_whatever_fails(
    tmp_path: Path, kinds: list[str], concurrency: int, retries: int, stop_after: int | None
) -> None:
    run = uuid.uuid4().hex[:8]
    path = tmp_path / f"{run}.jsonl"
    tasks: list[dict[str, object]] = [
        {"id": f"{run}-{i}", "prompt": "q", "metadata": {"kind": kind}}
        for i, kind in enumerate(kinds)
    ]
    asyncio.run(_run(path, tasks, concurrency, retries, stop_after))
    lines = {line["id"]: line for line in assert_each_id_once(path, [str(t["id"]) for t in tasks])}
    for task, kind in zip(tasks, kinds, strict=True):
        line = lines[str(task["id"])]
        if kind != "flaky":  # a flaky task stopped mid-way succeeds on its rerun either way
            assert line["status"] == _expected_status(kind, retries), line
        assert 1 <= line["attempts"] <= retries + 1
