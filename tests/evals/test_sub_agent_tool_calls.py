"""The tool checks of a team (DESIGN §17, §19): a case whose agent hands the work to a
sub-agent (`Agent.as_tool`) counts the sub-agent's tool calls too, as pydantic-evals'
span-based checks see every tool span under the case's run; `nested=False` counts the
agent's own calls only. Before, `tool_called("calculator")` failed for a team whose helper
did call it: the checks read the outer transcript alone. Through `run_eval` (the batch
engine's worker processes) and a YAML dataset."""

from __future__ import annotations

from pathlib import Path

from tests.evals._agents import make_agent
from yiemagent.evals import Dataset, run_eval

DATASET = """
cases:
  - name: team
    input: What is 6*7?
    metadata: {script: team_calc, expression: "6*7"}
    checks:
      - tool_called: {name: calculator, args: {expression: "6*7"}}
      - tool_called: {name: helper}
      - tool_called: {name: calculator, nested: false}
      - no_tool_called: calculator
      - no_tool_called: {name: calculator, nested: false}
      - max_tool_calls: 1
      - max_tool_calls: {n: 1, nested: false}
      - contains: "42"
"""


async def test_a_sub_agents_tool_calls_count_unless_nested_is_false(tmp_path: Path) -> None:
    (tmp_path / "team.yaml").write_text(DATASET, encoding="utf-8")
    report = await run_eval(Dataset.load(tmp_path / "team.yaml"), make_agent, concurrency=1)
    [case] = report.cases
    verdicts = [(c.name, c.passed) for c in case.checks]
    assert verdicts == [
        ("tool_called('calculator', args={'expression': '6*7'})", True),
        ("tool_called('helper')", True),
        ("tool_called('calculator', nested=False)", False),
        ("no_tool_called('calculator')", False),
        ("no_tool_called('calculator', nested=False)", True),
        ("max_tool_calls(1)", False),
        ("max_tool_calls(1, nested=False)", True),
        ("contains('42')", True),
    ], [(c.name, c.passed, c.reason) for c in case.checks]
    reasons = {c.name: c.reason for c in case.checks}
    assert reasons["no_tool_called('calculator')"] == "called calculator (by helper)"
    assert reasons["max_tool_calls(1)"] == "2 tool calls (at most 1)"
    [run] = case.runs
    assert [m.role for m in run.messages] == ["user", "assistant", "toolResult", "assistant"]
