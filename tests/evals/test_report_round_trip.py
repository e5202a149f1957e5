"""pydantic-evals' tests/evals/test_dataset.py::test_report_round_trip_serialization on
`EvalReport` (DESIGN §19): the JSON form read back and written again is what was read,
for any case names, reasons and numbers (hypothesis); the number of runs came back 0,
since the runs themselves are not in the JSON. And a case whose tokens, cost or seconds
is no number is one clear error naming the file, the case and the field: `yiem eval
--baseline` said only "invalid literal for int() with base 10: 'many'"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from yiemagent.errors import ConfigError
from yiemagent.evals import EvalReport

FINITE = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)
SHARE = st.floats(min_value=0, max_value=1, allow_nan=False).map(lambda v: round(v, 6))
K_MAP = st.dictionaries(st.integers(1, 20).map(str), SHARE, max_size=4)
CHECK = st.fixed_dictionaries({"name": st.text(min_size=1), "passed": st.booleans(),
                               "reason": st.text()})  # fmt: skip
CASE = st.fixed_dictionaries({
    "name": st.text(min_size=1), "passed": st.booleans(), "checks": st.lists(CHECK, max_size=4),
    "runs": st.integers(1, 50), "pass_at_k": K_MAP, "pass_all_k": K_MAP,
    "tokens": st.integers(0, 10**12), "cost_usd": FINITE,
    "seconds": FINITE.map(lambda v: round(v, 3)),
})  # fmt: skip


def in_k_order(data: dict[str, Any]) -> dict[str, Any]:
    for case in data["cases"]:
        for key in ("pass_at_k", "pass_all_k"):
            case[key] = dict(sorted(case[key].items(), key=lambda kv: int(kv[0])))
    return data


@given(st.lists(CASE, max_size=5, unique_by=lambda case: case["name"]))
def test_the_json_form_reads_back_as_it_was_written(cases: list[dict[str, Any]]) -> None:
    passed = sum(case["passed"] for case in cases)
    written = in_k_order({"passed": passed, "failed": len(cases) - passed, "cases": cases})
    read = EvalReport.from_json(json.loads(json.dumps(written)))
    assert in_k_order(json.loads(json.dumps(read.to_json()))) == written


@pytest.mark.parametrize(
    ("field", "value"),
    [("tokens", "many"), ("tokens", 1.5), ("cost_usd", [1]), ("seconds", "soon"),
     ("runs", "x"), ("tokens", True), ("seconds", -1)],
)  # fmt: skip
def test_a_number_that_is_not_one_is_one_line_naming_the_case_and_field(
    tmp_path: Path, field: str, value: object
) -> None:
    baseline = tmp_path / "old.json"
    baseline.write_text(json.dumps({"cases": [{"name": "capital", "passed": True, field: value}]}))
    with pytest.raises(ConfigError) as refused:
        EvalReport.load(baseline)
    assert str(refused.value) == (
        f"{baseline}: case 'capital': {field!r} is not a "
        + ("whole number" if field in ("tokens", "runs") else "number")
        + " >= 0"
    )
