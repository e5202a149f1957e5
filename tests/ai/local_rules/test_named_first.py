"""`named_first`: a further call of a tool the request does not name is left out while the
request names a tool no call of the reply has used."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    CALCULATOR,
    GET_TIME,
    READ_FILE,
    conversation,
    notes,
    reply,
    run,
    scene,
    tool,
)
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, Dropped, NamedFirst

TEXT = {"type": "string", "description": "x"}
WRITE_FILE = tool("write_file", {"path": TEXT, "content": TEXT})
DELETE_FILE = tool("delete_file", {"path": TEXT})
FILES = [READ_FILE, WRITE_FILE, DELETE_FILE, GET_TIME, CALCULATOR]


def test_a_tool_nobody_named_waits_for_the_one_the_request_names() -> None:
    at = scene(conversation("Read the file d.txt and write its content to e.txt."), FILES)
    at.calls.append((READ_FILE, {"path": "d.txt"}))
    verdict = NamedFirst().judge(DELETE_FILE, {"path": "e.txt"}, at)
    assert isinstance(verdict, Dropped) and not verdict.ask_again
    assert "write_file" in verdict.what
    assert NamedFirst().judge(WRITE_FILE, {"path": "e.txt", "content": "x"}, at) is None


def test_a_tool_is_free_when_the_request_names_no_other() -> None:
    # Nothing in "17 * 23" names the calculator, but nothing else is named either.
    at = scene(conversation("What time is it in Oslo, and what is 17 * 23?"), FILES)
    at.calls.append((GET_TIME, {"place": "Oslo"}))
    assert NamedFirst().judge(CALCULATOR, {"expression": "17 * 23"}, at) is None


def test_the_first_call_a_repeat_and_a_chain_step_are_not_judged() -> None:
    request = "Read the file d.txt and write its content to e.txt."
    first = scene(conversation(request), FILES)
    assert NamedFirst().judge(DELETE_FILE, {"path": "e.txt"}, first) is None
    again = scene(conversation(request), FILES)
    again.calls.append((DELETE_FILE, {"path": "d.txt"}))
    assert NamedFirst().judge(DELETE_FILE, {"path": "e.txt"}, again) is None
    after = scene(conversation(request, ("read_file", {"path": "d.txt"}, "hello")), FILES)
    after.calls.append((READ_FILE, {"path": "d.txt"}))
    assert NamedFirst().judge(DELETE_FILE, {"path": "e.txt"}, after) is None


async def test_the_extra_call_nobody_asked_for_is_left_out(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("Read the file d.txt and write its content to e.txt.")
    extra = [', {"name": "delete_file", "arguments": {"path": "e.txt"}}', "]"]
    fake([reply(("read_file", {"path": "d.txt"}))], more=extra)
    kept = await run(messages, FILES)
    assert [(c.name, c.arguments) for c in kept.tool_calls] == [("read_file", {"path": "d.txt"})]
    assert [n["action"] for n in notes(kept, "named_first")] == ["dropped"]
    fake([reply(("read_file", {"path": "d.txt"}))], more=extra)
    off = await run(messages, FILES, DEFAULT_POLICY.without("named_first"))
    assert [c.name for c in off.tool_calls] == ["read_file", "delete_file"]


def test_a_name_of_shared_words_is_not_judged() -> None:
    # Every word of `price_by_region_day` is another tool's too: no word names it alone,
    # so a request naming `price_by_store_day` does not leave it out.
    number = {"type": "number", "description": "x"}
    by_store = tool("price_by_store_day", {"store": TEXT, "day": TEXT})
    by_region = tool("price_by_region_day", {"region": TEXT, "day": TEXT})
    forecast = tool("price_forecast_by_region", {"region": TEXT, "days": number})
    request = "Prices at store Main on Monday, and the forecast for region North for 3 days?"
    at = scene(conversation(request), [by_store, by_region, forecast])
    at.calls.append((forecast, {"region": "North", "days": 3}))
    assert NamedFirst().judge(by_region, {"region": "North", "day": "Monday"}, at) is None


def test_a_tool_the_request_names_by_its_description_is_kept() -> None:
    # Neither "stats" nor "mean" is in the request; "average", a word of its description
    # and of no other tool, names it, though `get_time` waits to be called.
    numbers = {"type": "array", "items": {"type": "number"}, "description": "x"}
    mean = tool("stats_mean", {"values": numbers})
    mean.description = "The average of a list of numbers."
    weather = tool("get_weather", {"city": TEXT})
    request = "What is the average of 3, 5 and 10, the weather in Oslo and the time in Lima?"
    at = scene(conversation(request), [weather, mean, GET_TIME])
    at.calls.append((weather, {"city": "Oslo"}))
    assert NamedFirst().judge(mean, {"values": [3, 5, 10]}, at) is None
    mean.description = "The middle of a list of numbers."
    assert isinstance(NamedFirst().judge(mean, {"values": [3, 5, 10]}, at), Dropped)
