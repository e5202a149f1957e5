"""The faux provider replays scripted responses through the provider event protocol
(DESIGN §7): event order, chunking, always-dict tool arguments, aborts, delays,
the exhausted queue, scripted errors, usage, and the fault presets."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from yiemagent import AbortSignal, AssistantMessage, Cost, Usage, UserMessage
from yiemagent.ai import AssistantMessageEvent, Context, StreamOptions, complete, stream
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_duplicate_id_calls,
    faux_empty_arguments_call,
    faux_error_mid_stream,
    faux_malformed_tool_call,
    faux_message,
    faux_stall,
    faux_text,
    faux_text_then_tool_call,
    faux_thinking,
    faux_tool_call,
    faux_truncated_tool_call,
)


async def collect(
    fm: FauxModel, context: Context | None = None, options: StreamOptions | None = None
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    s = fm.stream_fn(fm.model, context or Context(), options)
    events = [event async for event in s]
    return events, await s.result()


async def test_text_answer_streams_start_text_deltas_end_done() -> None:
    fm = FauxModel(["hello world"], chunk_size=4)
    events, message = await collect(fm)
    assert [e.type for e in events] == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert [getattr(e, "delta", None) for e in events[2:5]] == ["hell", "o wo", "rld"]
    assert message.text == "hello world"
    assert message.stop_reason == "stop"
    assert (message.api, message.provider, message.model) == ("faux", "faux", fm.model.id)
    assert events[-1].type == "done" and events[-1].message is message


async def test_tool_call_arguments_stream_as_json_chunks_and_are_always_a_dict() -> None:
    """Seed 002 §3: each toolcall_delta's partial holds the arguments parsed so far (a dict)."""
    arguments = {"path": "/tmp/some/file.txt", "count": 12, "flags": ["a", "b"]}
    call = faux_tool_call("read", arguments, id="call_1")
    fm = FauxModel([faux_message(call)], chunk_size=3, delay_s=0.001)
    s = fm.stream_fn(fm.model, Context(), None)
    seen: list[dict[str, Any]] = []
    fragments: list[str] = []
    async for event in s:
        if event.type == "toolcall_delta":
            block = event.partial.content[event.content_index]
            assert isinstance(block.arguments, dict)
            seen.append(dict(block.arguments))
            fragments.append(event.delta)
    message = await s.result()
    assert len(fragments) > 5 and all(len(f) <= 3 for f in fragments)
    assert seen[0] == {} and seen[-1] == arguments
    assert any(0 < len(args) < 3 for args in seen)  # partial states were visible
    (final,) = message.tool_calls
    assert final.id == "call_1" and final.name == "read" and final.arguments == arguments
    assert final.partial_json is None
    assert message.stop_reason == "toolUse"


async def test_thinking_text_and_tool_call_blocks_in_order() -> None:
    msg = faux_message(
        faux_thinking("let me think", signature="sig"), "answer", faux_tool_call("t", {"a": 1})
    )
    events, message = await collect(FauxModel([msg], chunk_size=100))
    assert [e.type for e in events] == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    thinking = message.content[0]
    assert thinking.type == "thinking" and thinking.signature == "sig"
    assert [e.content_index for e in events[1:10]] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


async def test_faux_message_default_stop_reasons_and_unique_ids() -> None:
    assert faux_message("hi").stop_reason == "stop"
    assert faux_message(faux_tool_call("x", {})).stop_reason == "toolUse"
    assert faux_message("hi", stop_reason="length").stop_reason == "length"
    ids = {faux_tool_call("x").id for _ in range(200)}
    assert len(ids) == 200 and all(ids)


async def test_records_contexts_and_counts_calls() -> None:
    fm = FauxModel(["one", "two"])
    c1 = Context(system_prompt="s", messages=[UserMessage("a")])
    c2 = Context(system_prompt="s", messages=[UserMessage("b")])
    assert (await collect(fm, c1))[1].text == "one"
    assert (await collect(fm, c2))[1].text == "two"
    assert fm.contexts == [c1, c2] and fm.contexts[0] is c1
    assert fm.call_count == 2


