"""`relevant`: a first-round call of a tool the request does not name, carrying words, is
dropped."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    CALCULATOR,
    GET_TIME,
    answer,
    conversation,
    notes,
    reply,
    run,
    scene,
)
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, Dropped, Relevant


def test_a_tool_the_request_does_not_name_is_dropped() -> None:
    at = scene(conversation("Who wrote Hamlet?"), [GET_TIME])
    assert isinstance(Relevant().judge(GET_TIME, {"place": "Hamlet"}, at), Dropped)


def test_a_named_tool_and_a_call_of_numbers_only_are_kept() -> None:
    named = scene(conversation("What time is it in Oslo?"), [GET_TIME])
    assert Relevant().judge(GET_TIME, {"place": "Oslo"}, named) is None
    numbers = scene(conversation("And 12 * 7?"), [CALCULATOR])
    assert Relevant().judge(CALCULATOR, {"expression": "12 * 7"}, numbers) is None


async def test_through_the_provider_with_and_without_the_rule(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("Who wrote Hamlet?")
    fake([reply(("get_time", {"place": "Hamlet"})), answer("Shakespeare.")])
    answered = await run(messages, [GET_TIME])
    assert answered.text == "Shakespeare."
    assert [n["action"] for n in notes(answered, "relevant")] == ["dropped"]
    fake([reply(("get_time", {"place": "Hamlet"}))])
    called = await run(messages, [GET_TIME], DEFAULT_POLICY.without("relevant"))
    assert called.tool_calls[0].arguments == {"place": "Hamlet"}
