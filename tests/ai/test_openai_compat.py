"""openai-completions against stream shapes and transcripts from other frameworks' bug reports
and tests (pi-mono packages/ai, litellm, vercel ai sdk, openai-agents): buggy compatible
servers (Ollama, vLLM, llama.cpp, Gemini's and OpenRouter's OpenAI endpoints), usage
variants, and request bodies a server would refuse (DESIGN §7)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, Reply, json_reply, openai_chunks, sse_reply
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
from yiemagent.types.model import Context, Model, ModelCost, StreamOptions
from yiemagent.types.signal import AbortSignal

pytestmark = pytest.mark.timeout(120)  # the first test imports the SDK: seconds of CPU under load

KEY = "sk-test-0123456789abcdefghij"
BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def compat(server: ReplayServer, **kwargs: Any) -> Model:
    return Model(
        id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1", **kwargs
    )


async def run(
    server: ReplayServer, events: list[str], context: Context | None = None, **model: Any
) -> AssistantMessage:
    server.enqueue(sse_reply(events))
    stream = stream_openai_completions(
        compat(server, **model),
        context or Context("", [UserMessage("hi")]),
        StreamOptions(api_key=KEY),
    )
    return await stream.result()


def chunk(choices: list[dict[str, Any]], **extra: Any) -> str:
    return "data: " + json.dumps({**BASE, "choices": choices, **extra})


def calls_of(message: AssistantMessage) -> list[tuple[str, str, dict[str, Any]]]:
    return [(c.id, c.name, c.arguments) for c in message.tool_calls]


def call(index: int | None, id: str | None, name: str | None, arguments: Any) -> dict[str, Any]:
    delta: dict[str, Any] = {"type": "function", "function": {"arguments": arguments}}
    if index is not None:
        delta["index"] = index
    if id is not None:
        delta["id"] = id
    if name is not None:
        delta["function"]["name"] = name
    return {"tool_calls": [delta]}


# ── tool-call assembly ────────────────────────────────────────────────────────


async def test_calls_sharing_one_index_with_different_ids_stay_separate(
    server: ReplayServer,
) -> None:
    """Gemini's and some Ollama versions' OpenAI endpoints give every parallel call index 0:
    a new id with a name is a new call, not more arguments for the first."""
    message = await run(
        server,
        openai_chunks(
            call(0, "a", "f", '{"x": 1}'),
            call(0, "b", "g", '{"y": 2}'),
            finish_reason="tool_calls",
        ),
    )
    assert message.stop_reason == "toolUse"
    assert calls_of(message) == [("a", "f", {"x": 1}), ("b", "g", {"y": 2})]


async def test_arguments_sent_as_an_object_not_a_string(server: ReplayServer) -> None:
    message = await run(
        server, openai_chunks(call(0, "a", "f", {"x": 1, "s": "é"}), finish_reason="tool_calls")
    )
    assert message.stop_reason == "toolUse"
    assert calls_of(message) == [("a", "f", {"x": 1, "s": "é"})]
    assert message.tool_calls[0].partial_json is None


async def test_missing_index_with_the_id_repeated_on_every_chunk(server: ReplayServer) -> None:
    message = await run(
        server,
        openai_chunks(
            call(None, "a", "f", '{"x":'),
            call(None, "a", None, "1}"),
            call(None, "b", "g", "{}"),
            finish_reason="tool_calls",
        ),
    )
    assert calls_of(message) == [("a", "f", {"x": 1}), ("b", "g", {})]


async def test_id_and_name_repeated_and_empty_on_later_chunks(server: ReplayServer) -> None:
    message = await run(
        server,
        openai_chunks(
            call(0, "a", "f", ""),
            call(0, "a", "f", '{"x":'),
            call(0, "", "", "1}"),
            finish_reason="tool_calls",
        ),
    )
    assert calls_of(message) == [("a", "f", {"x": 1})]


async def test_arguments_whole_in_the_first_chunk_with_content_null(server: ReplayServer) -> None:
    message = await run(
        server,
        openai_chunks(
            {"role": "assistant", "content": None, "tool_calls": None},
            {"content": None, **call(0, "a", "f", '{"path": "/tmp"}')},
            finish_reason="tool_calls",
        ),
    )
    assert message.content == [ToolCall("a", "f", {"path": "/tmp"})]


async def test_empty_arguments_string_is_an_empty_object(server: ReplayServer) -> None:
    message = await run(server, openai_chunks(call(0, "a", "f", ""), finish_reason="tool_calls"))
    assert calls_of(message) == [("a", "f", {})]
    assert message.tool_calls[0].partial_json is None


async def test_a_stray_closing_brace_after_the_arguments_is_dropped(server: ReplayServer) -> None:
    """langchain-qwq#30, archestra#6547: small and quantised models close the arguments
    once too often (`{"city": "Oslo"}}`); the call was refused as malformed JSON and the
    model asked again, often writing the same. The object before the stray closers is the
    call; other trailing text (prose, a second object) is still malformed."""
    events = openai_chunks(
        call(0, "a", "f", '{"city": "Oslo", "days": [1, 2]}'),
        call(0, None, None, "}\n]"),
        call(1, "b", "g", '{"city": "Oslo"} and Bergen'),
        finish_reason="tool_calls",
    )
    message = await run(server, events)
    first, second = message.tool_calls
    assert (first.arguments, first.partial_json) == ({"city": "Oslo", "days": [1, 2]}, None)
    assert second.partial_json == '{"city": "Oslo"} and Bergen'


# ── finish reasons, errors, reasoning ───────────────────────────────────────


async def test_openrouter_finish_reason_error_is_an_error(server: ReplayServer) -> None:
    message = await run(server, openai_chunks({"content": "par"}, finish_reason="error"))
    assert message.stop_reason == "error"
    assert "error" in (message.error_message or "")
    assert message.text == "par"


@pytest.mark.parametrize(
    ("reason", "stop_reason"),
    [("EOS", "stop"), ("max_output_tokens", "length"), ("a_reason_from_the_future", "stop")],
)
async def test_finish_reason_spellings_and_an_unknown_one(
    server: ReplayServer, reason: str, stop_reason: str
) -> None:
    message = await run(server, openai_chunks({"content": "ok"}, finish_reason=reason))
    assert message.stop_reason == stop_reason
    assert message.text == "ok"


async def test_error_object_in_the_stream_ends_in_error(server: ReplayServer) -> None:
    events = [
        chunk([{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]),
        "data: " + json.dumps({"error": {"message": "upstream overloaded", "code": 502}}),
        "data: [DONE]",
    ]
    message = await run(server, events)
    assert message.stop_reason == "error"
    assert "upstream overloaded" in (message.error_message or "")


async def test_sse_comment_lines_are_ignored(server: ReplayServer) -> None:
    message = await run(server, [": OPENROUTER PROCESSING", *openai_chunks({"content": "x"})])
    assert message.stop_reason == "stop" and message.text == "x"


async def test_reasoning_in_two_fields_at_once_is_not_doubled(server: ReplayServer) -> None:
    """chutes.ai and newer vLLM send the same text as `reasoning_content` and `reasoning`."""
    message = await run(
        server,
        openai_chunks(
            {"reasoning_content": "th", "reasoning": "th"},
            {"reasoning_content": "ink", "reasoning": "ink"},
            {"content": "answer"},
        ),
    )
    thinking = [b for b in message.content if isinstance(b, ThinkingContent)]
    assert [b.thinking for b in thinking] == ["think"]
    assert message.text == "answer"


# ── usage ────────────────────────────────────────────────────────────────────


async def test_usage_with_null_details_and_counts(server: ReplayServer) -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": None,
        "total_tokens": None,
        "prompt_tokens_details": None,
        "completion_tokens_details": None,
    }
    events = [
        chunk([{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]),
        chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}], usage=usage),
        "data: [DONE]",
    ]
    message = await run(server, events)
    assert message.stop_reason == "stop"
    assert (message.usage.input, message.usage.output, message.usage.cache_read) == (10, 0, 0)


@pytest.mark.parametrize(
    "usage",
    [
        {
            "prompt_tokens": 100,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 80},
        },
        # DeepSeek
        {"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 80},
    ],
)
async def test_cached_prompt_tokens_are_cache_reads_priced_as_such(
    server: ReplayServer, usage: dict[str, Any]
) -> None:
    events = [
        chunk([{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]),
        chunk([], usage=usage),  # `choices: []` carrying the usage
        "data: [DONE]",
    ]
    message = await run(server, events, cost=ModelCost(input=1.0, output=2.0, cache_read=0.5))
    u = message.usage
    assert (u.input, u.output, u.cache_read, u.total_tokens) == (20, 5, 80, 105)
    assert u.cost.total == pytest.approx((20 * 1.0 + 5 * 2.0 + 80 * 0.5) / 1e6)


@pytest.mark.parametrize(("write_price", "billed"), [(0.0, 1.0), (1.25, 1.25)])
async def test_prompt_tokens_written_to_the_cache_are_cache_writes(
    server: ReplayServer, write_price: float, billed: float
) -> None:
    """mindroom-ai/mindroom#2134: OpenAI reports the prompt tokens a call wrote to the cache
    (`cache_write_tokens`), billed at 1.25 times the input price from GPT-5.6 on and as
    plain input before. They were counted as input; they are cache writes now, priced at
    the model's write price, or at its input price when it lists none."""
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 80, "cache_write_tokens": 15},
    }
    events = [
        chunk([{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]),
        chunk([], usage=usage),
        "data: [DONE]",
    ]
    price = ModelCost(input=1.0, output=2.0, cache_read=0.5, cache_write=write_price)
    u = (await run(server, events, cost=price)).usage
    assert (u.input, u.output, u.cache_read, u.cache_write, u.total_tokens) == (5, 5, 80, 15, 105)
    assert u.cost.cache_write == pytest.approx(15 * billed / 1e6)
    assert u.cost.total == pytest.approx((5 * 1.0 + 5 * 2.0 + 80 * 0.5 + 15 * billed) / 1e6)


async def test_cache_writes_a_litellm_proxy_reports_for_claude_are_cache_writes(
    server: ReplayServer,
) -> None:
    """A LiteLLM proxy serving Claude on its OpenAI-compatible endpoint counts the prompt's
    cache reads and writes in `prompt_tokens` and names the writes
    `prompt_tokens_details.cache_creation_tokens` (and `cache_creation_input_tokens` beside
    the usage). Those writes, which Anthropic bills at 1.25 times the input price, were
    counted and priced as plain input."""
    usage = {
        "prompt_tokens": 100,  # 10 uncached, 80 read from the cache, 10 written to it
        "completion_tokens": 5,
        "total_tokens": 105,
        "prompt_tokens_details": {"cached_tokens": 80, "cache_creation_tokens": 10},
        "cache_creation_input_tokens": 10,
        "cache_read_input_tokens": 80,
    }
    events = [
        chunk([{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]),
        chunk([], usage=usage),
        "data: [DONE]",
    ]
    price = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    u = (await run(server, events, cost=price)).usage
    assert (u.input, u.output, u.cache_read, u.cache_write, u.total_tokens) == (10, 5, 80, 10, 105)
    assert u.cost.total == pytest.approx((10 * 3.0 + 5 * 15.0 + 80 * 0.3 + 10 * 3.75) / 1e6)


async def test_running_totals_on_every_chunk_count_once(server: ReplayServer) -> None:
    # some servers put the usage so far on every chunk: the last one is the whole call's
    def so_far(output: int) -> dict[str, int]:
        return {"prompt_tokens": 12, "completion_tokens": output, "total_tokens": 12 + output}

    events = [
        chunk([{"index": 0, "delta": {"content": "a"}, "finish_reason": None}], usage=so_far(1)),
        chunk([{"index": 0, "delta": {"content": "b"}, "finish_reason": None}], usage=so_far(2)),
        chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}], usage=so_far(3)),
        "data: [DONE]",
    ]
    message = await run(server, events)
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (12, 3, 15)


