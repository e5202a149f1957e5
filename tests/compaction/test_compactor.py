"""`yiemagent.compaction.Compactor` (DESIGN §15 "Compaction") on a faux model that declares
a tiny context window: long conversations keep answering inside the window, the older turns
become one model-written summary, tool calls and results stay in pairs, the agent's (and the
stored) transcript stays whole."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from yiemagent import Agent, AgentRunError, AgentTool, InMemorySessionStore, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.compaction import (
    CompactionInfo,
    Compactor,
    ContextWindowExceeded,
    estimate_tokens,
)
from yiemagent.compaction._compactor import SUMMARY_SYSTEM_PROMPT
from yiemagent.types import (
    AgentMessage,
    AssistantMessage,
    CompactionSummaryMessage,
    Context,
    DocumentContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    text_of,
)

WINDOW = 600


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: what to look up.
    """
    return f"value of {key} is {len(key) * 7}"


def _pairs_ok(messages: list[Any]) -> None:
    """Every tool call is followed by exactly its results; no orphan result."""
    open_ids: list[str] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            assert not open_ids, f"calls {open_ids} left without results"
            open_ids = [c.id for c in message.tool_calls]
        elif isinstance(message, ToolResultMessage):
            assert message.tool_call_id in open_ids, f"orphan result {message.tool_call_id}"
            open_ids.remove(message.tool_call_id)
        else:
            assert not open_ids, f"calls {open_ids} left without results"


class Scripted:
    """Answers prompts (a lookup every third one), and writes summaries when asked."""

    def __init__(self) -> None:
        self.summary_requests: list[str] = []
        self.turn = 0

    def __call__(self, context: Context) -> AssistantMessage:
        if context.system_prompt == SUMMARY_SYSTEM_PROMPT:
            request = text_of(context.messages[-1].content)  # type: ignore[union-attr]
            self.summary_requests.append(request)
            return faux_message(f"SUMMARY#{len(self.summary_requests)}: the user asked things.")
        last = context.messages[-1]
        if isinstance(last, UserMessage):
            self.turn += 1
            if self.turn % 3 == 0:
                return faux_message(faux_tool_call("lookup", {"key": f"k{self.turn}"}))
        return faux_message(f"answer {self.turn}: " + "blah " * 12)


def _agent(window: int = WINDOW, **kwargs: Any) -> tuple[Agent, FauxModel, Scripted, Compactor]:
    script = Scripted()
    fm = FauxModel([script] * 400, model_id="compaction-faux")
    model = dataclasses.replace(fm.model, context_window=window)
    infos: list[CompactionInfo] = []
    compactor = Compactor(model, stream_fn=fm.stream_fn, on_compact=infos.append)
    compactor.infos = infos  # type: ignore[attr-defined]
    agent = Agent(
        model=model, stream_fn=fm.stream_fn, tools=[lookup], transform_context=compactor, **kwargs
    )
    return agent, fm, script, compactor


async def test_a_long_conversation_keeps_answering_inside_a_tiny_window() -> None:
    store = InMemorySessionStore()
    agent, fm, script, compactor = _agent(session_store=store, session_id="long")
    for n in range(40):
        reply = await agent.prompt(f"question {n}: " + "words " * 10)
        assert reply.stop_reason == "stop", reply.error_message
    infos: list[CompactionInfo] = compactor.infos  # type: ignore[attr-defined]
    assert len(infos) >= 3 and all(i.summarised_by_model for i in infos)
    # Every model call (summaries aside) fit the window and kept calls with their results.
    answered = [c for c in fm.contexts if c.system_prompt != SUMMARY_SYSTEM_PROMPT]
    for context in answered:
        assert estimate_tokens(list(context.messages)) <= compactor.threshold
        _pairs_ok(list(context.messages))
    late = answered[-1].messages
    assert "SUMMARY#" in text_of(late[0].content)  # type: ignore[union-attr]  # user text
    # Later summaries are built on the earlier one (incremental).
    assert "Summary so far:\nSUMMARY#1" in script.summary_requests[1]
    # The transcript, and the stored session, keep every message.
    prompts = [m for m in agent.state.messages if isinstance(m, UserMessage)]
    assert len(prompts) == 40
    assert len(store.load("long")) == len(agent.state.messages)
    assert not any(isinstance(m, CompactionSummaryMessage) for m in agent.state.messages)
    # One summary per compaction (a fold larger than a request holds in parts, each
    # carrying the summary so far), not one per model call.
    assert len(infos) <= len(script.summary_requests) <= len(infos) + 2 < len(answered)
    assert all("Summary so far:\nSUMMARY#" in r for r in script.summary_requests[1:])
    assert infos[0].turns >= 1 and infos[0].tokens_after < infos[0].tokens_before


