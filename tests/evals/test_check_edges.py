"""Checks at their edges (DESIGN §19, docs/evals.md "Checks"): a check that raises
anything (SystemExit, a CancelledError of its own work) fails with its text and the eval
goes on, a verdict that is no verdict fails,
and a check maker given uncalled is refused before any case runs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from yiemagent.evals import (
    CHECKS,
    Case,
    Check,
    CheckResult,
    Dataset,
    DatasetError,
    EvalRun,
    check_name,
    contains,
    equals,
    output_is,
    run_eval,
)

from ._agents import make_agent

SAY_HI = {"script": "say", "text": "hi there"}


async def test_a_check_that_exits_fails_and_the_eval_goes_on() -> None:
    """A scorer that calls `sys.exit` (a script's habit) raised SystemExit, which
    `except Exception` let through: the eval process ended with the check's exit status,
    no report and no other case checked."""

    def exits(run: EvalRun) -> bool:
        sys.exit(3)

    async def exits_async(run: EvalRun) -> bool:
        raise SystemExit("gave up")

    dataset = [
        Case("exits", "Say hi", [exits, exits_async, contains("hi")], metadata=SAY_HI),
        Case("fine", "Say hi", [contains("hi")], metadata=SAY_HI),
    ]
    report = await run_eval(dataset, make_agent)

    exited, fine = report.cases
    assert [(c.name, c.passed, c.reason) for c in exited.checks] == [
        ("exits", False, "the check raised SystemExit: 3"),
        ("exits_async", False, "the check raised SystemExit: gave up"),
        ("contains('hi')", True, "answer has 'hi'"),
    ]
    assert not exited.passed and fine.passed


async def test_a_check_whose_own_work_was_cancelled_fails_and_the_eval_goes_on() -> None:
    """A check awaiting something that was cancelled (a client library's request, a
    future another task gave up) raised CancelledError out of the eval: `run_eval` ended
    with it, no report, as if the eval itself had been stopped."""

    async def awaits_a_cancelled_future(run: EvalRun) -> bool:
        gone: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        gone.cancel()
        return await gone

    dataset = [
        Case("cancelled", "Say hi", [awaits_a_cancelled_future, contains("hi")], metadata=SAY_HI),
        Case("fine", "Say hi", [contains("hi")], metadata=SAY_HI),
    ]
    report = await run_eval(dataset, make_agent)

    cancelled, fine = report.cases
    assert [(c.name, c.passed, c.reason) for c in cancelled.checks] == [
        (
            "awaits_a_cancelled_future",
            False,
            "the check raised CancelledError: its own work was cancelled",
        ),
        ("contains('hi')", True, "answer has 'hi'"),
    ]
    assert fine.passed


async def test_an_eval_cancelled_while_a_check_runs_is_cancelled() -> None:
    checking = asyncio.Event()

    async def slow(run: EvalRun) -> bool:
        checking.set()
        await asyncio.sleep(60)
        return True

    task = asyncio.create_task(run_eval([Case("c", "Say hi", [slow], metadata=SAY_HI)], make_agent))
    await asyncio.wait_for(checking.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("passed", ["no", 1, None, [True]])
async def test_a_check_result_whose_verdict_is_no_bool_fails_saying_so(passed: object) -> None:
    """`CheckResult("no", ...)` passed: any truthy value counted as a pass, so a check
    that meant to fail (a verdict text) reported success."""

    def verdict(run: EvalRun) -> CheckResult:
        return CheckResult(passed, "as the check saw it")  # type: ignore[arg-type]

    (case,) = (await run_eval([Case("c", "Say hi", [verdict], metadata=SAY_HI)], make_agent)).cases
    (outcome,) = case.checks
    assert not outcome.passed and not case.passed
    assert outcome.reason == (
        f"the check raised TypeError: CheckResult.passed must be True or False, "
        f"not {type(passed).__name__} {passed!r}"
    )


def test_a_check_result_reason_must_be_text() -> None:
    with pytest.raises(TypeError, match=r"CheckResult\.reason must be a text, not int 5"):
        CheckResult(False, 5)  # type: ignore[arg-type]
    assert CheckResult(True).reason == ""


@pytest.mark.parametrize("maker", sorted(CHECKS))
async def test_a_check_maker_given_uncalled_is_refused_before_any_run(maker: str) -> None:
    """`Case(..., checks=[contains])` ran `contains(run)`: it failed every run with the
    whole EvalRun's repr as its reason (thousands of characters in the table)."""
    case = Case("c", "Say hi", [CHECKS[maker]], metadata=SAY_HI)  # type: ignore[list-item]
    message = f"case 'c': checks[0]: {maker} makes a check: call it, {maker}(...)"
    with pytest.raises(DatasetError) as made:
        Dataset([case])
    with pytest.raises(DatasetError) as run:
        await run_eval([case], make_agent)
    assert str(made.value) == str(run.value) == message
    assert Dataset([Case("c", "Say hi", [contains("hi")])]).cases  # a made check is one


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ('{matches: "("}', "matches: '(' is not a regular expression: missing ), "),
        ("{tool_called: [a]}", "tool_called needs a tool name, not ['a']"),
        ("{max_turns: -1}", "max_turns: needs a whole number of 0 or more, not -1"),
    ],
)
def test_a_check_refusing_its_argument_is_named_once(tmp_path: Path, item: str, said: str) -> None:
    """The loader put the check's name before the check's own text, which names it too:
    "checks[0]: matches: matches: '(' is not a regular expression"."""
    path = tmp_path / "d.yaml"
    path.write_text(f"cases:\n  - name: x\n    input: y\n    checks: [{item}]\n")
    with pytest.raises(DatasetError) as refused:
        Dataset.load(path)
    assert str(refused.value).startswith(f"{path}: case 'x': checks[0]: {said}")


