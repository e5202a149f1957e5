"""The openai-completions provider through the real `openai` SDK against a local replay server
serving recorded Chat Completions SSE streams (DESIGN §7)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, json_reply, openai_chunks, sse_reply
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import AssistantMessageEvent, Context, Model, ModelCost, StreamOptions
from yiemagent.types.tools import AgentTool

pytestmark = pytest.mark.timeout(120)  # the first test imports the SDK: seconds of CPU under load

KEY = "sk-test-0123456789abcdefghij"


def compat(server: ReplayServer, **kwargs: Any) -> Model:
    return Model(
        id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1", **kwargs
    )


async def collect(
    model: Model, context: Context, options: StreamOptions | None = None
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    stream = stream_openai_completions(model, context, options or StreamOptions(api_key=KEY))
    events = [event async for event in stream]
    return events, await stream.result()


def hello() -> Context:
    return Context("Be brief.", [UserMessage("hi")])


def tool(name: str) -> AgentTool:
    return AgentTool(
        name=name,
        label=name,
        description=f"the {name} tool",
        input_schema={"type": "object", "properties": {"x": {"type": "string"}}},
        execute=lambda *_: "ok",
    )


async def test_interleaved_parallel_tool_calls_are_assembled_by_index(
    server: ReplayServer,
) -> None:
    """Later chunks carry only the index and switch back and forth between calls;
    each call gets exactly its own arguments, id and name."""
    server.enqueue(sse_reply("openai_parallel_tool_calls_interleaved.sse"))
    model = compat(server, cost=ModelCost(input=2.0, output=8.0, cache_read=1.0))
    events, message = await collect(model, hello())
    assert message.stop_reason == "toolUse"
    assert message.text == "Checking both."
    calls = message.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_paris", "get_weather", {"city": "Paris", "unit": "C"}),
        ("call_tz", "get_time", {"tz": "CET"}),
        ("call_rome", "get_weather", {"city": "Rome"}),
    ]
    assert all(c.partial_json is None for c in calls)
    types = [e.type for e in events]
    assert types[:2] == ["start", "text_start"]
    assert types.count("toolcall_start") == types.count("toolcall_end") == 3
    # a new index closes the previous block first: blocks never overlap
    open_blocks = 0
    for kind in types:
        open_blocks += kind.endswith("_start") and kind != "start"
        open_blocks -= kind.endswith("_end")
        assert open_blocks in (0, 1)
    # every delta names the block it belongs to
    for event in events:
        if event.type == "toolcall_delta":
            assert isinstance(event.partial.content[event.content_index], ToolCall)
    usage = message.usage
    assert (usage.input, usage.cache_read, usage.output) == (20, 100, 30)
    assert usage.total_tokens == 150
    assert usage.cost.total == pytest.approx((20 * 2.0 + 30 * 8.0 + 100 * 1.0) / 1e6)


async def test_interleaved_calls_stream_each_calls_whole_arguments_before_its_end(
    server: ReplayServer,
) -> None:
    """pi-mono's stream test joins a call's `toolcall_delta`s and parses them at its
    `toolcall_end`. When a server interleaves two calls, the first was ended as soon as the
    second began, with only `{"city": ` streamed: its end said final arguments it did not
    have, and its later text was never streamed. A call that began while the open one's
    arguments are unfinished now waits to open until they are done."""
    server.enqueue(sse_reply("openai_parallel_tool_calls_interleaved.sse"))
    events, message = await collect(compat(server), hello())
    streamed: dict[int, str] = {}
    ended: list[tuple[str, dict[str, Any]]] = []
    for event in events:
        if event.type == "toolcall_start":
            streamed[event.content_index] = ""
        elif event.type == "toolcall_delta":
            streamed[event.content_index] += event.delta
        elif event.type == "toolcall_end":
            ended.append((event.tool_call.id, json.loads(streamed[event.content_index])))
    assert ended == [(c.id, c.arguments) for c in message.tool_calls]
    assert [c.id for c in message.tool_calls] == ["call_paris", "call_tz", "call_rome"]


async def test_two_calls_in_one_chunk(server: ReplayServer) -> None:
    server.enqueue(
        sse_reply(
            openai_chunks(
                {
                    "tool_calls": [
                        {"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x":'}},
                        {"index": 1, "id": "b", "function": {"name": "g", "arguments": '{"x":'}},
                    ]
                },
                {"tool_calls": [{"index": 1, "function": {"arguments": '"2"}'}}]},
                {"tool_calls": [{"index": 0, "function": {"arguments": '"1"}'}}]},
                finish_reason="tool_calls",
            )
        )
    )
    _, message = await collect(compat(server), hello())
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("a", "f", {"x": "1"}),
        ("b", "g", {"x": "2"}),
    ]


async def test_reasoning_content_becomes_thinking_and_goes_back_to_the_same_model(
    server: ReplayServer,
) -> None:
    server.enqueue(sse_reply("openai_reasoning_content.sse"))
    model = compat(server, reasoning=True)
    events, message = await collect(model, hello())
    assert [e.type for e in events] == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking == "The user wants a number."
    assert message.text == "Forty-two."

    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    follow_up = Context("", [UserMessage("hi"), message, UserMessage("again")])
    await collect(model, follow_up, StreamOptions(api_key=KEY, reasoning="high"))
    body = server.requests[-1].body
    assistant = body["messages"][1]
    assert assistant["reasoning_content"] == "The user wants a number."
    assert assistant["content"] == "Forty-two."
    assert body["reasoning_effort"] == "high"

    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    other = Model(id="other", provider="vllm", api="openai-completions", base_url=model.base_url)
    await collect(other, follow_up)
    assert "reasoning_content" not in server.requests[-1].body["messages"][1]


async def test_request_body_shape(server: ReplayServer) -> None:
    """System prompt first; assistant text + tool calls with JSON-string arguments; tool
    results as role "tool"; images as data URLs; tools as functions; max_tokens for a
    compatible server; headers and the key sent."""
    server.enqueue(sse_reply(openai_chunks({"content": "done"})))
    model = compat(server, input=("text", "image"), headers={"X-Model": "1"})
    call = ToolCall(id="call_1", name="lookup", arguments={"x": "é"})
    context = Context(
        "System here.",
        [
            UserMessage([TextContent("look"), ImageContent("aGk=", "image/png")]),
            AssistantMessage([TextContent("Let me look."), call], stop_reason="toolUse"),
            ToolResultMessage("call_1", "lookup", [TextContent("found it")]),
        ],
        tools=[tool("lookup")],
    )
    options = StreamOptions(
        api_key=KEY, temperature=0.2, max_tokens=50, headers={"X-Call": "2"}, session_id="s1"
    )
    _, message = await collect(model, context, options)
    assert message.stop_reason == "stop" and message.text == "done"
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["x-model"] == "1" and request.headers["x-call"] == "2"
    body = request.body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50
    assert "max_completion_tokens" not in body and "prompt_cache_key" not in body
    assert body["messages"] == [
        {"role": "system", "content": "System here."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"x": "é"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "found it"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "the lookup tool",
                "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        }
    ]


async def test_openai_itself_gets_max_completion_tokens_and_prompt_cache_key(
    server: ReplayServer,
) -> None:
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    model = Model(id="gpt-x", provider="openai", api="openai-completions", base_url=server.url)
    options = StreamOptions(api_key=KEY, max_tokens=99, session_id="sess-7", metadata={"n": 1})
    await collect(model, hello(), options)
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body
    assert body["prompt_cache_key"] == "sess-7"
    assert "metadata" not in body  # refused without `store` (test_openai_metadata.py)


async def test_openais_reasoning_models_get_no_temperature(server: ReplayServer) -> None:
    """LibreChat #10737: o3 and gpt-5 refuse a temperature ("Unsupported value: 'temperature'
    does not support 0 with this model"), and compaction asks for 0; other models keep it."""
    models = [
        Model(id="gpt-5-mini", provider="openai", api="openai-completions", base_url=server.url,
              reasoning=True),
        Model(id="gpt-4o", provider="openai", api="openai-completions", base_url=server.url),
        compat(server, reasoning=True),
    ]  # fmt: skip
    for model in models:
        server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
        _, message = await collect(model, hello(), StreamOptions(api_key=KEY, temperature=0))
        assert message.stop_reason == "stop"
    sent = [request.body.get("temperature") for request in server.requests]
    assert sent == [None, 0, 0]