async def test_under_the_threshold_nothing_changes_and_no_summary_is_asked() -> None:
    agent, fm, script, compactor = _agent(window=100_000)
    for n in range(5):
        await agent.prompt(f"q{n}")
    assert script.summary_requests == [] and compactor.compactions == 0
    assert len(fm.contexts[-1].messages) == len(agent.state.messages) - 1  # not the answer


async def test_a_failed_summary_still_drops_old_turns_and_the_chat_goes_on() -> None:
    fm = FauxModel(model_id="compaction-fail")

    def answer(context: Context) -> AssistantMessage:
        if context.system_prompt == SUMMARY_SYSTEM_PROMPT:
            return faux_message("", stop_reason="error", error_message="summary model down")
        return faux_message("fine " * 20)

    fm.add(*[answer] * 100)
    model = dataclasses.replace(fm.model, context_window=400)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    agent = Agent(model=model, stream_fn=fm.stream_fn, transform_context=compactor)
    for n in range(20):
        reply = await agent.prompt(f"prompt {n} " + "x " * 20)
        assert reply.stop_reason == "stop"
    assert compactor.compactions >= 3
    first = text_of(fm.contexts[-1].messages[0].content)  # type: ignore[union-attr]
    # one note, counting every message left out: failures do not pile notes up until the
    # notes alone fill the window
    assert first.count("earlier messages were left out") == 1, first
    left = int(first.split("[")[1].split()[0])
    sent = len(agent.state.messages) - 1  # all but the last answer
    assert left == sent - (len(fm.contexts[-1].messages) - 1)  # all but those kept


async def test_an_undo_that_cuts_into_the_summarised_part_is_summarised_again() -> None:
    agent, fm, script, _ = _agent(window=1000)  # room for 4 messages beside the tool
    for n in range(15):
        await agent.prompt(f"question {n}: " + "words " * 10)
    before = len(script.summary_requests)
    assert before >= 1
    agent.state.messages = agent.state.messages[:4]
    await agent.prompt("after the undo")
    assert len(script.summary_requests) == before  # 4 messages fit: nothing to summarise
    assert len(fm.contexts[-1].messages) == 5


def _conversation(turns: list[tuple[int, int, int]]) -> list[AgentMessage]:
    messages: list[AgentMessage] = []
    for index, (words, calls, answer_words) in enumerate(turns):
        messages.append(UserMessage("w " * words))
        if calls:
            ids = [f"c{index}_{k}" for k in range(calls)]
            messages.append(
                AssistantMessage(
                    content=[ToolCall(i, "lookup", {"key": "v" * words}) for i in ids],
                    stop_reason="toolUse",
                )
            )
            messages.extend(
                ToolResultMessage(i, "lookup", [TextContent("r " * answer_words)]) for i in ids
            )
        messages.append(AssistantMessage(content=[TextContent("a " * answer_words)]))
    return messages


@settings(max_examples=60, deadline=None)
@given(
    turns=st.lists(
        st.tuples(st.integers(0, 80), st.integers(0, 3), st.integers(0, 80)),
        min_size=1,
        max_size=30,
    ),
    window=st.integers(256, 2000),
)
async def test_any_conversation_keeps_each_call_with_its_result_exactly_once(
    turns: list[tuple[int, int, int]], window: int
) -> None:
    fm = FauxModel([faux_message("S")] * 10, model_id="compaction-prop")
    model = dataclasses.replace(fm.model, context_window=window)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    messages = _conversation(turns)
    snapshot = list(messages)
    try:
        view = await compactor(messages, None)
    except ContextWindowExceeded:
        # only when the last message and its results' least leave no room for an answer
        assert fm.contexts == [] and messages == snapshot  # before any call
        results = list(itertools.takewhile(lambda m: m.role == "toolResult", reversed(messages)))
        least = estimate_tokens([messages[-1 - len(results)]]) + 32 * len(results)
        assert least + window // 16 > window
        return
    assert messages == snapshot  # the transcript is not touched
    _pairs_ok(view)
    kept = [m for m in view if not isinstance(m, CompactionSummaryMessage)]
    for seen, message in zip(kept, messages[len(messages) - len(kept) :], strict=True):
        if seen is not message:  # a suffix, in order, unchanged but for shortened results
            assert isinstance(message, ToolResultMessage), message
            assert dataclasses.replace(seen, content=message.content) == message
            assert "characters cut to fit the context window" in text_of(seen.content)  # type: ignore[union-attr]
    if compactor.compactions:
        assert isinstance(view[0], CompactionSummaryMessage) and len(kept) < len(messages)
        calls = [c.id for m in kept if isinstance(m, AssistantMessage) for c in m.tool_calls]
        results = [m.tool_call_id for m in kept if isinstance(m, ToolResultMessage)]
        assert sorted(calls) == sorted(results) and len(set(results)) == len(results)
    else:
        assert len(view) == len(messages)
    llm: list[Message] = [m for m in view if not isinstance(m, CompactionSummaryMessage)]
    assert estimate_tokens(llm) <= estimate_tokens(messages)