async def test_no_responses_left_ends_in_error() -> None:
    fm = FauxModel(["only"])
    await collect(fm)
    events, message = await collect(fm)
    assert [e.type for e in events] == ["start", "error"]
    assert message.stop_reason == "error"
    assert message.error_message == "No more faux responses queued"
    assert fm.call_count == 2


async def test_callable_responses_plain_and_async_see_the_context() -> None:
    def plain(context: Context) -> AssistantMessage:
        return faux_message(f"{len(context.messages)} messages")

    async def later(context: Context) -> str:
        await asyncio.sleep(0)
        return f"system: {context.system_prompt}"

    fm = FauxModel([plain, later])
    ctx = Context(system_prompt="sp", messages=[UserMessage("x"), UserMessage("y")])
    assert (await collect(fm, ctx))[1].text == "2 messages"
    assert (await collect(fm, ctx))[1].text == "system: sp"


async def test_callable_that_raises_ends_the_stream_in_error() -> None:
    def broken(context: Context) -> AssistantMessage:
        raise RuntimeError("script bug")

    events, message = await collect(FauxModel([broken]))
    assert events[-1].type == "error"
    assert message.stop_reason == "error" and "script bug" in (message.error_message or "")


async def test_abort_mid_stream_ends_with_aborted_error_event() -> None:
    fm = FauxModel(["a fairly long answer that will be cut"], chunk_size=2, delay_s=0.002)
    signal = AbortSignal()
    s = fm.stream_fn(fm.model, Context(), StreamOptions(signal=signal))
    types = []
    async for event in s:
        types.append(event.type)
        if types.count("text_delta") == 3:
            signal.abort("user stop")
    message = await s.result()
    assert types[-1] == "error" and types.count("text_delta") == 3
    assert message.stop_reason == "aborted"
    assert message.error_message and "user stop" in message.error_message
    assert message.text == "a fair"  # 3 chunks of 2 characters


async def test_abort_during_a_long_delay_is_prompt() -> None:
    """An abort wakes the faux stream out of its sleep at once (not after delay_s)."""
    fm = FauxModel(["slow"], delay_s=5.0)
    signal = AbortSignal()
    s = fm.stream_fn(fm.model, Context(), StreamOptions(signal=signal))
    asyncio.get_running_loop().call_later(0.02, signal.abort)
    started = time.perf_counter()
    message = await s.result()
    assert time.perf_counter() - started < 1.0
    assert message.stop_reason == "aborted" and message.error_message


async def test_already_aborted_signal_streams_nothing() -> None:
    signal = AbortSignal()
    signal.abort()
    events, message = await collect(FauxModel(["text"]), options=StreamOptions(signal=signal))
    assert [e.type for e in events] == ["start", "error"]
    assert message.stop_reason == "aborted"


async def test_delay_is_slept_between_chunks() -> None:
    fm = FauxModel(["abcdefgh"], chunk_size=2, delay_s=0.02)  # 4 chunks
    started = time.perf_counter()
    await collect(fm)
    assert time.perf_counter() - started >= 0.075


async def test_scripted_error_and_usage_are_preserved() -> None:
    usage = Usage(input=10, output=5, total_tokens=15, cost=Cost(total=0.5, input=0.5))
    msg = faux_message("partial", stop_reason="error", usage=usage, error_message="boom")
    events, message = await collect(FauxModel([msg]))
    assert events[-1].type == "error" and events[-1].reason == "error"
    assert message.error_message == "boom" and message.text == "partial"
    assert message.usage == usage and message.usage is not usage
    assert msg.content[0].text == "partial"  # the script itself is untouched


async def test_stream_and_complete_dispatch_to_the_faux_model() -> None:
    fm = FauxModel(["via stream", "via complete"])
    s = stream(fm.model, Context())
    assert (await s.result()).text == "via stream"
    message = await complete(fm.model, Context())
    assert message.text == "via complete"


# ── fault presets ──────────────────────────────────────────


async def test_preset_malformed_json_keeps_raw_text_and_a_dict() -> None:
    _, message = await collect(FauxModel([faux_malformed_tool_call("edit", '{"path": "a", oops')]))
    (call,) = message.tool_calls
    assert call.arguments == {"path": "a"}
    assert call.partial_json == '{"path": "a", oops'
    assert message.stop_reason == "toolUse"


