"""`round_budget`: after the budget of tool rounds, only the answer is offered."""

from __future__ import annotations

from tests.ai.local_rules._kit import GET_TIME, conversation, offer, turn
from yiemagent.ai.providers.local.rules import RoundBudget

_ROUNDS = [("get_time", {"place": f"P{i}"}, f"{i}:00") for i in range(2)]


async def test_after_the_budget_every_tool_is_withheld() -> None:
    messages = conversation("Times?", *_ROUNDS)
    spent, left = offer(), offer()
    await RoundBudget().shape(turn(messages, [GET_TIME], max_tool_rounds=2), spent)
    await RoundBudget().shape(turn(messages, [GET_TIME], max_tool_rounds=3), left)
    assert (spent.dropped, left.dropped) == ({"get_time"}, set())
    assert [n.action for n in spent.notes] == ["withheld"]