async def test_a_chinese_conversation_is_compacted_before_it_overflows_the_window() -> None:
    """pi #2562, openclaw #70052: tokenizers spend about a token on each CJK character, not a
    quarter of one, so counted at 4 characters a token a Chinese conversation overflowed the
    window long before compaction began."""
    sentence = "我们明天在北京的会议室讨论新产品的价格和发布时间"  # 24 characters

    def answer(context: Context) -> AssistantMessage:
        if context.system_prompt == SUMMARY_SYSTEM_PROMPT:
            return faux_message("摘要：用户问了会议的事。")
        return faux_message(sentence * 2)

    fm = FauxModel([answer] * 100, model_id="compaction-cjk")
    model = dataclasses.replace(fm.model, context_window=WINDOW)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    agent = Agent(model=model, stream_fn=fm.stream_fn, transform_context=compactor)
    for _ in range(12):
        reply = await agent.prompt(sentence * 2)
        assert reply.stop_reason == "stop"
    assert compactor.compactions >= 1
    answered = [c for c in fm.contexts if c.system_prompt != SUMMARY_SYSTEM_PROMPT]
    for context in answered:  # at about a token a character, each view fits the window
        assert sum(len(text_of(m.content)) for m in context.messages) < WINDOW  # type: ignore[union-attr]


async def test_what_a_summary_spends_counts_against_the_runs_usage_limits() -> None:
    """openai/openai-agents-python #4434, cymoo/lovia #200: a compaction's model call cost
    real tokens that never reached the run's usage budget. Here a run with
    `max_input_tokens` went on calling tools however much its summaries spent."""
    from yiemagent import UsageLimitExceeded, UsageLimits
    from yiemagent.types import Usage

    def costly(context: Context) -> AssistantMessage:
        if context.system_prompt == SUMMARY_SYSTEM_PROMPT:
            message = faux_message("SUMMARY: lookups so far.")
            message.usage = Usage(input=4000, output=500)
            return message
        turn = sum(isinstance(m, ToolResultMessage) for m in context.messages)
        message = faux_message(faux_tool_call("lookup", {"key": f"key {turn} " * 20}))
        message.usage = Usage(input=5)
        return message

    fm = FauxModel([costly] * 400, model_id="compaction-costly")
    model = dataclasses.replace(fm.model, context_window=WINDOW)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    agent = Agent(
        model=model, stream_fn=fm.stream_fn, tools=[lookup], transform_context=compactor,
        usage_limits=UsageLimits(max_input_tokens=3000), max_turns=60,
    )  # fmt: skip
    with pytest.raises(UsageLimitExceeded, match=r"max_input_tokens=3000 \(used 40"):
        await agent.prompt("look everything up")
    assert compactor.compactions == 1  # the first summary's tokens stop the run
    assert compactor.usage.input == 4000


