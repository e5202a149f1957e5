"""`unknown_tool`: when the model reaches for a function that is not there, it is told so
and only the answer is offered."""

from __future__ import annotations

from tests.ai.local_rules._kit import GET_TIME, conversation, offer, turn
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