async def test_on_payload_replaces_the_body_and_on_response_sees_the_status(
    server: ReplayServer,
) -> None:
    server.enqueue(sse_reply(openai_chunks({"content": "ok"}), headers={"x-request-id": "r1"}))
    seen: list[dict[str, Any]] = []

    async def on_payload(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "seed": 7, "top_k": 3}

    options = StreamOptions(api_key=KEY, on_payload=on_payload, on_response=seen.append)
    _, message = await collect(compat(server), hello(), options)
    assert message.stop_reason == "stop"
    body = server.requests[0].body
    assert body["seed"] == 7 and body["top_k"] == 3
    assert seen[0]["status"] == 200 and seen[0]["headers"]["x-request-id"] == "r1"


async def test_http_400_is_an_error_event_with_status_and_no_retry(server: ReplayServer) -> None:
    """A provider 4xx → stop reason "error", a clear text; 4xx is not retried."""
    server.enqueue(json_reply(400, {"error": {"message": "messages: field required"}}))
    events, message = await collect(compat(server), hello())
    assert [e.type for e in events] == ["start", "error"]
    assert message.stop_reason == "error"
    assert message.error_message == "HTTP 400 from the server: messages: field required"
    assert len(server.requests) == 1


async def test_api_key_echoed_by_the_server_is_scrubbed(server: ReplayServer) -> None:
    secret = "abc-very-secret-key-42"
    server.enqueue(json_reply(401, {"error": {"message": f"Incorrect API key: {secret}"}}))
    _, message = await collect(compat(server), hello(), StreamOptions(api_key=secret))
    assert message.error_message is not None and "401" in message.error_message
    assert secret not in message.error_message and "***" in message.error_message


