"""Traced content stays bounded and valid (DESIGN §13): with `trace_content` every chat span
holds the transcript so far and a tool result may be 100,000 characters, so each content
attribute is kept within `trace_content_max_chars` (and the SDK's own attribute length
limit): the newest messages whole, the older ones left out and counted, a text too long
cut in its middle with a note, every value still valid JSON, and nothing changed when a
value fits. Real runs on the faux provider, read back through the SDK's in-memory
exporter; hypothesis draws transcripts and tool arguments of every shape and size."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import event, given, settings, strategies as st
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from yiemagent import (
    AbortSignal,
    Agent,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    ConfigError,
    UserMessage,
    run_agent_loop,
)
from yiemagent.ai import AssistantMessageEventStream, Model
from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.telemetry import instrument, uninstrument
from yiemagent.types.messages import (
    AgentMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
)

pytestmark = pytest.mark.timeout(300)

CONTENT = (
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)
JSON_CONTENT = CONTENT[:4]
NOTE = "characters (trace content bound) left out"
SHORTENED = (
    "yiemagent.content.truncated",
    "yiemagent.content.elided_messages",
    "yiemagent.content.elided_chars",
)


def left_out(text: str) -> int:
    """The characters the note in `text` says were left out."""
    (count,) = re.findall(rf"\n\[… ([\d,]+) {re.escape(NOTE)} …\]\n", text)
    return int(count.replace(",", ""))


def kept(text: str) -> int:
    """The characters of `text` that are not its note."""
    return len(text) - len(f"\n[… {left_out(text):,} {NOTE} …]\n")


def memory_provider(
    limits: SpanLimits | None = None,
) -> tuple[TracerProvider, InMemorySpanExporter]:
    provider = TracerProvider(span_limits=limits)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider, memory = memory_provider()
    yield provider, memory
    provider.shutdown()


def echo_tool() -> AgentTool:
    """`dump`: returns `"x" * n` (n from its arguments, default 10), or its arguments'
    `text` when given."""

    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        if "text" in args:
            return str(args["text"])
        return "x" * int(args.get("n", 10))

    return AgentTool("dump", "dump", "returns text", {"type": "object"}, execute)


async def run(
    fm: FauxModel,
    provider: TracerProvider,
    history: list[AgentMessage] | None = None,
    prompt: str = "go",
    **config: Any,
) -> None:
    context = AgentContext("be brief", list(history or []), [echo_tool()])
    await run_agent_loop(
        [UserMessage(prompt)],
        context,
        AgentLoopConfig(model=fm.model, tracer_provider=provider, trace_content=True, **config),
        lambda event: None,
        None,
        fm.stream_fn,
    )


def ordered(spans: tuple[ReadableSpan, ...], prefix: str) -> list[dict[str, Any]]:
    found = [s for s in spans if s.name.startswith(prefix)]
    found.sort(key=lambda s: s.start_time or 0)
    return [dict(s.attributes or {}) for s in found]


def tool_calls(sizes: list[int]) -> list[Any]:
    """A faux script: one call of `dump` per size, each in its own turn, then "done"."""
    return [faux_message(faux_tool_call("dump", {"n": n})) for n in sizes] + ["done"]


async def test_a_long_run_keeps_every_content_attribute_within_the_default_bound(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """Twelve calls each returning 20,000 characters: unbounded, the last chat span alone
    would hold the 240,000 of them. Each attribute is at most 32,000 characters and valid
    JSON; a chat span keeps its newest messages whole (the last tool result among them)
    and counts the older ones it left out."""
    provider, memory = exporter
    fm = FauxModel(tool_calls([20_000] * 12))
    await run(fm, provider)
    spans = memory.get_finished_spans()
    for attrs in [*ordered(spans, "chat "), *ordered(spans, "execute_tool ")]:
        for name in CONTENT:
            if name in attrs:
                assert len(attrs[name]) <= 32_000
        for name in JSON_CONTENT:
            if name in attrs:
                json.loads(attrs[name])
    chats = ordered(spans, "chat ")
    assert len(chats) == 13
    last = chats[-1]
    kept = json.loads(last["gen_ai.input.messages"])
    total = 1 + 2 * 12  # the prompt, then a call and its result per turn
    assert last["yiemagent.content.elided_messages"] == total - len(kept)
    assert 1 <= len(kept) < total
    assert kept[-1]["role"] == "tool"
    assert kept[-1]["parts"][0]["response"] == "x" * 20_000  # the newest kept whole
    assert last["yiemagent.content.truncated"] == ("gen_ai.input.messages",)
    assert "yiemagent.content.elided_chars" not in last  # no text was cut
    first = chats[0]
    assert not any(name in first for name in SHORTENED)  # the first call's fit whole
    for tool in ordered(spans, "execute_tool "):
        assert tool["gen_ai.tool.call.result"] == "x" * 20_000  # under the bound: whole


async def test_a_huge_result_is_cut_in_its_text_with_a_note_never_mid_json(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """A 100,000-character result (the loop's own cap): the tool span keeps its head and
    tail with a note counting what was left out; the next chat span, whose newest message
    alone is too long, keeps that message with its text cut the same way, as JSON."""
    provider, memory = exporter
    text = "HEAD" + "y" * 99_992 + "TAIL"
    fm = FauxModel([faux_message(faux_tool_call("dump", {"text": text})), "done"])
    await run(fm, provider)
    spans = memory.get_finished_spans()
    (tool,) = ordered(spans, "execute_tool ")
    result = tool["gen_ai.tool.call.result"]
    assert len(result) <= 32_000
    assert result.startswith("HEAD") and result.endswith("TAIL") and NOTE in result
    assert left_out(result) == len(text) - kept(result)  # every character kept or counted
    # the arguments hold the same text: cut inside their string, still a JSON object
    arguments = json.loads(tool["gen_ai.tool.call.arguments"])
    assert set(arguments) == {"text"}
    cut = arguments["text"]
    assert cut.startswith("HEAD") and cut.endswith("TAIL") and NOTE in cut
    assert tool["yiemagent.content.truncated"] == (
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    )
    assert tool["yiemagent.content.elided_chars"] == left_out(result) + left_out(cut)

    last = ordered(spans, "chat ")[-1]
    messages = last["gen_ai.input.messages"]
    assert len(messages) <= 32_000
    (newest,) = json.loads(messages)
    assert newest["role"] == "tool" and newest["parts"][0]["type"] == "tool_call_response"
    response = newest["parts"][0]["response"]
    assert response.startswith("HEAD") and response.endswith("TAIL") and NOTE in response
    assert last["yiemagent.content.elided_messages"] == 2  # the prompt and the call
    assert last["yiemagent.content.elided_chars"] > 60_000


@pytest.mark.parametrize("how", ["environment", "span_limits"])
async def test_the_sdk_length_limit_is_honoured_with_valid_json(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """With `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT` (or the provider's `SpanLimits`) below the
    bound the SDK would cut a value at that length, mid-JSON; the values are kept within
    it instead, so none is cut and every one parses."""
    if how == "environment":
        monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "3000")
        provider, memory = memory_provider()
    else:
        provider, memory = memory_provider(SpanLimits(max_span_attribute_length=3000))
    try:
        fm = FauxModel(tool_calls([2_500, 2_500]))
        await run(fm, provider, prompt="p" * 2_000)
    finally:
        provider.shutdown()
    spans = memory.get_finished_spans()
    chats = ordered(spans, "chat ")
    for attrs in [*chats, *ordered(spans, "execute_tool ")]:
        for name in JSON_CONTENT:
            if name in attrs:
                json.loads(attrs[name])
                assert len(attrs[name]) <= 3000
    assert chats[-1]["yiemagent.content.elided_messages"] >= 1


async def test_the_calls_the_local_rules_name_are_bounded_content_too(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """The embedded provider's rule steps name the calls they dropped with their
    arguments, as long as the model wrote them: JSON within the bound, cut in the text."""
    provider, memory = exporter
    step = {"rule": "ungrounded", "action": "dropped", "what": "write " + "z" * 50_000}

    def stream_fn(model: Model, context: Any, options: Any) -> AssistantMessageEventStream:
        stream = AssistantMessageEventStream()
        builder = MessageBuilder(model, stream)
        builder.start()
        builder.text_delta("the answer")
        builder.message.details["local_rules"] = [step]  # as the embedded provider notes
        builder.done("stop")
        return stream

    config = AgentLoopConfig(
        model=FauxModel([]).model, tracer_provider=provider, trace_content=True
    )
    await run_agent_loop(
        [UserMessage("go")], AgentContext("", [], []), config, lambda e: None, None, stream_fn
    )
    (chat,) = ordered(memory.get_finished_spans(), "chat ")
    value = chat["yiemagent.local_rules"]
    assert len(value) <= 32_000
    ((recorded),) = json.loads(value)
    assert recorded["rule"] == "ungrounded" and recorded["action"] == "dropped"
    assert recorded["what"].startswith("write zzz") and NOTE in recorded["what"]
    assert chat["yiemagent.content.truncated"] == ("yiemagent.local_rules",)


async def test_nothing_changes_under_the_bound(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """A run whose content fits records it exactly as with no bound at all, and says
    nothing was shortened."""
    provider, memory = exporter
    unbounded, unbounded_memory = memory_provider()

    def script() -> list[Any]:
        call = faux_tool_call("dump", {"n": 50, "why": 'a "q"\n'}, id="call_1")
        return [faux_message("let me look", call), "done"]

    await run(FauxModel(script()), provider, prompt='héllo\n"there"')
    await run(FauxModel(script()), unbounded, prompt='héllo\n"there"', trace_content_max_chars=None)
    unbounded.shutdown()

    def content(spans: tuple[ReadableSpan, ...]) -> list[dict[str, Any]]:
        every = [*ordered(spans, "chat "), *ordered(spans, "execute_tool ")]
        return [{k: v for k, v in a.items() if k in CONTENT or k in SHORTENED} for a in every]

    bounded_content = content(memory.get_finished_spans())
    assert bounded_content == content(unbounded_memory.get_finished_spans())
    assert all(not any(k in a for k in SHORTENED) for a in bounded_content)
    assert json.loads(bounded_content[0]["gen_ai.input.messages"])[0]["parts"][0] == {
        "type": "text",
        "content": 'héllo\n"there"',
    }


async def test_instrument_takes_its_bound(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    instrument(provider, capture_content=True, content_max_chars=500)
    try:
        fm = FauxModel(tool_calls([2_000]))
        context = AgentContext("be brief", [], [echo_tool()])
        config = AgentLoopConfig(model=fm.model)
        await run_agent_loop(
            [UserMessage("go")], context, config, lambda e: None, None, fm.stream_fn
        )
    finally:
        uninstrument()
    (tool,) = ordered(memory.get_finished_spans(), "execute_tool ")
    assert len(tool["gen_ai.tool.call.result"]) <= 500
    assert tool["yiemagent.content.elided_chars"] > 1_500


async def test_an_agent_takes_its_bound(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    fm = FauxModel(tool_calls([2_000]))
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[echo_tool()],
        tracer_provider=provider,
        trace_content=True,
        trace_content_max_chars=700,
    )
    await agent.prompt("go")
    (tool,) = ordered(memory.get_finished_spans(), "execute_tool ")
    result = tool["gen_ai.tool.call.result"]
    assert len(result) <= 700 and result.startswith("x") and NOTE in result
    assert left_out(result) == 2_000 - kept(result)


@pytest.mark.parametrize("bad", [0, -5, 2.5, "100", True])
def test_a_bound_that_is_not_a_count_is_one_clear_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="trace_content_max_chars must be a whole number"):
        AgentLoopConfig(model=FauxModel().model, trace_content_max_chars=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="content_max_chars must be a whole number"):
        instrument(content_max_chars=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="trace_content_max_chars must be a whole number"):
        Agent(model=FauxModel().model, trace_content_max_chars=bad)  # type: ignore[arg-type]


# ── hypothesis: transcripts and arguments of every shape and size ────────────────────

_tricky = st.sampled_from(["a", '"', "\\", "\n", "é", "🙂", "\x01", "<", " "])
texts = st.one_of(
    st.text(max_size=40),
    st.builds(lambda c, n: c * n, _tricky, st.integers(0, 6_000)),
    st.builds(lambda a, b: a + b, st.text(max_size=20), st.text(_tricky, max_size=300)),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def transcripts(draw: st.DrawFn) -> list[AgentMessage]:
    """User turns, answers with text and thinking, and calls with their results."""
    messages: list[AgentMessage] = []
    for turn in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["user", "answer", "calls"]))
        if kind == "user":
            messages.append(UserMessage(draw(texts)))
        elif kind == "answer":
            blocks: list[Any] = [ThinkingContent(draw(texts)), TextContent(draw(texts))]
            messages.append(faux_message(*blocks))
        else:
            calls = [
                ToolCall(
                    f"call_{turn}_{i}",
                    "dump",
                    draw(st.dictionaries(st.text(max_size=8), json_values, max_size=3)),
                )
                for i in range(draw(st.integers(1, 2)))
            ]
            messages.append(faux_message(*calls))
            for call in calls:
                messages.append(ToolResultMessage(call.id, "dump", [TextContent(draw(texts))]))
    return messages


def traced(
    history: list[AgentMessage], prompt: str, limit: int | None, answer: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The chat and tool spans' attributes of a run of `history` + `prompt` answered by
    `answer` (then "done"), with `trace_content_max_chars=limit`."""
    provider, memory = memory_provider()
    try:
        asyncio.run(
            run(
                FauxModel([answer, "done"]),
                provider,
                history,
                prompt,
                trace_content_max_chars=limit,
            )
        )
    finally:
        provider.shutdown()
    spans = memory.get_finished_spans()
    return ordered(spans, "chat "), ordered(spans, "execute_tool ")


@settings(max_examples=60)
@given(transcripts(), texts, st.integers(200, 1_000) | st.integers(1_000, 12_000))
def test_any_transcript_is_valid_json_within_the_bound_newest_whole(
    history: list[AgentMessage], prompt: str, limit: int
) -> None:
    """Whatever the messages: the chat span's messages are valid JSON within the bound;
    when they fit they are exactly the unbounded ones; else the newest that fit are kept
    whole and the older counted, or, the newest alone being too long, it alone with its
    texts cut and the characters left out counted."""
    (chat, *_), _ = traced(history, prompt, limit, "ok")
    (whole, *_), _ = traced(history, prompt, None, "ok")
    full = json.loads(whole["gen_ai.input.messages"])
    value = chat["gen_ai.input.messages"]
    assert len(value) <= limit
    kept = json.loads(value)
    assert isinstance(kept, list) and kept
    if len(whole["gen_ai.input.messages"]) <= limit:
        event("all fit")
        assert value == whole["gen_ai.input.messages"]
        assert not any(name in chat for name in SHORTENED)
        return
    assert "gen_ai.input.messages" in chat["yiemagent.content.truncated"]
    assert chat.get("yiemagent.content.elided_messages", 0) + len(kept) == len(full)
    if "yiemagent.content.elided_chars" in chat and kept != full[-len(kept) :]:
        event("the newest alone, cut")
        (newest,) = kept  # too long alone: cut inside its texts
        assert newest["role"] == full[-1]["role"] and chat["yiemagent.content.elided_chars"] > 0
        assert len(json.dumps([full[-1]], ensure_ascii=False)) > limit
    else:
        event("the newest whole, the older left out")
        assert kept == full[-len(kept) :]  # the newest, whole


@settings(max_examples=60)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6), st.integers(1, 3_000))
def test_any_arguments_and_result_are_valid_within_the_bound(
    arguments: dict[str, Any], limit: int
) -> None:
    """A call's arguments of any shape are recorded as valid JSON within the bound (an
    object whose strings are cut, or when its keys alone are too long a JSON string; a
    bound under 2 records none), whole when they fit; its result, a text, within it too."""
    call = faux_message(faux_tool_call("dump", {"text": json.dumps(arguments), **arguments}))
    _, (tool,) = traced([], "go", limit, call)
    _, (whole,) = traced([], "go", None, call)
    for name in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):
        full = whole[name]
        if name not in tool:
            assert limit < 2 and name == "gen_ai.tool.call.arguments"
            continue
        value = tool[name]
        assert len(value) <= limit
        if len(full) <= limit:
            assert value == full
        else:
            event(f"{name} cut" + (" to a string" if value.startswith('"') else ""))
            assert name in tool["yiemagent.content.truncated"]
            assert tool["yiemagent.content.elided_chars"] > 0
        if name == "gen_ai.tool.call.arguments":
            json.loads(value)
