"""`unknown_tool`: when the model reaches for a function that is not there, it is told so
and only the answer is offered."""

from __future__ import annotations

from tests.ai.local_rules._kit import GET_TIME, READ_FILE, conversation, offer, turn
from yiemagent.ai.providers.local.rules import UnknownTool


async def test_a_missing_function_is_told_and_every_tool_withheld() -> None:
    messages = conversation("Book a flight to Rome.")
    shaped = offer()
    await UnknownTool().shape(turn(messages, [GET_TIME], probe="book_flight"), shaped)
    assert shaped.dropped == {"get_time"}
    assert "book_flight" in shaped.chat[-1]["content"]
    assert [n.action for n in shaped.notes] == ["told"]


async def test_an_offered_tool_or_no_name_changes_nothing() -> None:
    messages = conversation("What time is it in Rome?")
    for probe in ("get_time", None, "rome"):
        shaped = offer()
        await UnknownTool().shape(turn(messages, [GET_TIME], probe=probe), shaped)
        assert (shaped.dropped, len(shaped.chat)) == (set(), 1), probe


async def test_beside_a_given_file_a_name_of_no_tool_names_what_the_file_holds() -> None:
    # "get_recipe_oven" names no tool, but the request gives a file that read_file reads:
    # the answer is in the file, so the model is not told the tool is missing.
    messages = conversation("At what heat does the bread bake? See bread.txt.")
    shaped = offer()
    tools = [GET_TIME, READ_FILE]
    await UnknownTool().shape(turn(messages, tools, probe="bread_oven_heat"), shaped)
    assert (shaped.dropped, len(shaped.chat), shaped.notes) == (set(), 1, [])
    # A foreign action on the file is still a missing tool; so is any name with no reader.
    messages = conversation("Shred the file bread.txt.")
    shaped = offer()
    await UnknownTool().shape(turn(messages, tools, probe="shred_file"), shaped)
    assert shaped.dropped == {"get_time", "read_file"}
    messages = conversation("At what heat does the bread bake? See bread.txt.")
    shaped = offer()
    await UnknownTool().shape(turn(messages, [GET_TIME], probe="bread_oven_heat"), shaped)
    assert shaped.dropped == {"get_time"}