async def test_usage_before_the_last_chunk_is_kept_when_later_chunks_have_none(
    server: ReplayServer,
) -> None:
    usage = {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34}
    events = [
        chunk([{"index": 0, "delta": {"content": "hello"}, "finish_reason": None}], usage=usage),
        chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}], usage=None),
        chunk([{"index": 0, "delta": {}, "finish_reason": None}]),
        "data: [DONE]",
    ]
    message = await run(server, events)
    assert message.text == "hello"
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (30, 4, 34)


async def test_thinking_counted_only_in_the_total_is_output(server: ReplayServer) -> None:
    # Gemini's OpenAI endpoint leaves its thinking tokens out of completion_tokens but counts
    # them in total_tokens, and bills them as output
    # (https://github.com/Clarifai/clarifai-python/pull/978).
    usage = {"prompt_tokens": 20, "completion_tokens": 424, "total_tokens": 1016}
    events = [
        chunk([{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]),
        chunk([], usage=usage),
        "data: [DONE]",
    ]
    message = await run(server, events, cost=ModelCost(input=1.0, output=2.0))
    u = message.usage
    assert (u.input, u.output, u.total_tokens) == (20, 996, 1016)
    assert u.cost.total == pytest.approx((20 * 1.0 + 996 * 2.0) / 1e6)


# ── request bodies servers would refuse ─────────────────────────────────────


def tool_turn(result: list[Any], **assistant: Any) -> list[Any]:
    return [
        UserMessage("run it"),
        AssistantMessage(
            [ToolCall("call_1", "bash", {"c": "echo"})], stop_reason="toolUse", **assistant
        ),
        ToolResultMessage("call_1", "bash", result),
    ]


@pytest.mark.parametrize("text", ["\r\n", "   ", "\n\t", "\n", ""])
async def test_whitespace_only_tool_output_gets_a_placeholder(
    server: ReplayServer, text: str
) -> None:
    """pi-mono #8720: whitespace-only tool output made every later request fail (HTTP 400)."""
    await run(server, openai_chunks({"content": "ok"}), Context("", tool_turn([TextContent(text)])))
    tool = next(m for m in server.requests[0].body["messages"] if m["role"] == "tool")
    assert tool["content"] == "(no output)"


async def test_whitespace_only_assistant_text_is_not_sent(server: ReplayServer) -> None:
    messages = [
        UserMessage("a"),
        AssistantMessage([TextContent("  \n")]),
        UserMessage("b"),
        AssistantMessage([TextContent(" "), ToolCall("c1", "f", {})], stop_reason="toolUse"),
        ToolResultMessage("c1", "f", [TextContent("done")]),
    ]
    await run(server, openai_chunks({"content": "ok"}), Context("", messages))
    sent = server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "user", "assistant", "tool"]
    assert sent[2]["content"] is None and sent[2]["tool_calls"][0]["id"] == "c1"


