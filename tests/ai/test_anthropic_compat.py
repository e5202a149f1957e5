"""anthropic-messages against stream shapes and transcripts from other frameworks' bug reports
and tests (pi-mono packages/ai, litellm, langchain): Anthropic-compatible proxies, empty
tool input, stop reasons, usage and cost with cache reads/writes, request bodies the API
would refuse (DESIGN §7)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, Reply, json_reply, sse_reply
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
from yiemagent.types.model import Context, Model, ModelCost, StreamOptions
from yiemagent.types.signal import AbortSignal

pytestmark = pytest.mark.timeout(120)  # the first test imports the SDK: seconds of CPU under load

KEY = "sk-ant-test-0123456789abcdef"


def claude(server: ReplayServer, **kwargs: Any) -> Model:
    return Model(
        id="claude-test-1",
        provider="anthropic",
        api="anthropic-messages",
        base_url=server.url,
        max_tokens=4096,
        **kwargs,
    )


def sse(
    *blocks: tuple[str, dict[str, Any]],
    stop: str | None = "end_turn",
    start_usage: dict[str, Any] | None = None,
    delta_usage: dict[str, Any] | None = None,
) -> list[str]:
    events = []

    def event(kind: str, data: dict[str, Any]) -> None:
        events.append(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}")

    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-1",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage or {"input_tokens": 10, "output_tokens": 1},
    }
    event("message_start", {"message": message})
    for kind, data in blocks:
        event(kind, data)
    if stop is not None:
        usage = delta_usage or {"output_tokens": 5}
        event(
            "message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage}
        )
        event("message_stop", {})
    return events


def text_blocks(text: str = "ok") -> list[tuple[str, dict[str, Any]]]:
    return [
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"index": 0}),
    ]


def tool_use(input: dict[str, Any], *deltas: str) -> list[tuple[str, dict[str, Any]]]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "get_status", "input": input}
    return [
        ("content_block_start", {"index": 0, "content_block": block}),
        *(
            (
                "content_block_delta",
                {"index": 0, "delta": {"type": "input_json_delta", "partial_json": d}},
            )
            for d in deltas
        ),
        ("content_block_stop", {"index": 0}),
    ]


async def run(
    server: ReplayServer, events: list[str], context: Context | None = None, **model: Any
) -> AssistantMessage:
    server.enqueue(sse_reply(events))
    stream = stream_anthropic_messages(
        claude(server, **model),
        context or Context("sys", [UserMessage("hi")]),
        StreamOptions(api_key=KEY),
    )
    return await stream.result()


# ── streams ─────────────────────────────────────────────────────────────────


async def test_tool_use_with_empty_input_and_no_deltas(server: ReplayServer) -> None:
    """pi-mono anthropic-tool-call-missing-args: `input: {}` and no input_json_delta."""
    message = await run(server, sse(*tool_use({}), stop="tool_use"))
    assert message.stop_reason == "toolUse"
    assert message.content == [ToolCall("toolu_1", "get_status", {})]


async def test_empty_input_json_delta_fragments(server: ReplayServer) -> None:
    message = await run(server, sse(*tool_use({}, "", '{"a":', "", " 1}", ""), stop="tool_use"))
    assert message.content == [ToolCall("toolu_1", "get_status", {"a": 1})]


async def test_proxy_sending_the_whole_input_in_the_start_event(server: ReplayServer) -> None:
    """Some Anthropic-compatible servers put the input in content_block_start and send no
    input_json_delta: the arguments are kept, not replaced by `{}`."""
    message = await run(server, sse(*tool_use({"path": "/tmp", "n": 2}), stop="tool_use"))
    assert message.content == [ToolCall("toolu_1", "get_status", {"path": "/tmp", "n": 2})]


async def test_streamed_input_wins_over_a_start_input(server: ReplayServer) -> None:
    message = await run(server, sse(*tool_use({"x": 1}, '{"x": 2}'), stop="tool_use"))
    assert message.content == [ToolCall("toolu_1", "get_status", {"x": 2})]


@pytest.mark.parametrize(
    ("reason", "stop_reason"),
    [
        ("model_context_window_exceeded", "length"),
        ("refusal", "error"),
        ("a_reason_from_the_future", "stop"),  # unknown: taken as "stop"
    ],
)
async def test_more_stop_reasons(server: ReplayServer, reason: str, stop_reason: str) -> None:
    message = await run(server, sse(*text_blocks(), stop=reason))
    assert message.stop_reason == stop_reason
    assert message.text == "ok"


async def test_stream_ending_without_message_delta_is_an_error(server: ReplayServer) -> None:
    message = await run(server, sse(*text_blocks("half"), stop=None))
    assert message.stop_reason == "error"
    assert message.text == "half"


async def test_usage_with_cache_reads_and_writes_and_a_null_input_in_message_delta(
    server: ReplayServer,
) -> None:
    """Proxies omit (null) `input_tokens` in message_delta: the message_start count stays."""
    start = {
        "input_tokens": 40,
        "output_tokens": 1,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 200,
    }
    delta = {"input_tokens": None, "output_tokens": 30, "cache_read_input_tokens": None}
    price = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    message = await run(
        server, sse(*text_blocks(), start_usage=start, delta_usage=delta), cost=price
    )
    u = message.usage
    assert (u.input, u.output, u.cache_read, u.cache_write) == (40, 30, 1000, 200)
    assert u.total_tokens == 1270
    assert u.cost.cache_read == pytest.approx(1000 * 0.3 / 1e6)
    assert u.cost.cache_write == pytest.approx(200 * 3.75 / 1e6)
    assert u.cost.total == pytest.approx((40 * 3 + 30 * 15 + 1000 * 0.3 + 200 * 3.75) / 1e6)


@pytest.mark.parametrize(
    ("start", "delta"),
    [
        ({"input_tokens": 40, "output_tokens": 1}, {"input_tokens": 0, "output_tokens": 30}),
        ({"input_tokens": 0, "output_tokens": 0}, {"input_tokens": 40, "output_tokens": 30}),
        ({"input_tokens": 40, "output_tokens": 1}, {"input_tokens": 40, "output_tokens": 30}),
    ],
    ids=["zero_in_message_delta", "zero_in_message_start", "same_count_in_both"],
)
async def test_a_zero_input_count_does_not_replace_the_real_one(
    server: ReplayServer, start: dict[str, Any], delta: dict[str, Any]
) -> None:
    """envoyproxy/ai-gateway#1631, sgl-project/sglang#20678: Anthropic-compatible servers
    send `input_tokens: 0` in message_delta (or in message_start, with the real count only
    at the end). The counts are cumulative, so a 0 after the real count is no news; taken
    as it came, the turn cost no input and `UsageLimits` never saw its prompt. The API
    itself repeats the prompt's count in message_delta: added up, a streamed turn cost
    twice its input."""
    message = await run(server, sse(*text_blocks(), start_usage=start, delta_usage=delta))
    assert (message.usage.input, message.usage.output) == (40, 30)
    assert message.usage.total_tokens == 70


async def test_one_hour_cache_writes_are_priced_at_their_own_rate(server: ReplayServer) -> None:
    """With `cache_retention="long"` the API writes the cache for an hour, at twice the
    input price (a 5-minute write is 1.25 times it, the catalogue's cache_write price):
    those writes were all priced as 5-minute ones."""
    start = {
        "input_tokens": 40,
        "output_tokens": 1,
        "cache_creation_input_tokens": 1200,
        "cache_creation": {"ephemeral_1h_input_tokens": 1000, "ephemeral_5m_input_tokens": 200},
    }
    price = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    message = await run(server, sse(*text_blocks(), start_usage=start), cost=price)
    u = message.usage
    assert u.cache_write == 1200
    assert u.cost.cache_write == pytest.approx((1000 * 6.0 + 200 * 3.75) / 1e6)
    assert u.cost.total == pytest.approx((40 * 3 + 5 * 15 + 1000 * 6.0 + 200 * 3.75) / 1e6)


async def test_unknown_events_and_deltas_are_ignored(server: ReplayServer) -> None:
    blocks = [
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        ("ping", {}),
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "a"}}),
        (
            "content_block_delta",
            {"index": 0, "delta": {"type": "citations_delta", "citation": {"type": "x"}}},
        ),
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "b"}}),
        ("content_block_stop", {"index": 0}),
    ]
    message = await run(server, sse(*blocks))
    assert message.stop_reason == "stop" and message.text == "ab"


# ── request bodies the API would refuse ────────────────────────────────────


def tool_turn(result: list[Any], arguments: Any = None, **kw: Any) -> list[Any]:
    call = ToolCall("prev_tool_123", "get_status", arguments if arguments is not None else {})
    return [
        UserMessage("Check status"),
        AssistantMessage([TextContent(" \n"), call], stop_reason="toolUse"),
        ToolResultMessage("prev_tool_123", "get_status", result, **kw),
        UserMessage("Check again"),
    ]


async def test_tool_call_with_undefined_arguments_in_history(server: ReplayServer) -> None:
    """pi-mono anthropic-tool-call-missing-args: undefined arguments replay as `{}`."""
    messages = tool_turn([TextContent("Status OK")])
    messages[1].content[1].arguments = None
    message = await run(server, sse(*text_blocks()), Context("", messages))
    assert message.stop_reason == "stop"
    assistant = server.requests[0].body["messages"][1]
    assert assistant["content"] == [
        {"type": "tool_use", "id": "prev_tool_123", "name": "get_status", "input": {}}
    ]  # the whitespace-only text block is not sent either


@pytest.mark.parametrize(("is_error", "placeholder"), [(False, "(no output)"), (True, "(error)")])
@pytest.mark.parametrize("text", ["\r\n", "   ", "\n\t", ""])
async def test_whitespace_only_tool_output_gets_a_placeholder(
    server: ReplayServer, text: str, is_error: bool, placeholder: str
) -> None:
    """pi-mono #8720: the API rejects text blocks without non-whitespace text."""
    messages = tool_turn([TextContent(text)], is_error=is_error)
    await run(server, sse(*text_blocks()), Context("", messages))
    result = server.requests[0].body["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] is is_error
    assert result["content"] == [{"type": "text", "text": placeholder}]


async def test_whitespace_only_user_text_blocks_are_not_sent(server: ReplayServer) -> None:
    messages = [UserMessage([TextContent("  "), TextContent("real")])]
    await run(server, sse(*text_blocks()), Context("", messages))
    (user,) = server.requests[0].body["messages"]
    assert [b["text"] for b in user["content"]] == ["real"]


@pytest.mark.parametrize("text", ["  ", "\n\t", ""])
async def test_a_whitespace_only_user_turn_is_kept_with_a_stand_in(
    server: ReplayServer, text: str
) -> None:
    """A user message of only whitespace (`agent.prompt("  ")`) was dropped whole: the
    request ended with the previous answer, which the API takes as a prefill to continue,
    or had no message at all, which it refuses."""
    earlier = [
        UserMessage([TextContent("hi")]),
        AssistantMessage(
            content=[TextContent("hello")],
            api="anthropic-messages",
            provider="anthropic",
            model="claude-test-1",
        ),
    ]
    for history in ([], earlier):
        server.requests.clear()
        messages = [*history, UserMessage([TextContent(text)])]
        message = await run(server, sse(*text_blocks()), Context("", messages))
        assert message.stop_reason == "stop", message.error_message
        sent = server.requests[0].body["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "user"][-len(messages) :]
        assert sent[-1]["content"][0]["type"] == "text"
        assert sent[-1]["content"][0]["text"] == "(empty message)"


@pytest.mark.parametrize("system_prompt", ["\n", "  \t "])
async def test_a_whitespace_only_system_prompt_is_not_sent(
    server: ReplayServer, system_prompt: str
) -> None:
    """home-assistant/core #175637: "system: text content blocks must contain non-whitespace
    text" refuses the request, and every later one of the conversation."""
    await run(server, sse(*text_blocks()), Context(system_prompt, [UserMessage("hi")]))
    assert "system" not in server.requests[0].body


async def test_images_for_a_text_only_model_become_a_note(server: ReplayServer) -> None:
    image = ImageContent("aGk=", "image/png")
    messages = tool_turn([TextContent("shot:"), image])
    messages[0] = UserMessage([TextContent("look"), image])
    await run(server, sse(*text_blocks()), Context("", messages), input=("text",))
    await run(server, sse(*text_blocks()), Context("", messages), input=("text", "image"))
    text_only, with_images = (r.body["messages"] for r in server.requests)
    assert text_only[0]["content"][1]["type"] == "text"
    assert "image omitted" in text_only[0]["content"][1]["text"]
    assert "image omitted" in text_only[2]["content"][0]["content"][1]["text"]
    assert with_images[0]["content"][1]["type"] == "image"
    assert with_images[2]["content"][0]["content"][1]["type"] == "image"


async def test_lone_surrogates_do_not_brick_the_session(server: ReplayServer) -> None:
    messages = tool_turn([TextContent("name \udcff")])
    message = await run(server, sse(*text_blocks()), Context("sys \ud800", messages))
    assert message.stop_reason == "stop"
    body = server.requests[0].body
    assert body["system"][0]["text"] == "sys \ufffd"
    assert body["messages"][2]["content"][0]["content"][0]["text"] == "name \ufffd"


async def test_ids_from_other_providers_are_made_valid_and_stay_paired(
    server: ReplayServer,
) -> None:
    """OpenAI Responses ids (`call_x|fc_...` with `+/=`, 400+ characters) and ids that
    collide once normalised."""
    long_id = "call_abc|fc_" + "x+/=" * 120
    messages = [
        UserMessage("go"),
        AssistantMessage(
            [ToolCall(long_id, "f", {}), ToolCall("a.b", "f", {}), ToolCall("a_b", "f", {})],
            stop_reason="toolUse",
            provider="openai",
            model="gpt-5",
        ),
        ToolResultMessage(long_id, "f", [TextContent("1")]),
        ToolResultMessage("a.b", "f", [TextContent("2")]),
        ToolResultMessage("a_b", "f", [TextContent("3")]),
    ]
    await run(server, sse(*text_blocks()), Context("", messages))
    sent = server.requests[0].body["messages"]
    ids = [b["id"] for b in sent[1]["content"]]
    results = [(b["tool_use_id"], b["content"][0]["text"]) for b in sent[2]["content"]]
    assert len(set(ids)) == 3
    assert all(len(i) <= 64 and all(c.isalnum() or c in "_-" for c in i) for i in ids)
    assert results == list(zip(ids, ["1", "2", "3"], strict=True))


async def test_thinking_of_another_model_is_sent_as_text_without_signature(
    server: ReplayServer,
) -> None:
    messages = [
        UserMessage("q"),
        AssistantMessage(
            [ThinkingContent("my reasoning", signature="sig"), TextContent("answer")],
            provider="openai",
            api="openai-completions",
            model="gpt-5",
        ),
        UserMessage("more"),
    ]
    await run(server, sse(*text_blocks()), Context("", messages), reasoning=True)
    assistant = server.requests[0].body["messages"][1]
    assert assistant["content"] == [
        {"type": "text", "text": "my reasoning"},
        {"type": "text", "text": "answer"},
    ]


def _tool_loop(first: list[Any], **assistant: Any) -> list[Any]:
    return [
        UserMessage("go"),
        AssistantMessage(
            [*first, ToolCall("toolu_1", "f", {})], stop_reason="toolUse", **assistant
        ),
        ToolResultMessage("toolu_1", "f", [TextContent("done")]),
    ]


async def test_reasoning_switched_on_mid_tool_loop_sends_no_thinking_for_that_turn(
    server: ReplayServer,
) -> None:
    """The API refuses `thinking` when the assistant turn being continued has tool_use but no
    thinking block ("a final assistant message must start with a thinking block"): reasoning
    turned on by `prepare_next_turn`, or a switch from another model, mid tool loop."""
    same = {"provider": "anthropic", "api": "anthropic-messages", "model": "claude-test-1"}
    cases = [
        (_tool_loop([TextContent("calling")], **same), False),  # reasoning was off
        (_tool_loop([], provider="openai", model="gpt-5"), False),  # another model
        (_tool_loop([ThinkingContent("hm", signature="sig")], **same), True),
        (
            [
                *_tool_loop([], **same),
                AssistantMessage([TextContent("ok")], **same),
                UserMessage("q"),
            ],
            True,
        ),
    ]
    for messages, _ in cases:
        server.enqueue(sse_reply(sse(*text_blocks())))
        stream = stream_anthropic_messages(
            claude(server, reasoning=True),
            Context("", messages),
            StreamOptions(api_key=KEY, reasoning="low"),
        )
        assert (await stream.result()).stop_reason == "stop"
    sent = ["thinking" in r.body for r in server.requests]
    assert sent == [expected for _, expected in cases]


async def test_aborted_before_the_call_sends_nothing(server: ReplayServer) -> None:
    signal = AbortSignal()
    signal.abort("user")
    stream = stream_anthropic_messages(
        claude(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY, signal=signal)
    )
    kinds = [event.type async for event in stream]
    assert kinds == ["start", "error"]
    assert (await stream.result()).stop_reason == "aborted"
    assert server.requests == []


async def test_abort_while_waiting_for_the_response_headers(server: ReplayServer) -> None:
    server.enqueue(sse_reply(sse(*text_blocks()), wait_s=5))
    signal = AbortSignal()
    stream = stream_anthropic_messages(
        claude(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY, signal=signal)
    )
    asyncio.get_running_loop().call_later(0.2, signal.abort)
    started = time.monotonic()
    message = await stream.result()
    assert message.stop_reason == "aborted"
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    ("model_max", "reasoning", "max_tokens", "budget"),
    [
        (32_000, "xhigh", 32_000, 30_976),  # claude-opus-4-1: 32000 output tokens at most
        (64_000, "xhigh", 64_000, 32_000),
        (4_096, "high", 4_096, 3_072),
        (1_500, "high", 1_500, None),  # no room for the 1024-token minimum: no thinking
    ],
)
async def test_thinking_budget_stays_within_the_models_output_limit(
    server: ReplayServer, model_max: int, reasoning: Any, max_tokens: int, budget: int | None
) -> None:
    server.enqueue(sse_reply(sse(*text_blocks())))
    model = Model(
        id="claude-opus-4-1",
        provider="anthropic",
        api="anthropic-messages",
        base_url=server.url,
        reasoning=True,
        max_tokens=model_max,
    )
    options = StreamOptions(api_key=KEY, reasoning=reasoning, temperature=0.2)
    await stream_anthropic_messages(model, Context("", [UserMessage("hi")]), options).result()
    body = server.requests[0].body
    assert body["max_tokens"] == max_tokens
    if budget is None:
        assert "thinking" not in body and body["temperature"] == 0.2
    else:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
        assert "temperature" not in body


async def test_tool_history_without_tools_declares_them_and_forbids_calls(
    server: ReplayServer,
) -> None:
    """The API refuses a request whose messages hold tool_use/tool_result blocks but which
    defines no tools (a summarising turn without tools, an emptied tool store)."""
    messages = [*tool_turn([TextContent("Status OK")])]
    await run(server, sse(*text_blocks()), Context("", messages))  # no tools
    await run(server, sse(*text_blocks()), Context("", [UserMessage("hi")]))
    with_history, plain = (r.body for r in server.requests)
    assert [t["name"] for t in with_history["tools"]] == ["get_status"]
    assert with_history["tool_choice"] == {"type": "none"}
    assert "tools" not in plain and "tool_choice" not in plain


async def test_a_tool_schema_without_a_type_is_sent_as_an_object(server: ReplayServer) -> None:
    """A tool that takes any arguments (`{}`, which a `ToolStore` accepts) or an MCP schema
    without `type`: the API refuses the whole request unless `input_schema` says
    `"type": "object"` ("tools.0.custom.input_schema.type: Field required")."""
    from yiemagent import AgentTool

    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        return "ok"

    schema: dict[str, Any] = {"properties": {"q": {"type": "string"}}}
    tools = [
        AgentTool("any", "any", "Anything.", {}, execute),
        AgentTool("q", "q", "Q.", schema, execute),
    ]
    await run(server, sse(*text_blocks()), Context("", [UserMessage("hi")], tools))
    sent = [t["input_schema"] for t in server.requests[0].body["tools"]]
    assert sent == [{"type": "object"}, {"type": "object", **schema}]
    assert tools[0].input_schema == {}  # the tool's own schema is left as it is


async def test_a_tool_schema_with_a_choice_at_its_top_is_sent_folded(
    server: ReplayServer,
) -> None:
    """langchain-ai/langchain#39271, anomalyco/opencode#47543: MCP servers (Notion's,
    GitLab's) list tools whose input schema is `anyOf`/`oneOf`/`allOf` at the top, and the
    API refused every request of the run ("input_schema does not support oneOf, allOf, or
    anyOf at the top level"). The branches' properties are sent at the top, the choice is
    said in the description, and the arguments are still checked against the whole schema:
    a call that gives neither is answered with the error, one that gives one runs."""
    from yiemagent import Agent, AgentTool, ToolResultMessage

    ran: list[dict[str, Any]] = []

    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        ran.append(args)
        return "attached"

    notion = {
        "type": "object",
        "anyOf": [
            {
                "type": "object",
                "properties": {"content": {"type": "string"}},
                "required": ["content"],
            },
            {"$ref": "#/$defs/by_url"},
        ],
        "$defs": {
            "by_url": {
                "type": "object",
                "properties": {"source_url": {"type": "string"}},
                "required": ["source_url"],
            }
        },
    }
    gitnexus = {
        "type": "object",
        "properties": {"route": {"type": "string"}, "file": {"type": "string"}},
        "oneOf": [{"required": ["route"]}, {"required": ["file"]}],
        "allOf": [{"properties": {"depth": {"type": "integer"}}, "required": ["depth"]}],
    }
    tools = [
        AgentTool("attach", "attach", "Attach a file.", notion, execute),
        AgentTool("impact", "impact", "Impact of a change.", gitnexus, execute),
    ]
    first = tool_use({}, "{}")
    first[0][1]["content_block"]["name"] = "attach"
    second = tool_use({}, '{"source_url": "https://x.test/a.pdf"}')
    second[0][1]["content_block"]["name"] = "attach"
    server.enqueue(
        sse_reply(sse(*first, stop="tool_use")),
        sse_reply(sse(*second, stop="tool_use")),
        sse_reply(sse(*text_blocks("done"))),
    )
    agent = Agent("sys", claude(server), tools=tools)
    assert (await agent.prompt("Attach the PDF.")).text == "done"

    sent = {t["name"]: t for t in server.requests[0].body["tools"]}
    for tool in sent.values():
        assert not {"anyOf", "oneOf", "allOf"} & set(tool["input_schema"])
    assert set(sent["attach"]["input_schema"]["properties"]) == {"content", "source_url"}
    assert "required" not in sent["attach"]["input_schema"]
    assert sent["attach"]["description"] == (
        "Attach a file.\n\nAt least one of these must be given: content; or source_url."
    )
    assert set(sent["impact"]["input_schema"]["properties"]) == {"route", "file", "depth"}
    assert sent["impact"]["input_schema"]["required"] == ["depth"]
    assert sent["impact"]["description"].endswith(
        "Exactly one of these must be given: route; or file."
    )
    assert tools[0].input_schema == notion  # the tool's own schema is left as it is
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [True, False]
    assert ran == [{"source_url": "https://x.test/a.pdf"}]


async def test_an_html_error_page_is_reported_by_its_title(server: ReplayServer) -> None:
    page = b"<html><head><title>403 Forbidden</title></head><body>" + b"y" * 5000 + b"</body>"
    server.enqueue(Reply(status=403, headers={"content-type": "text/html"}, body=page))
    stream = stream_anthropic_messages(
        claude(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    message = await stream.result()
    assert message.error_message == "HTTP 403 from the server: 403 Forbidden"


async def test_an_image_given_as_a_data_url_is_sent_as_plain_base64(server: ReplayServer) -> None:
    image = ImageContent("data:image/webp;base64,UklGRg==", "image/png")
    messages = [UserMessage([TextContent("look"), image])]
    await run(server, sse(*text_blocks()), Context("", messages), input=("text", "image"))
    source = server.requests[0].body["messages"][0]["content"][1]["source"]
    assert source == {"type": "base64", "media_type": "image/webp", "data": "UklGRg=="}


async def test_abort_mid_stream_keeps_the_usage_reported_so_far(server: ReplayServer) -> None:
    """pi-mono tokens.test: Anthropic reports usage in message_start, so an aborted message
    still has input and output tokens and their cost."""
    blocks = [
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        *(
            ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "word "}})
            for _ in range(20)
        ),
    ]
    start = {"input_tokens": 25, "output_tokens": 3}
    server.enqueue(sse_reply(sse(*blocks, stop=None, start_usage=start), delay_s=0.05))
    signal = AbortSignal()
    price = ModelCost(input=3.0, output=15.0)
    stream = stream_anthropic_messages(
        claude(server, cost=price),
        Context("", [UserMessage("Write a long poem")]),
        StreamOptions(api_key=KEY, signal=signal),
    )
    text = ""
    async for event in stream:
        if event.type == "text_delta":
            text += event.delta
            if len(text) >= 15:
                signal.abort()
    message = await stream.result()
    assert message.stop_reason == "aborted"
    assert (message.usage.input, message.usage.output) == (25, 3)
    assert message.usage.cost.total == pytest.approx((25 * 3.0 + 3 * 15.0) / 1e6)


async def test_reasoning_off_sends_no_thinking(server: ReplayServer) -> None:
    """pi-mono anthropic-reasoning-off: the level "off" means no thinking."""
    server.enqueue(sse_reply(sse(*text_blocks())))
    options = StreamOptions(api_key=KEY, reasoning="off")  # type: ignore[arg-type]
    stream = stream_anthropic_messages(
        claude(server, reasoning=True), Context("", [UserMessage("Say hi")]), options
    )
    assert (await stream.result()).stop_reason == "stop"
    assert "thinking" not in server.requests[0].body


@pytest.mark.parametrize(
    ("blocks", "reason", "stop_reason"),
    [
        (tool_use({}, '{"a": 1}'), "end_turn", "toolUse"),  # a proxy's end_turn after a call
        (text_blocks(), "tool_use", "stop"),  # tool_use with no call to run
    ],
)
async def test_the_stop_reason_follows_the_content(
    server: ReplayServer, blocks: list[Any], reason: str, stop_reason: str
) -> None:
    message = await run(server, sse(*blocks, stop=reason))
    assert message.stop_reason == stop_reason


async def test_a_native_output_schema_reaches_the_api(server: ReplayServer) -> None:
    """mem0 #6203 and camel-ai #4001 ("AnthropicModel ignores response_format"): a schema
    asked for as native structured output was dropped without a word, and the model
    answered in prose. Here `OutputSpec(T, mode="native")` on an Anthropic model sent no
    schema at all: the model never saw it, and each answer only failed validation."""
    from pydantic import BaseModel, Field

    from yiemagent import Agent
    from yiemagent.types import OutputSpec

    class Person(BaseModel):
        name: str
        age: int = Field(ge=0)

    server.enqueue(sse_reply(sse(*text_blocks('{"name": "Ada", "age": 36}'))))
    agent = Agent("sys", claude(server), output_type=OutputSpec(Person, mode="native"))
    reply = await agent.prompt("Who wrote the first program?")
    assert reply.output == Person(name="Ada", age=36)
    [request] = server.requests
    schema = request.body["output_config"]["format"]["schema"]
    assert request.body["output_config"]["format"]["type"] == "json_schema"
    assert schema["additionalProperties"] is False and schema["required"] == ["name", "age"]
    assert "minimum" not in schema["properties"]["age"]  # a keyword the API refuses
    assert "tools" not in request.body


async def test_a_tool_image_too_large_for_the_api_is_named_not_sent(server: ReplayServer) -> None:
    """anthropics/claude-code #10138 and #2939, vellum-assistant #33979: a tool's big
    screenshot, kept in the conversation, failed every later request with "image exceeds
    5 MB maximum", the session wedged for good. Here such an image went to the API on
    every turn after the tool's; now it is a text naming it, and the session keeps it."""
    import base64

    from yiemagent import Agent, AgentTool, AgentToolResult

    png = b"\x89PNG\r\n\x1a\n" + bytes(5 * 1024 * 1024)  # 6.7 MB as base64
    small = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(30)).decode()

    async def screenshot(call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        big = ImageContent(base64.b64encode(png).decode(), "image/png")
        return AgentToolResult([TextContent("two shots"), big, ImageContent(small, "image/png")])

    tool = AgentTool("shot", "shot", "Take a screenshot.", {"type": "object"}, screenshot)
    call = tool_use({}, "{}")
    call[0][1]["content_block"]["name"] = "shot"
    server.enqueue(sse_reply(sse(*call, stop="tool_use")), sse_reply(sse(*text_blocks("seen"))))
    agent = Agent("sys", claude(server, input=("text", "image")), tools=[tool])
    assert (await agent.prompt("Look at the page.")).text == "seen"
    [result] = server.requests[1].body["messages"][-1]["content"]
    kinds = [block["type"] for block in result["content"]]
    assert kinds == ["text", "text", "image"]
    assert result["content"][1]["text"] == (
        "[image omitted: 6.7 MB of base64, more than the 5.0 MB the Messages API takes]"
    )
    kept = agent.state.messages[2].content
    assert [type(block).__name__ for block in kept] == [
        "TextContent",
        "ImageContent",
        "ImageContent",
    ]


async def test_a_whole_json_answer_to_a_stream_request_is_said_to_be_one(
    server: ReplayServer,
) -> None:
    """A server that ignores `stream: true` (see the openai-completions test of the same
    case): a whole Messages JSON was read as an empty event stream, "cut off". It is now
    an error that says what came."""
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1",
            "content": [{"type": "text", "text": "Hi."}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 2}}  # fmt: skip
    server.enqueue(json_reply(200, body))
    answer = await stream_anthropic_messages(
        claude(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    ).result()
    assert answer.stop_reason == "error"
    assert "answered with one JSON body, not an event stream" in (answer.error_message or "")
