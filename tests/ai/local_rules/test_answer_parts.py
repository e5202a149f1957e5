"""`answer_parts`: after a round of several results, the answer has one part per result."""

from __future__ import annotations

from typing import Any

from tests.ai.local_rules._kit import CALCULATOR, GET_TIME, offer, turn
from yiemagent.ai.providers.local.prompt import result_labels
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
    assert two.parts == ("get_time(Oslo)", "get_time(Lima)")
    assert one.parts == ("get_time(Oslo)",)


def _steered(*, answered: bool) -> list[Message]:
    # The time asked, its result, then "Also, what is 365 * 24?" steered in while the model
    # worked (or asked after the answer), and the calculator's result.
    first = _one_round("London")
    if answered:
        first.append(AssistantMessage(content=[TextContent("It is 1:00 in London.")]))
    calc = ToolCall(id="c", name="calculator", arguments={"expression": "365 * 24"})
    return [
        *first,
        UserMessage("Also, what is 365 * 24?"),
        AssistantMessage(content=[calc]),
        ToolResultMessage("c", "calculator", [TextContent("8760")]),
    ]


async def test_a_steered_message_adds_the_unreported_results_before_it() -> None:
    steered, follow_up, first_round = offer(), offer(), offer()
    await AnswerParts().shape(turn(_steered(answered=False), [GET_TIME, CALCULATOR]), steered)
    await AnswerParts().shape(turn(_steered(answered=True), [GET_TIME, CALCULATOR]), follow_up)
    before_calls = _steered(answered=False)[:-2]  # the steer, no call of it yet
    await AnswerParts().shape(turn(before_calls, [GET_TIME, CALCULATOR]), first_round)
    assert steered.parts == ("get_time(London)", "calculator(365 * 24)")
    assert (follow_up.parts, first_round.parts) == (("calculator(365 * 24)",), ())


def test_each_result_is_labelled_by_its_call_and_repeats_are_told_apart() -> None:
    calls = [
        ToolCall(id="a", name="get_time", arguments={"place": "Oslo"}),
        ToolCall(id="b", name="get_time", arguments={"place": "Oslo"}),
        ToolCall(id="c", name="convert", arguments={"value": 3, "units": ["m", "ft"]}),
    ]
    results = [ToolResultMessage(c.id, c.name, [TextContent("x")]) for c in calls]
    messages: list[Message] = [UserMessage("?"), AssistantMessage(content=list(calls))]
    labels = result_labels([*messages, *results], results)
    assert labels == ("get_time(Oslo)", "get_time(Oslo) #2", 'convert(3, ["m", "ft"])')
    stray = ToolResultMessage("z", "read_file", [TextContent("x")])  # its call is not there
    assert result_labels(messages, [stray]) == ("read_file()",)