async def test_non_ascii_arguments_in_history_go_back_as_written(server: ReplayServer) -> None:
    """langchain #37686 and agno #9485: JSON's \\uXXXX escapes of CJK text cost several times
    the tokens, and small models read them as code or copy them back."""
    messages = [
        UserMessage("北京天气"),
        AssistantMessage([ToolCall("c1", "weather", {"city": "北京"})], stop_reason="toolUse"),
        ToolResultMessage("c1", "weather", [TextContent("晴")]),
    ]
    await run(server, openai_chunks({"content": "ok"}), Context("", messages))
    sent = server.requests[0].body["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert sent == '{"city": "北京"}'


async def test_tool_call_without_arguments_in_history_goes_as_an_empty_object(
    server: ReplayServer,
) -> None:
    """pi-mono: a call from an aborted stream replayed with undefined arguments."""
    messages = tool_turn([TextContent("ok")])
    messages[1].content[0].arguments = None
    message = await run(server, openai_chunks({"content": "ok"}), Context("", messages))
    assert message.stop_reason == "stop"
    sent = server.requests[0].body["messages"][1]
    assert sent["tool_calls"][0]["function"]["arguments"] == "{}"


async def test_lone_surrogates_anywhere_do_not_brick_the_session(server: ReplayServer) -> None:
    """A file name decoded with surrogateescape in a tool result (pi-mono unicode-surrogate
    test): the request is still sent, the character replaced by U+FFFD."""
    messages = [*tool_turn([TextContent("bad name: \udcff.txt")]), UserMessage("and \ud83d?")]
    message = await run(server, openai_chunks({"content": "ok"}), Context("sys \udc80", messages))
    assert message.stop_reason == "stop"
    sent = server.requests[0].body["messages"]
    assert sent[0]["content"] == "sys \ufffd"
    assert sent[3]["content"] == "bad name: \ufffd.txt"
    assert sent[4]["content"] == "and \ufffd?"
    assert messages[2].content[0].text == "bad name: \udcff.txt"  # the transcript is untouched


async def test_image_only_tool_result_for_a_text_only_model_says_so(server: ReplayServer) -> None:
    result = [ImageContent("aGk=", "image/png")]
    await run(server, openai_chunks({"content": "ok"}), Context("", tool_turn(result)))
    sent = server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert "image omitted" in sent[2]["content"]


async def test_thinking_of_another_model_is_sent_as_text_apart_from_the_answer(
    server: ReplayServer,
) -> None:
    """Cross-provider handoff (pi-mono): foreign thinking becomes text, not glued to the
    answer, and not sent in a reasoning field."""
    messages = [
        UserMessage("q"),
        AssistantMessage(
            [ThinkingContent("I reason.", signature="sig"), TextContent("Answer.")],
            provider="anthropic",
            api="anthropic-messages",
            model="claude-sonnet-4-5",
        ),
        UserMessage("more"),
    ]
    await run(server, openai_chunks({"content": "ok"}), Context("", messages), reasoning=True)
    assistant = server.requests[0].body["messages"][1]
    assert assistant == {"role": "assistant", "content": "I reason.\nAnswer."}


async def test_ollama_index_zero_for_every_call_with_fragmented_arguments(
    server: ReplayServer,
) -> None:
    """ollama/ollama#15457 (LibreChat #13885): every parallel call streams with index 0 and
    its arguments in fragments; continuations belong to the call opened last."""
    message = await run(
        server,
        openai_chunks(
            call(0, "a", "read", '{"path":'),
            call(0, None, None, ' "x.txt"}'),
            call(0, "b", "read", '{"path":'),
            call(0, None, None, ' "y.txt"}'),
            finish_reason="tool_calls",
        ),
    )
    assert calls_of(message) == [("a", "read", {"path": "x.txt"}), ("b", "read", {"path": "y.txt"})]


async def test_a_later_id_for_a_call_opened_without_one(server: ReplayServer) -> None:
    message = await run(
        server,
        openai_chunks(
            call(0, None, "f", '{"x":'), call(0, "late", None, "1}"), finish_reason="tool_calls"
        ),
    )
    assert calls_of(message) == [("late", "f", {"x": 1})]


async def test_a_call_opens_once_its_name_is_known(server: ReplayServer) -> None:
    """Some servers send a call's id and first arguments before its name: the call starts
    (its start event, which a listener shows) only once the name is known, then streams
    all its arguments; a stream cut off before the name never started the call."""
    first = chunk([{"index": 0, "delta": call(0, "c1", None, '{"city":'), "finish_reason": None}])
    server.enqueue(sse_reply([first]))
    stream = stream_openai_completions(
        compat(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    cut = [event.type async for event in stream]
    assert "toolcall_start" not in cut
    assert (await stream.result()).stop_reason == "error"

    message = await run(
        server,
        openai_chunks(
            call(0, "c1", None, '{"city":'),
            call(0, None, "weather", ' "Oslo"}'),
            call(1, None, None, '{"n":'),
            call(1, "c2", "count", " 2}"),
            finish_reason="tool_calls",
        ),
    )
    assert calls_of(message) == [("c1", "weather", {"city": "Oslo"}), ("c2", "count", {"n": 2})]


async def test_text_after_a_call_streams_into_a_block_of_its_own(server: ReplayServer) -> None:
    """Text, a call, then more text (Qwen behind vLLM): the later text opens a new block;
    no delta is for a block that has ended."""
    server.enqueue(
        sse_reply(
            openai_chunks(
                {"content": "Checking."},
                call(0, "a", "query", '{"n": 5}'),
                {"content": "\n"},
                {"content": "Done."},
                finish_reason="tool_calls",
            )
        )
    )
    stream = stream_openai_completions(
        compat(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    open_block: int | None = None
    ended: set[int] = set()
    async for event in stream:
        kind, _, phase = event.type.partition("_")
        index = getattr(event, "content_index", None)
        if phase == "start":
            assert open_block is None and index not in ended
            open_block = index
        elif phase == "delta":
            assert index == open_block, f"{kind} delta for block {index}, open: {open_block}"
        elif phase == "end":
            assert index == open_block
            ended.add(index)
            open_block = None
    message = await stream.result()
    assert ended == {0, 1, 2}
    assert message.content == [
        TextContent("Checking."),
        ToolCall("a", "query", {"n": 5}),
        TextContent("\nDone."),
    ]


async def test_a_fragment_that_never_names_its_call_is_no_call(server: ReplayServer) -> None:
    """A nameless tool-call fragment (some gateways send one beside a whole call, or before
    the text of an answer) is no call to run: as one named "" it was answered "not found"
    and sent back in the next request, which OpenAI refuses for its empty name."""
    message = await run(
        server,
        openai_chunks(
            call(0, "call_0", "get_location", "{}"),
            call(1, None, None, "{}"),
            finish_reason="tool_calls",
        ),
    )
    assert calls_of(message) == [("call_0", "get_location", {})]
    assert message.stop_reason == "toolUse"
    answer = await run(server, openai_chunks(call(0, None, None, ""), {"content": "Oslo."}))
    assert answer.content == [TextContent("Oslo.")]
    assert answer.stop_reason == "stop"


async def test_a_nameless_call_that_was_the_whole_answer_is_an_error(
    server: ReplayServer,
) -> None:
    """A call that never gets a name is not run; when it was all the server sent, the turn
    fails naming what came instead of ending as an empty "stop" answer. Beside other
    content it is recorded in the message's details."""
    message = await run(
        server,
        openai_chunks(call(0, "call_9", None, '{"city": "Oslo"}'), finish_reason="tool_calls"),
    )
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert "without a name" in message.error_message
    assert "call_9" in message.error_message and '{"city": "Oslo"}' in message.error_message
    answer = await run(
        server, openai_chunks({"content": "Oslo."}, call(0, "call_9", None, '{"x": 1}'))
    )
    assert answer.stop_reason == "stop" and answer.text == "Oslo."
    assert answer.details["nameless_tool_calls"] == [{"id": "call_9", "arguments": '{"x": 1}'}]


async def test_a_windows_path_written_without_escapes_keeps_its_backslashes(
    server: ReplayServer,
) -> None:
    """A model writing a Windows path as is (`"E:\\Folder\\notes.md"`, backslashes not
    doubled) sends JSON with escapes it does not know: in such a string every backslash is
    the path's own, so `\\n` of `\\notes` stays a backslash and an n, not a line break. A
    string whose escapes are all JSON's keeps their meaning."""
    raw = r'{"path": "E:\Folder\notes.md", "share": "\\srv\d\x.txt", "note": "a\tb"}'
    message = await run(
        server, openai_chunks(call(0, "a", "read_file", raw), finish_reason="tool_calls")
    )
    assert calls_of(message) == [
        (
            "a",
            "read_file",
            {"path": "E:\\Folder\\notes.md", "share": "\\\\srv\\d\\x.txt", "note": "a\tb"},
        )
    ]
    assert message.tool_calls[0].partial_json is None


async def test_arguments_encoded_twice_are_unwrapped(server: ReplayServer) -> None:
    """Some models behind vLLM/Ollama send `"{\\"x\\": 1}"`: a JSON string holding the object."""
    double = json.dumps(json.dumps({"x": 1}))
    message = await run(
        server, openai_chunks(call(0, "a", "f", double), finish_reason="tool_calls")
    )
    assert calls_of(message) == [("a", "f", {"x": 1})]
    assert message.tool_calls[0].partial_json is None


async def test_abort_mid_stream_keeps_the_partial_and_makes_no_retry(
    server: ReplayServer,
) -> None:
    events = openai_chunks({"content": "one "}, {"content": "two "}, {"content": "three"})
    server.enqueue(sse_reply(events, delay_s=1.0))
    signal = AbortSignal()
    stream = stream_openai_completions(
        compat(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY, signal=signal)
    )
    started = time.monotonic()
    seen: list[str] = []
    async for event in stream:
        seen.append(event.type)
        if event.type == "text_delta":
            asyncio.get_running_loop().call_soon(signal.abort)
    message = await stream.result()
    assert message.stop_reason == "aborted" and seen[-1] == "error"
    assert message.text == "one "
    assert time.monotonic() - started < 2.5  # the whole reply takes 5 s
    assert len(server.requests) == 1


async def test_mistral_content_as_a_list_of_text_and_thinking_parts(server: ReplayServer) -> None:
    """Mistral's reasoning models stream `content` as a list of parts, not a string."""
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "Let me see."}]}
    message = await run(
        server,
        openai_chunks(
            {"content": [thinking]},
            {"content": [{"type": "text", "text": "The answer"}]},
            {"content": " is 4."},
        ),
    )
    assert message.stop_reason == "stop"
    assert [b.thinking for b in message.content if isinstance(b, ThinkingContent)] == [
        "Let me see."
    ]
    assert message.text == "The answer is 4."


async def test_groq_usage_in_x_groq(server: ReplayServer) -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    events = [
        chunk([{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]),
        chunk(
            [{"index": 0, "delta": {}, "finish_reason": "stop"}], x_groq={"id": "r", "usage": usage}
        ),
        "data: [DONE]",
    ]
    message = await run(server, events)
    assert (message.usage.input, message.usage.output) == (12, 3)


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [("max_tokens", "length"), ("MAX_TOKENS", "length"), ("STOP", "stop"), ("end_turn", "stop")],
)
async def test_finish_reason_spellings_of_other_servers(
    server: ReplayServer, finish_reason: str, stop_reason: str
) -> None:
    """Proxies in front of Anthropic/Gemini pass their own spellings through; a call cut by
    "max_tokens" must not run with half its arguments."""
    message = await run(
        server, openai_chunks(call(0, "a", "f", '{"x": "ab'), finish_reason=finish_reason)
    )
    assert message.stop_reason == ("length" if stop_reason == "length" else "toolUse")


async def test_error_event_before_any_content_is_retried(server: ReplayServer) -> None:
    """OpenRouter reports an upstream 502 as an `{"error": ...}` event with HTTP 200."""
    failing = [
        "data: " + json.dumps({"error": {"message": "Provider returned error", "code": 502}})
    ]
    server.enqueue(sse_reply(failing), sse_reply(openai_chunks({"content": "fine"})))
    stream = stream_openai_completions(
        compat(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    message = await stream.result()
    assert message.stop_reason == "stop" and message.text == "fine"
    assert len(server.requests) == 2


async def test_a_final_error_event_is_not_retried(server: ReplayServer) -> None:
    failing = ["data: " + json.dumps({"error": {"message": "bad request", "code": 400}})]
    message = await run(server, failing)
    assert message.stop_reason == "error" and "bad request" in (message.error_message or "")
    assert len(server.requests) == 1


async def test_images_of_several_tool_results_follow_the_last_result(server: ReplayServer) -> None:
    """OpenAI refuses a user message between the tool messages answering one assistant
    message ("must be followed by tool messages responding to each tool_call_id")."""
    shot = ImageContent("aGk=", "image/png")
    messages = [
        UserMessage("screenshots"),
        AssistantMessage(
            [ToolCall("c1", "shot", {}), ToolCall("c2", "shot", {})], stop_reason="toolUse"
        ),
        ToolResultMessage("c1", "shot", [TextContent("one"), shot]),
        ToolResultMessage("c2", "shot", [TextContent("two"), shot]),
        UserMessage("compare them"),
    ]
    await run(
        server,
        openai_chunks({"content": "ok"}),
        Context("", messages),
        input=("text", "image"),
    )
    sent = server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "user",
        "user",
    ]
    assert [m.get("tool_call_id") for m in sent[2:4]] == ["c1", "c2"]
    assert all(m["content"][1]["type"] == "image_url" for m in sent[4:6])
    assert sent[6]["content"] == "compare them"


async def test_mistral_gets_nine_character_ids_and_named_tool_messages(
    server: ReplayServer,
) -> None:
    """Mistral refuses ids that are not 9 characters of [a-zA-Z0-9] and wants the tool name
    on tool messages (pi-mono normalizeMistralToolId); calls and results stay paired, also
    when ids collide once normalised."""
    ids = ["toolu_01A09q90qw90lq917835lq9", "call|1", "abcdefghi", "abcdefghi"]
    messages: list[Any] = [
        UserMessage("go"),
        AssistantMessage(
            [ToolCall(i, f"t{n}", {}) for n, i in enumerate(ids)],
            stop_reason="toolUse",
            provider="anthropic",
            model="claude",
        ),
        *(ToolResultMessage(i, f"t{n}", [TextContent(str(n))]) for n, i in enumerate(ids)),
    ]
    model = Model(
        id="mistral-large-latest",
        provider="mistral",
        api="openai-completions",
        base_url=server.url + "/v1",
    )
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    stream = stream_openai_completions(model, Context("", messages), StreamOptions(api_key=KEY))
    assert (await stream.result()).stop_reason == "stop"
    sent = server.requests[0].body["messages"]
    call_ids = [c["id"] for c in sent[1]["tool_calls"]]
    assert len(set(call_ids)) == 4
    assert all(len(i) == 9 and i.isalnum() and i.isascii() for i in call_ids)
    assert call_ids[2] == "abcdefghi"
    results = [(m["tool_call_id"], m["name"], m["content"]) for m in sent[2:]]
    assert results == [(i, f"t{n}", str(n)) for n, i in enumerate(call_ids)]


@pytest.mark.parametrize("provider", ["vllm", "mistral"])
async def test_an_id_ending_in_a_newline_is_not_sent_with_it(
    server: ReplayServer, provider: str
) -> None:
    """Python's `$` also matches before a final newline, so `^[A-Za-z0-9_-]{1,40}$` took
    "call_1\\n" for a valid id and the server refused the request (the trailing-newline case
    of modelcontextprotocol/python-sdk#3084)."""
    ids = ["call_1\n", "abcdefghi\n", "functions.get:0\n"]
    messages: list[Any] = [
        UserMessage("go"),
        AssistantMessage([ToolCall(i, "get", {}) for i in ids], stop_reason="toolUse"),
        *(ToolResultMessage(i, "get", [TextContent("r")]) for i in ids),
    ]
    model = Model(id="m", provider=provider, api="openai-completions", base_url=server.url + "/v1")
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    stream = stream_openai_completions(model, Context("", messages), StreamOptions(api_key=KEY))
    assert (await stream.result()).stop_reason == "stop"
    sent = server.requests[0].body["messages"]
    call_ids = [c["id"] for c in sent[1]["tool_calls"]]
    assert not any(any(ch.isspace() for ch in i) for i in call_ids)
    assert len(set(call_ids)) == 3
    assert [m["tool_call_id"] for m in sent[2:]] == call_ids


async def test_mistral_gets_an_assistant_turn_between_tool_results_and_a_user_message(
    server: ReplayServer,
) -> None:
    """zed-industries/zed#37021, NousResearch/hermes-agent#20154: Mistral refuses "Unexpected
    role 'user' after role 'tool'". A steering message, a prompt after a run that ended on
    its tool results (terminate, a limit, an abort) and a tool's images all put a user
    message right after the results; other servers take it as it is."""
    messages: list[Any] = [
        UserMessage("go"),
        AssistantMessage([ToolCall("abcdefghi", "f", {})], stop_reason="toolUse"),
        ToolResultMessage("abcdefghi", "f", [TextContent("r")]),
        UserMessage("also this"),
    ]
    for provider in ("mistral", "vllm"):
        model = Model(
            id="mistral-large-latest",
            provider=provider,
            api="openai-completions",
            base_url=server.url + "/v1",
        )
        server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
        stream = stream_openai_completions(model, Context("", messages), StreamOptions(api_key=KEY))
        assert (await stream.result()).stop_reason == "stop"
    mistral, other = ([m["role"] for m in request.body["messages"]] for request in server.requests)
    assert mistral == ["user", "assistant", "tool", "assistant", "user"]
    assert other == ["user", "assistant", "tool", "user"]
    bridge = server.requests[0].body["messages"][3]
    assert isinstance(bridge["content"], str) and bridge["content"].strip()


@pytest.mark.parametrize(
    ("retention", "key", "retained"),
    [(None, "s-1", None), ("short", "s-1", None), ("long", "s-1", "24h"), ("none", None, None)],
)
async def test_openai_cache_retention(
    server: ReplayServer, retention: Any, key: str | None, retained: str | None
) -> None:
    """pi-mono cache-retention: "none" sends no prompt_cache_key, "long" asks for 24 h."""
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    model = Model(id="gpt-x", provider="openai", api="openai-completions", base_url=server.url)
    options = StreamOptions(api_key=KEY, session_id="s-1", cache_retention=retention)
    await stream_openai_completions(model, Context("", [UserMessage("hi")]), options).result()
    body = server.requests[0].body
    assert body.get("prompt_cache_key") == key
    assert body.get("prompt_cache_retention") == retained


@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        (
            "text/plain",
            b"model 'llama9' not found, try pulling it first",
            "model 'llama9' not found",
        ),
        ("application/json", b'{"error": "model \\"x\\" not found"}', 'model "x" not found'),
        ("application/json", b'{"detail": "Not Found"}', "Not Found"),
        (
            "text/html",
            b"<html><head><title>502 Bad Gateway</title></head><body>" + b"x" * 5000 + b"</body>",
            "502 Bad Gateway",
        ),
    ],
)
async def test_error_bodies_that_are_not_openai_json_are_reported(
    server: ReplayServer, content_type: str, body: bytes, expected: str
) -> None:
    """Ollama answers a missing model with a plain-text 404 or `{"error": "..."}`, proxies
    with HTML pages: the message says what the server said, briefly."""
    server.enqueue(Reply(status=404, headers={"content-type": content_type}, body=body))
    message = await run(server, [])
    assert message.stop_reason == "error"
    text = message.error_message or ""
    assert text.startswith("HTTP 404") and expected in text
    assert len(text) < 600


async def test_an_image_given_as_a_data_url_is_not_prefixed_twice(server: ReplayServer) -> None:
    image = ImageContent("data:image/webp;base64,UklGRg==", "image/png")
    messages = [UserMessage([TextContent("look"), image])]
    await run(
        server, openai_chunks({"content": "ok"}), Context("", messages), input=("text", "image")
    )
    part = server.requests[0].body["messages"][0]["content"][1]
    assert part == {"type": "image_url", "image_url": {"url": "data:image/webp;base64,UklGRg=="}}


async def test_a_server_refusing_stream_options_is_asked_again_without_them(
    server: ReplayServer,
) -> None:
    """openai-agents #442: Mistral answers `stream_options` with 422 extra_forbidden; the call
    is sent again without them, and later calls to that server leave them out."""
    refusal = {
        "object": "error",
        "message": {
            "detail": [
                {
                    "type": "extra_forbidden",
                    "loc": ["body", "stream_options", "include_usage"],
                    "msg": "Extra inputs are not permitted",
                }
            ]
        },
        "type": "invalid_request_error",
    }
    server.enqueue(
        json_reply(422, refusal),
        sse_reply(openai_chunks({"content": "one"})),
        sse_reply(openai_chunks({"content": "two"})),
    )
    model = Model(
        id="strict", provider="strict", api="openai-completions", base_url=server.url + "/strict/v1"
    )
    for expected in ("one", "two"):
        stream = stream_openai_completions(
            model, Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
        )
        message = await stream.result()
        assert message.stop_reason == "stop" and message.text == expected
    bodies = [r.body for r in server.requests]
    assert ["stream_options" in b for b in bodies] == [True, False, False]


async def test_an_unparsable_stream_event_is_a_clear_error(server: ReplayServer) -> None:
    """vercel ai sdk "should handle unparsable stream parts"."""
    message = await run(server, ["data: {unparsable}", *openai_chunks({"content": "x"})])
    assert message.stop_reason == "error"
    assert "not valid JSON" in (message.error_message or "")
    assert "{unparsable}" in (message.error_message or "")


async def test_a_refusal_is_kept_as_text(server: ReplayServer) -> None:
    """openai-agents: OpenAI streams a refusal in `delta.refusal`, not `content`."""
    message = await run(
        server,
        openai_chunks({"content": None, "refusal": "I can't help "}, {"refusal": "with that."}),
    )
    assert message.stop_reason == "stop"
    assert message.text == "I can't help with that."


async def test_an_empty_chunk_after_a_complete_call_adds_nothing(server: ReplayServer) -> None:
    """vercel ai sdk: no duplicate tool call for an extra empty chunk after the call."""
    message = await run(
        server,
        openai_chunks(
            call(0, "call_1", "f", '{"x": 1}'),
            call(0, None, None, ""),
            call(0, "call_1", None, ""),
            finish_reason="tool_calls",
        ),
    )
    assert calls_of(message) == [("call_1", "f", {"x": 1})]


@pytest.mark.parametrize(
    "fragments",
    [
        ['{"city":', '{"city": "Ber', '{"city": "Berlin"}'],  # the whole text so far each time
        ['{"city": ', '"Berlin"}', '{"city": "Berlin"}'],  # pieces, then the object again
        ['{"city": "Berlin"}', '{"city": "Berlin"}'],  # whole with the id, then again
        ["{", '{"city": "Berlin"}'],  # an opening brace, then the whole object
    ],
    ids=["cumulative", "pieces_then_whole", "whole_twice", "brace_then_whole"],
)
async def test_arguments_resent_whole_are_not_appended_twice(
    server: ReplayServer, fragments: list[str]
) -> None:
    """NousResearch/hermes-agent#35718, anomalyco/opencode#17339: DeepSeek, Qianfan, GLM and
    Mistral resend a call's argument text so far (or the whole object at the end) instead of
    the next piece; appended, it became `{...}{...}`, which no tool can take."""
    first, *rest = fragments
    message = await run(
        server,
        openai_chunks(
            call(0, "a", "weather", first),
            *(call(0, None, None, fragment) for fragment in rest),
            finish_reason="tool_calls",
        ),
    )
    assert calls_of(message) == [("a", "weather", {"city": "Berlin"})]
    assert message.tool_calls[0].partial_json is None


async def test_a_piece_that_merely_starts_like_the_text_so_far_is_appended(
    server: ReplayServer,
) -> None:
    """Only a fragment holding all of the text so far is a resend: `{"a":{"b":1}}` streamed
    as `{"a":` then `{"b":1}}` is two pieces."""
    message = await run(
        server,
        openai_chunks(
            call(0, "a", "f", '{"a":'), call(0, None, None, '{"b":1}}'), finish_reason="tool_calls"
        ),
    )
    assert calls_of(message) == [("a", "f", {"a": {"b": 1}})]


@pytest.mark.parametrize("schema", [{"type": "object"}, {}], ids=["object", "empty"])
async def test_a_tool_without_parameters_is_sent_with_empty_properties(
    server: ReplayServer, schema: dict[str, Any]
) -> None:
    """langchain-ai/langchain-mcp-adapters#137, mark3labs/mcphost#88: MCP servers list a tool
    without parameters as `{"type": "object"}`, which OpenAI refuses ("object schema missing
    properties") and with it the whole request."""
    from yiemagent import AgentTool
    from yiemagent.ai.providers.openai_responses import build_request_body as responses_body

    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        return "ok"

    now = AgentTool("now", "now", "The time.", schema, execute)
    context = Context("", [UserMessage("hi")], [now])
    await run(server, openai_chunks({"content": "hi"}), context)

    [sent] = server.requests[0].body["tools"]
    assert sent["function"]["parameters"] == {"type": "object", "properties": {}}
    [item] = responses_body(compat(server), context, StreamOptions())["tools"]
    assert item["parameters"] == {"type": "object", "properties": {}}
    assert now.input_schema == schema  # the tool's own schema is left as it is


def test_deepseek_thinking_gets_reasoning_content_on_every_assistant_message() -> None:
    """continuedev/continue#11285, openai/openai-agents-python#2155: DeepSeek in thinking
    mode refuses an assistant message without `reasoning_content` ("Missing
    `reasoning_content` field in the assistant message at message index 2"). One written
    by another model (a handoff, a fallback, a seeded transcript) has none of its own."""
    from yiemagent.ai.providers.openai_completions import build_request_body

    deepseek = Model(
        id="deepseek-reasoner",
        provider="deepseek",
        api="openai-completions",
        base_url="https://api.deepseek.com/v1",
    )
    history: list[Any] = [
        UserMessage("go"),
        AssistantMessage(
            [TextContent("checking"), ToolCall("c1", "f", {})],
            stop_reason="toolUse",
            api="openai-completions",
            provider="openai",
            model="gpt-4o",
        ),
        ToolResultMessage("c1", "f", [TextContent("r")]),
        AssistantMessage(
            [ThinkingContent("hmm", signature="reasoning_content"), ToolCall("c2", "f", {})],
            stop_reason="toolUse",
            api="openai-completions",
            provider="deepseek",
            model="deepseek-reasoner",
        ),
        ToolResultMessage("c2", "f", [TextContent("r")]),
    ]
    sent = build_request_body(deepseek, Context("", history), StreamOptions())["messages"]
    assistants = [m for m in sent if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in assistants] == ["", "hmm"]
    other = Model(id="gpt-4o", provider="openai", api="openai-completions")
    sent = build_request_body(other, Context("", history), StreamOptions())["messages"]
    assert all("reasoning_content" not in m for m in sent)


async def test_kimi_gets_reasoning_content_on_its_tool_call_messages(server: ReplayServer) -> None:
    """continuedev/continue#11600, mastra-ai/mastra#12592: Kimi K2.5 thinks by default and
    then refuses a tool-call message without `reasoning_content` ("thinking is enabled but
    reasoning_content is missing in assistant tool call message at index 2"): one it wrote
    without thinking, or one another model wrote, has none."""
    kimi = Model(
        id="kimi-k2.5", provider="moonshot", api="openai-completions", base_url=server.url + "/v1"
    )
    server.enqueue(sse_reply(openai_chunks(call(0, "c1", "f", "{}"), finish_reason="tool_calls")))
    stream = stream_openai_completions(
        kimi, Context("", [UserMessage("go")]), StreamOptions(api_key=KEY)
    )
    unthinking = await stream.result()
    assert unthinking.tool_calls and not any(
        isinstance(b, ThinkingContent) for b in unthinking.content
    )
    history: list[Any] = [
        UserMessage("go"),
        unthinking,
        ToolResultMessage("c1", "f", [TextContent("r")]),
        AssistantMessage(
            [ToolCall("c2", "f", {})], stop_reason="toolUse", provider="openai", model="gpt-4o"
        ),
        ToolResultMessage("c2", "f", [TextContent("r")]),
        AssistantMessage(
            [ThinkingContent("hmm", signature="reasoning_content"), ToolCall("c3", "f", {})],
            stop_reason="toolUse",
            api="openai-completions",
            provider="moonshot",
            model="kimi-k2.5",
        ),
        ToolResultMessage("c3", "f", [TextContent("r")]),
    ]
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    stream = stream_openai_completions(kimi, Context("", history), StreamOptions(api_key=KEY))
    assert (await stream.result()).stop_reason == "stop"
    sent = [m for m in server.requests[1].body["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in sent] == ["", "", "hmm"]


async def test_gemini_thought_signatures_go_back_with_their_calls(server: ReplayServer) -> None:
    """AstrBotDevs/AstrBot#9217, NousResearch/hermes-agent#15054: Gemini 3 over its
    OpenAI-compatible API sends a call's `extra_content.google.thought_signature` and
    refuses the next request without it ("Function call is missing a thought_signature in
    functionCall parts"); another model never gets it."""
    signed = call(0, "a", "f", '{"x": 1}')
    signed["tool_calls"][0]["extra_content"] = {"google": {"thought_signature": "c2lnbmVk"}}
    gemini = compat(server)
    message = await run(server, openai_chunks(signed, finish_reason="tool_calls"))
    assert message.tool_calls[0].thought_signature == "c2lnbmVk"

    history = [UserMessage("go"), message, ToolResultMessage("a", "f", [TextContent("r")])]
    other_model = Model(
        id="other", provider="vllm", api="openai-completions", base_url=server.url + "/v1"
    )
    for model in (gemini, other_model):
        server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
        stream = stream_openai_completions(model, Context("", history), StreamOptions(api_key=KEY))
        assert (await stream.result()).stop_reason == "stop"
    same, other = (request.body["messages"][1]["tool_calls"][0] for request in server.requests[1:])
    assert same["extra_content"] == {"google": {"thought_signature": "c2lnbmVk"}}
    assert "extra_content" not in other


async def test_openrouter_reasoning_details_go_back_with_their_calls(
    server: ReplayServer,
) -> None:
    """microsoft/agent-framework#2947, LibreChat-AI/agents#37: through OpenRouter, Gemini 3's
    thought signature comes as an encrypted `reasoning_details` entry naming its call, and
    the next request is refused without it ("Gemini models require OpenRouter reasoning
    details to be preserved in each request"); another model never gets it."""
    detail = {
        "type": "reasoning.encrypted",
        "data": "c2lnbmVk",
        "id": "a",
        "format": "google-gemini-v1",
        "index": 0,
    }
    events = openai_chunks(
        {
            "reasoning": "Let me look.",
            "reasoning_details": [
                {**detail, "type": "reasoning.text", "text": "Let me look.", "data": None}
            ],
        },
        call(0, "a", "f", '{"x": 1}'),
        {"reasoning_details": [detail]},
        finish_reason="tool_calls",
    )
    gemini = compat(server)
    message = await run(server, events)
    assert calls_of(message) == [("a", "f", {"x": 1})]

    history = [UserMessage("go"), message, ToolResultMessage("a", "f", [TextContent("r")])]
    other_model = Model(
        id="other", provider="vllm", api="openai-completions", base_url=server.url + "/v1"
    )
    for model in (gemini, other_model):
        server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
        stream = stream_openai_completions(model, Context("", history), StreamOptions(api_key=KEY))
        assert (await stream.result()).stop_reason == "stop"
    same, other = (request.body["messages"][1] for request in server.requests[1:])
    assert same["reasoning_details"] == [detail]
    assert "extra_content" not in same["tool_calls"][0]
    assert "reasoning_details" not in other


def test_kimis_own_tool_call_ids_go_back_as_they_came() -> None:
    """MoonshotAI/kimi-code#2503, exo-explore/exo#2281: Kimi K2 reads its own calls' ids
    (`functions.<name>:<n>`) back from the history; rewritten to `functions_get_weather_0`,
    the model no longer recognises its call and breaks the next one. OpenAI itself still
    gets ids of its own alphabet."""
    from yiemagent.ai.providers.openai_completions import build_request_body

    native = "functions.get_weather:0"
    history: list[Any] = [
        UserMessage("go"),
        AssistantMessage([ToolCall(native, "get_weather", {})], stop_reason="toolUse"),
        ToolResultMessage(native, "get_weather", [TextContent("r")]),
    ]

    def ids(model: Model) -> list[str]:
        sent = build_request_body(model, Context("", history), StreamOptions())["messages"]
        return [sent[1]["tool_calls"][0]["id"], sent[2]["tool_call_id"]]

    kimi = Model(
        id="kimi-k2", provider="moonshot", api="openai-completions",
        base_url="https://api.moonshot.ai/v1",
    )  # fmt: skip
    assert ids(kimi) == [native, native]
    openai = Model(id="gpt-4o", provider="openai", api="openai-completions")
    assert ids(openai) == ["functions_get_weather_0"] * 2


async def test_a_whole_completion_in_answer_to_a_stream_request_is_the_answer(
    server: ReplayServer,
) -> None:
    """BaseIntelligence/bounty-challenge #17821 (a server ignoring `stream: true` and
    answering with one JSON `chat.completion`): the SDK found no events in it, and the
    answer was lost as "the stream ended without a finish reason (cut off?)". The whole
    completion is read as the one chunk it stands for: text, tool calls, finish, usage."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}  # fmt: skip
    message = {"role": "assistant", "content": "Checking.", "tool_calls": [call]}
    body = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}  # fmt: skip
    server.enqueue(json_reply(200, body))
    stream = stream_openai_completions(
        compat(server), Context("", [UserMessage("weather?")]), StreamOptions(api_key=KEY)
    )
    answer = await stream.result()
    assert answer.stop_reason == "toolUse", answer.error_message
    assert answer.text == "Checking."
    assert calls_of(answer) == [("call_1", "get_weather", {"city": "Oslo"})]
    assert (answer.usage.input, answer.usage.output) == (12, 7)
    assert len(server.requests) == 1


async def test_events_sent_under_a_json_content_type_are_still_events(
    server: ReplayServer,
) -> None:
    """The other side of reading a whole JSON answer: a server that labels its event stream
    `application/json` is read as the stream it is."""
    events = openai_chunks({"role": "assistant", "content": "still streamed"})
    body = "".join(f"{event}\n\n" for event in events).encode()
    server.enqueue(Reply(headers={"content-type": "application/json"}, body=body))
    stream = stream_openai_completions(
        compat(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    answer = await stream.result()
    assert (answer.stop_reason, answer.text) == ("stop", "still streamed")


async def test_a_first_chunk_without_choices_is_skipped_not_the_end(server: ReplayServer) -> None:
    """meilisearch #6477: Azure OpenAI opens its stream with a chunk whose `choices` is empty
    (the prompt's content-filter results); a reader that took it for the end lost the
    whole answer. The answer after it is read whole, its last piece beside the finish."""
    answer = await run(
        server,
        [
            chunk([], prompt_filter_results=[{"prompt_index": 0, "content_filter_results": {}}]),
            chunk([{"index": 0, "delta": {"role": "assistant", "content": "Hello "}}]),
            chunk([{"index": 0, "delta": {"content": "there."}, "finish_reason": "stop"}]),
            "data: [DONE]",
        ],
    )
    assert (answer.stop_reason, answer.text) == ("stop", "Hello there.")
