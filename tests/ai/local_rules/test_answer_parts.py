"""`answer_parts`: after a round of several results, the answer has one part per result."""

from __future__ import annotations

from typing import Any

from tests.ai.local_rules._kit import GET_TIME, offer, turn
from yiemagent.ai.providers.local.rules import AnswerParts
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def _one_round(*places: str) -> list[Message]:
    calls = [ToolCall(id=p, name="get_time", arguments={"place": p}) for p in places]
    results: list[Any] = [ToolResultMessage(p, "get_time", [TextContent("1:00")]) for p in places]
    return [UserMessage("Times?"), AssistantMessage(content=list(calls)), *results]


async def test_two_results_ask_for_two_parts_and_one_for_none() -> None:
    two, one = offer(), offer()
    await AnswerParts().shape(turn(_one_round("Oslo", "Lima"), [GET_TIME]), two)
    await AnswerParts().shape(turn(_one_round("Oslo"), [GET_TIME]), one)
    assert (two.parts, one.parts) == (2, 1)