async def test_preset_non_object_arguments_give_empty_dict_and_raw_text() -> None:
    _, message = await collect(FauxModel([faux_malformed_tool_call("edit", "[1, 2]")]))
    (call,) = message.tool_calls
    assert call.arguments == {} and call.partial_json == "[1, 2]"


async def test_preset_empty_arguments() -> None:
    events, message = await collect(FauxModel([faux_empty_arguments_call("ping", id="p")]))
    assert "toolcall_delta" not in [e.type for e in events]
    (call,) = message.tool_calls
    assert call.arguments == {} and call.partial_json is None and call.id == "p"


async def test_preset_duplicate_and_empty_ids() -> None:
    _, message = await collect(FauxModel([faux_duplicate_id_calls("t", [{"n": 1}, {"n": 2}])]))
    assert [c.id for c in message.tool_calls] == ["call_dup", "call_dup"]
    assert [c.arguments for c in message.tool_calls] == [{"n": 1}, {"n": 2}]
    _, message = await collect(FauxModel([faux_duplicate_id_calls("t", [{}, {}], id="")]))
    assert [c.id for c in message.tool_calls] == ["", ""]


async def test_preset_text_then_tool_call() -> None:
    _, message = await collect(FauxModel([faux_text_then_tool_call("I'll look", "ls", {"d": "."})]))
    assert [b.type for b in message.content] == ["text", "toolCall"]
    assert message.stop_reason == "toolUse"


async def test_preset_truncated_call_has_length_stop_and_incomplete_args() -> None:
    msg = faux_truncated_tool_call("write", {"path": "/tmp/x", "body": "hello there"})
    _, message = await collect(FauxModel([msg]))
    (call,) = message.tool_calls
    assert message.stop_reason == "length"
    assert call.partial_json is not None and isinstance(call.arguments, dict)
    assert call.arguments != {"path": "/tmp/x", "body": "hello there"}


async def test_preset_error_mid_stream() -> None:
    events, message = await collect(FauxModel([faux_error_mid_stream("Half an ans", "HTTP 500")]))
    assert "text_delta" in [e.type for e in events] and events[-1].type == "error"
    assert message.stop_reason == "error" and message.error_message == "HTTP 500"
    assert message.text == "Half an ans"


async def test_preset_stall_sends_n_chunks_then_nothing_until_aborted() -> None:
    fm = FauxModel([faux_stall(2, "abcdefghijkl")], chunk_size=2)
    signal = AbortSignal()
    s = fm.stream_fn(fm.model, Context(), StreamOptions(signal=signal))
    deltas = 0

    async def consume() -> None:
        nonlocal deltas
        async for event in s:
            deltas += event.type == "text_delta"

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.05)
    assert deltas == 2 and not s.done
    signal.abort("idle timeout")
    await asyncio.wait_for(task, 1.0)
    message = await s.result()
    assert message.stop_reason == "aborted" and message.text == "abcd"


def test_bad_construction_arguments_raise() -> None:
    with pytest.raises(ValueError, match="chunk_size"):
        FauxModel([], chunk_size=0)
    with pytest.raises(ValueError, match="delay_s"):
        FauxModel([], delay_s=-1)


def test_public_shape() -> None:
    fm = FauxModel([faux_text("x") and "x"])
    assert fm.model.api == "faux" and fm.call_count == 0 and fm.contexts == []


async def test_abort_while_an_async_response_function_is_running() -> None:
    async def slow(context: Context) -> str:
        await asyncio.sleep(5)
        return "too late"

    fm = FauxModel([slow])
    signal = AbortSignal()
    s = fm.stream_fn(fm.model, Context(), StreamOptions(signal=signal))
    asyncio.get_running_loop().call_later(0.02, signal.abort)
    message = await asyncio.wait_for(s.result(), 1.0)
    assert message.stop_reason == "aborted" and message.content == []


async def test_add_queues_more_responses() -> None:
    fm = FauxModel()
    assert fm.pending == 0
    fm.add("a", faux_message("b"))
    assert fm.pending == 2
    assert [(await collect(fm))[1].text for _ in range(2)] == ["a", "b"]
