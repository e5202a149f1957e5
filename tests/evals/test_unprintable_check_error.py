"""openai-agents' tests/test_tracing_errors.py::test_run_propagates_exception_whose_str_raises
on eval checks (DESIGN §19): a check that raises fails with its error and the eval goes
on, also when the exception's `__str__` raises. Writing that reason raised again, outside
any handler, and `run_eval` failed as a whole: every run's result was lost."""

from __future__ import annotations

from tests.evals._agents import make_agent
from yiemagent.evals import Case, EvalRun, contains, run_eval


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str exploded")


def unprintable(run: EvalRun) -> bool:
    raise Unprintable


async def unprintable_async(run: EvalRun) -> bool:
    raise Unprintable


async def test_a_check_raising_an_unprintable_error_fails_and_the_eval_goes_on() -> None:
    say = {"script": "say", "text": "hi"}
    cases = [
        Case("broken", "Say hi", [unprintable, unprintable_async, contains("hi")], metadata=say),
        Case("fine", "Say hi", [contains("hi")], metadata=say),
    ]
    report = await run_eval(cases, make_agent)
    broken, fine = report.cases
    assert [(c.name, c.passed, c.reason) for c in broken.checks] == [
        ("unprintable", False, "the check raised Unprintable"),
        ("unprintable_async", False, "the check raised Unprintable"),
        ("contains('hi')", True, "answer has 'hi'"),
    ]
    assert fine.passed and (report.passed, report.failed) == (1, 1)
