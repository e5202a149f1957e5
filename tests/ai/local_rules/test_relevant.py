"""`relevant`: a first-round call of a tool the request does not name, carrying words, is
dropped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hypothesis import given, strategies as st

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    CALCULATOR,
    GET_TIME,
    TEXT,
    answer,
    conversation,
    notes,
    reply,
    run,
    scene,
    tool,
)
from yiemagent.ai.providers.local.choice import ENGLISH, other_words, vocabulary
from yiemagent.ai.providers.local.grounding import Grounding
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, Dropped, Relevant
from yiemagent.cli.default_tools.get_time import get_tool as get_time_tool
from yiemagent.types.messages import AssistantMessage, TextContent, UserMessage


def test_a_tool_the_request_does_not_name_is_dropped() -> None:
    at = scene(conversation("Who wrote Hamlet?"), [GET_TIME])
    assert isinstance(Relevant().judge(GET_TIME, {"place": "Hamlet"}, at), Dropped)


def test_a_named_tool_and_a_call_of_numbers_only_are_kept() -> None:
    named = scene(conversation("What time is it in Oslo?"), [GET_TIME])
    assert Relevant().judge(GET_TIME, {"place": "Oslo"}, named) is None
    numbers = scene(conversation("And 12 * 7?"), [CALCULATOR])
    assert Relevant().judge(CALCULATOR, {"expression": "12 * 7"}, numbers) is None


def test_an_expression_with_a_constant_the_request_writes_is_kept() -> None:
    # `pi` is a word, but of an arithmetic expression and of the request: a computation,
    # not words of the question put into an unrelated tool.
    asked = scene(conversation("What is 9 squared times pi?"), [CALCULATOR, GET_TIME])
    assert Relevant().judge(CALCULATOR, {"expression": "9^2 * pi"}, asked) is None
    assert Relevant().judge(CALCULATOR, {"expression": "pi * 9 ** 2"}, asked) is None
    # A constant the request does not write, a name with no number, or a place: dropped.
    for call in ({"expression": "9^2 * tau"}, {"expression": "pi"}):
        assert isinstance(Relevant().judge(CALCULATOR, call, asked), Dropped), call
    road = scene(conversation("What time is it on Route 66 - North?"), [CALCULATOR])
    assert isinstance(
        Relevant().judge(CALCULATOR, {"expression": "Route 66 - North"}, road), Dropped
    )


def test_the_tool_the_model_reached_for_is_kept_for_a_request_in_other_words() -> None:
    # The request shares no word with the tools (another language): `mentions` cannot
    # tell, and the model's own choice, written with no grammar holding it, stands.
    asked = scene(conversation("Quelle heure est-il à Madrid ?"), [GET_TIME, CALCULATOR])
    call = {"place": "Madrid"}
    assert isinstance(Relevant().judge(GET_TIME, call, asked), Dropped)
    reached = replace(asked, reached_for="get_time")
    assert Relevant().judge(GET_TIME, call, reached) is None
    german = scene(conversation("Wie spät ist es in Madrid?"), [GET_TIME])
    assert Relevant().judge(GET_TIME, call, replace(german, reached_for="get_time")) is None
    # Not another tool than the one it reached for, nor an English request (the 0.5B
    # reaches for `get_time` to answer "Who is the mayor of Madrid?" too).
    assert isinstance(Relevant().judge(CALCULATOR, {"expression": "Madrid"}, reached), Dropped)
    hi = scene(conversation("Hi!"), [GET_TIME])  # no words to judge by
    assert isinstance(
        Relevant().judge(GET_TIME, {"place": "Hi"}, replace(hi, reached_for="get_time")), Dropped
    )
    english = scene(conversation("Who is the mayor of Madrid?"), [GET_TIME])
    english = replace(english, reached_for="get_time")
    assert isinstance(Relevant().judge(GET_TIME, call, english), Dropped)


def test_an_abbreviation_in_capitals_names_the_tool() -> None:
    bmi = tool("calculate_bmi", {"person": TEXT, "kg": TEXT, "metres": TEXT})
    bmi.description = "Body mass index."
    call = {"person": "Ann", "kg": "70", "metres": "1.75"}
    for request in ("What is Ann's BMI at 70 kg and 1.75 m?", "BMI of Ann: 70 kg, 1.75 m"):
        assert Relevant().judge(bmi, call, scene(conversation(request), [bmi])) is None
    # In lower case a word this short is an everyday one; the request then names no tool.
    lower = scene(conversation("What is Ann's bmi at 70 kg and 1.75 m?"), [bmi])
    assert isinstance(Relevant().judge(bmi, call, lower), Dropped)
    # An abbreviation in a description names no tool in particular.
    table = tool("league_table", {"league": TEXT})
    table.description = "Standings of a league such as the NFL."
    founded = scene(conversation("Who founded the NFL?"), [table])
    assert isinstance(Relevant().judge(table, {"league": "NFL"}, founded), Dropped)


async def test_through_the_provider_with_and_without_the_rule(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("Who wrote Hamlet?")
    fake([reply(("get_time", {"place": "Hamlet"})), answer("Shakespeare.")])
    answered = await run(messages, [GET_TIME])
    assert answered.text == "Shakespeare."
    assert [n["action"] for n in notes(answered, "relevant")] == ["dropped"]
    fake([reply(("get_time", {"place": "Hamlet"}))])
    called = await run(messages, [GET_TIME], DEFAULT_POLICY.without("relevant"))
    assert called.tool_calls[0].arguments == {"place": "Hamlet"}


async def test_a_message_steered_in_after_results_adds_to_the_request_it_steers(
    fake: Callable[..., FakeRuntime],
) -> None:
    # "also Berlin please", typed while the two calls ran, names no tool by itself; it adds
    # a part to "What time is it in Paris and in Tokyo?", which names get_time.
    messages = conversation(
        "What time is it in Paris and in Tokyo?",
        ("get_time", {"place": "Paris"}, "10:00 in Paris"),
        ("get_time", {"place": "Tokyo"}, "18:00 in Tokyo"),
    )
    messages.append(UserMessage("also Berlin please"))
    fake([reply(("get_time", {"place": "Berlin"}))])
    called = await run(messages, [GET_TIME, CALCULATOR])
    assert [(c.name, c.arguments) for c in called.tool_calls] == [("get_time", {"place": "Berlin"})]
    # a new prompt after an answer is a request of its own
    answered = [*messages[:-1], AssistantMessage(content=[TextContent("10:00 and 18:00.")])]
    fake([reply(("get_time", {"place": "Hamlet"})), answer("Shakespeare.")])
    alone = await run([*answered, UserMessage("Who wrote Hamlet?")], [GET_TIME, CALCULATOR])
    assert alone.text == "Shakespeare."


@given(
    st.lists(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzàéñü", min_size=1, max_size=9), max_size=8
    ),
    st.sampled_from(sorted(ENGLISH)),
    st.integers(min_value=0, max_value=8),
)
def test_a_request_with_an_english_function_word_is_in_the_tools_words(
    others: list[str], english: str, at: int
) -> None:
    words = [*others[:at], english, *others[at:]]
    request = Grounding.of_text(" ".join(words) + "?")
    assert not other_words(request, vocabulary([GET_TIME]), {"place": "x"})


def test_the_example_clock_is_named_by_a_question_about_the_date_or_the_weekday() -> None:
    # `get_time` gives the date and the day of the week too, and its description says so:
    # a call of it for "What is today's date in Tokyo?" is not dropped as unnamed.
    clock = get_time_tool()
    for request, place in (
        ("What is today's date in Tokyo?", "Tokyo"),
        ("What day of the week is it in Sydney?", "Sydney"),
    ):
        at = scene(conversation(request), [clock, CALCULATOR])
        assert Relevant().judge(clock, {"place": place}, at) is None
    elsewhere = scene(conversation("Who painted the Mona Lisa?"), [clock, CALCULATOR])
    assert isinstance(Relevant().judge(clock, {"place": "Paris"}, elsewhere), Dropped)
