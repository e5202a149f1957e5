"""`adds_part`: a call after a reply's first is kept only if it adds a part of the
request."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import GET_TIME, conversation, notes, reply, run, scene, tool
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, AddsPart, Dropped


def test_a_second_place_adds_a_part_and_a_reworded_one_does_not() -> None:
    at = scene(conversation("Time in Oslo and in Lima?"), [GET_TIME])
    at.calls.append((GET_TIME, {"place": "Oslo"}))
    assert AddsPart().judge(GET_TIME, {"place": "Lima"}, at) is None
    one = scene(conversation("Time in Oslo?"), [GET_TIME])
    one.calls.append((GET_TIME, {"place": "Oslo"}))
    verdict = AddsPart().judge(GET_TIME, {"place": "OSLO"}, one)
    assert isinstance(verdict, Dropped) and not verdict.ask_again


def test_a_number_the_description_also_holds_is_still_a_part() -> None:
    # The tool's own words name no part ("square" here), but its numbers are not words of
    # it: "…(API version 4)" must not make the user's 4 no part of the request.
    square = tool("square", {"side": {"type": "integer", "description": "x"}})
    square.description = "Squares a side length (API version 4, dates as in ISO 8601)."
    at = scene(conversation("Square 7, then 4, then 8601."), [square])
    at.calls.append((square, {"side": 7}))
    assert AddsPart().judge(square, {"side": 4}, at) is None
    assert AddsPart().judge(square, {"side": 8601}, at) is None
    verdict = AddsPart().judge(square, {"side": 7}, at)
    assert isinstance(verdict, Dropped)


def test_another_tool_named_by_an_abbreviation_in_capitals_adds_a_part() -> None:
    # A word of three letters names no tool in lower case ("get", "add"); written in
    # capitals it is the tool's abbreviation, and a second tool with the first one's
    # numbers is a part of its own.
    number = {"type": "integer", "description": "x"}
    lcm = tool("math_lcm", {"a": number, "b": number})
    gcd = tool("math_gcd", {"a": number, "b": number})
    both = scene(conversation("Give the LCM and the GCD of 36 and 48."), [lcm, gcd])
    both.calls.append((lcm, {"a": 36, "b": 48}))
    assert AddsPart().judge(gcd, {"a": 36, "b": 48}, both) is None
    for request in ("Give the LCM of 36 and 48.", "Give the lcm and the gcd of 36 and 48."):
        one = scene(conversation(request), [lcm, gcd])
        one.calls.append((lcm, {"a": 36, "b": 48}))
        assert isinstance(AddsPart().judge(gcd, {"a": 36, "b": 48}, one), Dropped)


async def test_the_extra_call_is_asked_for_and_judged(fake: Callable[..., FakeRuntime]) -> None:
    messages = conversation("Time in Oslo and in Lima?")
    runtime = fake(
        [reply(("get_time", {"place": "Oslo"}))],
        more=[', {"name": "get_time", "arguments": {"place": "Lima"}}', "]"],
    )
    both = await run(messages, [GET_TIME])
    assert [c.arguments["place"] for c in both.tool_calls] == ["Oslo", "Lima"]
    assert "grammar" in runtime.requests[-1]
    one = conversation("Time in Oslo?")
    fake(
        [reply(("get_time", {"place": "Oslo"}))],
        more=[', {"name": "get_time", "arguments": {"place": "OSLO"}}'],
    )
    kept = await run(one, [GET_TIME])
    assert [c.arguments["place"] for c in kept.tool_calls] == ["Oslo"]
    assert [n["action"] for n in notes(kept, "adds_part")] == ["dropped"]
    fake(
        [reply(("get_time", {"place": "Oslo"}))],
        more=[', {"name": "get_time", "arguments": {"place": "OSLO"}}', "]"],
    )
    off = await run(one, [GET_TIME], DEFAULT_POLICY.without("adds_part"))
    assert [c.arguments["place"] for c in off.tool_calls] == ["Oslo", "OSLO"]
