"""An eval report's HTML page is the same from the report and from its JSON form read back
(DESIGN §19): `yiem eval --json` then an HTML page made from that file showed no pass@k
line, since `EvalReport.from_json` left `repeat` at 1. The JSON form holds each case's
number of runs, which is the report's `repeat`. Hypothesis over cases, repeats and numbers;
the runs themselves (answers, timelines) are not in the JSON form, so the reports here are
ones read back from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, strategies as st

from yiemagent.evals import EvalReport

SHARE = st.floats(min_value=0, max_value=1, allow_nan=False).map(lambda v: round(v, 6))
CHECK = st.fixed_dictionaries({"name": st.text(min_size=1), "passed": st.booleans(),
                               "reason": st.text()})  # fmt: skip


@st.composite
def reports(draw: st.DrawFn) -> EvalReport:
    """A report as `run_eval` makes it, `repeat` runs a case, read back from JSON."""
    repeat = draw(st.integers(1, 6))
    k_map = st.fixed_dictionaries({str(k): SHARE for k in range(1, repeat + 1)})
    case = st.fixed_dictionaries({
        "name": st.text(min_size=1), "passed": st.booleans(),
        "checks": st.lists(CHECK, max_size=3), "runs": st.just(repeat),
        "pass_at_k": k_map, "pass_all_k": k_map, "tokens": st.integers(0, 10**9),
        "cost_usd": st.floats(0, 1e3), "seconds": st.floats(0, 1e5).map(lambda v: round(v, 3)),
    })  # fmt: skip
    cases = draw(st.lists(case, max_size=4, unique_by=lambda c: c["name"]))
    read = EvalReport.from_json({"cases": cases})
    return EvalReport(read.cases, repeat=repeat)


def page(report: EvalReport, path: Path) -> str:
    return report.to_html(path).read_text(encoding="utf-8")


@given(reports())
def test_the_html_from_the_json_form_is_the_reports_html(report: EvalReport) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        again = EvalReport.from_json(json.loads(json.dumps(report.to_json())))
        assert again.repeat == (report.repeat if report.cases else 1)
        assert page(again, Path(folder, "b.html")) == page(report, Path(folder, "a.html"))


def test_a_json_file_of_three_runs_a_case_gives_a_page_with_pass_at_3(tmp_path: Path) -> None:
    case: dict[str, Any] = {
        "name": "capital", "passed": False, "checks": [], "runs": 3,
        "pass_at_k": {"1": 0.666667, "2": 1.0, "3": 1.0},
        "pass_all_k": {"1": 0.666667, "2": 0.333333, "3": 0.0},
        "tokens": 45, "cost_usd": 0.003, "seconds": 1.5,
    }  # fmt: skip
    (tmp_path / "r.json").write_text(json.dumps({"passed": 0, "failed": 1, "cases": [case]}))
    text = page(EvalReport.load(tmp_path / "r.json"), tmp_path / "r.html")
    assert "pass@1 0.67 · pass@3 1.00 · pass^3 0.00" in text
