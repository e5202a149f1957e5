"""`unbacked_options`: optional values nothing backs are left out."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import FIND_HOTELS, conversation, notes, reply, run, scene
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, Repaired, UnbackedOptions


def test_an_optional_value_nobody_gave_is_left_out() -> None:
    messages = conversation("Find hotels in Lyon.")
    verdict = UnbackedOptions().judge(
        FIND_HOTELS, {"city": "Lyon", "stars": 5}, scene(messages, [FIND_HOTELS])
    )
    assert isinstance(verdict, Repaired)
    assert verdict.arguments == {"city": "Lyon"}


def test_an_optional_value_the_user_gave_stays() -> None:
    messages = conversation("Find 5 star hotels in Lyon.")
    arguments = {"city": "Lyon", "stars": 5}
    assert UnbackedOptions().judge(FIND_HOTELS, arguments, scene(messages, [FIND_HOTELS])) is None


async def test_through_the_provider_with_and_without_the_rule(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("Find hotels in Lyon.")
    fake([reply(("find_hotels", {"city": "Lyon", "stars": 5}))])
    trimmed = await run(messages, [FIND_HOTELS])
    assert trimmed.tool_calls[0].arguments == {"city": "Lyon"}
    assert notes(trimmed, "unbacked_options")[0]["action"] == "repaired"
    fake([reply(("find_hotels", {"city": "Lyon", "stars": 5}))])
    kept = await run(messages, [FIND_HOTELS], DEFAULT_POLICY.without("unbacked_options"))
    assert kept.tool_calls[0].arguments == {"city": "Lyon", "stars": 5}
