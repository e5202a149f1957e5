"""An eval of a team two levels deep (DESIGN §17, §19; docs/evals.md "Checks",
"Evals in CI without a model"): the lead asks `mid`, which asks `leaf`, which calls the
calculator. Its tokens and cost count every level once, `max_turns` counts the lead's own
model calls, a tool check's reason names the sub-agent that made the call, and the whole
team's calls recorded into one cassette replay offline, repeats and all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.batch import BatchTask
from yiemagent.evals import Dataset, run_eval
from yiemagent.testing import record, replay
from yiemagent.tools import tool
from yiemagent.types import Context, Cost, Model, Usage, text_of

USAGE = Usage(input=10, output=5, total_tokens=15, cost=Cost(total=0.001))
_ALIVE: list[FauxModel] = []  # the faux provider finds a model while its FauxModel lives

DATASET = """
cases:
  - name: deep
    input: What is 17 * 23?
    checks:
      - contains: "391"
      - tool_called: {name: calculator, args: {expression: "17 * 23"}}
      - tool_called: {name: calculator, args: {expression: "1 + 1"}}
      - tool_called: {name: calculator, nested: false}
      - no_tool_called: calculator
      - max_turns: 2
      - max_tool_calls: 3
      - max_cost: 0.0055
"""


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: digits, + - * / and spaces
    """
    if not set(expression) <= set("0123456789+-*/ "):
        raise ValueError(f"not arithmetic: {expression!r}")
    return str(eval(expression))  # only digits and operators reach here


def brain(context: Context) -> Any:
    """Each agent delegates (or, the leaf, calculates) once, then passes the result up."""
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(
            faux_text(f"{context.system_prompt} {text_of(last.content)}"), usage=USAGE
        )
    tool_name = {"lead:": "mid", "mid:": "leaf", "leaf:": "calculator"}[context.system_prompt]
    arguments = {"expression": "17 * 23"} if tool_name == "calculator" else {"input": "17*23"}
    return faux_message(faux_tool_call(tool_name, arguments), usage=USAGE)


def team(model: Model) -> Agent[Any]:
    leaf = Agent("leaf:", model, name="leaf", tools=[calculator])
    mid = Agent("mid:", model, name="mid", tools=[leaf.as_tool()])
    return Agent("lead:", model, name="lead", tools=[mid.as_tool()])


def make_agent(task: BatchTask) -> Agent[Any]:
    """The team on a faux model (`metadata["cassette"]` absent), recording into that
    cassette (`"mode": "record"`) or replaying it."""
    cassette = task.metadata.get("cassette")
    if cassette is not None and task.metadata["mode"] == "replay":
        return team(replay(cassette))
    fm = FauxModel([brain] * 100)
    _ALIVE.append(fm)
    return team(fm.model if cassette is None else record(fm.model, cassette))


def dataset(tmp_path: Path, **metadata: Any) -> Dataset:
    (tmp_path / "deep.yaml").write_text(DATASET, encoding="utf-8")
    loaded = Dataset.load(tmp_path / "deep.yaml")
    for case in loaded.cases:
        case.metadata.update(metadata)
    return loaded


async def test_every_level_counts_once_and_a_reason_names_who_called(tmp_path: Path) -> None:
    report = await run_eval(dataset(tmp_path), make_agent, concurrency=1)

    [case] = report.cases
    assert case.tokens == 6 * 15  # two model calls on each of three levels
    assert abs(case.cost_usd - 0.006) < 1e-9
    assert [(c.name, c.passed, c.reason) for c in case.checks] == [
        ("contains('391')", True, "answer has '391'"),
        (
            "tool_called('calculator', args={'expression': '17 * 23'})",
            True,
            'called calculator({"expression": "17 * 23"}) (by leaf)',
        ),
        (
            "tool_called('calculator', args={'expression': '1 + 1'})",
            False,
            'calculator called with other arguments: {"expression": "17 * 23"} (by leaf)',
        ),
        (
            "tool_called('calculator', nested=False)",
            False,
            "calculator not called (called: mid)",
        ),
        ("no_tool_called('calculator')", False, "called calculator (by leaf)"),
        ("max_turns(2)", True, "2 turns (at most 2)"),
        ("max_tool_calls(3)", True, "3 tool calls (at most 3)"),
        ("max_cost(0.0055)", False, "$0.006000 (at most $0.0055)"),
    ]


async def test_a_teams_eval_replays_from_its_cassette_repeats_and_all(tmp_path: Path) -> None:
    cassette = tmp_path / "team.jsonl"
    recorded = await run_eval(
        dataset(tmp_path, cassette=str(cassette), mode="record"), make_agent, repeat=2
    )
    assert len(cassette.read_text(encoding="utf-8").splitlines()) == 2 * 6

    replayed = await run_eval(
        dataset(tmp_path, cassette=str(cassette), mode="replay"), make_agent, repeat=2
    )

    def verdicts(report: Any) -> list[Any]:
        return [(c.name, c.passed, c.reason) for c in report.cases[0].checks]

    assert [r.status for r in replayed.cases[0].runs] == ["ok", "ok"]
    assert verdicts(replayed) == verdicts(recorded)
    assert replayed.cases[0].tokens == recorded.cases[0].tokens == 2 * 6 * 15


async def test_a_teams_run_timeline_gives_each_sub_agent_a_lane(tmp_path: Path) -> None:
    """The report's run page was built from the lead's messages alone: mid, leaf and the
    calculator the leaf called did not show, where `yiem trace` gives each sub-agent a
    lane under the call that ran it (docs/teams.md)."""
    report = await run_eval(dataset(tmp_path), make_agent, concurrency=1)

    report.to_html(tmp_path / "report.html")

    [page] = (tmp_path / "report.runs").iterdir()
    timeline = page.read_text(encoding="utf-8")
    assert '"lane": "mid"' in timeline and '"lane": "mid › leaf"' in timeline
    assert '"label": "calculator"' in timeline  # the leaf's call, two levels down
