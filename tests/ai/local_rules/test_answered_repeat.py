"""`answered_repeat`: a call identical to an answered one is dropped and the reply asked
again without that tool."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    GET_WEATHER,
    answer,
    conversation,
    notes,
    reply,
    run,
    scene,
)
from yiemagent.ai.providers.local.rules import AnsweredRepeat, Dropped

_ASKED = conversation(
    "Weather in Oslo and in Bergen?", ("get_weather", {"city": "Oslo"}, "Oslo: 3 C, rain")
)


def test_the_answered_call_is_dropped_and_a_new_one_kept() -> None:
    at = scene(_ASKED, [GET_WEATHER])
    verdict = AnsweredRepeat().judge(GET_WEATHER, {"city": "Oslo"}, at)
    assert isinstance(verdict, Dropped) and verdict.ask_again
    assert AnsweredRepeat().judge(GET_WEATHER, {"city": "Bergen"}, at) is None


async def test_the_drop_is_in_the_details_and_the_answer_follows(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake([reply(("get_weather", {"city": "Oslo"})), answer("Rain in Oslo.")])
    message = await run(_ASKED, [GET_WEATHER])
    assert (message.stop_reason, message.text) == ("stop", "Rain in Oslo.")
    assert [n["action"] for n in notes(message, "answered_repeat")] == ["dropped"]
    assert len(runtime.requests) == 2