async def test_what_a_summary_spends_is_in_the_runs_reported_usage() -> None:
    """The summary's tokens and cost counted against the limits but were left out of what
    a run reports (`yiem run`'s usage line and `--json`, the chat's, serve's `usage`, the
    trace): the model call a summary was written for carries it as `compaction_usage`, in
    the events and the stored session, and every total adds it."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from yiemagent.serve._openai import _usage
    from yiemagent.types import AgentEndEvent, Cost, Usage, event_to_dict, transcript_usage

    calls: list[Context] = []

    def costly(context: Context) -> AssistantMessage:
        if context.system_prompt == SUMMARY_SYSTEM_PROMPT:
            message = faux_message("SUMMARY: lookups so far.")
            message.usage = Usage(input=4000, output=500, total_tokens=4500, cost=Cost(total=0.5))
            return message
        calls.append(context)
        turn = len(calls)
        reply = faux_tool_call("lookup", {"key": f"key {turn} " * 20}) if turn < 12 else "done"
        message = faux_message(reply)
        message.usage = Usage(input=5, output=1, total_tokens=6, cost=Cost(total=0.001))
        return message

    fm = FauxModel([costly] * 400, model_id="compaction-costly")
    model = dataclasses.replace(fm.model, context_window=WINDOW)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    store = InMemorySessionStore()
    spans = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(spans))
    agent = Agent(
        model=model, stream_fn=fm.stream_fn, tools=[lookup], transform_context=compactor,
        session_store=store, session_id="s", tracer_provider=tracer,
    )  # fmt: skip
    ends: list[AgentEndEvent] = []
    agent.subscribe(lambda event, _: ends.append(event) if event.type == "agent_end" else None)
    reply = await agent.prompt("look everything up")
    assert reply.text == "done"
    assert compactor.compactions >= 1

    answers = [m for m in agent.state.messages if isinstance(m, AssistantMessage)]
    marked = [m.compaction_usage for m in answers if m.compaction_usage is not None]
    assert len(marked) == compactor.compactions
    assert sum(u.input for u in marked) == compactor.usage.input
    assert all(m.usage.input == 5 for m in answers)  # the call's own usage stays its own

    total = transcript_usage(ends[0].messages)
    assert total.input == 5 * len(answers) + compactor.usage.input
    assert total.output == len(answers) + compactor.usage.output
    assert round(total.cost.total, 6) == round(0.001 * len(answers) + compactor.usage.cost.total, 6)
    # serve's `usage` and `yiem run --json` read the JSON of the events
    assert _usage(event_to_dict(ends[0]))["prompt_tokens"] == total.prompt_tokens
    # the stored session keeps it: a resumed chat's /usage still counts the summaries
    assert transcript_usage(store.load("s")).input == total.input
    (run_span,) = [s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert run_span.attributes is not None
    assert run_span.attributes["gen_ai.usage.input_tokens"] == total.prompt_tokens
    assert run_span.attributes["gen_ai.usage.output_tokens"] == total.output
    tracer.shutdown()


async def test_an_attached_pdf_counts_by_its_size_and_gets_compacted_away() -> None:
    """opencode#46543, miurla/morphic#991: a PDF counted as nothing, so a conversation
    holding a long one was never compacted and the provider refused it as too long."""

    def pdf(size: int) -> DocumentContent:
        return DocumentContent(base64.b64encode(b"%PDF-1.4\n" + b"x" * size).decode())

    small = estimate_tokens([UserMessage([TextContent("read"), pdf(100)])])
    large = estimate_tokens([UserMessage([TextContent("read"), pdf(1_000_000)])])
    assert 1_500 < small < 1_600  # at least a page
    assert 19_000 < large < 21_000  # a token per 50 bytes
    agent, fm, script, compactor = _agent(window=26_000)  # the PDF, tools and answer fit
    await agent.prompt([UserMessage([TextContent("read this"), pdf(1_000_000)])])
    for n in range(3):
        await agent.prompt(f"q{n}")
    assert compactor.compactions >= 1 and script.summary_requests
    last = fm.contexts[-1]
    assert estimate_tokens(list(last.messages)) <= compactor.threshold
    assert not any(
        isinstance(b, DocumentContent) for m in last.messages for b in getattr(m, "content", [])
    )


async def test_every_request_leaves_room_for_the_longest_answer() -> None:
    """anthropics/claude-code #42 ("input length and `max_tokens` exceed context limit:
    187254 + 20000 > 204798", then every later request) and strands-agents #1078: the
    API refuses a request whose prompt and `max_tokens` together pass the window. Here
    the default reserve was a quarter of the window whatever the model's `max_tokens`,
    so a model that may answer with more (Claude Sonnet 4.5: 64,000 of 200,000) was sent
    views the API refuses, and the session, growing, never got back under."""
    script = Scripted()
    fm = FauxModel([script] * 400, model_id="compaction-faux")
    model = dataclasses.replace(fm.model, context_window=WINDOW, max_tokens=WINDOW * 2 // 5)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    agent = Agent(model=model, stream_fn=fm.stream_fn, tools=[lookup], transform_context=compactor)
    for n in range(30):
        reply = await agent.prompt(f"question {n}: " + "words " * 10)
        assert reply.stop_reason == "stop", reply.error_message
    answered = [c for c in fm.contexts if c.system_prompt != SUMMARY_SYSTEM_PROMPT]
    biggest = max(estimate_tokens(list(c.messages)) for c in answered)
    assert biggest + model.max_tokens <= WINDOW, biggest


WORDY_SCHEMA = {
    "type": "object",
    "properties": {
        f"field_{i}": {"type": "string", "description": "a value this tool reads " * 2}
        for i in range(4)
    },
}
WORDY_BESIDE = 2082
"""Tokens Qwen2.5's chat template (the embedded model's) spends on the weather system prompt
and the thirteen tools below: the template's tools preamble, each tool's function JSON
(measured with llama.cpp's /apply-template and /tokenize, less a bare prompt's)."""


def _tool_tokens(context: Context) -> int:
    """Estimated tokens of what a request sends beside its messages: the system prompt and
    each tool's name, description and schema (4 characters a token)."""
    chars = len(context.system_prompt) + sum(
        len(t.name) + len(t.description) + len(json.dumps(t.input_schema)) for t in context.tools
    )
    return chars // 4


