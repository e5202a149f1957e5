"""`given_file`: a first-round request that gives a file name reads it before answering."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    CALCULATOR,
    GET_TIME,
    GET_WEATHER,
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
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, GivenFile
from yiemagent.types.output import OUTPUT_TOOL_LABEL

TOOLS = [CALCULATOR, GET_TIME, READ_FILE]
REQUEST = "Open setup.cfg and tell me the package name."


def _offered(request: dict[str, object]) -> set[str]:
    # The names the reply schema lets the model write (tools and the answer object).
    schema = json.dumps(request["response_format"])
    return {
        name
        for name in ("answer", "calculator", "get_time", "get_weather", "read_file", "final_result")
        if f'"const": "{name}"' in schema
    }


async def test_a_given_file_requires_a_tool_that_reads_files() -> None:
    shaped = offer()
    await GivenFile().shape(turn(conversation(REQUEST), TOOLS), shaped)
    assert shaped.named == {"read_file"}
    # no file name, no reader, or after results: nothing is required
    read = conversation(REQUEST, ("read_file", {"path": "setup.cfg"}, "name = kettle"))
    for messages, tools in (
        (conversation("What is 2 + 2?"), TOOLS),
        (conversation(REQUEST), [CALCULATOR, GET_TIME]),
        (read, TOOLS),
    ):
        plain = offer()
        await GivenFile().shape(turn(messages, tools), plain)
        assert plain.named == set()


async def test_a_reader_another_rule_took_away_is_not_required() -> None:
    # `unknown_tool` said no tool deletes files and withheld every tool: the model declines.
    shaped = offer()
    shaped.dropped = {t.name for t in TOOLS}
    await GivenFile().shape(turn(conversation("Delete old.log."), TOOLS), shaped)
    assert shaped.named == set()


async def test_the_file_is_read_instead_of_a_made_up_answer(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation(REQUEST)
    runtime = fake([reply(("read_file", {"path": "setup.cfg"}))], names=["read_file"])
    message = await run(messages, TOOLS)
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("read_file", {"path": "setup.cfg"})
    ]
    assert [n["action"] for n in notes(message, "given_file")] == ["required"]
    assert "answer" not in _offered(runtime.requests[0])
    runtime = fake([answer("The package is called demo.")], names=["read_file"])
    off = await run(messages, TOOLS, DEFAULT_POLICY.without("given_file"))
    assert off.text == "The package is called demo."
    assert "answer" in _offered(runtime.requests[0])


async def test_after_two_dropped_replies_the_required_tool_is_asked_for_once_more(
    fake: Callable[..., FakeRuntime],
) -> None:
    # Two replies the grounding guard drops (no one gave "Paris"), then the reader: the
    # third reply offers only the tool the request needs, not the answer.
    runtime = fake(
        [
            reply(("get_time", {"place": "Paris"})),
            reply(("get_weather", {"city": "Paris"})),
            reply(("read_file", {"path": "setup.cfg"})),
        ],
        names=["read_file"],
    )
    message = await run(conversation(REQUEST), [GET_TIME, GET_WEATHER, READ_FILE])
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("read_file", {"path": "setup.cfg"})
    ]
    replies = [r for r in runtime.requests if "response_format" in r]
    assert _offered(replies[-1]) == {"read_file"}


async def test_a_typed_run_reads_the_file_before_its_output_tool(
    fake: Callable[..., FakeRuntime],
) -> None:
    # In a typed run the output tool is the answer: "The package is kettle." written
    # straight into `final_result` (bad: made up) becomes the read (good).
    output = replace(tool("final_result", {"name": {"type": "string"}}), label=OUTPUT_TOOL_LABEL)
    runtime = fake([reply(("read_file", {"path": "setup.cfg"}))], names=["read_file"])
    message = await run(conversation(REQUEST), [*TOOLS, output])
    assert [c.name for c in message.tool_calls] == ["read_file"]
    assert [n["action"] for n in notes(message, "given_file")] == ["required"]
    assert _offered(runtime.requests[0]) == {"calculator", "get_time", "read_file"}
    # once the file is read, the output tool is offered again
    read = conversation(REQUEST, ("read_file", {"path": "setup.cfg"}, "name = kettle"))
    runtime = fake([reply(("final_result", {"name": "kettle"}))])
    done = await run(read, [*TOOLS, output])
    assert [(c.name, c.arguments) for c in done.tool_calls] == [
        ("final_result", {"name": "kettle"})
    ]
    assert "final_result" in _offered(runtime.requests[0])
