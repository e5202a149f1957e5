"""A team's model calls recorded and replayed (DESIGN §17, §19): a lead that thinks (with a
signature), asks a sub-agent twice at once and hands the conversation over records every
agent's calls into one cassette through one `record()` model; `replay` answers them all
offline, the parallel sub-runs' in whatever order they come, into the same transcript,
and a sub-agent changed since is a `CassetteMismatch` that its error results name."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent, ToolResultMessage, message_to_dict
from yiemagent.agent import AgentRunError
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from yiemagent.testing import record, replay
from yiemagent.types import Context, Model, text_of

pytestmark = pytest.mark.timeout(120)


def brain(context: Context) -> Any:
    """The lead thinks and asks the helper twice at once, then hands over to the closer;
    the helper answers what it was asked; the closer sums up."""
    last = context.messages[-1]
    if context.system_prompt == "Lead.":
        if last.role == "toolResult":
            return faux_message(faux_tool_call("transfer_to_closer", {"reason": "wrap up"}))
        first, second = text_of(last.content).split()
        return faux_message(
            faux_thinking("ask both", signature="sig-1"),
            faux_tool_call("helper", {"input": first}),
            faux_tool_call("helper", {"input": second}),
        )
    if context.system_prompt.startswith("Help"):
        return faux_message(faux_text(f"helped with {text_of(last.content)}"))
    results = [text_of(m.content) for m in context.messages if m.role == "toolResult"]
    return faux_message(faux_text("closed: " + "; ".join(results[:2])))


def team(model: Model, helper_prompt: str = "Help.") -> Agent[Any]:
    helper = Agent(helper_prompt, model, name="helper")
    closer = Agent("Closer.", model, name="closer")
    return Agent("Lead.", model, name="lead", tools=[helper.as_tool()], handoffs=[closer])


def timeless(agent: Agent[Any]) -> list[str]:
    """The transcript as JSON without times."""
    return [
        re.sub(r'"(timestamp|duration_ms)": \d+', "", json.dumps(message_to_dict(m)))
        for m in agent.state.messages
    ]


async def test_a_teams_calls_replay_offline_into_the_same_transcript(tmp_path: Path) -> None:
    cassette = tmp_path / "team.jsonl"
    fm = FauxModel([brain] * 20)  # kept: the faux provider finds it while it lives
    live = team(record(fm.model, cassette))
    recorded = await live.prompt("north south")
    assert recorded.agent == "closer"
    assert recorded.text == "closed: helped with north; helped with south"
    assert len(cassette.read_text().splitlines()) == 5  # lead, two helpers, lead, closer

    again = team(replay(cassette))
    replayed = await again.prompt("north south")

    assert (replayed.text, replayed.agent) == (recorded.text, "closer")
    assert timeless(again) == timeless(live)
    thinking = again.state.messages[1].content[0]  # type: ignore[union-attr]
    assert thinking.signature == "sig-1"  # type: ignore[union-attr]


async def test_a_sub_agent_changed_since_the_recording_is_a_mismatch_its_results_name(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "team.jsonl"
    fm = FauxModel([brain] * 20)
    await team(record(fm.model, cassette)).prompt("north south")

    lead = team(replay(cassette), helper_prompt="Help briefly.")
    with pytest.raises(AgentRunError, match="CassetteMismatch"):
        await lead.prompt("north south")  # the lead's next request holds the errors

    failed = [m for m in lead.state.messages if isinstance(m, ToolResultMessage) and m.is_error]
    assert [m.details["agent"] for m in failed] == ["helper", "helper"]
    for message in failed:
        said = text_of(message.content)
        assert said.startswith("agent 'helper' failed: CassetteMismatch: request"), said
        assert '- "system_prompt": "Help.",' in said
        assert '+ "system_prompt": "Help briefly.",' in said
