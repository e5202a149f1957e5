"""OpenTelemetry spans of runs (DESIGN §13), read back through the SDK's in-memory exporter:
the hierarchy, GenAI attributes and timing of a parallel batch of three tools, an aborted
run, a failing tool, a tool that opens its own span (async and on a worker thread), content
only when asked, `instrument()`, and nothing at all when tracing is off."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from yiemagent import (
    AbortSignal,
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentRunError,
    AgentTool,
    UserMessage,
    run_agent_loop,
)
from yiemagent.ai import AssistantMessageEventStream, Model
from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.telemetry import instrument, uninstrument
from yiemagent.types import Usage

pytestmark = pytest.mark.timeout(60)

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield provider, memory
    provider.shutdown()


def sleepy_tool(name: str, seconds: float) -> AgentTool:
    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        await asyncio.sleep(seconds)
        return f"{name} slept {args.get('n')}"

    return AgentTool(name, name, f"sleeps {seconds} s", SCHEMA, execute, parallel=True)


def by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


async def run(
    fm: FauxModel, tools: list[AgentTool], signal: AbortSignal | None = None, **config: Any
) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    context = AgentContext("be brief", [], tools)
    await run_agent_loop(
        [UserMessage("go")],
        context,
        AgentLoopConfig(model=fm.model, **config),
        events.append,
        signal,
        fm.stream_fn,
    )
    return events


async def test_parallel_batch_of_three_tools(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    tools = [sleepy_tool("a", 0.3), sleepy_tool("b", 0.2), sleepy_tool("c", 0.25)]
    calls = [faux_tool_call(n, {"n": i}, id=f"call_{n}") for i, n in enumerate("abc")]
    first = faux_message(*calls, usage=Usage(input=50, output=12, cache_read=8))
    fm = FauxModel([first, "done"])
    await run(fm, tools, tracer_provider=provider, session_id="s-1", temperature=0.2)

    spans = memory.get_finished_spans()
    (agent,) = by_name(spans, "invoke_agent")
    chats = sorted(by_name(spans, "chat "), key=lambda s: s.start_time or 0)
    tools_done = by_name(spans, "execute_tool ")
    assert len(spans) == 6 and len(chats) == 2 and len(tools_done) == 3
    assert agent.parent is None and agent.kind is SpanKind.INTERNAL
    assert agent.attributes is not None
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.conversation.id"] == "s-1"
    assert agent.attributes["yiemagent.end_reason"] == "stop"
    assert agent.status.status_code is StatusCode.UNSET
    for child in [*chats, *tools_done]:  # every call is a child of the run, in one trace
        assert child.parent is not None and child.parent.span_id == agent.context.span_id
        assert child.context.trace_id == agent.context.trace_id

    chat = chats[0]
    assert chat.name == f"chat {fm.model.id}" and chat.kind is SpanKind.CLIENT
    attrs = dict(chat.attributes or {})
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == fm.model.provider
    assert attrs["gen_ai.request.model"] == fm.model.id
    assert attrs["gen_ai.response.model"] == fm.model.id
    assert attrs["gen_ai.request.temperature"] == 0.2
    assert attrs["gen_ai.usage.input_tokens"] == 58  # cache reads count as input
    assert attrs["gen_ai.usage.output_tokens"] == 12
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 8
    assert attrs["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert dict(chats[1].attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    assert "gen_ai.input.messages" not in attrs  # content only when asked

    names = {s.name: s for s in tools_done}
    assert set(names) == {"execute_tool a", "execute_tool b", "execute_tool c"}
    a = dict(names["execute_tool a"].attributes or {})
    assert a["gen_ai.operation.name"] == "execute_tool"
    assert a["gen_ai.tool.name"] == "a" and a["gen_ai.tool.call.id"] == "call_a"
    assert a["gen_ai.tool.type"] == "function" and "error.type" not in a
    assert "gen_ai.tool.call.arguments" not in a

    def start(s: ReadableSpan) -> int:
        assert s.start_time is not None
        return s.start_time

    def end(s: ReadableSpan) -> int:
        assert s.end_time is not None
        return s.end_time

    # timing: the first chat ends before any tool starts; the three tools all start before
    # any ends (they ran at once); the second chat starts after them
    assert end(chats[0]) <= min(start(s) for s in tools_done)
    assert max(start(s) for s in tools_done) < min(end(s) for s in tools_done)
    assert max(end(s) for s in tools_done) <= start(chats[1])
    assert end(names["execute_tool b"]) < end(names["execute_tool a"])  # completion order
    assert start(agent) <= start(chats[0]) and end(chats[1]) <= end(agent)
    assert dict(agent.attributes)["gen_ai.usage.output_tokens"] >= 12  # summed over the run


async def test_an_aborted_run_ends_its_spans_in_error(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    started = asyncio.Event()

    async def wait(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        started.set()
        await signal.wait()
        return "stopped"

    tool = AgentTool("wait", "wait", "waits", SCHEMA, wait)  # sequential: call 2 is skipped
    calls = [faux_tool_call("wait", {}, id="w1"), faux_tool_call("wait", {}, id="w2")]
    fm = FauxModel([faux_message(*calls), "x"])
    signal = AbortSignal()

    async def abort_soon() -> None:
        await started.wait()
        signal.abort("stop now")

    aborter = asyncio.create_task(abort_soon())
    await run(fm, [tool], signal, tracer_provider=provider)
    await aborter
    spans = memory.get_finished_spans()
    (agent,) = by_name(spans, "invoke_agent")
    assert agent.status.status_code is StatusCode.ERROR
    assert dict(agent.attributes or {})["error.type"] == "aborted"
    tools_done = {
        dict(s.attributes or {})["gen_ai.tool.call.id"]: s for s in by_name(spans, "execute_tool")
    }
    assert set(tools_done) == {"w1", "w2"}  # both calls answered, both spans ended
    assert tools_done["w1"].status.status_code is StatusCode.UNSET  # it returned a result
    skipped = tools_done["w2"]
    assert skipped.status.status_code is StatusCode.ERROR
    assert dict(skipped.attributes or {})["error.type"] == "aborted"
    assert len(by_name(spans, "chat ")) == 1  # no model call once aborted


async def test_an_abort_mid_stream_ends_the_chat_span_in_error(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    fm = FauxModel(["a long answer that streams slowly"], chunk_size=1, delay_s=0.02)
    signal = AbortSignal()
    asyncio.get_running_loop().call_later(0.1, signal.abort)
    await run(fm, [], signal, tracer_provider=provider)
    (chat,) = by_name(memory.get_finished_spans(), "chat ")
    assert chat.status.status_code is StatusCode.ERROR
    assert dict(chat.attributes or {})["gen_ai.response.finish_reasons"] == ("aborted",)


async def test_a_failing_tool(exporter: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, memory = exporter

    def explode(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        raise ValueError("disk on fire")

    tool = AgentTool("explode", "explode", "fails", SCHEMA, explode)
    calls = [faux_tool_call("explode", {}), faux_tool_call("missing", {})]
    fm = FauxModel([faux_message(*calls), "sorry"])
    await run(fm, [tool], tracer_provider=provider, trace_content=True)
    spans = {s.name: s for s in by_name(memory.get_finished_spans(), "execute_tool")}
    failed = spans["execute_tool explode"]
    assert failed.status.status_code is StatusCode.ERROR
    assert "disk on fire" in (failed.status.description or "")  # content was asked for
    assert dict(failed.attributes or {})["error.type"] == "tool_error"
    unknown = spans["execute_tool missing"]
    assert dict(unknown.attributes or {})["error.type"] == "tool_not_found"
    (agent,) = by_name(memory.get_finished_spans(), "invoke_agent")
    assert agent.status.status_code is StatusCode.UNSET  # the run itself answered


async def test_a_failed_calls_text_is_content_recorded_only_when_asked(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """As openai-agents#3110 (tool errors ignored trace_include_sensitive_data=False): an
    error result is the call's result, so its text (a tool's exception, arguments echoed by
    a validation failure) is no status message unless content is recorded; the error class
    always is."""
    provider, memory = exporter

    def leak(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        raise ValueError("token sk-LEAKED-1 refused")

    tool = AgentTool("leak", "leak", "fails", SCHEMA, leak)
    calls = [faux_tool_call("leak", {"n": 1}), faux_tool_call("leak", {"n": "IBAN-SECRET"})]
    fm = FauxModel([faux_message(*calls), "sorry"])
    await run(fm, [tool], tracer_provider=provider)
    spans = memory.get_finished_spans()
    recorded = repr([(s.attributes, s.status.description, s.events) for s in spans])
    assert "LEAKED" not in recorded and "IBAN-SECRET" not in recorded
    failed = sorted(by_name(spans, "execute_tool"), key=lambda s: s.start_time or 0)
    assert [s.status.status_code for s in failed] == [StatusCode.ERROR, StatusCode.ERROR]
    types = [dict(s.attributes or {})["error.type"] for s in failed]
    assert types == ["tool_error", "invalid_arguments"]
    assert [s.status.description for s in failed] == [
        "tool call failed: tool_error",
        "tool call failed: invalid_arguments",
    ]


@pytest.mark.parametrize("content", [False, True], ids=["no-content", "content"])
async def test_a_failed_runs_text_is_its_status_only_with_content(
    exporter: tuple[TracerProvider, InMemorySpanExporter], content: bool
) -> None:
    """openai-agents#3848 redacted non-tool errors on spans too: a run that ends in error
    says why in text that may quote content, here the model's invalid output ("got
    \"SECRET-1\""). Without content the run's span says only that it failed; the text stays
    the run's error for the caller."""
    provider, memory = exporter
    fm = FauxModel(['{"amount": "SECRET-1"}'] * 3)
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        output_type={"type": "object", "properties": {"amount": {"type": "integer"}}},
        tracer_provider=provider,
        trace_content=content,
    )
    with pytest.raises(AgentRunError, match="SECRET-1"):
        await agent.prompt("how much?")
    (run_span,) = by_name(memory.get_finished_spans(), "invoke_agent")
    assert run_span.status.status_code is StatusCode.ERROR
    assert dict(run_span.attributes or {})["error.type"] == "error"
    description = run_span.status.description or ""
    assert ("SECRET-1" in description) is content
    if not content:
        assert description == "the run ended in error"


