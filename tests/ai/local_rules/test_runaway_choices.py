"""`runaway_choices`: a list of choices that ran to its bound repeating one keeps each once;
the reply's grammar bounds such a list at the number of choices."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import TEXT, conversation, notes, reply, run, scene, tool
from yiemagent.ai.providers.local.prompt import reply_schema
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, Repaired, RunawayChoices

CHOICES = ["Sauna", "Swimming Pool", "Open 24 Hours"]
FIND_GYM = tool(
    "find_gym",
    {"city": TEXT, "amenities": {"type": "array", "items": {"type": "string", "enum": CHOICES}}},
)


def test_a_list_at_its_bound_with_a_repeat_keeps_each_choice_once() -> None:
    at = scene(conversation("Which gyms in Leeds are open 24 hours?"), [FIND_GYM])
    runaway = {"city": "Leeds", "amenities": ["Open 24 Hours"] * 3}
    verdict = RunawayChoices().judge(FIND_GYM, runaway, at)
    assert isinstance(verdict, Repaired)
    assert verdict.arguments == {"city": "Leeds", "amenities": ["Open 24 Hours"]}
    mixed = {"city": "Leeds", "amenities": ["Sauna", "Open 24 Hours", "Sauna"]}
    fixed = RunawayChoices().judge(FIND_GYM, mixed, at)
    assert isinstance(fixed, Repaired)
    assert fixed.arguments["amenities"] == ["Sauna", "Open 24 Hours"]


def test_a_list_below_its_bound_or_without_repeats_is_left_alone() -> None:
    at = scene(conversation("Gyms in Leeds with a sauna and a pool?"), [FIND_GYM])
    for amenities in (["Sauna", "Sauna"], CHOICES, ["Sauna"]):
        assert (
            RunawayChoices().judge(FIND_GYM, {"city": "Leeds", "amenities": amenities}, at) is None
        )
    tags = tool("tag", {"tags": {"type": "array", "items": {"type": "string"}}})
    assert RunawayChoices().judge(tags, {"tags": ["a", "a", "a", "a"]}, at) is None


def test_the_grammar_bounds_a_list_of_choices_at_their_number() -> None:
    schema = reply_schema([FIND_GYM])
    amenities = schema["anyOf"][0]["properties"]["arguments"]["properties"]["amenities"]
    assert amenities["maxItems"] == len(CHOICES)
    own = tool(
        "pick",
        {"picks": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 5}},
    )
    picks = reply_schema([own])["anyOf"][0]["properties"]["arguments"]["properties"]["picks"]
    assert picks["maxItems"] == 5  # a bound the tool sets is kept


async def test_through_the_provider_with_and_without_the_rule(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("Use find_gym: which gyms in Leeds are open 24 hours?")
    runaway = {"city": "Leeds", "amenities": ["Open 24 Hours"] * 3}
    fake([reply(("find_gym", runaway))])
    fixed = await run(messages, [FIND_GYM])
    assert fixed.tool_calls[0].arguments == {"city": "Leeds", "amenities": ["Open 24 Hours"]}
    assert notes(fixed, "runaway_choices")[0]["action"] == "repaired"
    fake([reply(("find_gym", runaway))])
    kept = await run(messages, [FIND_GYM], DEFAULT_POLICY.without("runaway_choices"))
    assert kept.tool_calls[0].arguments == runaway
