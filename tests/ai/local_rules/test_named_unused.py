"""`named_unused`: after results, a tool the request names and no call used is taken,
not answered for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    CALCULATOR,
    GET_TIME,
    READ_FILE,
    answer,
    conversation,
    notes,
    offer,
    reply,
    run,
    tool,
    turn,
)
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, NamedUnused

TOOLS = [CALCULATOR, GET_TIME, READ_FILE]
REQUEST = "where.txt names a city. What time is it there?"
READ = ("read_file", {"path": "where.txt"}, "Nairobi")


async def test_a_named_tool_not_used_yet_is_required_after_results() -> None:
    shaped = offer()
    await NamedUnused().shape(turn(conversation(REQUEST, READ), TOOLS), shaped)
    assert shaped.named == {"get_time"}
    # once used, or before any result, nothing is required
    done = conversation(REQUEST, READ, ("get_time", {"place": "Nairobi"}, "05:53"))
    for messages in (done, conversation(REQUEST)):
        plain = offer()
        await NamedUnused().shape(turn(messages, TOOLS), plain)
        assert plain.named == set()
    # a request that names no other tool
    read_only = offer()
    await NamedUnused().shape(turn(conversation("Show me where.txt", READ), TOOLS), read_only)
    assert read_only.named == set()


async def test_a_message_steered_in_before_the_first_reply_adds_to_the_request() -> None:
    # "What time is it in Oslo?" and, before any reply, "Also, what is 2 * 21?": after the
    # product, the time is still asked for; the product alone was the whole request
    # only when no user message came right before it.
    product = ("calculator", {"expression": "2 * 21"}, "42")
    steered = [
        *conversation("What time is it in Oslo?"),
        *conversation("Also, what is 2 * 21?", product),
    ]
    both = offer()
    await NamedUnused().shape(turn(steered, TOOLS), both)
    assert both.named == {"get_time"}
    alone = offer()
    await NamedUnused().shape(turn(conversation("Also, what is 2 * 21?", product), TOOLS), alone)
    assert alone.named == set()


async def test_a_name_word_the_tool_that_ran_also_has_names_no_other_tool() -> None:
    # "file" is a word of both names: once `delete_file` ran, the request is done and
    # `read_file` is not required; a word only its name has still names it.
    delete_file = tool("delete_file", {"path": {"type": "string"}})
    tools = [CALCULATOR, GET_TIME, READ_FILE, delete_file]
    deleted = ("delete_file", {"path": "old.log"}, "deleted old.log")
    done = offer()
    await NamedUnused().shape(turn(conversation("Delete the file old.log", deleted), tools), done)
    assert done.named == set()
    both = offer()
    request = "Delete the file old.log, then read the file new.log"
    await NamedUnused().shape(turn(conversation(request, deleted), tools), both)
    assert both.named == {"read_file"}


async def test_the_next_step_is_taken_instead_of_a_made_up_answer(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation(REQUEST, READ)
    fake([reply(("get_time", {"place": "Nairobi"}))])
    message = await run(messages, TOOLS)
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("get_time", {"place": "Nairobi"})
    ]
    assert [n["action"] for n in notes(message, "named_unused")] == ["required"]
    fake([answer("It is noon in Nairobi.")])
    off = await run(messages, TOOLS, DEFAULT_POLICY.without("named_unused"))
    assert off.text == "It is noon in Nairobi."


async def test_a_word_of_another_tools_name_does_not_name_a_tool_by_its_description() -> None:
    # "time" is get_time's name; the note tool's description also says "time", and a
    # request for the time does not ask for a note.
    notes_tool = replace(
        tool("add_note", {"text": {"type": "string"}}),
        description="Add a note to the user's notebook, with the time it was made.",
    )
    shaped = offer()
    tools = [CALCULATOR, GET_TIME, READ_FILE, notes_tool]
    await NamedUnused().shape(turn(conversation(REQUEST, READ), tools), shaped)
    assert shaped.named == {"get_time"}
    # asked for a note, the note tool is named by its own name word
    asked = offer()
    request = "where.txt names a city. Add a note with the time there."
    await NamedUnused().shape(turn(conversation(request, READ), tools), asked)
    assert asked.named == {"get_time", "add_note"}
