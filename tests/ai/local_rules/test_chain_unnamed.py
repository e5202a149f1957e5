"""`chain_unnamed`: after results, a tool not used yet is offered only when the request
names it."""

from __future__ import annotations

from dataclasses import replace

from tests.ai.local_rules._kit import (
    GET_TIME,
    GET_WEATHER,
    READ_FILE,
    TEXT,
    conversation,
    offer,
    tool,
    turn,
)
from yiemagent.ai.providers.local.rules import ChainUnnamed


async def test_an_unused_tool_the_request_does_not_name_is_withheld() -> None:
    messages = conversation("Read a.txt", ("read_file", {"path": "a.txt"}, "hello"))
    shaped = offer()
    await ChainUnnamed().shape(turn(messages, [READ_FILE, GET_TIME]), shaped)
    assert shaped.dropped == {"get_time"}


async def test_a_named_tool_stays_and_before_results_nothing_is_withheld() -> None:
    named = conversation("Read a.txt, then get the time", ("read_file", {"path": "a.txt"}, "x"))
    shaped = offer()
    await ChainUnnamed().shape(turn(named, [READ_FILE, GET_TIME]), shaped)
    assert shaped.dropped == set()
    first = offer()
    await ChainUnnamed().shape(turn(conversation("Read a.txt"), [READ_FILE, GET_TIME]), first)
    assert first.dropped == set()


async def test_a_file_name_the_request_gives_names_the_tools_that_read_files() -> None:
    # "where.txt names a city" says neither "read" nor "file": after a first call that took
    # the file's name for a city, the reader is still offered; the clock is not.
    failed = conversation(
        "where.txt names a city. What is the weather there?",
        ("get_weather", {"city": "where.txt"}, "Unknown city 'where.txt'"),
    )
    shaped = offer()
    await ChainUnnamed().shape(turn(failed, [READ_FILE, GET_TIME, GET_WEATHER]), shaped)
    assert shaped.dropped == {"get_time"}


async def test_a_tool_named_by_one_short_word_is_named_by_that_word() -> None:
    # "then add 6" names the tool `add`, though its name has fewer than four letters.
    number = {"type": "integer", "description": "x"}
    times = tool("times", {"a": number, "b": number})
    add = tool("add", {"a": number, "b": number})
    then_add = conversation("Work out 6 times 7, then add 6.", ("times", {"a": 6, "b": 7}, "42"))
    shaped = offer()
    await ChainUnnamed().shape(turn(then_add, [times, add, GET_WEATHER]), shaped)
    assert shaped.dropped == {"get_weather"}
    plus = conversation("Work out 6 times 7 and 6 more.", ("times", {"a": 6, "b": 7}, "42"))
    shaped = offer()
    await ChainUnnamed().shape(turn(plus, [times, add, GET_WEATHER]), shaped)
    assert shaped.dropped == {"add", "get_weather"}


async def test_a_tool_named_only_by_a_word_of_another_tools_name_is_withheld() -> None:
    # "time" names get_time; the reminder tool's description says "time" too.
    reminder = replace(
        tool("create_reminder", {"text": {"type": "string"}}),
        description="Create a reminder that notifies the user at a given time.",
    )
    messages = conversation(
        "city.txt names a city. Read it, then tell me the time there.",
        ("read_file", {"path": "city.txt"}, "Lima"),
    )
    shaped = offer()
    await ChainUnnamed().shape(turn(messages, [READ_FILE, GET_TIME, reminder]), shaped)
    assert shaped.dropped == {"create_reminder"}
    asked = conversation(
        "city.txt names a city. Read it, then set a reminder for that time.",
        ("read_file", {"path": "city.txt"}, "Lima"),
    )
    kept = offer()
    await ChainUnnamed().shape(turn(asked, [READ_FILE, GET_TIME, reminder]), kept)
    assert "create_reminder" not in kept.dropped


async def test_a_description_word_other_tools_share_names_none_of_them() -> None:
    # "current" is in both descriptions: it names neither; "time" still names get_time.
    clock = replace(GET_TIME, description="Current local time in a city.")
    rates = replace(
        tool("get_exchange_rate", {"base": {"type": "string"}, "quote": {"type": "string"}}),
        description="Get the current exchange rate between two currencies.",
    )
    messages = conversation(
        "city.txt names a city. Read it, then tell me the current time in that city.",
        ("read_file", {"path": "city.txt"}, "Lisbon"),
    )
    shaped = offer()
    await ChainUnnamed().shape(turn(messages, [READ_FILE, clock, rates]), shaped)
    assert shaped.dropped == {"get_exchange_rate"}
    # a word of its description no other tool has still names it
    asked = conversation(
        "city.txt names a city. Read it, then find the exchange rate of its currency.",
        ("read_file", {"path": "city.txt"}, "Lisbon"),
    )
    kept = offer()
    await ChainUnnamed().shape(turn(asked, [READ_FILE, clock, rates]), kept)
    assert "get_exchange_rate" not in kept.dropped


async def test_a_given_file_names_no_more_tools_once_a_call_has_taken_it() -> None:
    # After notes.txt was read, a tool that writes files is named by nothing in "Read
    # notes.txt and tell me the time in Rome"; before, the file named it too.
    write_file = tool(
        "write_file", {"path": {"type": "string", "description": "the file"}, "text": TEXT}
    )
    tools = [READ_FILE, write_file, GET_TIME]
    read = conversation(
        "Read notes.txt and tell me the time in Rome.",
        ("read_file", {"path": "notes.txt"}, "buy bread"),
    )
    shaped = offer()
    await ChainUnnamed().shape(turn(read, tools), shaped)
    assert shaped.dropped == {"write_file"}
    # A file not passed yet still names it: "Copy a.txt into b.txt" after the read.
    copy = conversation(
        "Copy the content of a.txt into b.txt.", ("read_file", {"path": "a.txt"}, "alpha")
    )
    shaped = offer()
    await ChainUnnamed().shape(turn(copy, tools), shaped)
    assert shaped.dropped == {"get_time"}


async def test_a_word_of_a_called_tool_name_names_no_other_tool() -> None:
    # "file" is a word of both names; once read_file ran, it names read_file only.
    write_file = tool("write_file", {"path": TEXT, "text": TEXT})
    calculator = tool("calculator", {"expression": TEXT})
    messages = conversation(
        "How many minutes are in 7 hours? Also read the file hours.txt.",
        ("calculator", {"expression": "7 * 60"}, "420"),
        ("read_file", {"path": "hours.txt"}, "worked 7 hours"),
    )
    shaped = offer()
    await ChainUnnamed().shape(turn(messages, [READ_FILE, write_file, calculator]), shaped)
    assert shaped.dropped == {"write_file"}
