"""The embedded model in its own tool format (`tool_format="native"`, DESIGN §20): Qwen's
`<tool_call>` blocks held to the tools' schemas by a grammar, free text left free, and the
same policy as the JSON reply: call rules judge each whole block (kept, repaired, dropped
and asked again without the tool), offer rules shape the grammar. Checked with the
scripted runtime; the real 0.5B writes a call in its own format (marker local_model)."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import llguidance
import pytest
from hypothesis import given, settings, strategies as st

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    GET_TIME,
    GET_WEATHER,
    READ_FILE,
    TEXT,
    conversation,
    notes,
    scene,
    tool,
)
from yiemagent import AgentTool, AssistantMessage, UserMessage
from yiemagent.ai import Context, stream
from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.models import get_model
from yiemagent.ai.providers.local import local_model
from yiemagent.ai.providers.local.decoder import CallGate
from yiemagent.ai.providers.local.model import TOOL_FORMAT_ENV
from yiemagent.ai.providers.local.native import (
    NATIVE_NAME_PREFIX,
    NativeDecoder,
    native_extra_grammar,
    native_grammar,
    native_messages,
)
from yiemagent.ai.providers.local.prompt import MAX_CALLS, NO_TOOL
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, DETAILS_KEY, LocalPolicy
from yiemagent.cli.options import example_tools
from yiemagent.types.messages import Message, TextContent, ToolCall, ToolResultMessage
from yiemagent.types.model import AssistantMessageEventStream
from yiemagent.types.output import OUTPUT_TOOL_LABEL

NATIVE = local_model(tool_format="native")


async def _message(context: Context) -> AssistantMessage:
    return await stream(NATIVE, context).result()


async def _run(
    messages: list[Message], tools: list[AgentTool], policy: LocalPolicy | None = None
) -> AssistantMessage:
    model = local_model(policy=policy, tool_format="native")
    return await stream(model, Context("", messages, tools)).result()


def _blocks(*calls: tuple[str, dict[str, Any]]) -> str:
    """A reply of one `<tool_call>` block a call, a line apart."""
    return "\n".join(
        f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"
        for name, args in calls
    )


def _offered(request: dict[str, Any]) -> tuple[list[str], bool]:
    """The tools a request's grammar holds, and whether it admits free text."""
    grammar = request["grammar"]
    start = grammar.split("start: ", 1)[1].split("\n", 1)[0]
    return sorted(set(re.findall(r'"const": "(\w+)"', grammar))), "TEXT" in start


async def test_a_tool_call_block_becomes_a_call_and_ends_with_tool_use(
    fake: Callable[..., FakeRuntime],
) -> None:
    block = (
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6 * 7"}}\n</tool_call>'
    )
    runtime = fake([], more=[block])  # the fake answers a request with a grammar from `more`
    message = await _message(Context("", [UserMessage("6 * 7?")], example_tools("calculator")))
    assert message.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("calculator", {"expression": "6 * 7"})
    ]
    request = runtime.requests[0]  # then one more block is asked for (`extra_call`)
    assert "response_format" not in request and "<tool_call>" in request["grammar"]
    system = request["messages"][0]["content"]
    assert "<tools>" in system and '"name": "calculator"' in system
    # The free-name probe writes after the start of a block, with no grammar.
    [probe] = runtime.probes
    assert probe["messages"][-1]["content"] == NATIVE_NAME_PREFIX and "grammar" not in probe


