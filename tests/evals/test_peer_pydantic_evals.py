"""pydantic-evals' own cases (pydantic-ai's tests/evals/test_dataset.py and
test_multi_run.py) on `run_eval` (DESIGN §19): a concurrency cap, checks and agent
factories that go wrong, repeats, and datasets that cannot run. Where ours differs by
choice (an empty dataset is refused, not an empty report) docs/evals.md says so."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.evals._agents import make_agent
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.batch import BatchTask
from yiemagent.evals import Case, CheckResult, Dataset, DatasetError, EvalRun, contains, run_eval
from yiemagent.types import Context

_running = {"now": 0, "most": 0, "cap": 1}
_lock = threading.Lock()
_cap_reached = threading.Event()


async def _counted_answer(context: Context) -> str:
    with _lock:
        _running["now"] += 1
        _running["most"] = max(_running["most"], _running["now"])
        if _running["most"] >= _running["cap"]:
            _cap_reached.set()
    await asyncio.sleep(0.5)  # a run past the cap would start meanwhile
    # every run allowed at once overlaps, however slowly a loaded machine starts them
    await asyncio.to_thread(_cap_reached.wait, 10)
    with _lock:
        _running["now"] -= 1
    return "hi"


def counting_agent(task: BatchTask) -> Agent[Any]:
    """An agent whose one answer records how many runs are answering at that moment."""
    fm = FauxModel([_counted_answer])
    return Agent(model=fm.model, stream_fn=fm.stream_fn)


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_concurrency_caps_the_runs_at_once(concurrency: int) -> None:
    # test_evaluate_with_concurrency: max_concurrency=1 runs the cases one at a time
    _running.update(now=0, most=0, cap=concurrency)
    _cap_reached.clear()
    dataset = Dataset([Case(f"case{i}", "Say hi", [contains("hi")]) for i in range(6)])
    report = await run_eval(dataset, counting_agent, concurrency=concurrency)
    assert report.passed == 6
    assert _running["most"] == concurrency


def no_verdict(run: EvalRun) -> Any:
    return object()


def nothing(run: EvalRun) -> Any:
    return None


def a_score(run: EvalRun) -> Any:
    return float("nan")


async def test_a_check_that_gives_no_verdict_fails_saying_what_it_gave() -> None:
    # test_dataset_evaluate_with_invalid_evaluator_result and ..._non_finite_evaluator_result:
    # pydantic-evals records an evaluator failure; here the check fails with the reason
    case = Case(
        "hi",
        "Say hi",
        [no_verdict, nothing, a_score, contains("hi")],
        metadata={"script": "say", "text": "hi"},
    )
    [result] = (await run_eval([case], make_agent)).cases
    assert [(c.name, c.passed, c.reason) for c in result.checks] == [
        ("no_verdict", False, "the check returned object, not a bool or CheckResult"),
        ("nothing", False, "the check returned NoneType, not a bool or CheckResult"),
        ("a_score", False, "the check returned float, not a bool or CheckResult"),
        ("contains('hi')", True, "answer has 'hi'"),
    ]
    assert not result.passed


def no_agent(task: BatchTask) -> Agent[Any]:
    raise RuntimeError("no agent today")


async def test_a_factory_that_raises_fails_every_case_with_its_error() -> None:
    # test_dataset_evaluate_with_failing_task: every case is reported, failed, with the error
    cases = [Case("a", "Say hi", [contains("hi")]), Case("b", "Say bye")]
    report = await run_eval(cases, no_agent)
    assert [c.name for c in report.cases] == ["a", "b"] and report.failed == 2
    for case in report.cases:
        run = case.checks[0]
        assert (run.name, run.passed) == ("run", False)
        assert run.reason == "error: make_agent raised RuntimeError: no agent today"
        assert case.runs[0].status == "error"


_seen: list[tuple[str, int]] = []


def recording_agent(task: BatchTask) -> Agent[Any]:
    _seen.append((task.metadata["case"], task.metadata["repeat"]))
    fm = FauxModel([f"run {task.metadata['repeat']}"])
    return Agent(model=fm.model, stream_fn=fm.stream_fn)


async def test_each_repeat_is_a_run_of_its_own_on_a_fresh_agent() -> None:
    # test_repeat_3_produces_3x_cases: three runs of the case, told apart by their index
    _seen.clear()

    def said_its_own_run(run: EvalRun) -> CheckResult:
        return CheckResult(run.text == f"run {run.repeat}", run.text)

    report = await run_eval(
        [Case("echo", "Which run?", [said_its_own_run])], recording_agent, repeat=3
    )
    [case] = report.cases
    assert set(_seen) == {("echo", 0), ("echo", 1), ("echo", 2)}  # and one to see the model
    assert [(r.repeat, r.text) for r in case.runs] == [(0, "run 0"), (1, "run 1"), (2, "run 2")]
    assert case.passed and case.pass_all_k[3] == 1.0


async def test_a_dataset_that_cannot_run_is_refused_before_any_run() -> None:
    # test_dataset_evaluate_with_empty_cases gives an empty report; by choice an empty
    # dataset is refused here (a filter that matched nothing is a mistake to say, not a
    # pass). test_duplicate_case_names: one name for two cases is refused in code too.
    _seen.clear()
    with pytest.raises(DatasetError, match="the dataset has no cases"):
        await run_eval([], recording_agent)
    with pytest.raises(DatasetError, match="case 'same': name: used by another case"):
        Dataset([Case("same", "one"), Case("same", "two")])
    with pytest.raises(DatasetError, match="used by another case"):
        await run_eval([Case("same", "one"), Case("same", "two")], recording_agent)
    assert _seen == []
