"""A handoff's transfer call and `UsageLimits.max_tool_calls` (DESIGN §13, §17): handing
the conversation over is no tool call (`max_handoffs` bounds transfers), so the cap counts
the agents' own tools only, before and after a transfer; a reached token or cost limit still
refuses a transfer, as it refuses any call."""

from __future__ import annotations

import pytest

from yiemagent import Handoff, ToolResultMessage, UsageLimitExceeded, UsageLimits
from yiemagent.types import Usage, text_of

from ..approvals._kit import transcript_problems
from ._kit import calls, scripted, slow_tool


def results_of(messages: list[object]) -> list[tuple[str, bool, str]]:
    return [
        (m.tool_name, m.is_error, text_of(m.content))
        for m in messages
        if isinstance(m, ToolResultMessage)
    ]


async def test_a_target_runs_its_tool_under_a_cap_of_one_after_the_transfer() -> None:
    """The transfer counted as the run's one tool call, so the target's first call was
    refused ("max_tool_calls=1 (used 1 tool calls)") and the run ended on the limit."""
    log: list[tuple[str, str, float]] = []
    billing, _ = scripted(
        "billing",
        [calls(("invoices", {"n": 7})), "Invoice 7 is paid."],
        tools=[slow_tool("invoices", log, 0)],
    )
    router, _ = scripted(
        "router",
        [calls(("transfer_to_billing", {"reason": "an invoice"}))],
        handoffs=[Handoff(billing)],
        usage_limits=UsageLimits(max_tool_calls=1),
    )

    reply = await router.prompt("Is invoice 7 paid?")

    assert reply.text == "Invoice 7 is paid." and reply.agent == "billing"
    assert [(name, error) for name, error, _ in results_of(router.state.messages)] == [
        ("transfer_to_billing", False),
        ("invoices", False),
    ]
    assert [what for _, what, _ in log] == ["start", "end"]
    assert transcript_problems(router.state.messages) == []


async def test_a_transfer_after_the_cap_is_used_up_still_hands_over() -> None:
    """The router's own tool used the cap; its transfer, a call too, was refused, and the
    conversation stayed with an agent that could not answer it."""
    log: list[tuple[str, str, float]] = []
    billing, _ = scripted("billing", ["Billing here."])
    router, _ = scripted(
        "router",
        [calls(("note", {"n": 1})), calls(("transfer_to_billing", {}))],
        tools=[slow_tool("note", log, 0)],
        handoffs=[Handoff(billing)],
        usage_limits=UsageLimits(max_tool_calls=1),
    )

    reply = await router.prompt("Help with my invoice.")

    assert reply.text == "Billing here." and reply.agent == "billing"
    assert [(name, error) for name, error, _ in results_of(router.state.messages)] == [
        ("note", False),
        ("transfer_to_billing", False),
    ]


async def test_a_token_limit_reached_still_refuses_a_transfer() -> None:
    billing, billing_fm = scripted("billing", ["Billing here."])
    transfer = calls(("transfer_to_billing", {}), usage=Usage(input=100, total_tokens=100))
    router, _ = scripted(
        "router",
        [transfer],
        handoffs=[Handoff(billing)],
        usage_limits=UsageLimits(max_input_tokens=50),
    )

    with pytest.raises(UsageLimitExceeded):
        await router.prompt("Help with my invoice.")

    [(name, error, text)] = results_of(router.state.messages)
    assert name == "transfer_to_billing" and error
    assert "max_input_tokens=50 (used 100 input tokens)" in text
    assert billing_fm.call_count == 0 and router.state.active_agent == "router"
