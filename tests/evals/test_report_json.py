"""`EvalReport.from_json` reads back what `to_json` wrote (DESIGN §19), case by case, and
refuses a case it cannot read, or a name given to two cases, with one line naming the file
and the case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yiemagent.errors import ConfigError
from yiemagent.evals import EvalReport

CASE = {
    "name": "multiply",
    "passed": False,
    "checks": [{"name": "contains('391')", "passed": False, "reason": "no '391'"}, "junk"],
    "runs": 3,
    "pass_at_k": {"1": 0.333333, "3": 1.0, "x": 2},
    "pass_all_k": {"1": 0.333333, "2": "n/a"},
    "tokens": 120,
    "cost_usd": 0.0015,
    "seconds": 2.5,
}


def test_a_case_reads_back_as_written_without_its_runs() -> None:
    report = EvalReport.from_json({"passed": 0, "failed": 1, "cases": [CASE]})
    (case,) = report.cases
    assert (case.name, case.passed, case.runs) == ("multiply", False, [])
    assert [(c.name, c.passed, c.reason) for c in case.checks] == [
        ("contains('391')", False, "no '391'")
    ]
    assert case.pass_at_k == {1: 0.333333, 3: 1.0} and case.pass_all_k == {1: 0.333333}
    assert (case.tokens, case.cost_usd, case.seconds) == (120, 0.0015, 2.5)
    again = case.to_json()
    assert again["pass_at_k"] == {"1": 0.333333, "3": 1.0} and again["checks"][0]["name"]


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ({"passed": True}, "old.json: cases[1]: no 'name'"),
        ("multiply", "old.json: cases[1] is a text, not an object"),
        (
            {"name": 7, "passed": True},
            "old.json: cases[1]: 'name' is the number 7, where the case's name, a text, is",
        ),
        ({"name": True}, "old.json: cases[1]: 'name' is true, where the case's name"),
        ({"name": ["a"]}, "old.json: cases[1]: 'name' is a list, where the case's name"),
        ({"name": "capital", "passed": "yes"}, "old.json: case 'capital': 'passed' is not"),
    ],
)
def test_a_case_it_cannot_read_is_one_line_naming_it(
    tmp_path: Path, case: object, said: str
) -> None:
    baseline = tmp_path / "old.json"
    baseline.write_text(json.dumps({"cases": [CASE, case]}))
    with pytest.raises(ConfigError) as refused:
        EvalReport.load(baseline)
    assert str(refused.value).startswith(f"{tmp_path}/{said}")
    assert "\n" not in str(refused.value)


def test_a_report_naming_one_case_twice_is_refused_as_a_baseline(tmp_path: Path) -> None:
    """Two reports' cases pasted into one (a case passed in one, failed in the other)
    loaded, and `compare` kept the last of each name: against itself it found no
    regression although one of its "multiply" cases failed."""
    passed = {**CASE, "passed": True}
    baseline = tmp_path / "merged.json"
    baseline.write_text(json.dumps({"cases": [passed, CASE]}))
    said = f"{baseline}: case 'multiply': name: used by another case"
    with pytest.raises(ConfigError) as refused:
        EvalReport.load(baseline)
    assert str(refused.value) == said
    report = EvalReport.from_json({"cases": [CASE]})
    with pytest.raises(ConfigError, match="case 'multiply': name: used by another case"):
        report.compare({"cases": [passed, CASE]})
