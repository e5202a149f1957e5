"""`chain_unnamed`: after results, a tool not used yet is offered only when the request
names it."""

from __future__ import annotations

from tests.ai.local_rules._kit import GET_TIME, READ_FILE, conversation, offer, turn
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
