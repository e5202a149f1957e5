"""`percent_fraction`: a percentage the user wrote reaches a number parameter as a
fraction."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import LOAN_PAYMENT, conversation, notes, reply, run, scene, tool
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, PercentAsFraction, Repaired


def test_a_percentage_becomes_a_fraction() -> None:
    messages = conversation("Monthly payment on 20000 at 4% a year?")
    verdict = PercentAsFraction().judge(
        LOAN_PAYMENT, {"amount": 20000, "rate": 4}, scene(messages, [LOAN_PAYMENT])
    )
    assert isinstance(verdict, Repaired)
    assert verdict.arguments == {"amount": 20000, "rate": 0.04}


def test_integer_parameters_and_ones_asking_for_a_percentage_keep_it() -> None:
    messages = conversation("Raise it by 4%.")
    whole = tool("raise_by", {"percent": {"type": "integer"}})
    said = tool("raise_by", {"rate": {"type": "number", "description": "as a percentage"}})
    assert PercentAsFraction().judge(whole, {"percent": 4}, scene(messages, [whole])) is None
    assert PercentAsFraction().judge(said, {"rate": 4}, scene(messages, [said])) is None


async def test_through_the_provider_with_and_without_the_rule(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("Use loan_payment: 20000 at 4% a year.")
    fake([reply(("loan_payment", {"amount": 20000, "rate": 4}))])
    fixed = await run(messages, [LOAN_PAYMENT])
    assert fixed.tool_calls[0].arguments == {"amount": 20000, "rate": 0.04}
    assert notes(fixed, "percent_fraction")[0]["action"] == "repaired"
    fake([reply(("loan_payment", {"amount": 20000, "rate": 4}))])
    kept = await run(messages, [LOAN_PAYMENT], DEFAULT_POLICY.without("percent_fraction"))
    assert kept.tool_calls[0].arguments == {"amount": 20000, "rate": 4}