def _template_tokens(context: Context) -> int:
    """What the embedded model's chat template spends beside the messages (`WORDY_BESIDE`)."""
    return WORDY_BESIDE


@pytest.mark.parametrize(
    ("window", "max_tokens", "beside"),
    [
        pytest.param(3000, 200, _tool_tokens, id="schemas-count-against-the-window"),
        pytest.param(3200, 650, _template_tokens, id="as-much-as-a-chat-template-spends"),
    ],
)
async def test_the_system_prompt_and_tool_schemas_count_against_the_window(
    window: int, max_tokens: int, beside: Callable[[Context], int]
) -> None:
    """A long system prompt and twelve tools with wordy schemas take about half the window;
    every request, those included, still leaves room for the answer.

    schemas-count-against-the-window: HKUDS/nanobot#4039 and vybestack/llxprt-code#310: the
    history kept was sized without the system prompt and the tools' schemas, so with many
    tools (an MCP server's) the request still passed the window after compaction. (3,000
    tokens: at 2,000 the tools, as a chat template renders them, leave no room for an
    answer.)

    as-much-as-a-chat-template-spends: the tools were counted as their name, description
    and schema at 4 characters a token, 1,670 tokens here, where the embedded model's
    template spends 2,082: it wraps each tool in its function JSON (denser than prose, about
    3.5 characters a token) and adds a preamble on how to call them. With the answer's
    room, requests passed the window by the difference."""
    script = Scripted()
    fm = FauxModel([script] * 400, model_id="compaction-faux")
    model = dataclasses.replace(fm.model, context_window=window, max_tokens=max_tokens)
    tools = [
        AgentTool(f"tool_{n}", f"tool {n}", "Looks things up. " * 3, WORDY_SCHEMA, lambda *_: "ok")
        for n in range(12)
    ]
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    agent = Agent(
        model=model,
        stream_fn=fm.stream_fn,
        system_prompt="You answer questions about the weather. " * 12,
        tools=[lookup, *tools],
        transform_context=compactor,
    )
    for n in range(30):
        reply = await agent.prompt(f"question {n}: " + "words " * 10)
        assert reply.stop_reason == "stop", reply.error_message
    answered = [c for c in fm.contexts if c.system_prompt != SUMMARY_SYSTEM_PROMPT]
    assert _tool_tokens(answered[-1]) > window // 3  # the tools are a large part
    for context in answered:
        sent = estimate_tokens(list(context.messages)) + beside(context)
        assert sent + model.max_tokens <= window, sent
        _pairs_ok(list(context.messages))
    assert compactor.compactions >= 2


async def test_a_summary_cut_short_by_an_abort_is_written_on_the_next_call() -> None:
    """openclaw#89868 and hermes-agent#79391: a compaction interrupted by the user left the
    model a lost or partial history afterwards. Here an abort while the summary was being
    written left the plain "left out" note in place of a summary for the rest of the
    conversation; now nothing is remembered from the aborted call, and the next prompt
    gets a summary written by the model."""
    started = asyncio.Event()
    release = asyncio.Event()

    async def answer(context: Context) -> AssistantMessage:
        if context.system_prompt == SUMMARY_SYSTEM_PROMPT:
            if not release.is_set():
                started.set()
                await release.wait()
            return faux_message("SUMMARY: the user asked numbered questions.")
        return faux_message("answer " + "blah " * 12)

    fm = FauxModel([answer] * 200, model_id="compaction-faux")
    model = dataclasses.replace(fm.model, context_window=WINDOW)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    agent = Agent(model=model, stream_fn=fm.stream_fn, transform_context=compactor)
    for n in range(40):
        run = asyncio.create_task(agent.prompt(f"question {n}: " + "words " * 10))
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait([run, waiting], return_when=asyncio.FIRST_COMPLETED, timeout=30)
        waiting.cancel()
        if started.is_set():
            agent.abort()
            assert (await run).stop_reason == "aborted"
            break
        assert (await run).stop_reason == "stop"
    assert started.is_set(), "no compaction was needed"
    release.set()
    reply = await agent.prompt("and one more")
    assert reply.stop_reason == "stop", reply.error_message
    last = [c for c in fm.contexts if c.system_prompt != SUMMARY_SYSTEM_PROMPT][-1]
    seen = text_of(last.messages[0].content)  # type: ignore[union-attr]
    assert "SUMMARY: the user asked" in seen and "left out" not in seen
    assert compactor.compactions == 1


