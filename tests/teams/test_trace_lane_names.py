"""The trace page's rows of a sub-agent (an `as_tool` call) name the call before the agent:
the name column is 150 px wide, and "mathematician › model qwen2.5-co…" showed as
"mathematician › …" on every row, model and tool alike."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests._chromium import chromium_page
from yiemagent import Agent, AgentEvent, event_to_dict, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.cli.main import main

pytestmark = pytest.mark.timeout(120)  # Chromium starts: seconds on a loaded machine


@tool
def calculator(expression: str) -> str:
    """Work out an arithmetic expression.

    Args:
        expression: The expression, e.g. "17 * 23".
    """
    return "391"


async def test_a_sub_agents_rows_say_model_or_tool_first(tmp_path: Path) -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("mathematician", {"input": "17 * 23"})),
            faux_message(faux_tool_call("calculator", {"expression": "17 * 23"})),
            "391",
            "It is 391.",
        ],
        model_id="a-long-model-name-that-fills-the-column",
    )
    sub = Agent("Do arithmetic.", name="mathematician", model=fm.model, tools=[calculator])
    lead = Agent("Ask the mathematician.", name="lead", model=fm.model, tools=[sub.as_tool()])
    events: list[str] = []
    lead.subscribe(lambda event, _signal: events.append(_line(event)))
    await lead.prompt("What is 17 * 23?")
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join(events) + "\n")
    page = tmp_path / "trace.html"
    assert main(["trace", str(log), "--html", str(page)]) == 0
    names = await asyncio.to_thread(_lane_names, page, tmp_path)
    assert [text for text, _title in names] == [
        "model a-long-model-name-that-fills-the-column (mathematician)",
        "tool calculator (mathematician)",
        "model a-long-model-name-that-fills-the-column (mathematician)",
    ]
    assert names[1][1] == "mathematician › tool calculator"  # the whole name on hover


def _line(event: AgentEvent) -> str:
    """The event as `yiem run --json` writes it."""
    return json.dumps(event_to_dict(event))


def _lane_names(page_path: Path, tmp_path: Path) -> list[tuple[str, str]]:
    with chromium_page(tmp_path / "profile", width=1200, height=520) as page:
        page.goto(page_path.as_uri())
        rows = page.locator(".row.lane .name")
        return [
            (rows.nth(i).inner_text(), rows.nth(i).get_attribute("title") or "")
            for i in range(rows.count())
        ]
