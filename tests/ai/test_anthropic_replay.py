"""The anthropic-messages provider through the real `anthropic` SDK against a local replay
server serving hand-written Messages API SSE streams in the documented event format
(DESIGN §7, §8, seed 002 §3, R-5.10 tool-call ids)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, json_reply, sse_reply
from yiemagent.ai.providers.anthropic_messages import stream_anthropic_messages
from yiemagent.types.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import (
    AssistantMessageEvent,
    CacheRetention,
    Context,
    Model,
    ModelCost,
    StreamOptions,
)
from yiemagent.types.tools import AgentTool

pytestmark = pytest.mark.timeout(120)  # the first test imports the SDK: seconds of CPU under load

KEY = "sk-ant-test-0123456789abcdef"
TOOL = AgentTool(
    name="lookup",
    label="Lookup",
    description="look things up",
    input_schema={"type": "object"},
    execute=lambda *_: "",
)


def claude(server: ReplayServer, **kwargs: Any) -> Model:
    return Model(
        id="claude-test-1",
        provider="anthropic",
        api="anthropic-messages",
        base_url=server.url,
        reasoning=True,
        max_tokens=4096,
        **kwargs,
    )


async def collect(
    model: Model, context: Context, options: StreamOptions | None = None
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    stream = stream_anthropic_messages(model, context, options or StreamOptions(api_key=KEY))
    events = [event async for event in stream]
    return events, await stream.result()


def hello() -> Context:
    return Context("You are helpful.", [UserMessage("hi")])


async def test_thinking_redacted_text_and_tool_use(server: ReplayServer) -> None:
    """Thinking with its signature, redacted thinking, text, a tool call whose
    arguments stream as partial JSON (always a dict in the partial), usage with cache reads
    and writes, stop reason tool_use → toolUse."""
    server.enqueue(sse_reply("anthropic_thinking_tool_use.sse"))
    price = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    events, message = await collect(claude(server, cost=price), hello())
    assert [e.type for e in events] == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "thinking_start",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    thinking, redacted, text, call = message.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking == "I should check the weather."
    assert thinking.signature == "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    assert isinstance(redacted, ThinkingContent) and redacted.redacted
    assert redacted.signature == "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
    assert text == TextContent("Let me check.")
    assert isinstance(call, ToolCall)
    assert (call.id, call.name) == ("toolu_01A09q90qw90lq917835lq9", "get_weather")
    assert call.arguments == {"city": "San Francisco", "unit": "C"}
    partial_args = [
        e.partial.content[e.content_index].arguments  # type: ignore[union-attr]
        for e in events
        if e.type == "toolcall_delta"
    ]
    assert all(isinstance(args, dict) for args in partial_args)
    assert message.stop_reason == "toolUse"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (25, 89, 3000, 1200)
    assert usage.total_tokens == 25 + 89 + 3000 + 1200
    expected = (25 * 3.0 + 89 * 15.0 + 3000 * 0.3 + 1200 * 3.75) / 1e6
    assert usage.cost.total == pytest.approx(expected)


async def test_signed_thinking_goes_back_only_to_the_same_model(server: ReplayServer) -> None:
    server.enqueue(sse_reply("anthropic_thinking_tool_use.sse"))
    model = claude(server)
    _, first = await collect(model, hello())
    result = ToolResultMessage(
        "toolu_01A09q90qw90lq917835lq9", "get_weather", [TextContent("sunny")]
    )
    server.enqueue(sse_reply("anthropic_text.sse"))
    await collect(model, Context("", [UserMessage("hi"), first, result]))
    blocks = server.requests[-1].body["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert blocks[0]["signature"] == first.content[0].signature  # type: ignore[union-attr]
    assert blocks[1]["data"] == first.content[1].signature  # type: ignore[union-attr]
    assert blocks[3]["input"] == {"city": "San Francisco", "unit": "C"}

    server.enqueue(sse_reply("anthropic_text.sse"))
    other = Model(
        id="claude-other", provider="anthropic", api="anthropic-messages", base_url=server.url
    )
    await collect(other, Context("", [UserMessage("hi"), first, result]))
    blocks = server.requests[-1].body["messages"][1]["content"]
    assert "thinking" not in [b["type"] for b in blocks]
    assert "redacted_thinking" not in [b["type"] for b in blocks]


async def test_request_body_tools_results_images_and_ids(server: ReplayServer) -> None:
    """Tool results of one turn share one user message; ids are normalised for Anthropic;
    images go as base64 sources; the key goes in x-api-key."""
    server.enqueue(sse_reply("anthropic_text.sse"))
    calls = [
        ToolCall(id="call|1/a", name="lookup", arguments={"q": "x"}),
        ToolCall(id="call_2", name="lookup", arguments={}),
    ]
    context = Context(
        "sys",
        [
            UserMessage([TextContent("see"), ImageContent("aGk=", "image/jpeg")]),
            AssistantMessage(list(calls), stop_reason="toolUse"),
            ToolResultMessage("call|1/a", "lookup", [TextContent("one")]),
            ToolResultMessage("call_2", "lookup", [TextContent("bad")], is_error=True),
        ],
        tools=[
            AgentTool(
                name="lookup",
                label="Lookup",
                description="look things up",
                input_schema={"type": "object"},
                execute=lambda *_: "",
            )
        ],
    )
    options = StreamOptions(api_key=KEY, temperature=0.5, metadata={"user_id": "u-1"})
    _, message = await collect(claude(server, input=("text", "image")), context, options)
    assert message.stop_reason == "stop" and message.text == "Hello there."
    request = server.requests[0]
    assert request.path == "/v1/messages"
    sent = request.headers.get("x-api-key") or request.headers["authorization"]
    assert sent in (KEY, f"Bearer {KEY}")  # the SDK picks the header
    body = request.body
    assert body["model"] == "claude-test-1" and body["max_tokens"] == 4096
    assert body["stream"] is True and body["temperature"] == 0.5
    assert body["metadata"] == {"user_id": "u-1"}
    assert "thinking" not in body
    assert body["tools"] == [
        {
            "name": "lookup",
            "description": "look things up",
            "input_schema": {"type": "object"},
            "cache_control": {"type": "ephemeral"},
        }
    ]
    user, assistant, results = body["messages"]
    assert user["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": "aGk="},
        "cache_control": {"type": "ephemeral"},  # the turn before the latest
    }
    ids = [b["id"] for b in assistant["content"]]
    assert ids == ["call_1_a", "call_2"]
    assert [(r["tool_use_id"], r["is_error"]) for r in results["content"]] == [
        ("call_1_a", False),
        ("call_2", True),
    ]
    assert results["content"][0]["content"] == [{"type": "text", "text": "one"}]


@pytest.mark.parametrize(
    ("retention", "expected"),
    [
        (None, {"type": "ephemeral"}),
        ("short", {"type": "ephemeral"}),
        ("long", {"type": "ephemeral", "ttl": "1h"}),
        ("none", None),
    ],
)
async def test_cache_breakpoints_on_system_tools_and_the_latest_turn(
    server: ReplayServer, retention: CacheRetention | None, expected: dict[str, str] | None
) -> None:
    """Four breakpoints (the API's most): the last tool (caching every definition), the
    system prompt, the last block of the latest user turn and of the user turn before it
    (where the previous request's latest mark was: `test_anthropic_cache_lookback.py`);
    none with "none"."""
    server.enqueue(sse_reply("anthropic_text.sse"))
    context = Context(
        "sys",
        [
            UserMessage("first"),
            AssistantMessage([TextContent("ok")]),
            UserMessage([TextContent("a"), TextContent("b")]),
        ],
        [TOOL, replace(TOOL, name="other")],
    )
    await collect(claude(server), context, StreamOptions(api_key=KEY, cache_retention=retention))
    body = server.requests[0].body
    assert body["tools"][-1].get("cache_control") == expected
    assert "cache_control" not in body["tools"][0]
    assert body["system"][0].get("cache_control") == expected
    assert body["messages"][-1]["content"][-1].get("cache_control") == expected
    assert "cache_control" not in body["messages"][-1]["content"][0]
    assert body["messages"][0]["content"][0].get("cache_control") == expected


async def test_thinking_budget_from_reasoning_level(server: ReplayServer) -> None:
    server.enqueue(sse_reply("anthropic_text.sse"), sse_reply("anthropic_text.sse"))
    await collect(
        replace(claude(server), max_tokens=64_000),
        hello(),
        StreamOptions(api_key=KEY, reasoning="high", temperature=0.3, max_tokens=1000),
    )
    body = server.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert body["max_tokens"] > 16384
    assert "temperature" not in body  # the API refuses a temperature with thinking on
    await collect(
        claude(server),
        hello(),
        StreamOptions(api_key=KEY, reasoning="low", thinking_budgets={"low": 3000}),
    )
    assert server.requests[1].body["thinking"]["budget_tokens"] == 3000


@pytest.mark.parametrize(
    ("reason", "stop_reason"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "stop"),  # no call in this text-only stream (with one: toolUse)
        ("refusal", "error"),
    ],
)
async def test_stop_reasons(server: ReplayServer, reason: str, stop_reason: str) -> None:
    events = [e.replace('"end_turn"', f'"{reason}"') for e in _text_events()]
    server.enqueue(sse_reply(events))
    _, message = await collect(claude(server), hello())
    assert message.stop_reason == stop_reason
    if stop_reason == "error":
        assert "refus" in (message.error_message or "")


def _text_events() -> list[str]:
    from tests.ai.servers import load_sse

    return load_sse("anthropic_text.sse")


async def test_http_400_is_a_clear_error(server: ReplayServer) -> None:
    server.enqueue(
        json_reply(
            400,
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "max_tokens: too large"},
            },
        )
    )
    events, message = await collect(claude(server), hello())
    assert [e.type for e in events] == ["start", "error"]
    assert message.stop_reason == "error"
    assert message.error_message == (
        "HTTP 400 from the server: invalid_request_error: max_tokens: too large"
    )
    assert len(server.requests) == 1


async def test_529_overloaded_then_success_is_retried(server: ReplayServer) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.enqueue(
        json_reply(529, overloaded, headers={"retry-after-ms": "10"}),
        sse_reply("anthropic_text.sse"),
    )
    _, message = await collect(claude(server), hello())
    assert message.stop_reason == "stop" and message.text == "Hello there."
    assert len(server.requests) == 2


async def test_overloaded_error_event_before_content_is_retried(server: ReplayServer) -> None:
    server.enqueue(sse_reply("anthropic_overloaded_midstream.sse"), sse_reply("anthropic_text.sse"))
    _, message = await collect(
        claude(server), hello(), StreamOptions(api_key=KEY, max_retry_delay_ms=1)
    )
    assert message.stop_reason == "stop" and message.text == "Hello there."
    assert len(server.requests) == 2


async def test_error_event_after_content_ends_in_error(server: ReplayServer) -> None:
    error = '{"type": "error", "error": {"type": "api_error", "message": "boom"}}'
    events = [*_text_events()[:3], f"event: error\ndata: {error}"]
    server.enqueue(sse_reply(events))
    _, message = await collect(claude(server), hello())
    assert message.stop_reason == "error"
    assert message.error_message == "the server sent an error in the stream: api_error: boom"
    assert message.text == "Hello"
    assert len(server.requests) == 1


async def test_key_never_in_the_error(server: ReplayServer) -> None:
    secret = "sk-ant-api03-verysecretvalue"
    server.enqueue(
        json_reply(
            401,
            {
                "type": "error",
                "error": {"type": "authentication_error", "message": f"bad {secret}"},
            },
        )
    )
    _, message = await collect(claude(server), hello(), StreamOptions(api_key=secret))
    assert message.stop_reason == "error"
    assert "401" in (message.error_message or "") and secret not in (message.error_message or "")


async def test_missing_key_for_anthropic_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    model = Model(id="claude-x", provider="anthropic", api="anthropic-messages")
    _, message = await collect(model, hello(), StreamOptions())
    assert message.stop_reason == "error"
    assert "ANTHROPIC_API_KEY" in (message.error_message or "")


async def test_abort_while_streaming_closes_the_stream(server: ReplayServer) -> None:
    """An abort mid-stream ends the message with reason "aborted", keeping what arrived."""
    from yiemagent.types.signal import AbortSignal

    server.enqueue(sse_reply(_text_events()[:3], stall_s=20))
    signal = AbortSignal()
    stream = stream_anthropic_messages(
        claude(server), hello(), StreamOptions(api_key=KEY, signal=signal)
    )
    events = []
    async for event in stream:
        events.append(event)
        if event.type == "text_delta":
            signal.abort()
    message = await stream.result()
    assert events[-1].type == "error"
    assert message.stop_reason == "aborted"
    assert message.text == "Hello"
    assert message.usage.input == 10  # from message_start


async def test_idle_stream_ends_in_error(server: ReplayServer) -> None:
    server.enqueue(sse_reply(_text_events()[:2], stall_s=20))
    _, message = await collect(
        claude(server), hello(), StreamOptions(api_key=KEY, idle_timeout_s=0.2)
    )
    assert message.stop_reason == "error"
    assert "stream idle timeout" in (message.error_message or "")


async def test_blocks_we_do_not_map_are_skipped_with_their_deltas(server: ReplayServer) -> None:
    """A server-tool block (web search) streams its own input JSON; it must not reach the
    text block or a tool call of ours."""
    events = _text_events()
    server_tool = [
        'event: content_block_start\ndata: {"type": "content_block_start", "index": 1, '
        '"content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", '
        '"input": {}}}',
        'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 1, '
        '"delta": {"type": "input_json_delta", "partial_json": "{\\"query\\": \\"x\\"}"}}',
        'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 1}',
    ]
    server.enqueue(sse_reply([*events[:5], *server_tool, *events[5:]]))
    _, message = await collect(claude(server), hello())
    assert message.stop_reason == "stop", message.error_message
    assert message.content == [TextContent("Hello there.")]


async def test_an_agent_round_trip_sends_thinking_back_unchanged_with_cache_marks(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DESIGN §21 end to end through an Agent and the catalogue model: the streamed thinking
    and redacted thinking go back byte for byte with their signatures, before the tool call
    they led to; the second request keeps the three cache breakpoints, the latest turn's
    on the tool result; cache reads and writes are priced at the catalogue's rates."""
    from yiemagent import Agent
    from yiemagent.ai import get_model

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.enqueue(sse_reply("anthropic_thinking_tool_use.sse"))
    server.enqueue(sse_reply("anthropic_text.sse"))
    weather = replace(TOOL, name="get_weather", execute=lambda *_: "sunny, 18 C")
    model = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    agent = Agent(system_prompt="Be brief.", model=model, tools=[weather])
    answer = await agent.prompt("Weather in San Francisco?")
    assert answer.text == "Hello there."

    first, second = (request.body for request in server.requests)
    assistant = second["messages"][1]["content"]
    assert assistant[:2] == [
        {
            "type": "thinking",
            "thinking": "I should check the weather.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        },
        {
            "type": "redacted_thinking",
            "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
        },
    ]
    assert [b["type"] for b in assistant[2:]] == ["text", "tool_use"]
    mark = {"type": "ephemeral"}
    for body in (first, second):
        assert body["system"][0]["cache_control"] == mark
        assert body["tools"][-1]["cache_control"] == mark
        assert body["messages"][-1]["content"][-1]["cache_control"] == mark
    assert second["messages"][-1]["content"][-1]["type"] == "tool_result"

    call_message = agent.state.messages[1]
    assert isinstance(call_message, AssistantMessage)
    usage = call_message.usage
    price = model.cost
    assert price.cache_read > 0 and price.cache_write > price.input  # writes cost more
    assert usage.cost.cache_read == pytest.approx(3000 * price.cache_read / 1e6)
    assert usage.cost.cache_write == pytest.approx(1200 * price.cache_write / 1e6)


async def test_agent_cache_retention_reaches_the_request(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Agent(cache_retention=...)`: "none" sends no breakpoint, "long" the
    1 h one; anything else is refused at construction."""
    from yiemagent import Agent, ConfigError
    from yiemagent.ai import get_model

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    model = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    for retention, mark in (("none", None), ("long", {"type": "ephemeral", "ttl": "1h"})):
        server.enqueue(sse_reply("anthropic_text.sse"))
        agent = Agent(model=model, cache_retention=retention)  # type: ignore[arg-type]
        await agent.prompt("hi")
        body = server.requests[-1].body
        assert body["system"][0].get("cache_control") == mark
        assert body["messages"][-1]["content"][-1].get("cache_control") == mark
    with pytest.raises(ConfigError, match="cache_retention"):
        Agent(model=model, cache_retention="forever")  # type: ignore[arg-type]