async def test_a_fold_larger_than_the_window_is_summarised_in_parts_oldest_first() -> None:
    """pi-mono (serializeConversation) and this compactor sent the whole fold in one
    request, cut to the window by characters: a long conversation compacted at once (a
    resumed session, a smaller window) lost its oldest turns unsaid, and Chinese text,
    a token a character, made the request four times the window. Here the fold is
    summarised in parts that each fit the window, the oldest first, each summary carried
    into the next, so what the first part established reaches the last summary."""
    requests: list[Context] = []

    def summarise(context: Context) -> AssistantMessage:
        assert context.system_prompt == SUMMARY_SYSTEM_PROMPT
        requests.append(context)
        request = text_of(context.messages[-1].content)  # type: ignore[union-attr]
        kept = " the launch code is 4711" if "4711" in request else ""
        return faux_message(f"SUMMARY#{len(requests)}:{kept}")

    fm = FauxModel([summarise] * 100, model_id="compaction-fold")
    model = dataclasses.replace(fm.model, context_window=WINDOW)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    messages: list[AgentMessage] = [
        UserMessage("Remember: the launch code is 4711."),
        AssistantMessage(content=[TextContent("Noted.")]),
    ]
    for n in range(30):
        messages.append(UserMessage(f"question {n}: " + "会议价格 " * 12))
        messages.append(AssistantMessage(content=[TextContent(f"answer {n}: " + "blah " * 12)]))
    view = await compactor(messages, None)

    assert isinstance(view[0], CompactionSummaryMessage)
    assert len(requests) >= 2, "the fold was sent in one request"
    for context in requests:  # each request, its answer included, fits the window
        sent = estimate_tokens([UserMessage(context.system_prompt), *context.messages])
        assert sent + compactor.summary_max_tokens <= WINDOW, sent
    assert "4711" in text_of(requests[0].messages[-1].content)  # type: ignore[union-attr]
    for number, context in enumerate(requests[1:], start=1):
        assert f"Summary so far:\nSUMMARY#{number}:" in text_of(context.messages[-1].content)  # type: ignore[union-attr]
    assert view[0].summary == f"SUMMARY#{len(requests)}: the launch code is 4711"


@tool
def read_log(name: str) -> str:
    """Read a log file.

    Args:
        name: the log's name.
    """
    if name == "short":
        return "short log: all fine"
    return "BEGIN " + "line of the log " * 2000 + "END: disk full"


async def test_tool_results_that_alone_pass_the_window_are_shortened_in_the_view() -> None:
    """openai-agents ToolOutputTrimmer, pydantic-ai's summarisation processors: a tool's
    output can be larger than the window, and compaction, which keeps the last turn
    whole, then sent a request no model accepts. Here a parallel batch returns a 32,000
    character log beside a short one: the model sees both results, the short one whole
    and the long one's start and end with a note of what was cut, inside the window; the
    transcript keeps the whole log."""
    calls = 0

    def answer(context: Context) -> AssistantMessage:
        nonlocal calls
        if context.system_prompt == SUMMARY_SYSTEM_PROMPT:
            return faux_message("SUMMARY: earlier questions.")
        calls += 1
        if calls == 1:
            return faux_message(
                faux_tool_call("read_log", {"name": "long"}),
                faux_tool_call("read_log", {"name": "short"}),
            )
        return faux_message("The disk is full.")

    fm = FauxModel([answer] * 20, model_id="compaction-big-result")
    model = dataclasses.replace(fm.model, context_window=1000)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    agent = Agent(
        model=model, stream_fn=fm.stream_fn, tools=[read_log], transform_context=compactor
    )
    reply = await agent.prompt("Why did the service stop?")
    assert reply.stop_reason == "stop", reply.error_message
    seen = fm.contexts[-1]
    assert estimate_tokens(list(seen.messages)) <= compactor.threshold
    _pairs_ok(list(seen.messages))
    long, short = [m for m in seen.messages if isinstance(m, ToolResultMessage)]
    assert text_of(short.content) == "short log: all fine"
    shown = text_of(long.content)
    assert shown.startswith("BEGIN line of the log") and shown.endswith("END: disk full")
    assert "characters cut to fit the context window" in shown
    kept = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert len(text_of(kept[0].content)) > 32_000  # the transcript keeps the whole log


