"""`yiem eval` of an agent whose tool is held for approval (DESIGN §14, §19): without
`--yes` the run fails its `run` check saying how to approve in this command (not `yiem
batch`'s option) and the tool never runs; with `--yes` the call is approved, runs once,
and the case passes; `run_eval(approve=True)` is the same in Python."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests._yiem import yiem_in
from yiemagent.evals import Case, contains, run_eval

pytestmark = pytest.mark.timeout(300)

FACTORY = '''\
from pathlib import Path

from yiemagent import Agent, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call

REFUNDS = Path(__file__).resolve().parent / "refunds.txt"


@tool(requires_approval=True)
def refund_order(order_id: str) -> str:
    """Refund an order in full.

    Args:
        order_id: the order number.
    """
    with REFUNDS.open("a") as refunds:
        refunds.write(order_id + "\\n")
    return f"refunded {order_id}"


def brain(context):
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(faux_text("Done: " + last.content[0].text))
    return faux_message(faux_tool_call("refund_order", {"order_id": "B200"}))


FAUX = FauxModel([brain] * 100)


def make_agent():
    return Agent(model=FAUX.model, tools=[refund_order])
'''

DATASET = """\
cases:
  - name: refund
    input: Refund order B200.
    checks:
      - tool_called: {name: refund_order, args: {order_id: B200}}
      - contains: refunded B200
"""


def app(folder: Path) -> None:
    (folder / "shop_agents.py").write_text(FACTORY)
    (folder / "evals.yaml").write_text(DATASET)


def test_a_held_call_fails_its_run_and_says_how_to_approve_here(tmp_path: Path) -> None:
    app(tmp_path)
    held = yiem_in(
        tmp_path, "eval", "evals.yaml", "--agent", "shop_agents:make_agent", "--json", "r.json"
    )
    assert held.returncode == 1, held.stdout + held.stderr
    (case,) = json.loads((tmp_path / "r.json").read_text())["cases"]
    run = next(c for c in case["checks"] if c["name"] == "run")
    assert run["reason"].startswith(
        'held for approval, not run: refund_order({"order_id": "B200"})'
    )
    assert "yiem eval --yes" in run["reason"] and "yiem batch" not in run["reason"]
    assert not (tmp_path / "refunds.txt").exists()  # nobody approved: never run


def test_yes_approves_and_the_tool_runs_once(tmp_path: Path) -> None:
    app(tmp_path)
    approved = yiem_in(tmp_path, "eval", "evals.yaml", "--agent", "shop_agents:make_agent", "--yes")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert "1/1 cases passed" in approved.stdout
    assert (tmp_path / "refunds.txt").read_text() == "B200\n"


async def test_run_eval_approve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "shop_agents", raising=False)
    from shop_agents import make_agent  # type: ignore[import-not-found]

    case = Case("refund", "Refund order B200.", [contains("refunded B200")])
    report = await run_eval([case], make_agent, approve=True, progress=False)
    assert (report.passed, report.failed) == (1, 0)
    assert (tmp_path / "refunds.txt").read_text() == "B200\n"
