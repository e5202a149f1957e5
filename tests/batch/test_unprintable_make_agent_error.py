"""A `make_agent` raising an exception whose `__str__` raises (DESIGN §16; after
openai-agents' tests/test_tracing_errors.py::test_run_propagates_exception_whose_str_raises):
that task's result is an error naming the exception's class, and the other tasks run and
are written. The reason was written with `str()` inside the handler, so the whole batch
raised that `RuntimeError` and no result was written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.batch import BatchTask, read_results, run_batch_async


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str exploded")


_models: list[FauxModel] = []  # held while their runs use them


def make_agent(task: BatchTask) -> Agent[Any]:
    if task.id == "broken":
        raise Unprintable
    fm = FauxModel([f"answer to {task.id}"])
    _models.append(fm)
    return Agent(model=fm.model, stream_fn=fm.stream_fn)


async def test_an_unprintable_make_agent_error_fails_its_task_only(tmp_path: Path) -> None:
    tasks = [BatchTask(id, "hi") for id in ("first", "broken", "last")]
    results = tmp_path / "results.jsonl"
    await run_batch_async(tasks, make_agent, results=results, retries=0, progress=False)
    by_id = {r.id: r for r in read_results(results)}
    assert set(by_id) == {"first", "broken", "last"}
    assert (by_id["broken"].status, by_id["broken"].error) == (
        "error",
        "make_agent raised Unprintable",
    )
    assert by_id["first"].text == "answer to first" and by_id["last"].text == "answer to last"