async def test_a_prompt_larger_than_the_window_is_one_error_before_any_call() -> None:
    """A prompt that cannot fit the window was summarised around (a model call spent),
    then sent, and the provider refused it with its own words, or a local server cut it.
    Here it is one error naming the sizes before any model call; the conversation and
    the stored session keep every message, and the next prompt is answered."""
    store = InMemorySessionStore()
    agent, fm, _, compactor = _agent(session_store=store, session_id="big")
    for n in range(3):
        assert (await agent.prompt(f"question {n}")).stop_reason == "stop"
    calls = len(fm.contexts)
    before = list(agent.state.messages)
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("please read: " + "word " * 3000)
    assert raised.value.message.stop_reason == "error"
    text = str(raised.value)
    assert text.startswith("ContextWindowExceeded: the last message is about 3,7"), text
    assert f"{WINDOW}-token context window" in text
    assert len(fm.contexts) == calls  # no summary, no answer asked for
    assert store.load("big")[: len(before)] == before
    assert len(store.load("big")) == len(before) + 2  # the prompt and the error
    after = await agent.prompt("a short question then")
    assert after.stop_reason == "stop", after.error_message
    assert compactor.compactions == 1  # the long prompt is now in the summary


async def test_images_in_folded_turns_are_named_in_the_summary_request() -> None:
    """An image in a folded turn vanished from the summary request without a word, so
    the summary could not say one had been shown. Each image and PDF is named."""
    from yiemagent.types import ImageContent

    agent, _, script, _ = _agent(window=3000)  # room for an image's 1,200 tokens
    png = base64.b64encode(b"\x89PNG fake").decode()
    photo = UserMessage([TextContent("what is in this photo?"), ImageContent(png, "image/png")])
    await agent.prompt([photo])
    for n in range(12):
        await agent.prompt(f"question {n}: " + "words " * 10)
    assert script.summary_requests
    assert "User: what is in this photo? [image]" in script.summary_requests[0]


# Tokens Qwen2.5's tokenizer (the embedded model's) spends on each sentence, measured with
# llama.cpp's /tokenize; cl100k and o200k spend about as much or less.
MEASURED = [
    ("The meeting tomorrow will discuss the price of the new product and when it is "
     "released to customers.", 19),
    ("Завтра на встрече в Москве мы обсудим цену нового продукта и дату его выпуска для "
     "клиентов.", 28),
    ("Αύριο στη συνάντηση θα συζητήσουμε την τιμή του νέου προϊόντος και την ημερομηνία "
     "κυκλοφορίας.", 79),
    ("سنناقش غدا في الاجتماع سعر المنتج الجديد وموعد إطلاقه للعملاء في السوق.", 22),
    ("מחר בפגישה נדון במחיר המוצר החדש ובמועד השקתו ללקוחות.", 16),
    ("कल की बैठक में हम नए उत्पाद की कीमत और ग्राहकों के लिए इसकी रिलीज़ की तारीख पर चर्चा "
     "करेंगे।", 84),
    ("พรุ่งนี้ในการประชุมเราจะหารือเกี่ยวกับราคาของผลิตภัณฑ์ใหม่และวันที่วางจำหน่ายให้กับลูกค้า", 45),
    ("Cuộc họp ngày mai sẽ thảo luận về giá của sản phẩm mới và ngày phát hành cho khách "
     "hàng.", 22),
    ("我们明天在北京的会议室讨论新产品的价格和发布时间", 11),
    ("明日の会議では新製品の価格と発売日について話し合います。", 21),
    ("내일 회의에서 신제품 가격과 출시일에 대해 논의할 예정입니다.", 25),
    ("🎉🚀👍😀🔥❤️✅🙂🎂🌍", 11),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "tokens"),
    MEASURED,
    ids=[
        *("english", "russian", "greek", "arabic", "hebrew", "hindi", "thai"),
        *("vietnamese", "chinese", "japanese", "korean", "emoji"),
    ],
)
def test_the_estimate_of_any_script_is_at_least_what_a_tokenizer_spends(
    text: str, tokens: int
) -> None:
    """pi #2562 and openclaw #70052 for Chinese, and every script beyond it: at 4
    characters a token, Greek (79 tokens), Hindi (84), Thai (45) and emoji (11) were
    counted at about a quarter of what the model spends, so such a conversation passed
    the window long before it was compacted. The estimate may be generous (at most 2.5
    times), never short."""
    estimate = estimate_tokens([UserMessage(text)]) - estimate_tokens([UserMessage("")])
    assert tokens <= estimate <= 2.5 * tokens, estimate


