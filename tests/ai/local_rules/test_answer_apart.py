"""`answer_apart`: after results, the answer is written again apart from the tools."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    GET_TIME,
    READ_FILE,
    answer,
    conversation,
    notes,
    offer,
    reply,
    run,
    turn,
)
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, AnswerApart, AnswerParts
from yiemagent.types.messages import AssistantMessage, TextContent, UserMessage

_READ = conversation(
    "What does notes.md say about the meeting?",
    ("read_file", {"path": "notes.md"}, "The meeting moved to Friday."),
)


async def test_after_results_the_answer_is_written_apart_from_the_tools(
    fake: Callable[..., FakeRuntime],
) -> None:
    """The reply is stopped once it turns out to be the answer (none of it is emitted);
    the answer comes from a chat with no tools: the results just before the request."""
    runtime = fake(
        [answer("To read notes.md, use the read_file tool.")], apart=["It moved to Friday."]
    )
    message = await run(_READ, [READ_FILE, GET_TIME])
    assert (message.stop_reason, message.text) == ("stop", "It moved to Friday.")
    first, apart = runtime.requests
    assert "response_format" in first
    assert "response_format" not in apart and "grammar" not in apart
    assert [m["role"] for m in apart["messages"]] == ["system", "user"]
    assert "read_file" not in apart["messages"][0]["content"]
    assert apart["messages"][1]["content"] == (
        "<tool_response>\nThe meeting moved to Friday.\n</tool_response>\n"
        "What does notes.md say about the meeting?"
    )
    assert [n["action"] for n in notes(message, "answer_apart")] == ["asked"]


async def test_earlier_turns_are_plain_text_and_errors_are_marked(
    fake: Callable[..., FakeRuntime],
) -> None:
    earlier = [UserMessage("Hi"), AssistantMessage(content=[TextContent("Hello!")])]
    failed = conversation("Read notes.md", ("read_file", {"path": "notes.md"}, "no such file"))
    failed[-1].is_error = True
    runtime = fake([answer("x")], apart=["There is no notes.md."])
    message = await run([*earlier, *failed], [READ_FILE])
    assert message.text == "There is no notes.md."
    chat = runtime.requests[1]["messages"]
    assert [(m["role"], m["content"]) for m in chat[1:3]] == [
        ("user", "Hi"),
        ("assistant", "Hello!"),
    ]
    assert chat[3]["content"].startswith("<tool_response>\nError: no such file\n")


async def test_a_call_after_results_is_kept_and_nothing_is_asked_apart(
    fake: Callable[..., FakeRuntime],
) -> None:
    chain = conversation(
        "What time is it in the city city.md names?",
        ("read_file", {"path": "city.md"}, "Oslo"),
    )
    runtime = fake([reply(("get_time", {"place": "Oslo"}))])
    message = await run(chain, [READ_FILE, GET_TIME])
    assert [c.name for c in message.tool_calls] == ["get_time"]
    assert len(runtime.requests) == 1 and notes(message, "answer_apart") == []


async def test_switched_off_the_answer_streams_from_the_reply(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake([answer("It moved to Friday.")])
    message = await run(_READ, [READ_FILE], DEFAULT_POLICY.without("answer_apart"))
    assert message.text == "It moved to Friday." and len(runtime.requests) == 1


async def test_only_after_one_result_and_not_before_any() -> None:
    first_round = conversation("What does notes.md say?")
    two = conversation(
        "Times?", ("get_time", {"place": "Oslo"}, "1:00"), ("get_time", {"place": "Lima"}, "2:00")
    )
    for messages, expected in ((first_round, False), (_READ, True)):
        shaped = offer()
        await AnswerApart().shape(turn(messages, [READ_FILE]), shaped)
        assert shaped.answer_apart is expected
    several = offer()
    several.parts = 2  # what `answer_parts` leaves after a round of two results
    await AnswerApart().shape(turn(two, [GET_TIME]), several)
    assert several.answer_apart is False
    assert AnswerParts.name == "answer_parts"