async def test_the_environment_names_the_format_of_a_model_that_does_not_choose(
    fake: Callable[..., FakeRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`$YIEMAGENT_LOCAL_TOOL_FORMAT` drives `yiem run` and the benches' plain models in
    either format; a value that names none fails the request with one message."""
    context = Context("", [UserMessage("Hi")], example_tools("calculator"))
    plain = get_model("local/qwen2.5-coder-0.5b")
    monkeypatch.setenv(TOOL_FORMAT_ENV, "native")
    runtime = fake([], more=["Hello!"])
    assert (await stream(plain, context).result()).text == "Hello!"
    assert "<tool_call>" in runtime.requests[0]["grammar"]
    monkeypatch.setenv(TOOL_FORMAT_ENV, "xml")
    failed = await stream(plain, context).result()
    assert failed.stop_reason == "error"
    assert failed.error_message == (f"${TOOL_FORMAT_ENV} must be one of json, native, not 'xml'")


async def test_free_text_stays_text(fake: Callable[..., FakeRuntime]) -> None:
    fake([], more=["Hello! How can I help?"])
    message = await _message(Context("", [UserMessage("Hi")], example_tools("calculator")))
    assert (message.stop_reason, message.text, message.tool_calls) == (
        "stop",
        "Hello! How can I help?",
        [],
    )


def test_earlier_calls_and_results_are_framed_as_the_template_does() -> None:
    call = ToolCall(id="c1", name="get_time", arguments={"place": "Oslo"})
    messages: list[Any] = [
        UserMessage("Time in Oslo?"),
        AssistantMessage(content=[call], stop_reason="toolUse"),
        ToolResultMessage("c1", "get_time", [TextContent("14:02")]),
    ]
    chat = native_messages("sys", messages)
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    body = chat[2]["content"].removeprefix("<tool_call>\n").removesuffix("\n</tool_call>")
    assert json.loads(body) == {"name": "get_time", "arguments": {"place": "Oslo"}}
    assert chat[3]["content"] == "<tool_response>\n14:02\n</tool_response>"


async def test_a_call_a_rule_drops_is_not_emitted_and_asked_again_without_its_tool(
    fake: Callable[..., FakeRuntime],
) -> None:
    """`relevant` drops a call of a tool the request does not name: the reply is generated
    again with that tool out of the grammar (still in the system prompt, for the cache)."""
    runtime = fake([], more=[_blocks(("get_time", {"place": "Hamlet"})), "Shakespeare."])
    message = await _run(conversation("Who wrote Hamlet?"), [GET_TIME, GET_WEATHER])
    assert (message.stop_reason, message.text, message.tool_calls) == ("stop", "Shakespeare.", [])
    [step] = notes(message, "relevant")
    assert step["action"] == "dropped" and "Hamlet" in step["what"]
    first, again = runtime.requests
    assert _offered(first) == (["get_time", "get_weather"], True)
    assert _offered(again) == (["get_weather"], True)
    assert again["messages"] == first["messages"]


async def test_a_repaired_call_is_emitted_repaired(fake: Callable[..., FakeRuntime]) -> None:
    fake([], more=[_blocks(("read_file", {"path": "path/to/notes.md"}))])
    message = await _run(conversation("Summarise notes.md"), [READ_FILE])
    assert message.stop_reason == "toolUse"
    assert [c.arguments for c in message.tool_calls] == [{"path": "notes.md"}]
    [step] = notes(message, "file_names")
    assert step["action"] == "repaired" and "path/to/notes.md" in step["what"]


async def test_a_call_written_with_made_up_numbers_is_stopped_and_asked_again(
    fake: Callable[..., FakeRuntime],
) -> None:
    """`grounded.stops` ends a block while it is written; the reply is asked again without
    that tool, so only the answer is left."""
    note = tool("write_note", {"text": {"type": "string"}})
    runaway = _blocks(("write_note", {"text": "at 10 20 30 45 50 65 70 85 90 " * 20}))
    runtime = fake([], more=[runaway, "About what?"])
    message = await _run(conversation("Write a note about the meeting."), [note])
    assert (message.text, message.tool_calls) == ("About what?", [])
    # "stopped" (not "dropped"): judged while written, not once the block was whole.
    assert [n["action"] for n in notes(message, "grounded")] == ["stopped"]
    assert _offered(runtime.requests[1]) == ([], True)


async def test_every_call_dropped_twice_leaves_the_answer_only(
    fake: Callable[..., FakeRuntime],
) -> None:
    """The JSON reply's bound: after two replies whose calls were dropped, only text."""
    runtime = fake(
        [],
        more=[
            _blocks(("get_time", {"place": "Hamlet"})),
            _blocks(("get_weather", {"city": "Hamlet"})),
            "Shakespeare.",
        ],
    )
    message = await _run(conversation("Who wrote Hamlet?"), [GET_TIME, GET_WEATHER])
    assert (message.text, message.tool_calls) == ("Shakespeare.", [])
    assert [_offered(r) for r in runtime.requests] == [
        (["get_time", "get_weather"], True),
        (["get_weather"], True),
        ([], True),
    ]
    assert [n["rule"] for n in message.details[DETAILS_KEY]] == ["relevant", "relevant"]


async def test_a_block_the_reply_already_holds_is_left_out(
    fake: Callable[..., FakeRuntime],
) -> None:
    """`adds_part` leaves the second of two identical blocks out (not asked again), and
    the line between the blocks is no text."""
    call = ("get_time", {"place": "Oslo"})
    runtime = fake([], more=[_blocks(call, call)])
    message = await _run(conversation("What time is it in Oslo?"), [GET_TIME])
    assert [c.arguments for c in message.tool_calls] == [{"place": "Oslo"}]
    assert [b.type for b in message.content] == ["toolCall"]
    assert [n["action"] for n in notes(message, "adds_part")] == ["dropped"]
    assert len(runtime.requests) == 1


async def test_a_lone_block_is_written_back_and_one_more_block_asked_for(
    fake: Callable[..., FakeRuntime],
) -> None:
    """`extra_call` in the model's own format: the lone first block is written back as the
    template frames several calls, the next block's tag opened, and the grammar holds the
    model to one call and the closing tag; a call that adds a part is kept and the next is
    asked for, one that adds nothing ends the reply's calls."""
    oslo, lima = ("get_time", {"place": "Oslo"}), ("get_time", {"place": "Lima"})
    lima_body = json.dumps({"name": "get_time", "arguments": lima[1]}) + "\n</tool_call>"
    oslo_body = json.dumps({"name": "get_time", "arguments": {"place": "Oslo."}})
    runtime = fake([], more=[_blocks(oslo), lima_body, oslo_body + "\n</tool_call>"])
    message = await _run(conversation("The time in Oslo and in Lima?"), [GET_TIME, GET_WEATHER])
    assert message.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in message.tool_calls] == [oslo, lima]
    first, second, third = runtime.requests
    assert second["messages"][:-1] == first["messages"]
    assert second["messages"][-1] == {
        "role": "assistant",
        "content": _blocks(oslo) + "\n<tool_call>\n",
    }
    assert third["messages"][-1]["content"] == _blocks(oslo, lima) + "\n<tool_call>\n"
    assert second["grammar"] == native_extra_grammar([GET_TIME, GET_WEATHER])
    assert [n["action"] for n in notes(message, "extra_call")] == ["asked", "asked"]
    assert [n["action"] for n in notes(message, "adds_part")] == ["dropped"]


async def test_an_extra_block_cut_short_is_dropped_and_the_first_call_stands(
    fake: Callable[..., FakeRuntime],
) -> None:
    oslo = ("get_time", {"place": "Oslo"})
    cut = '{"name": "get_time", "arguments": {"place": "Li'
    fake([], more=[_blocks(oslo), cut], more_finish=["stop", "length"])
    message = await _run(conversation("The time in Oslo and in Lima?"), [GET_TIME])
    assert (message.stop_reason, [(c.name, c.arguments) for c in message.tool_calls]) == (
        "toolUse",
        [oslo],
    )


def test_the_extra_block_grammar_is_one_call_and_the_closing_tag() -> None:
    grammar = native_extra_grammar([GET_TIME, GET_WEATHER], drop={"get_weather"})
    call = json.dumps({"name": "get_time", "arguments": {"place": "Lima"}})
    assert _admits(grammar, call + "\n</tool_call>")
    assert not _admits(grammar, call)  # the block must close
    assert not _admits(grammar, call + "\n</tool_call>\n<tool_call>")  # one block only
    weather = json.dumps({"name": "get_weather", "arguments": {"city": "Lima"}})
    assert not _admits(grammar, weather + "\n</tool_call>")  # a tool left out


async def test_no_extra_block_is_asked_for_after_several_or_with_text(
    fake: Callable[..., FakeRuntime],
) -> None:
    oslo, lima = ("get_time", {"place": "Oslo"}), ("get_time", {"place": "Lima"})
    runtime = fake([], more=[_blocks(oslo, lima)])
    await _run(conversation("The time in Oslo and in Lima?"), [GET_TIME])
    assert len(runtime.requests) == 1
    runtime = fake([], more=["Let me check.\n" + _blocks(oslo)])
    await _run(conversation("The time in Oslo and in Lima?"), [GET_TIME])
    assert len(runtime.requests) == 1


async def test_withheld_tools_leave_the_grammar_and_stay_in_the_prompt(
    fake: Callable[..., FakeRuntime],
) -> None:
    """After a result, `chain_unnamed` withholds a tool the request does not name."""
    messages = conversation("Read a.txt", ("read_file", {"path": "a.txt"}, "hello"))
    runtime = fake([], more=["It says hello."])
    message = await _run(messages, [READ_FILE, GET_TIME])
    assert message.text == "It says hello."
    [request] = runtime.requests
    assert _offered(request) == (["read_file"], True)
    assert '"name": "get_time"' in request["messages"][0]["content"]
    assert [n["action"] for n in notes(message, "chain_unnamed")] == ["withheld"]


async def test_a_tool_the_request_names_leaves_no_free_text(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake([], more=[_blocks(("get_time", {"place": "Oslo"}))])
    message = await _run(conversation("Use get_time for Oslo."), [GET_TIME, GET_WEATHER])
    assert [c.name for c in message.tool_calls] == ["get_time"]
    assert _offered(runtime.requests[0]) == (["get_time", "get_weather"], False)
    assert [n["action"] for n in notes(message, "named_tool")] == ["required"]


async def test_a_function_that_is_not_there_is_told_in_the_models_own_format(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake([], more=["I cannot book flights."], names=["book_flight"])
    message = await _run(conversation("Book a flight to Rome."), [GET_TIME])
    assert message.text == "I cannot book flights."
    [request] = runtime.requests
    told, said = request["messages"][-2:]
    assert told == {
        "role": "assistant",
        "content": '<tool_call>\n{"name": "book_flight"}\n</tool_call>',
    }
    assert said == {"role": "user", "content": NO_TOOL.format(name="book_flight")}
    assert _offered(request) == ([], True)
    assert [n["action"] for n in notes(message, "unknown_tool")] == ["told"]


async def test_the_empty_policy_is_plain_native_decoding(
    fake: Callable[..., FakeRuntime],
) -> None:
    """No probe, every tool and free text offered, every block emitted as written (and
    the line between two blocks is no text block)."""
    call = ("get_time", {"place": "Hamlet"})
    runtime = fake([], more=[_blocks(call, call)])
    message = await _run(conversation("Who wrote Hamlet?"), [GET_TIME, GET_WEATHER], LocalPolicy())
    assert [c.arguments for c in message.tool_calls] == [{"place": "Hamlet"}] * 2
    assert [b.type for b in message.content] == ["toolCall", "toolCall"]
    assert (len(runtime.requests), runtime.probes) == (1, [])
    assert _offered(runtime.requests[0]) == (["get_time", "get_weather"], True)
    assert DETAILS_KEY not in message.details


async def test_a_typed_runs_output_tool_leaves_no_free_text(
    fake: Callable[..., FakeRuntime],
) -> None:
    """As in the JSON reply, a typed run's value comes as its output tool's call."""
    output = replace(tool("final_result", {"city": TEXT}), label=OUTPUT_TOOL_LABEL)
    runtime = fake([], more=[_blocks(("final_result", {"city": "Oslo"}))])
    message = await _run(conversation("Which city is the capital of Norway?"), [output])
    assert [c.arguments for c in message.tool_calls] == [{"city": "Oslo"}]
    assert _offered(runtime.requests[0]) == (["final_result"], False)


def _admits(grammar: str, text: str) -> bool:
    """Whether llguidance, the engine llama.cpp runs these grammars with, accepts `text`
    whole (bytes as tokens, no model)."""
    tokenizer = llguidance.LLTokenizer("byte")
    matcher = llguidance.LLMatcher(tokenizer, llguidance.grammar_from("lark", grammar), log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    matcher.consume_tokens(tokenizer.tokenize_str(text))
    return not matcher.is_error() and matcher.is_accepting()


def test_the_grammar_holds_blocks_to_the_tools_offered_and_text_to_the_offer() -> None:
    time_block = _blocks(("get_time", {"place": "Oslo"}))
    weather_block = _blocks(("get_weather", {"city": "Oslo"}))
    wrong_key = _blocks(("get_time", {"city": "Oslo"}))
    tools = [GET_TIME, GET_WEATHER]
    free = native_grammar(tools, drop={"get_weather"})
    assert _admits(free, "It is late.") and _admits(free, f"{time_block}\n{time_block}")
    assert not _admits(free, weather_block) and not _admits(free, wrong_key)
    named = native_grammar(tools, drop={"get_weather"}, answer=False)
    assert _admits(named, time_block) and not _admits(named, "It is late.")
    withheld = native_grammar(tools, drop={"get_time", "get_weather"}, answer=False)
    assert _admits(withheld, "It is late.") and not _admits(withheld, time_block)


def test_a_call_in_any_framing_is_held_to_the_schemas_and_read_as_a_call() -> None:
    """A small model opens a call with a markdown fence or bare JSON more often than with
    the template's tag: the grammar holds the JSON inside each framing to the tools'
    schemas (free text may not begin like a call), and the decoder reads each as calls."""
    oslo, lima = ({"name": "get_time", "arguments": {"place": p}} for p in ("Oslo", "Lima"))
    grammar = native_grammar([GET_TIME])
    framings = {
        f"```json\n{json.dumps(oslo)}\n```": [oslo],
        f"```\n{json.dumps(oslo, indent=2)}\n```": [oslo],
        f"```json\n{json.dumps([oslo, lima])}\n```": [oslo, lima],
        f"{json.dumps(oslo)}\n{json.dumps(lima)}": [oslo, lima],
    }
    for reply, calls in framings.items():
        assert _admits(grammar, reply), reply
        assert _decode([reply])[0] == [c["arguments"] for c in calls]
    not_held = '```json\n{"name": "get_time", "arguments": {"place": 3 * 60}}\n```'
    assert not _admits(grammar, not_held)
    assert not _admits(grammar, '{"name": "get_time", "arguments": {"city": "Oslo"}}')
    assert _admits(grammar, "```python\nprint(17 * 23)\n```") and _admits(grammar, "`x` is 3.")


def test_free_text_does_not_begin_like_a_call_even_after_blanks() -> None:
    """A newline and then a call's JSON is a call, held to the schemas, not text (the
    0.5B wrote one so in its own format); other text with blanks before it is free."""
    grammar = native_grammar([GET_TIME, GET_WEATHER])
    assert not _admits(grammar, '\n{"name": "get_time", "arguments": {"place": 3}}')
    assert _admits(grammar, "\n\n  It is 14:02 in Oslo.")
    assert _admits(grammar, "Names: (a) Oslo, (b) Lima.")


def test_a_reply_holds_at_most_max_calls_blocks() -> None:
    """A model repeating a call is stopped by the grammar, not by the token limit."""
    block = _blocks(("get_time", {"place": "Oslo"}))
    grammar = native_grammar([GET_TIME])
    assert _admits(grammar, "\n".join([block] * MAX_CALLS))
    assert not _admits(grammar, "\n".join([block] * (MAX_CALLS + 1)))


_PLACES = ("Oslo", "Lima", "Hamlet", "Oslo")


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(_PLACES) - 1), min_size=1, max_size=4),
    text=st.sampled_from(["", "Let me look.\n"]),
    cuts=st.lists(st.integers(1, 400), max_size=12),
)
def test_what_the_decoder_emits_does_not_depend_on_the_chunks(
    picks: list[int], text: str, cuts: list[int]
) -> None:
    """The same reply, whole or cut anywhere into deltas, gives the same calls, text,
    rule steps and kind, with every call rule on (some calls dropped, repeats left out)."""
    reply = text + _blocks(*[("get_time", {"place": _PLACES[i]}) for i in picks])
    bounds = sorted({0, len(reply), *(c for c in cuts if c < len(reply))})
    chunks = [reply[a:b] for a, b in itertools.pairwise(bounds)]
    assert _decode([reply]) == _decode(chunks)


def _decode(chunks: list[str]) -> tuple[Any, ...]:
    messages = conversation("What time is it in Oslo and in Lima?")
    builder = MessageBuilder(NATIVE, AssistantMessageEventStream())
    rules = DEFAULT_POLICY.call_rules
    decoder = NativeDecoder(
        builder, CallGate(builder, [GET_TIME], scene=scene(messages, [GET_TIME]), rules=rules)
    )
    for chunk in chunks:
        decoder.feed(chunk)
    kind = decoder.finish(cut=False)
    calls = [c.arguments for c in builder.message.tool_calls]
    return calls, builder.message.text, [n.as_dict() for n in decoder.notes], kind


@pytest.mark.local_model
@pytest.mark.slow
async def test_the_real_model_writes_a_call_in_its_own_format() -> None:
    """One reply: a `<tool_call>` block, held to the calculator's schema, read as a call
    whose expression holds the request's numbers."""
    pytest.importorskip("xllamacpp")
    request = UserMessage("Use the calculator: what is 17 * 23?")
    context = Context("You are a helpful assistant.", [request], example_tools("calculator"))
    message = await _message(context)
    assert message.stop_reason == "toolUse", message.text
    [call] = message.tool_calls[:1]
    assert call.name == "calculator"
    expression = str(call.arguments.get("expression"))
    assert "17" in expression and "23" in expression
    assert "<tool_call>" not in message.text
