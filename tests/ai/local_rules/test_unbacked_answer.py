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
from yiemagent.ai.providers.local.prompt import NOT_GIVEN
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
    # The model answers again after its call was dropped (no one gave "Paris"): that answer
    # is told once that no tool gives its figure, and the next one stands, so the reply
    # always ends.
    fake(
        [
            answer("It is 48."),
            reply(("get_time", {"place": "Paris"})),
            reply(("get_time", {"place": "Paris"})),
            answer("It is 48."),
            answer("It is 48, I think."),
        ],
        names=["answer"],
    )
    message = await run(conversation(REQUEST), [GET_TIME])
    assert message.text == "It is 48, I think."
    assert [n["action"] for n in notes(message, "unbacked_answer")] == ["required", "told"]


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


WEATHER = "What will the weather be in Berlin tomorrow?"
FORECAST = (
    "Berlin will be mild and sunny tomorrow, with a temperature of 24°C and a light breeze "
    "from the west. " * 3
)


async def test_after_a_dropped_call_a_made_up_figure_is_told_no_tool_gives_it(
    fake: Callable[..., FakeRuntime],
) -> None:
    # `get_time` does not serve the weather (`relevant` drops it); the forecast the model
    # then writes states 24 °C, which nothing gave: it is told so, offered only the
    # answer, and says it cannot tell. Judged at HOLD_CHARS, not streamed first.
    runtime = fake(
        [
            reply(("get_time", {"place": "Berlin"})),
            answer(FORECAST),
            answer("I cannot tell the weather: I have no forecast tool."),
        ],
        names=["answer"],
    )
    events = stream(local_model(), Context("", conversation(WEATHER), TOOLS))
    deltas = [e.delta async for e in events if e.type == "text_delta"]
    message = await events.result()
    assert len(FORECAST) > HOLD_CHARS
    assert message.text == "I cannot tell the weather: I have no forecast tool."
    assert "".join(deltas) == message.text  # the forecast never reached the stream
    assert [n["what"] for n in notes(message, "unbacked_answer")] == ["no tool gives 24"]
    told = runtime.requests[2]
    assert told["messages"][-1]["content"] == NOT_GIVEN
    assert str(told["response_format"]).count("'const'") == 1  # only the answer's name


async def test_without_a_dropped_call_an_answer_with_figures_stands(
    fake: Callable[..., FakeRuntime],
) -> None:
    # "Which year did the war in Europe end?" gives no number and no call was dropped: "1945" is
    # the model's own knowledge, not checked.
    fake([answer("The war ended in 1945.")], names=["answer"])
    message = await run(conversation("Which year did the war in Europe end?"), TOOLS)
    assert message.text == "The war ended in 1945."
    assert notes(message, "unbacked_answer") == []


async def test_figures_the_system_prompt_gives_are_not_made_up(
    fake: Callable[..., FakeRuntime],
) -> None:
    # After a dropped call, "I run on Qwen2.5-Coder-0.5B" states the numbers of the model's
    # name, which the system prompt gives.
    fake(
        [reply(("get_time", {"place": "Qwen"})), answer("I run on Qwen2.5-Coder-0.5B.")],
        names=["answer"],
    )
    message = await run(conversation("Which model are you?"), TOOLS)
    assert message.text == "I run on Qwen2.5-Coder-0.5B."
    assert notes(message, "unbacked_answer") == []  # after a drop (`grounded`), not told
