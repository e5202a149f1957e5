"""A `make_agent` that returns one shared Agent instead of building one per call: each
task's agent is closed when the task ends (and the driver closes the one it makes to pick
the workers), so every task failed with "the agent is closed; create a new Agent", which
does not name `make_agent`. Each task's error now says that `make_agent` must build a new
Agent on each call. The real batch runner in this process; the faux model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.batch import BatchTask, read_results, run_batch_async

SAID = (
    "make_agent raised TypeError: make_agent returned an Agent it had returned before; it "
    "must build a new Agent on each call (each task's agent is closed when the task ends)"
)


@pytest.mark.parametrize("workers", ["auto", "tasks"])
async def test_a_shared_agent_fails_each_task_saying_to_build_one_per_call(
    tmp_path: Path, workers: Any
) -> None:
    fm = FauxModel(["an answer"] * 10)
    shared = Agent(model=fm.model, stream_fn=fm.stream_fn)
    tasks = [BatchTask(f"t{i}", "hi") for i in range(3)]
    results = tmp_path / "results.jsonl"

    report = await run_batch_async(
        tasks, lambda: shared, results=results, retries=0, progress=False, workers=workers
    )

    assert report.failed == 3
    assert [(r.status, r.error) for r in read_results(results)] == [("error", SAID)] * 3


async def test_a_factory_building_an_agent_per_call_runs_every_task(tmp_path: Path) -> None:
    fm = FauxModel(["an answer"] * 10)
    results = tmp_path / "results.jsonl"
    report = await run_batch_async(
        [BatchTask(f"t{i}", "hi") for i in range(3)],
        lambda: Agent(model=fm.model, stream_fn=fm.stream_fn),
        results=results,
        progress=False,
    )
    assert report.ok == 3
