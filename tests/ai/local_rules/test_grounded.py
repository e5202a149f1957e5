"""`grounded`: a call whose required values nothing given backs is dropped; a call still
being written with made-up numbers is stopped."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    CALCULATOR,
    GET_WEATHER,
    answer,
    conversation,
    notes,
    reply,
    run,
    scene,
    tool,
)
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, Dropped, Grounded


def test_a_place_nobody_named_is_dropped_and_a_named_one_kept() -> None:
    rule = Grounded()
    vague = scene(conversation("What is the weather like?"), [GET_WEATHER])
    named = scene(conversation("What is the weather in Paris?"), [GET_WEATHER])
    assert isinstance(rule.judge(GET_WEATHER, {"city": "Paris"}, vague), Dropped)
    assert rule.judge(GET_WEATHER, {"city": "Paris"}, named) is None


def test_a_number_written_as_a_string_is_judged_as_the_number() -> None:
    # "2023" nobody gave is made up as 2023 would be; one a string computes a number in
    # ("3 * 7") is not judged by its own numbers, nor a partial string while it is written.
    standings = tool("league_standings", {"season": {"type": "string"}})
    asked = scene(conversation("Who founded the league?"), [standings])
    assert isinstance(Grounded().judge(standings, {"season": "2023"}, asked), Dropped)
    given = scene(conversation("League standings in 2023?"), [standings])
    assert Grounded().judge(standings, {"season": " 2023 "}, given) is None
    weeks = scene(conversation("How many days are in 3 weeks?"), [CALCULATOR])
    assert Grounded().judge(CALCULATOR, {"expression": "3 * 7"}, weeks) is None
    assert Grounded().stops(standings, {"season": "2"}, given) is None


def test_a_string_of_made_up_numbers_stops_the_call_while_it_is_written() -> None:
    note = tool("note", {"text": {"type": "string"}})
    at = scene(conversation("Write a note about the meeting."), [note])
    assert Grounded().stops(note, {"text": "at 10 20 30 45"}, at) is not None
    assert Grounded().stops(note, {"text": "about the meeting"}, at) is None
    assert Grounded().stops(CALCULATOR, {"expression": "1"}, at) is None


def test_a_factor_run_on_to_dozens_of_digits_is_stopped_and_dropped() -> None:
    # "50 * 1000…0" for an exchange rate the model does not know: one number, made up.
    at = scene(conversation("How much is 50 pounds in yen?"), [CALCULATOR])
    runaway = {"expression": "50 * 1" + "0" * 40}
    assert Grounded().stops(CALCULATOR, runaway, at) is not None
    assert isinstance(Grounded().judge(CALCULATOR, runaway, at), Dropped)
    assert Grounded().stops(CALCULATOR, {"expression": "50 * 1" + "0" * 12}, at) is None
    given = scene(conversation("What is 1" + "0" * 40 + " * 2?"), [CALCULATOR])
    assert Grounded().judge(CALCULATOR, {"expression": "1" + "0" * 40 + " * 2"}, given) is None


async def test_through_the_provider_with_and_without_the_rule(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("What is the weather like?")
    fake([reply(("get_weather", {"city": "Paris"})), answer("Which city?")])
    asked = await run(messages, [GET_WEATHER])
    assert (asked.text, asked.tool_calls) == ("Which city?", [])
    assert [n["action"] for n in notes(asked, "grounded")] == ["dropped"]
    fake([reply(("get_weather", {"city": "Paris"}))])
    off = DEFAULT_POLICY.without("grounded", "relevant")
    called = await run(messages, [GET_WEATHER], off)
    assert called.tool_calls[0].arguments == {"city": "Paris"}