async def test_a_summary_in_the_transcript_is_folded_whole() -> None:
    """A `CompactionSummaryMessage` kept in a transcript (a session compacted elsewhere, a
    summary of your own) was cut to 1,200 characters like any message when it was folded
    into the next summary, so the next summary lost what the first had kept past that."""
    requests: list[str] = []

    def summarise(context: Context) -> AssistantMessage:
        requests.append(text_of(context.messages[-1].content))  # type: ignore[union-attr]
        return faux_message("SUMMARY: short.")

    fm = FauxModel([summarise] * 10, model_id="compaction-resummary")
    model = dataclasses.replace(fm.model, context_window=3000)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    earlier = "The user set up the project. " * 60 + "The deploy key is K-0042."
    messages: list[AgentMessage] = [CompactionSummaryMessage(earlier)]
    for n in range(30):
        messages.append(UserMessage(f"question {n}: " + "words " * 20))
        messages.append(AssistantMessage(content=[TextContent(f"answer {n}: " + "blah " * 20)]))
    await compactor(messages, None)
    assert compactor.compactions == 1
    assert "The deploy key is K-0042." in "\n".join(requests)


async def test_an_abort_between_the_parts_of_a_summary_keeps_nothing_of_it() -> None:
    """A fold summarised in parts and aborted after the first part: the view stays the
    whole conversation (no half summary stands for it), and the next call summarises all
    of it again, the first part included."""
    from yiemagent.types import AbortSignal

    signal = AbortSignal()
    requests: list[str] = []

    def summarise(context: Context) -> AssistantMessage:
        request = text_of(context.messages[-1].content)  # type: ignore[union-attr]
        requests.append(request)
        if len(requests) == 2:
            signal.abort()
            return faux_message("", stop_reason="aborted")
        return faux_message("SUMMARY:" + (" code 4711" if "4711" in request else ""))

    fm = FauxModel([summarise] * 100, model_id="compaction-abort-parts")
    model = dataclasses.replace(fm.model, context_window=WINDOW)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    messages: list[AgentMessage] = [UserMessage("The code is 4711.")]
    for n in range(30):
        messages.append(AssistantMessage(content=[TextContent(f"answer {n}: " + "blah " * 12)]))
        messages.append(UserMessage(f"question {n}: " + "words " * 12))
    view = await compactor(messages, signal)
    assert view == messages and compactor.compactions == 0
    view = await compactor(messages, None)
    assert len(requests) > 3 and "4711" in requests[2]  # from the start again
    assert isinstance(view[0], CompactionSummaryMessage) and "4711" in view[0].summary


async def test_a_tool_call_larger_than_the_window_ends_the_run_naming_it() -> None:
    """The model's own call can be what no compaction fits (a whole file as an argument):
    the run ends with one error naming the assistant message, before the next call."""

    def answer(context: Context) -> AssistantMessage:
        return faux_message(faux_tool_call("lookup", {"key": "x" * 40_000}))

    fm = FauxModel([answer] * 5, model_id="compaction-big-call")
    model = dataclasses.replace(fm.model, context_window=WINDOW)
    agent = Agent(
        model=model,
        stream_fn=fm.stream_fn,
        tools=[lookup],
        transform_context=Compactor(model, stream_fn=fm.stream_fn),
    )
    with pytest.raises(AgentRunError, match="ContextWindowExceeded: an assistant message is"):
        await agent.prompt("look it up")
    assert len(fm.contexts) == 1  # the call that wrote it, and no other
    assert [m.role for m in agent.state.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]


async def test_a_summary_longer_than_its_cap_is_cut_to_fit() -> None:
    """A model (or a `stream_fn`) that does not keep to a summary's output cap wrote a
    summary that, beside the last turn, passed the window: every request after it was
    refused. The summary keeps to its cap (start and end, a note of the cut), and a view
    with a large last turn has as much of it as fits."""

    def answer(context: Context) -> AssistantMessage:
        if context.system_prompt == SUMMARY_SYSTEM_PROMPT:
            return faux_message("SUMMARY " + "long " * 400 + "END")
        return faux_message("answer " + "blah " * 12)

    fm = FauxModel([answer] * 100, model_id="compaction-long-summary")
    model = dataclasses.replace(fm.model, context_window=WINDOW)
    compactor = Compactor(model, stream_fn=fm.stream_fn)
    agent = Agent(model=model, stream_fn=fm.stream_fn, transform_context=compactor)
    for n in range(30):
        reply = await agent.prompt(f"question {n}: " + "words " * (10 if n % 5 else 50))
        assert reply.stop_reason == "stop", reply.error_message
    assert compactor.compactions >= 2
    answered = [c for c in fm.contexts if c.system_prompt != SUMMARY_SYSTEM_PROMPT]
    for context in answered:
        assert estimate_tokens(list(context.messages)) + WINDOW // 16 <= WINDOW
    seen = text_of(answered[-1].messages[0].content)  # type: ignore[union-attr]
    assert "SUMMARY long" in seen and "cut to fit the context window" in seen
