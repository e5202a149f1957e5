"""`unbacked_answer`: a first answer stating a number nothing given backs is refused once for
a call."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, strategies as st

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    CALCULATOR,
    GET_TIME,
    answer,
    conversation,
    notes,
    offer,
    reply,
    run,
    turn,
)
from yiemagent.ai import Context, stream
from yiemagent.ai.providers.local import local_model
from yiemagent.ai.providers.local.decoder import HOLD_CHARS
from yiemagent.ai.providers.local.grounding import Grounding, unbacked_numbers
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, UnbackedAnswer

TOOLS = [CALCULATOR, GET_TIME]
REQUEST = "How many hours are in 4 days?"


async def test_only_a_first_round_request_that_gives_a_number_is_checked() -> None:
    checked = offer()
    await UnbackedAnswer().shape(turn(conversation(REQUEST), TOOLS), checked)
    assert checked.check_answer
    after = conversation(REQUEST, ("calculator", {"expression": "4 * 24"}, "96"))
    for messages in (conversation("Which river runs through Cairo?"), after):
        plain = offer()
        await UnbackedAnswer().shape(turn(messages, TOOLS), plain)
        assert not plain.check_answer


async def test_a_number_worked_out_in_the_head_becomes_a_call(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation(REQUEST)
    runtime = fake(
        [answer("4 days have 48 hours."), reply(("calculator", {"expression": "4 * 24"}))],
        names=["answer"],
    )
    message = await run(messages, TOOLS)
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("calculator", {"expression": "4 * 24"})
    ]
    assert message.text == ""  # the refused answer never reached the stream
    assert [n["what"] for n in notes(message, "unbacked_answer")] == [
        "a call, not an answer stating 48"
    ]
    replies = [r for r in runtime.requests if "response_format" in r]
    assert '"const": "answer"' not in str(replies[1]["response_format"]).replace("'", '"')
    fake([answer("4 days have 48 hours.")], names=["answer"])
    off = await run(messages, TOOLS, DEFAULT_POLICY.without("unbacked_answer"))
    assert off.text == "4 days have 48 hours."


async def test_an_answer_with_given_numbers_streams_whole(
    fake: Callable[..., FakeRuntime],
) -> None:
    fake([answer("A day has 24 hours, so 4 days is 4 times that.")], names=["answer"])
    message = await run(conversation("A day has 24 hours. What about 4 days?"), TOOLS)
    assert message.text == "A day has 24 hours, so 4 days is 4 times that."
    assert message.tool_calls == []
    assert notes(message, "unbacked_answer") == []


async def test_refused_once_then_the_answer_stands(fake: Callable[..., FakeRuntime]) -> None:
    # The model answers again after its call was dropped (no one gave "Paris"): the second
    # answer is not refused, so the reply always ends.
    fake(
        [
            answer("It is 48."),
            reply(("get_time", {"place": "Paris"})),
            reply(("get_time", {"place": "Paris"})),
            answer("It is 48."),
        ],
        names=["answer"],
    )
    message = await run(conversation(REQUEST), [GET_TIME])
    assert message.text == "It is 48."
    assert len(notes(message, "unbacked_answer")) == 1


@given(st.lists(st.integers(min_value=2, max_value=10**6), min_size=1, max_size=4))
def test_numbers_the_request_writes_are_backed(values: list[int]) -> None:
    request = Grounding.of_text(" and ".join(f"{v:,}" for v in values))
    assert unbacked_numbers(" ".join(str(v) for v in values), request) == set()
    fresh = max(values) * 1000 + 7  # neither a given number nor a percentage of one
    assert unbacked_numbers(f"so {fresh}", request) == {str(fresh)}


async def test_a_long_answer_streams_and_is_not_refused(
    fake: Callable[..., FakeRuntime],
) -> None:
    # A story for "Write 3 lines about the sea" holds numbers of its own; past HOLD_CHARS
    # it streams as it is written instead of waiting for its end.
    story = " ".join(
        f"At {hour} the {what} came in over the {where}."
        for hour, what, where in zip(
            range(5, 13),
            ("tide", "fog", "gulls", "boats", "light", "wind", "rain", "swell"),
            ("rocks", "harbour", "pier", "sand", "dunes", "wall", "bay", "reef"),
            strict=True,
        )
    )
    fake([answer(story)], names=["answer"], size=8)
    events = stream(local_model(), Context("", conversation("Write 3 lines about the sea."), TOOLS))
    deltas = [e async for e in events if e.type == "text_delta"]
    message = await events.result()
    assert len(story) > HOLD_CHARS
    assert len(deltas) > 1  # streamed, not one held block
    assert message.text == story
    assert notes(message, "unbacked_answer") == []
