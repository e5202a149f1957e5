"""The usage of a sub-run held for approval and resumed (DESIGN §13, §17): each token counts
once in the parent's `UsageLimits` — in the run that spent it — and once in the
transcript, on the result of the call that ran the sub-agent."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import Agent, ToolResultMessage, UsageLimitExceeded
from yiemagent.types import Usage, UsageLimits, transcript_usage

from ..approvals._kit import recording_tool
from ._kit import answer, calls, scripted

LIMIT = UsageLimits(max_input_tokens=120)


def team(after_hold: int) -> tuple[Agent[Any], list[str]]:
    """`lead` (limit 120 input tokens a run) asks `researcher`, whose first model call (100
    tokens) holds `charge`; after the approval its answer costs `after_hold` tokens."""
    ran: list[str] = []
    researcher, _ = scripted(
        "researcher",
        [
            calls(("charge", {"n": 5}), usage=Usage(input=100)),
            answer("charged", Usage(input=after_hold)),
        ],
        tools=[recording_tool("charge", ran, requires_approval=True)],
    )
    lead, _ = scripted(
        "lead",
        [
            calls(("researcher", {"input": "charge 5"}), usage=Usage(input=10)),
            answer("done", Usage(input=1)),
        ],
        tools=[researcher.as_tool()],
        usage_limits=LIMIT,
    )
    return lead, ran


async def test_the_resumed_run_counts_only_what_it_spent() -> None:
    """The held run spent 110 tokens (10 + the sub-run's 100), the resumed one 51 (the
    sub-run's 50 + 1): both under 120. The resumed run counted the sub-run's 100 again,
    from the result that carries the sub-run's total, and stopped at "used 150 input
    tokens" before its last model call; the same calls made by one agent passed."""
    lead, ran = team(after_hold=50)
    await lead.prompt("go")
    [pending] = lead.pending_approvals
    lead.approve(pending.tool_call_id)

    reply = await lead.resume()

    assert reply.text == "done" and len(ran) == 1
    messages = lead.state.messages
    [result] = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert result.usage is not None and result.usage.input == 150  # the sub-run's total
    assert transcript_usage(messages).input == 161  # each token once


async def test_the_resumed_run_still_stops_at_its_limit_with_what_it_spent() -> None:
    """After the approval the sub-run spends 130 tokens: the resumed run reaches the limit
    and says the 130 it used, not the sub-run's 230 of both runs."""
    lead, _ = team(after_hold=130)
    await lead.prompt("go")
    [pending] = lead.pending_approvals
    lead.approve(pending.tool_call_id)

    with pytest.raises(UsageLimitExceeded, match=r"max_input_tokens=120 \(used 130 input"):
        await lead.resume()
