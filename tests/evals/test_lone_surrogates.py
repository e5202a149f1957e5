"""A dataset case holding a lone surrogate (a `\\ud800` escape with no pair in a JSONL line,
no UTF-8 text) is refused when the dataset is read, naming the file, the case and the field
(DESIGN §8). It stopped `yiem eval` once the run's result line could not be written, or was
refused by the batch engine as "task #0", which names neither the file nor the case."""

from __future__ import annotations

from pathlib import Path

import pytest

from yiemagent.cli.main import main

AGENT = "tests.evals._agents:make_agent"


@pytest.mark.parametrize(
    ("case", "field"),
    [
        ('{"name": "a\\ud800", "input": "hi"}', "name"),
        ('{"name": "a", "input": "hi \\udcff"}', "input"),
        ('{"name": "a", "input": "hi", "expected": ["\\ude00"], "checks": ["contains"]}',
         "expected"),
        ('{"name": "a", "input": "hi", "metadata": {"script": "say", "text": "\\ud83d"}}',
         "metadata"),
    ],
)  # fmt: skip
def test_yiem_eval_refuses_a_case_holding_a_lone_surrogate_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, field: str
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"name": "first", "input": "hi", "metadata": {"script": "say"}}\n' + case)
    results, report = tmp_path / "runs.jsonl", tmp_path / "r.json"
    argv = ["eval", str(data), "--agent", AGENT, "--results", str(results)]
    code = main([*argv, "--json", str(report)])
    out, err = capsys.readouterr()
    assert code != 0 and out == "", err
    (said,) = err.strip().splitlines()
    assert said.startswith(f"yiem: error: {data}: case 'a") and f": {field}: " in said, said
    assert "lone surrogate" in said, said
    assert not results.exists() and not report.exists()
