"""`unbacked_options`: optional values nothing backs are left out."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import FIND_HOTELS, conversation, notes, reply, run, scene, tool
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


WEATHER = tool(
    "get_weather",
    {
        "city": {"type": "string"},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
        "days": {"type": "array", "items": {"type": "string", "enum": ["today", "tomorrow"]}},
    },
    required=["city"],
)


def test_an_optional_choice_nobody_asked_for_is_left_out() -> None:
    # Being one of the parameter's choices does not back an optional value: the tool's
    # default is its author's pick, the model's is not.
    messages = conversation("What is the weather in Oslo?")
    arguments = {"city": "Oslo", "units": "metric", "days": ["today", "tomorrow"]}
    verdict = UnbackedOptions().judge(WEATHER, arguments, scene(messages, [WEATHER]))
    assert isinstance(verdict, Repaired)
    assert verdict.arguments == {"city": "Oslo"}


def test_an_optional_choice_the_user_wrote_stays() -> None:
    messages = conversation("What is the weather in Oslo tomorrow, in imperial units?")
    arguments = {"city": "Oslo", "units": "imperial", "days": ["today", "tomorrow"]}
    verdict = UnbackedOptions().judge(WEATHER, arguments, scene(messages, [WEATHER]))
    assert isinstance(verdict, Repaired)
    assert verdict.arguments == {"city": "Oslo", "units": "imperial", "days": ["tomorrow"]}


def test_a_required_choice_is_the_call_s_to_make() -> None:
    forecast = tool("forecast", WEATHER.input_schema["properties"], required=["city", "units"])
    messages = conversation("What is the weather in Oslo?")
    arguments = {"city": "Oslo", "units": "metric"}
    assert UnbackedOptions().judge(forecast, arguments, scene(messages, [forecast])) is None


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