@pytest.mark.parametrize(
    ("item", "said"),
    [
        (
            "{tool_called: {name: t, bogus: 1}}",
            "tool_called: unknown keyword 'bogus' (known: name, args, times, substring, nested)",
        ),
        ("{judge: {rubric: r, modle: m}}", "judge: unknown keyword 'modle' (known: rubric, model)"),
    ],
)
def test_a_misspelt_keyword_beside_right_ones_is_named(
    tmp_path: Path, item: str, said: str
) -> None:
    """`{name: {keyword: value}}` with one key misspelt was taken for the check's argument:
    "tool_called needs a tool name, not {'name': 't', 'bogus': 1}" named no keyword."""
    path = tmp_path / "d.yaml"
    path.write_text(f"cases:\n  - name: x\n    input: y\n    checks: [{item}]\n")
    with pytest.raises(DatasetError) as refused:
        Dataset.load(path)
    assert str(refused.value) == f"{path}: case 'x': checks[0]: {said}"


def test_equals_and_output_is_still_take_an_object_with_a_parameters_name(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        "cases:\n  - name: x\n    input: y\n    checks:\n"
        "      - equals: {value: 3, unit: m}\n"
        "      - output_is: {value_or_schema: 1, other: 2}\n"
    )
    equals_check, output_check = Dataset.load(path).cases[0].checks
    assert "{'value': 3, 'unit': 'm'}" in str(getattr(equals_check, "name", equals_check))
    assert "'other': 2" in str(getattr(output_check, "name", output_check))


class _Kind:
    kind = "b"


class _ArrayBool:
    """A boolean scalar as array libraries make one (numpy's `bool_`: shape `()`, a dtype
    of kind "b"), not a `bool`; numpy itself is not a dependency of the project."""

    dtype = _Kind()
    shape = ()

    def __init__(self, value: bool) -> None:
        self.value = value

    def __bool__(self) -> bool:
        return self.value


def _numpy_bools() -> list[object]:
    try:
        import numpy as np  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return []
    return [np.True_, np.False_, np.array(True), np.isclose(1.0, 1.0 + 1e-12)]


@pytest.mark.parametrize("made", [_ArrayBool(True), _ArrayBool(False), *_numpy_bools()])
async def test_an_array_librarys_bool_is_a_verdict(made: object) -> None:
    """A check returning `(a == b).all()` (numpy's `bool_`), bare or in a CheckResult,
    failed as "not a bool", so a passing check failed."""
    expected = bool(made)

    def bare(run: EvalRun) -> bool:
        return made  # type: ignore[return-value]

    def in_result(run: EvalRun) -> CheckResult:
        return CheckResult(made, "as computed")  # type: ignore[arg-type]

    (case,) = (
        await run_eval([Case("c", "Say hi", [bare, in_result], metadata=SAY_HI)], make_agent)
    ).cases
    assert [(c.name, c.passed, c.reason) for c in case.checks] == [
        ("bare", expected, ""),
        ("in_result", expected, "as computed"),
    ]
    assert case.passed is expected
    assert CheckResult(made).passed is expected  # type: ignore[arg-type]


class _Vector(_ArrayBool):
    shape = (2,)  # type: ignore[assignment]


@pytest.mark.parametrize("made", [1, 0, "no", _Vector(True)])
async def test_a_bare_verdict_that_is_no_bool_fails(made: object) -> None:
    """A number (a score or a count), a text or an array of booleans is no verdict."""

    def bare(run: EvalRun) -> bool:
        return made  # type: ignore[return-value]

    (case,) = (await run_eval([Case("c", "Say hi", [bare], metadata=SAY_HI)], make_agent)).cases
    (outcome,) = case.checks
    name = type(made).__name__ if isinstance(made, int | str) else f"{__name__}._Vector"
    assert (outcome.passed, outcome.reason) == (
        False,
        f"the check returned {name}, not a bool or CheckResult",
    )


@pytest.mark.parametrize(
    ("check", "said"),
    [
        (contains(), "contains has no argument and the case has no 'expected'"),
        (equals(), "equals has no argument and the case has no 'expected'"),
        (output_is(), "output_is has no argument and the case has no 'expected'"),
    ],
)
async def test_a_check_of_expected_in_a_case_without_one_is_refused_before_any_run(
    check: Check, said: str, tmp_path: Path
) -> None:
    """`Case("c", "Say hi", [contains()])` built in code, with no `expected`, ran every
    case and failed each run of it with the ConfigError's text; a dataset file with the
    same case was refused when it loaded."""
    cases = [
        Case("fine", "Say hi", [contains("hi")], metadata=SAY_HI),
        Case("c", "Say hi", [contains("hi"), check], metadata=SAY_HI),
    ]
    results = tmp_path / "results.jsonl"
    with pytest.raises(DatasetError) as made:
        Dataset(cases)
    with pytest.raises(DatasetError) as run:
        await run_eval(cases, make_agent, results=results)
    assert str(made.value) == str(run.value) == f"case 'c': checks[1]: {said}"
    assert not results.exists()  # no case ran
    given = Case("c", "Say hi", [check], expected="hi there", metadata=SAY_HI)
    (case,) = (await run_eval([given], make_agent)).cases
    assert case.passed is (check_name(check) != "output_is()")  # "hi there" is no JSON


async def test_output_is_of_an_expected_that_is_no_schema_is_refused_in_code() -> None:
    case = Case("c", "Say hi", [output_is()], expected={"type": "nonsense"}, metadata=SAY_HI)
    with pytest.raises(DatasetError, match=r"^case 'c': checks\[0\]: output_is: expected: the "):
        await run_eval([case], make_agent)
