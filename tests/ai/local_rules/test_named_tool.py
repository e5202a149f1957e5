"""`named_tool`: a request that names a tool gets no answer offered while the tool is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import conversation, offer, reply, run, tool, turn
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, NamedTool
from yiemagent.types.output import OUTPUT_TOOL_LABEL

WORD_COUNT = tool("word_count", {"text": {"type": "string"}})


async def test_a_tool_named_as_written_or_spelled_out_is_required() -> None:
    for request in ("Use word_count on: a b c", "Count the words in: a b c"):
        shaped = offer()
        await NamedTool().shape(turn(conversation(request), [WORD_COUNT]), shaped)
        assert shaped.named == {"word_count"}, request
    plain = offer()
    await NamedTool().shape(turn(conversation("How are you?"), [WORD_COUNT]), plain)
    assert plain.named == set()


def _answer_offered(request: dict[str, object]) -> bool:
    schema = request["response_format"]["json_schema"]["schema"]  # type: ignore[index]
    return any(
        b.get("properties", {}).get("name", {}).get("const") == "answer" for b in schema["anyOf"]
    )


async def test_the_answer_is_offered_again_without_the_rule(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("Use word_count on: a b c")
    runtime = fake([reply(("word_count", {"text": "a b c"}))])
    await run(messages, [WORD_COUNT])
    assert not _answer_offered(runtime.requests[0])
    runtime = fake([reply(("word_count", {"text": "a b c"}))])
    await run(messages, [WORD_COUNT], DEFAULT_POLICY.without("named_tool"))
    assert _answer_offered(runtime.requests[0])


def _names_offered(request: dict[str, object]) -> set[str]:
    schema = request["response_format"]["json_schema"]["schema"]  # type: ignore[index]
    names = {b.get("properties", {}).get("name", {}).get("const") for b in schema["anyOf"]}
    return names - {None}  # the list of several calls has no name of its own


async def test_in_a_typed_run_the_output_tool_waits_for_a_named_tool(
    fake: Callable[..., FakeRuntime],
) -> None:
    # The output tool is a typed run's answer: "Count the words" holds it back until
    # word_count ran; a request spelling out the output tool's own name ("the final
    # result") requires nothing, and the output tool stays offered.
    output = replace(tool("final_result", {"count": {"type": "integer"}}), label=OUTPUT_TOOL_LABEL)
    runtime = fake([reply(("word_count", {"text": "a b c"}))])
    await run(conversation("Count the words in: a b c"), [WORD_COUNT, output])
    assert _names_offered(runtime.requests[0]) == {"word_count"}
    runtime = fake([reply(("final_result", {"count": 4}))])
    message = await run(conversation("What is the final result of 2 + 2?"), [WORD_COUNT, output])
    assert [c.name for c in message.tool_calls] == ["final_result"]
    assert _names_offered(runtime.requests[0]) == {"word_count", "final_result"}
