"""Two invocations of one sub-agent at once, whose model numbers its calls (DESIGN §17): the
lead runs `mid` twice in one batch, and each `mid` asks `leaf` as its own `call_0` while the
other is still running. The run timeline and a batch's `sub_agent_messages` keyed a
sub-agent's messages by its agent path and that call's id alone: the two leaves' runs became
one lane, placed under the lead's own `call_0`. They follow each event's `tool_call_path`
now; a batch record written before keeps being read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent, AgentTool, Context, event_to_dict
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.batch import TaskResult, run_batch_async
from yiemagent.evals import Case, EvalRun
from yiemagent.telemetry import Bar, Timeline, build_timeline, timeline_from_event_lines
from yiemagent.types.messages import text_of

pytestmark = pytest.mark.timeout(120)

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"city": {"type": "string"}}}


def said(message: Any) -> str:
    """A message's text, whether its content is a string or a list of blocks."""
    content = message.content
    return content if isinstance(content, str) else text_of(content)


def lead_reply(context: Context) -> Any:
    """The lead asks `mid` about each city it was given, in one batch."""
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(faux_text("lead done"))
    cities = said(last).split()
    return faux_message(
        *(faux_tool_call("mid", {"input": c}, id=f"call_{i}") for i, c in enumerate(cities))
    )


def numbered(tool: str, key: str) -> Any:
    """A reply that passes what it is asked on to `tool` as its `call_0`, then says its
    result."""

    def reply(context: Context) -> Any:
        last = context.messages[-1]
        if last.role == "toolResult":
            return faux_message(faux_text(f"{context.system_prompt} {said(last)}"))
        return faux_message(faux_tool_call(tool, {key: said(last)}, id="call_0"))

    return reply


def team() -> Agent[Any]:
    """lead → `mid` (twice at once) → `leaf` (`call_0` in each) → `look`, which answers once
    both leaves are looking: both `mid`s are running then."""
    both_looking = asyncio.Event()
    looking: list[str] = []

    async def look(call_id: str, args: dict[str, Any], *_: Any) -> str:
        looking.append(args["city"])
        if len(looking) == 2:
            both_looking.set()
        await asyncio.wait_for(both_looking.wait(), 30)
        return f"seen {args['city']}"

    def agent(name: str, reply: Any, tools: list[AgentTool]) -> Agent[Any]:
        fm = FauxModel([reply] * 10)
        return Agent(f"{name}:", fm.model, stream_fn=fm.stream_fn, name=name, tools=tools)

    tool = AgentTool("look", "Look", "look", SCHEMA, look, parallel=True)
    leaf = agent("leaf", numbered("look", "city"), [tool])
    mid = agent("mid", numbered("leaf", "input"), [leaf.as_tool()])
    return agent("lead", lead_reply, [mid.as_tool()])


def check_lanes(timeline: Timeline) -> None:
    """Each `mid` call is followed by its run's lane, each `leaf` call in it by that leaf
    run's lane, which looks at the city the lead gave that `mid`."""
    bars = [bar for turn in timeline.turns for bar in turn.bars]
    one_mid = [
        ("tool", "", "mid"),
        ("model", "mid", ""),
        ("tool", "mid", "leaf"),
        ("model", "mid › leaf", ""),
        ("tool", "mid › leaf", "look"),
        ("model", "mid › leaf", ""),
        ("model", "mid", ""),
    ]
    shape = [(b.kind, b.lane, b.label if b.kind == "tool" else "") for b in bars]
    assert shape == [("model", "", ""), *one_mid, *one_mid, ("model", "", "")]
    assert len({b.id for b in bars}) == len(bars)

    def city(bar: Bar) -> str:
        arguments = json.loads(bar.details["arguments"])
        return str(arguments.get("input") or arguments.get("city"))

    mids = [i for i, b in enumerate(bars) if b.label == "mid"]
    assert sorted(city(bars[i]) for i in mids) == ["Lima", "Oslo"]
    for at in mids:
        assert city(bars[at + 2]) == city(bars[at]) == city(bars[at + 4])
        assert bars[at + 4].details["result"] == f"seen {city(bars[at])}"


async def test_each_leaf_run_has_its_own_lane_under_the_call_that_ran_it() -> None:
    lead = team()
    lines: list[str] = []
    lead.subscribe(lambda event, signal: lines.append(json.dumps(event_to_dict(event))))
    await lead.prompt("Oslo Lima")

    check_lanes(timeline_from_event_lines(lines))


@pytest.mark.parametrize("path", [None, "call_0"], ids=["no path", "a string path"])
async def test_a_log_without_call_paths_puts_a_deeper_run_under_its_agents_call(
    path: str | None,
) -> None:
    """A log written before events had call paths cannot tell the two leaf runs apart: they
    share one lane, under the first `leaf` call of a `mid` run, not under the lead's own
    `call_0` (which ran `mid`). A path that is no list of ids (a hand-edited log's string)
    counts as none."""
    lead = team()
    lines: list[str] = []

    def log(event: Any, signal: Any) -> None:
        line = event_to_dict(event)
        line.pop("tool_call_path", None)
        if path is not None and line.get("type") == "nested_agent":
            line["tool_call_path"] = path
        lines.append(json.dumps(line))

    lead.subscribe(log)
    await lead.prompt("Oslo Lima")

    bars = [bar for turn in timeline_from_event_lines(lines).turns for bar in turn.bars]
    shape = [(b.kind, b.lane, b.label if b.kind == "tool" else "") for b in bars]
    first = shape.index(("model", "mid › leaf", ""))
    assert shape[first - 1] == ("tool", "mid", "leaf")
    assert shape[first : first + 6].count(("tool", "mid › leaf", "look")) == 2
    assert shape.count(("tool", "mid", "leaf")) == 2
    assert shape[1:3] == [("tool", "", "mid"), ("model", "mid", "")]


async def test_a_batch_record_keeps_each_sub_agent_runs_call_path(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    report = await run_batch_async(
        [{"id": "t", "prompt": "Oslo Lima"}],
        team,
        results=results,
        keep_messages=True,
        progress=False,
    )
    assert report.ok == 1
    [line] = results.read_text(encoding="utf-8").splitlines()
    stored = TaskResult.from_json(json.loads(line))
    kept = stored.sub_agent_messages or []
    assert len(kept) == 12  # per mid: 2 model calls and leaf's result; per leaf: 2 and look's
    for raw in kept:
        assert raw["tool_call_path"][-1] == raw["tool_call_id"]
        assert len(raw["tool_call_path"]) == len(raw["agent_path"]) - 1
    leaves = {tuple(raw["tool_call_path"]) for raw in kept if raw["agent_path"][-1] == "leaf"}
    assert leaves == {("call_0", "call_0"), ("call_1", "call_0")}

    run = EvalRun.from_result(Case("t", "Oslo Lima"), 0, stored)
    check_lanes(build_timeline(run.messages, nested=run.sub_agent_runs))

    # a line written before records had call paths: read, each run under its agent's call
    for raw in kept:
        del raw["tool_call_path"]
    older = EvalRun.from_result(Case("t", "Oslo Lima"), 0, stored)
    assert older.sub_agent_messages == run.sub_agent_messages
    bars = [
        b for t in build_timeline(older.messages, nested=older.sub_agent_runs).turns for b in t.bars
    ]
    first = next(i for i, b in enumerate(bars) if b.lane == "mid › leaf")
    assert (bars[first - 1].lane, bars[first - 1].label) == ("mid", "leaf")
    assert sum(b.lane == "mid › leaf" for b in bars) == 6
