"""`reached_for`: when the model reaches for an offered tool the request names, the answer
is not offered."""

from __future__ import annotations

from tests.ai.local_rules._kit import conversation, offer, tool, turn
from yiemagent.ai.providers.local.rules import ReachedFor

CONVERT = tool("convert_currency", {"amount": {"type": "number"}, "to": {"type": "string"}})


async def test_the_tool_reached_for_is_required_when_the_request_names_it() -> None:
    shaped = offer()
    messages = conversation("Convert 20 euros to another currency.")
    await ReachedFor().shape(turn(messages, [CONVERT], probe="convert_currency"), shaped)
    assert shaped.named == {"convert_currency"}


async def test_a_request_that_does_not_name_it_leaves_the_answer_offered() -> None:
    shaped = offer()
    messages = conversation("Tell me a joke.")
    await ReachedFor().shape(turn(messages, [CONVERT], probe="convert_currency"), shaped)
    assert shaped.named == set()
