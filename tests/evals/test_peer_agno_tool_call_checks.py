"""The tool checks of an eval as agno checks its ToolCallScorer
(tests/unit/scorer/test_tool_call_scorer.py), through `run_eval` on agents whose tools
really run (DESIGN §19). Ours differs by choice in two places, written in docs/evals.md
("Checks"): arguments are compared as the tool ran with them (agno: as sent, "5" is not
5), and a call that failed or was blocked still counts as called (agno counts only calls
that ran cleanly; a check function asks that here)."""

from __future__ import annotations

from typing import Any

from yiemagent import Agent, AgentTool, BeforeToolCallResult
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.batch import BatchTask
from yiemagent.evals import (
    Case,
    CheckResult,
    Dataset,
    EvalRun,
    max_tool_calls,
    run_eval,
    tool_called,
)

SEARCH: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["query"],
}


def search(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    if args["query"] == "crash":
        raise ConnectionError("search backend down")
    return f"{args.get('limit', 10)} hits for {args['query']}"


def summarize(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    return "summary"


SCRIPTS: dict[str, list[Any]] = {
    "subset": [faux_message(faux_tool_call("search", {"query": "agno", "limit": 5})), "done"],
    "as-text": [faux_message(faux_tool_call("search", {"query": "agno", "limit": "5"})), "done"],
    "errored": [faux_message(faux_tool_call("search", {"query": "crash"})), "sorry"],
    "blocked": [faux_message(faux_tool_call("search", {"query": "secret"})), "not allowed"],
    "no-tools": ["I know this one."],
    "two": [
        faux_message(faux_tool_call("search", {"query": "a"}), faux_tool_call("summarize", {})),
        faux_message(faux_tool_call("search", {"query": "b"})),
        "done",
    ],
}


def no_secrets(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
    if ctx.args.get("query") == "secret":
        return BeforeToolCallResult(block=True, reason="secret searches are not allowed")
    return None


def make_agent(task: BatchTask) -> Agent[Any]:
    fm = FauxModel(list(SCRIPTS[task.id]))
    tools = [
        AgentTool("search", "search", "Search.", SEARCH, search),
        AgentTool("summarize", "summarize", "Summarize.", {"type": "object"}, summarize),
    ]
    return Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools, before_tool_call=no_secrets)


def search_ran_cleanly(run: EvalRun) -> CheckResult:
    """agno's ToolCallScorer: a call counts only when it ran without an error."""
    clean = [r for r in run.tool_results if r.tool_name == "search" and not r.is_error]
    return CheckResult(bool(clean), f"{len(clean)} clean search calls")


async def verdicts(case: Case) -> list[tuple[bool, str]]:
    report = await run_eval(Dataset([case]), make_agent, concurrency=1)
    [result] = report.cases
    return [(c.passed, c.reason) for c in result.checks if c.name != "run"]


async def test_expected_arguments_are_a_subset_compared_by_value() -> None:
    # test_tool_call_scorer_argument_subset
    case = Case(
        "subset",
        "search agno",
        [tool_called("search", {"query": "agno"}), tool_called("search", {"query": "other"})],
    )
    [(ok, _), (other, reason)] = await verdicts(case)
    assert ok and not other
    assert reason == 'search called with other arguments: {"query": "agno", "limit": 5}'


async def test_arguments_are_compared_as_the_tool_ran_with_them() -> None:
    # agno: "5" does not match 5; here the tool ran with 5 (its schema says integer)
    case = Case(
        "as-text",
        "search agno",
        [tool_called("search", {"limit": 5}), tool_called("search", {"limit": "5"})],
    )
    assert [ok for ok, _ in await verdicts(case)] == [True, False]


async def test_a_call_that_failed_or_was_blocked_counts_as_called_not_as_clean() -> None:
    # test_tool_call_scorer_rejects_errored / _rejects_refused: agno fails both; here the
    # model did call the tool, and a check function asks that it ran cleanly
    for name in ("errored", "blocked"):
        case = Case(name, "search", [tool_called("search"), search_ran_cleanly])
        [(called, _), (clean, reason)] = await verdicts(case)
        assert called and not clean and reason == "0 clean search calls", name


async def test_a_run_without_tools_fails_naming_what_was_called() -> None:
    # test_tool_call_scorer_no_tools_scores_zero: failed, with a reason
    case = Case("no-tools", "what is 2+2?", [tool_called("search")])
    assert await verdicts(case) == [(False, "search not called (called: no tool)")]


async def test_counts_and_calls_beyond_the_expected_ones_are_checks_of_their_own() -> None:
    # test_tool_call_scorer_set_semantics_and_additional: a name expected twice is met
    # by one call, extra calls fail only when asked (allow_additional=False)
    case = Case(
        "two",
        "search twice",
        [
            tool_called("search"),
            tool_called("search", {"query": "a"}),
            tool_called("search", times=1),
            max_tool_calls(2),
        ],
    )
    assert await verdicts(case) == [
        (True, 'called search({"query": "a"})'),
        (True, 'called search({"query": "a"})'),
        (False, "2 matching calls, expected 1"),
        (False, "3 tool calls (at most 2)"),
    ]