async def test_missing_key_for_openai_is_a_clear_error(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = Model(id="gpt-x", provider="openai", api="openai-completions", base_url=server.url)
    _, message = await collect(model, hello(), StreamOptions())
    assert message.stop_reason == "error"
    assert "OPENAI_API_KEY" in (message.error_message or "")
    assert server.requests == []


async def test_key_comes_from_the_environment(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-from-env-123456")
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    model = Model(id="x/y", provider="openrouter", api="openai-completions", base_url=server.url)
    await collect(model, hello(), StreamOptions())
    assert server.requests[0].headers["authorization"] == "Bearer sk-or-from-env-123456"


async def test_local_server_without_key_gets_a_placeholder(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    _, message = await collect(compat(server), hello(), StreamOptions())
    assert message.stop_reason == "stop"


CALL_DELTA = {
    "tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}]
}


@pytest.mark.parametrize(
    ("finish_reason", "delta", "stop_reason"),
    [
        ("stop", {"content": "x"}, "stop"),
        ("length", {"content": "x"}, "length"),
        ("tool_calls", CALL_DELTA, "toolUse"),
        ("function_call", CALL_DELTA, "toolUse"),
        ("stop", CALL_DELTA, "toolUse"),  # some servers say "stop" after a call
        ("tool_calls", {"content": "x"}, "stop"),  # "tool_calls" but no call: nothing to run
    ],
)
async def test_finish_reasons(
    server: ReplayServer, finish_reason: str, delta: dict[str, Any], stop_reason: str
) -> None:
    server.enqueue(sse_reply(openai_chunks(delta, finish_reason=finish_reason)))
    _, message = await collect(compat(server), hello())
    assert message.stop_reason == stop_reason


async def test_content_filter_is_an_error(server: ReplayServer) -> None:
    server.enqueue(sse_reply(openai_chunks({"content": "x"}, finish_reason="content_filter")))
    _, message = await collect(compat(server), hello())
    assert message.stop_reason == "error"
    assert "content filter" in (message.error_message or "")
    assert message.text == "x"


async def test_stream_cut_off_without_finish_reason_is_an_error(server: ReplayServer) -> None:
    server.enqueue(sse_reply(openai_chunks({"content": "partial"})[:1]))
    _, message = await collect(compat(server), hello())
    assert message.stop_reason == "error"
    assert message.text == "partial"
    assert len(server.requests) == 1  # content was streamed: no retry


async def test_idle_stream_ends_in_error(server: ReplayServer) -> None:
    """R-5.8 enforced by the provider too when `idle_timeout_s` is set."""
    server.enqueue(sse_reply(openai_chunks({"content": "hel"})[:1], stall_s=10))
    started = time.monotonic()
    _, message = await collect(
        compat(server), hello(), StreamOptions(api_key=KEY, idle_timeout_s=0.3)
    )
    assert message.stop_reason == "error"
    assert "0.3 s" in (message.error_message or "")
    assert message.text == "hel"
    assert time.monotonic() - started < 5


def test_called_without_a_running_loop_ends_the_stream() -> None:
    model = Model(id="m", provider="vllm", api="openai-completions", base_url="http://127.0.0.1:9")
    stream = stream_openai_completions(model, hello(), None)
    assert stream.done
    message = asyncio.run(stream.result())
    assert message.stop_reason == "error" and "event loop" in (message.error_message or "")


def test_clients_are_not_tied_to_one_event_loop(server: ReplayServer) -> None:
    """SDK clients are reused per event loop; a second `asyncio.run` works."""
    for text in ("one", "two"):
        server.enqueue(sse_reply(openai_chunks({"content": text})))
        _, message = asyncio.run(collect(compat(server), hello()))
        assert message.stop_reason == "stop" and message.text == text


async def test_images_in_tool_results_and_for_text_only_models(server: ReplayServer) -> None:
    """Tool messages cannot carry images: they follow in a user message; a text-only model
    gets a placeholder instead of the image. Ids OpenAI would refuse are normalised,
    the same way for the call and its result."""
    long_id = "toolu_" + "x" * 60
    call = ToolCall(id=long_id, name="shot", arguments={})
    transcript = [
        UserMessage([TextContent("look"), ImageContent("aGk=", "image/png")]),
        AssistantMessage([call], stop_reason="toolUse"),
        ToolResultMessage(
            long_id, "shot", [TextContent("png:"), ImageContent("b2s=", "image/png")]
        ),
    ]
    for model_input in (("text", "image"), ("text",)):
        server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
        await collect(compat(server, input=model_input), Context("", list(transcript)))
    with_images, text_only = (r.body["messages"] for r in server.requests)

    sent_id = with_images[1]["tool_calls"][0]["id"]
    assert len(sent_id) <= 40 and sent_id == with_images[2]["tool_call_id"]
    assert with_images[2] == {"role": "tool", "tool_call_id": sent_id, "content": "png:"}
    assert with_images[3]["role"] == "user"
    assert with_images[3]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,b2s="},
    }
    assert len(text_only) == 3  # no extra user message
    assert text_only[0]["content"][1]["type"] == "text"
    assert "image omitted" in text_only[0]["content"][1]["text"]


async def test_no_response_headers_within_the_idle_timeout_is_one_error(
    server: ReplayServer,
) -> None:
    """Waiting for the response counts as idle; it is not retried."""
    server.enqueue(sse_reply(openai_chunks({"content": "late"}), wait_s=10))
    started = time.monotonic()
    _, message = await collect(
        compat(server), hello(), StreamOptions(api_key=KEY, idle_timeout_s=0.3)
    )
    assert message.stop_reason == "error"
    assert "stream idle timeout" in (message.error_message or "")
    assert time.monotonic() - started < 8  # the reply would come after 10 s
    assert server.settled_request_count() == 1
