"""docs/evals.md, "Evals in CI without a model": `yiem eval --agent factory:live` records a
team's model calls (a router handing over to a specialist with a tool file) into a cassette,
`--agent factory:replayed` runs the same dataset from it with no model, and a case edited
since the recording fails with the `CassetteMismatch` that names the difference. The
factory module sits in the folder `yiem eval` runs in, as the doc's does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._yiem import yiem_in

pytestmark = pytest.mark.timeout(300)

TEAM = """\
[agents.router]
system_prompt = "Route."
handoffs = ["math"]

[agents.math]
description = "Arithmetic."
system_prompt = "Calculate."
tools = ["math"]
"""

CALCULATOR = '''\
from yiemagent import tool


@tool
def calculator(expression: str) -> str:
    """Evaluate a product.

    Args:
        expression: two whole numbers joined by *.
    """
    a, b = expression.split("*")
    return str(int(a) * int(b))


get_tool = lambda: calculator
'''

# The faux model plays both agents: the router hands over, the specialist calls the
# calculator with the question's product, then answers with its result. Module level: the
# faux provider finds a model while it lives.
FACTORY = """\
from pathlib import Path

from yiemagent import load_agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.testing import record, replay
from yiemagent.types import text_of

HERE = Path(__file__).resolve().parent
CASSETTE = HERE / "cassettes" / "evals.jsonl"


def brain(context):
    last = context.messages[-1]
    if context.system_prompt == "Route.":
        return faux_message(faux_tool_call("transfer_to_math", {}))
    if last.role == "toolResult" and last.tool_name == "calculator":
        return faux_message(faux_text("It is " + text_of(last.content) + "."))
    question = next(m for m in context.messages if m.role == "user")
    product = text_of(question.content).removeprefix("What is ").rstrip("?")
    return faux_message(faux_tool_call("calculator", {"expression": product}))


FAUX = FauxModel([brain] * 100)


def live():
    return load_agent(HERE / "team.toml", model=record(FAUX.model, CASSETTE))


def replayed():
    return load_agent(HERE / "team.toml", model=replay(CASSETTE))
"""

DATASET = """\
cases:
  - name: product
    input: What is 17 * 23?
    checks: [{contains: "391"}, {tool_called: calculator}, {tool_called: transfer_to_math}]
  - name: another
    input: What is 12 * 12?
    checks: [{contains: "144"}]
"""


def app(folder: Path) -> None:
    (folder / "math").mkdir()
    (folder / "math" / "calculator.py").write_text(CALCULATOR)
    (folder / "team.toml").write_text(TEAM)
    (folder / "factory.py").write_text(FACTORY)
    (folder / "cassettes").mkdir()
    (folder / "evals.yaml").write_text(DATASET)


def test_an_eval_recorded_once_replays_with_no_model(tmp_path: Path) -> None:
    app(tmp_path)
    recorded = yiem_in(tmp_path, "eval", "evals.yaml", "--agent", "factory:live")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    cassette = tmp_path / "cassettes" / "evals.jsonl"
    assert len(cassette.read_text().splitlines()) == 6  # router, call, answer; two cases

    (tmp_path / "factory.py").write_text(FACTORY.replace("[brain] * 100", "[]"))  # no model
    replayed = yiem_in(
        tmp_path, "eval", "evals.yaml", "--agent", "factory:replayed", "--json", "r.json"
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["passed"], report["failed"]) == (2, 0)

    (tmp_path / "evals.yaml").write_text(DATASET.replace("12 * 12", "12 * 13"))
    changed = yiem_in(tmp_path, "eval", "evals.yaml", "--agent", "factory:replayed")
    assert changed.returncode == 1
    assert "CassetteMismatch" in changed.stdout + changed.stderr
    # the table's cell of the failed case shows what changed, within its 90 characters
    [row] = [line for line in changed.stdout.splitlines() if "CassetteMismatch" in line]
    assert '17 * 23?" → "' in row and '12 * 13?" at' in row, row


def test_a_repeated_eval_shows_what_changed_in_a_mismatch(tmp_path: Path) -> None:
    """With `--repeat` the cell starts "run: failed 2/2 runs: "; the difference the
    `CassetteMismatch` leads with stays within the cell's width."""
    app(tmp_path)
    recorded = yiem_in(tmp_path, "eval", "evals.yaml", "--agent", "factory:live")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    (tmp_path / "factory.py").write_text(FACTORY.replace("[brain] * 100", "[]"))  # no model
    (tmp_path / "evals.yaml").write_text(DATASET.replace("12 * 12", "12 * 13"))
    changed = yiem_in(
        tmp_path, "eval", "evals.yaml", "--agent", "factory:replayed", "--repeat", "2"
    )
    assert changed.returncode == 1, changed.stdout + changed.stderr
    lines = changed.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "2/2 runs" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("└"))
    # the cell folds over lines; spaces left out, as the fold may fall on one
    cell = "".join("".join(line.split("│")[-2].split()) for line in lines[start:end])
    assert '17*23?"→"' in cell and '12*13?"at' in cell, changed.stdout