@pytest.mark.parametrize("content", [False, True], ids=["no-content", "content"])
async def test_what_the_local_rules_changed_names_a_call_only_with_content(
    exporter: tuple[TracerProvider, InMemorySpanExporter], content: bool
) -> None:
    """The embedded provider's rule steps name the calls they repaired or dropped with
    their arguments ("what"); like a failed call's text (openai-agents#3110), those are
    content: without it, the span keeps which rule did what, not to which arguments."""
    provider, memory = exporter
    step = {"rule": "ungrounded", "action": "dropped", "what": 'pay {"to": "IBAN-SECRET"}'}

    def stream_fn(model: Model, context: Any, options: Any) -> AssistantMessageEventStream:
        stream = AssistantMessageEventStream()
        builder = MessageBuilder(model, stream)
        builder.start()
        builder.text_delta("the answer")
        builder.message.details["local_rules"] = [step]  # as the embedded provider notes
        builder.done("stop")
        return stream

    config = AgentLoopConfig(
        model=FauxModel([]).model, tracer_provider=provider, trace_content=content
    )
    await run_agent_loop(
        [UserMessage("go")], AgentContext("", [], []), config, None, None, stream_fn
    )
    (chat,) = by_name(memory.get_finished_spans(), "chat ")
    recorded = json.loads(str(dict(chat.attributes or {})["yiemagent.local_rules"]))
    if content:
        assert recorded == [step]
    else:
        assert recorded == [{"rule": "ungrounded", "action": "dropped"}]


@pytest.mark.parametrize("plain", [False, True], ids=["async", "worker-thread"])
async def test_a_tool_that_opens_its_own_span_is_its_parent(
    exporter: tuple[TracerProvider, InMemorySpanExporter], plain: bool
) -> None:
    provider, memory = exporter
    tracer = provider.get_tracer("a-tool")
    threads: list[str] = []

    def body(n: int) -> str:
        threads.append(threading.current_thread().name)
        with tracer.start_as_current_span(f"http GET {n}"):
            time.sleep(0.05)
        return "fetched"

    async def execute_async(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        await asyncio.sleep(0.05)
        return body(args["n"])

    def execute_plain(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        return body(args["n"])

    execute = execute_plain if plain else execute_async
    tool = AgentTool("fetch", "fetch", "fetches", SCHEMA, execute, parallel=True)
    calls = [faux_tool_call("fetch", {"n": n}, id=f"f{n}") for n in range(2)]
    fm = FauxModel([faux_message(*calls), "ok"])
    await run(fm, [tool], tracer_provider=provider)
    spans = memory.get_finished_spans()
    tool_spans = {
        dict(s.attributes or {})["gen_ai.tool.call.id"]: s for s in by_name(spans, "execute_tool")
    }
    for n in range(2):
        (inner,) = by_name(spans, f"http GET {n}")
        assert inner.parent is not None
        assert inner.parent.span_id == tool_spans[f"f{n}"].context.span_id  # its own call's
    if plain:
        assert all(name != threading.main_thread().name for name in threads)
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left attached


async def test_content_is_recorded_only_when_asked(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    tool = sleepy_tool("a", 0.0)
    fm = FauxModel([faux_message(faux_tool_call("a", {"n": 7})), "secret answer"])
    await run(fm, [tool], tracer_provider=provider, trace_content=True)
    spans = memory.get_finished_spans()
    (tool_span,) = by_name(spans, "execute_tool")
    attrs = dict(tool_span.attributes or {})
    assert attrs["gen_ai.tool.call.arguments"] == '{"n": 7}'
    assert attrs["gen_ai.tool.call.result"] == "a slept 7"
    last_chat = sorted(by_name(spans, "chat "), key=lambda s: s.start_time or 0)[-1]
    chat_attrs = dict(last_chat.attributes or {})
    assert "secret answer" in str(chat_attrs["gen_ai.output.messages"])
    assert '"go"' in str(chat_attrs["gen_ai.input.messages"])
    assert "be brief" in str(chat_attrs["gen_ai.system_instructions"])


async def test_instrument_traces_every_agent_until_uninstrumented(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    instrument(provider)
    try:
        fm = FauxModel(["one"])
        agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
        await agent.prompt("hi")
    finally:
        uninstrument()
    assert len(by_name(memory.get_finished_spans(), "invoke_agent")) == 1
    fm2 = FauxModel(["two"])
    await Agent(model=fm2.model, stream_fn=fm2.stream_fn).prompt("hi")
    assert len(memory.get_finished_spans()) == 2  # invoke_agent + chat, none added


async def test_agent_tracer_provider(exporter: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, memory = exporter
    fm = FauxModel([faux_message(faux_tool_call("a", {"n": 1})), "done"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[sleepy_tool("a", 0.0)],
        tracer_provider=provider,
    )
    await agent.prompt("hi")
    names = sorted(s.name for s in memory.get_finished_spans())
    assert names == [
        f"chat {fm.model.id}",
        f"chat {fm.model.id}",
        "execute_tool a",
        "invoke_agent assistant",
    ]


async def test_the_run_span_describes_the_agent_as_the_conventions_list(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """The GenAI conventions' `invoke_agent` attributes that a run knows: the agent's
    description, the output type, the sampling asked for."""
    provider, memory = exporter
    fm = FauxModel(['{"n": 3}', "plain"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        name="counter",
        description="Counts things",
        output_type={"type": "object", "properties": {"n": {"type": "integer"}}},
        temperature=0.25,
        max_tokens=64,
        tracer_provider=provider,
    )
    await agent.prompt("count")
    (span,) = by_name(memory.get_finished_spans(), "invoke_agent")
    attributes = span.attributes or {}
    assert attributes["gen_ai.agent.name"] == "counter"
    assert attributes["gen_ai.agent.description"] == "Counts things"
    assert attributes["gen_ai.output.type"] == "json"
    assert attributes["gen_ai.request.temperature"] == 0.25
    assert attributes["gen_ai.request.max_tokens"] == 64
    memory.clear()
    await Agent(model=fm.model, stream_fn=fm.stream_fn, tracer_provider=provider).prompt("hi")
    (plain,) = by_name(memory.get_finished_spans(), "invoke_agent")
    absent = ("agent.description", "output.type", "request.temperature", "request.max_tokens")
    assert not [name for name in absent if f"gen_ai.{name}" in (plain.attributes or {})]


async def test_each_run_is_a_child_of_the_span_current_where_it_was_asked_for(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """microsoft/agent-framework#5089 and vercel/ai#11720: an agent's spans came out as
    siblings of the caller's, or under an earlier request's. One Agent asked from inside
    three request spans in turn (`prompt`, `send` + `take_response`, a prompt from another
    task) runs each time under the span of the request that asked."""
    provider, memory = exporter
    tracer = provider.get_tracer("an-app")
    fm = FauxModel(["one", "two", "three"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tracer_provider=provider)
    with tracer.start_as_current_span("request A"):
        await agent.prompt("first")
    with tracer.start_as_current_span("request B"):
        agent.send("second")
        await agent.take_response()

    async def elsewhere() -> None:
        with tracer.start_as_current_span("request C"):
            await agent.prompt("third")

    await asyncio.create_task(elsewhere())
    spans = memory.get_finished_spans()
    names = {s.context.span_id: s.name for s in spans}
    runs = sorted(by_name(spans, "invoke_agent"), key=lambda s: s.start_time or 0)
    parents = [names[s.parent.span_id] if s.parent else None for s in runs]
    assert parents == ["request A", "request B", "request C"]
    for run_span in runs:  # and each run's calls under that run
        (chat,) = [s for s in by_name(spans, "chat ") if s.parent == run_span.context]
        assert chat.context.trace_id == run_span.context.trace_id


async def test_no_tracing_records_nothing_and_loads_no_sdk_hooks(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    _, memory = exporter
    fm = FauxModel([faux_message(faux_tool_call("a", {"n": 1})), "done"])
    await run(fm, [sleepy_tool("a", 0.0)])
    assert memory.get_finished_spans() == ()


async def test_a_run_stopped_by_a_usage_limit(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    from yiemagent import UsageLimits

    provider, memory = exporter
    calls = [faux_tool_call("a", {"n": n}) for n in range(3)]
    fm = FauxModel([faux_message(*calls), "never"])
    limits = UsageLimits(max_tool_calls=1)
    await run(fm, [sleepy_tool("a", 0.0)], tracer_provider=provider, usage_limits=limits)
    spans = memory.get_finished_spans()
    (agent,) = by_name(spans, "invoke_agent")
    assert agent.status.status_code is StatusCode.ERROR
    assert dict(agent.attributes or {})["error.type"] == "usage_limit"
    assert "max_tool_calls=1 (used 1 tool calls)" in (agent.status.description or "")
    tools_done = by_name(spans, "execute_tool")
    assert [s.status.status_code for s in tools_done].count(StatusCode.ERROR) == 2


class _FlakyTracer(trace.Tracer):
    """Raises when asked for a chat or tool span: a broken tracer must not break a run."""

    def __init__(self, real: trace.Tracer) -> None:
        self._real = real

    def start_span(self, name: str, *args: Any, **kwargs: Any) -> trace.Span:
        if name.startswith(("chat", "execute_tool")):
            raise RuntimeError("tracer bug")
        return self._real.start_span(name, *args, **kwargs)

    def start_as_current_span(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._real.start_as_current_span(name, *args, **kwargs)


class _FlakyProvider(trace.TracerProvider):
    def __init__(self, real: TracerProvider) -> None:
        self._real = real

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return _FlakyTracer(self._real.get_tracer(*args, **kwargs))


async def test_a_tracer_that_raises_changes_nothing_in_the_run(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, memory = exporter
    fm = FauxModel([faux_message(faux_tool_call("a", {"n": 3})), "all good"])
    events = await run(fm, [sleepy_tool("a", 0.0)], tracer_provider=_FlakyProvider(provider))
    end = events[-1]
    assert end.type == "agent_end" and end.reason == "stop"  # type: ignore[union-attr]
    results = [e for e in events if e.type == "tool_execution_end"]
    assert len(results) == 1 and not results[0].is_error  # type: ignore[union-attr]
    assert [s.name for s in memory.get_finished_spans()] == ["invoke_agent yiemagent"]
