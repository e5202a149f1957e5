"""Transcript repair before a provider call (DESIGN R-5.10): one fixture per failure
kind, plus the no-mutation and linear-cost guarantees."""

from __future__ import annotations

import gc
import time
from dataclasses import asdict

from yiemagent import (
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai import Model
from yiemagent.ai.transform import anthropic_tool_call_id, transform_messages

MODEL = Model(id="m1", provider="p1", api="anthropic-messages")


def assistant(*content: object, stop_reason: str = "toolUse", **kw: str) -> AssistantMessage:
    fields = {"api": "anthropic-messages", "provider": "p1", "model": "m1", **kw}
    return AssistantMessage(content=list(content), stop_reason=stop_reason, **fields)  # type: ignore[arg-type]


def call(id: str, name: str = "t") -> ToolCall:
    return ToolCall(id=id, name=name, arguments={"k": id})


def result(id: str, text: str = "ok", name: str = "t") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=id, tool_name=name, content=[TextContent(text)])


def shape(messages: list[Message]) -> list[tuple[str, ...]]:
    """A compact view: role plus ids/texts."""
    out: list[tuple[str, ...]] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            out.append(
                ("assistant", *(b.id if isinstance(b, ToolCall) else b.type for b in m.content))
            )
        elif isinstance(m, ToolResultMessage):
            out.append(("toolResult", m.tool_call_id, m.content[0].text))  # type: ignore[union-attr]
        else:
            out.append(("user", m.content[0].text))  # type: ignore[union-attr]
    return out


def test_clean_transcript_passes_through_as_the_same_objects() -> None:
    messages: list[Message] = [
        UserMessage("hi"),
        assistant(TextContent("let me"), call("a"), call("b")),
        result("a"),
        result("b"),
        assistant(TextContent("done"), stop_reason="stop"),
    ]
    out = transform_messages(messages, MODEL)
    assert out == messages and all(x is y for x, y in zip(out, messages, strict=True))
    assert out is not messages


def test_error_and_aborted_assistant_messages_are_dropped_with_their_results() -> None:
    messages: list[Message] = [
        UserMessage("hi"),
        assistant(TextContent("partial"), call("x"), stop_reason="error", error_message="500"),
        result("x", "error result"),
        assistant(TextContent("cut"), stop_reason="aborted"),
        UserMessage("again"),
    ]
    assert shape(transform_messages(messages, MODEL)) == [("user", "hi"), ("user", "again")]


def test_missing_result_gets_synthetic_error_right_after_its_message() -> None:
    messages: list[Message] = [
        UserMessage("hi"),
        assistant(call("a"), call("b")),
        result("b"),
        UserMessage("next"),
        assistant(call("c")),
    ]
    out = transform_messages(messages, MODEL)
    assert shape(out) == [
        ("user", "hi"),
        ("assistant", "a", "b"),
        ("toolResult", "a", "No result provided"),
        ("toolResult", "b", "ok"),
        ("user", "next"),
        ("assistant", "c"),
        ("toolResult", "c", "No result provided"),
    ]
    synthetic = out[2]
    assert isinstance(synthetic, ToolResultMessage) and synthetic.is_error
    assert synthetic.tool_name == "t"


def test_user_message_between_call_and_result_moves_after_the_results() -> None:
    messages: list[Message] = [assistant(call("a")), UserMessage("steer"), result("a")]
    assert shape(transform_messages(messages, MODEL)) == [
        ("assistant", "a"),
        ("toolResult", "a", "ok"),
        ("user", "steer"),
    ]


def test_orphan_results_are_dropped() -> None:
    messages: list[Message] = [
        UserMessage("hi"),
        result("ghost"),
        assistant(call("a")),
        result("a"),
        result("a", "second answer to the same call"),
        result("other"),
    ]
    assert shape(transform_messages(messages, MODEL)) == [
        ("user", "hi"),
        ("assistant", "a"),
        ("toolResult", "a", "ok"),
    ]


def test_duplicate_ids_become_unique_and_results_follow_in_order() -> None:
    messages: list[Message] = [
        assistant(call("dup"), call("dup")),
        result("dup", "first"),
        result("dup", "second"),
        assistant(call("dup")),  # repeats an id of an earlier message
        result("dup", "third"),
    ]
    out = transform_messages(messages, MODEL)
    first, second, third = (c for m in out if isinstance(m, AssistantMessage) for c in m.tool_calls)
    assert len({first.id, second.id, third.id}) == 3 and first.id == "dup"
    assert shape(out)[1:3] == [
        ("toolResult", first.id, "first"),
        ("toolResult", second.id, "second"),
    ]
    assert shape(out)[4] == ("toolResult", third.id, "third")
    assert second.arguments == {"k": "dup"} and second.name == "t"


def test_empty_ids_get_unique_ids_and_their_results_follow() -> None:
    messages: list[Message] = [assistant(call(""), call("")), result("", "r1"), result("", "r2")]
    out = transform_messages(messages, MODEL)
    ids = [c.id for c in out[0].tool_calls]  # type: ignore[union-attr]
    assert all(ids) and len(set(ids)) == 2
    assert shape(out)[1:] == [("toolResult", ids[0], "r1"), ("toolResult", ids[1], "r2")]


def test_ids_are_normalised_for_the_provider_and_collisions_made_unique() -> None:
    long_id = "call|" + "x" * 100
    messages: list[Message] = [
        assistant(call("a.b"), call("a_b"), call(long_id)),
        result("a.b", "1"),
        result("a_b", "2"),
        result(long_id, "3"),
    ]
    out = transform_messages(messages, MODEL, normalize_tool_call_id=anthropic_tool_call_id)
    ids = [c.id for c in out[0].tool_calls]  # type: ignore[union-attr]
    assert ids[0] == "a_b" and ids[1] != "a_b" and len(set(ids)) == 3
    assert all(anthropic_tool_call_id(i) == i and 0 < len(i) <= 64 for i in ids)
    assert shape(out)[1:] == [
        ("toolResult", ids[0], "1"),
        ("toolResult", ids[1], "2"),
        ("toolResult", ids[2], "3"),
    ]


def test_anthropic_tool_call_id() -> None:
    assert anthropic_tool_call_id("call_ABC-1") == "call_ABC-1"
    assert anthropic_tool_call_id("fc:1/2 3") == "fc_1_2_3"
    assert len(anthropic_tool_call_id("x" * 200)) == 64


def test_thinking_from_another_model_becomes_text_same_model_keeps_signature() -> None:
    mine = assistant(ThinkingContent("plan", signature="sig"), TextContent("a"), stop_reason="stop")
    other = assistant(
        ThinkingContent("their plan", signature="s2"),
        ThinkingContent("secret", redacted=True),
        ThinkingContent("  "),
        TextContent("b"),
        stop_reason="stop",
        model="m2",
    )
    out = transform_messages([mine, UserMessage("?"), other], MODEL)
    assert out[0] is mine and mine.content[0] == ThinkingContent("plan", signature="sig")
    converted = out[2]
    assert isinstance(converted, AssistantMessage) and converted is not other
    assert converted.content == [TextContent("their plan"), TextContent("b")]
    assert (converted.model, converted.stop_reason) == ("m2", "stop")


def test_assistant_message_left_empty_is_dropped() -> None:
    only_foreign_redacted = assistant(
        ThinkingContent("xx", redacted=True), stop_reason="stop", model="m2"
    )
    empty = assistant(stop_reason="stop")
    messages: list[Message] = [UserMessage("a"), only_foreign_redacted, UserMessage("b"), empty]
    assert shape(transform_messages(messages, MODEL)) == [("user", "a"), ("user", "b")]


def test_text_and_tool_calls_of_one_message_stay_together() -> None:
    msg = assistant(TextContent("I will"), ThinkingContent("x"), call("a"), model="other")
    out = transform_messages([msg, result("a")], MODEL)
    assert shape(out) == [("assistant", "text", "text", "a"), ("toolResult", "a", "ok")]


def test_input_is_never_mutated() -> None:
    messages: list[Message] = [
        assistant(ThinkingContent("t", signature="s"), call("dup"), call("dup"), model="m9"),
        result("dup"),
        UserMessage("u"),
        result("zzz"),
    ]
    before = [asdict(m) for m in messages]  # type: ignore[call-overload]
    ids_before = [id(m) for m in messages]
    transform_messages(messages, MODEL, normalize_tool_call_id=lambda i: i.upper())
    assert [asdict(m) for m in messages] == before  # type: ignore[call-overload]
    assert [id(m) for m in messages] == ids_before


def test_cost_is_linear_in_history_length() -> None:
    """No deep copy; 20x the history costs about 20x, not 400x."""

    def history(turns: int) -> list[Message]:
        out: list[Message] = []
        for i in range(turns):
            out += [UserMessage(f"q{i}"), assistant(call(f"c{i}")), result(f"c{i}")]
        return out

    def best(messages: list[Message]) -> float:
        times = []
        gc.disable()  # a collection landing in one timing would swamp it
        try:
            for _ in range(5):
                start = time.process_time()  # CPU time: other processes do not inflate it
                transform_messages(messages, MODEL)
                times.append(time.process_time() - start)
        finally:
            gc.enable()
        return min(times)

    small, large = history(500), history(10_000)
    ratio = best(large) / best(small)
    assert ratio < 160, ratio  # linear is 20, quadratic 400; room for a loaded machine


def test_a_rewritten_message_keeps_every_other_field() -> None:
    """A message copied to change its content or a result's id keeps all its other fields
    (the hand-written copies lost `duration_ms`)."""
    first = assistant(call("dup"), call("dup"), ThinkingContent("hm", signature="s"))
    first.duration_ms = 1234
    other = Model(id="m2", provider="p1", api="anthropic-messages")  # thinking becomes text
    answer = result("dup", "second")
    answer.duration_ms = 56
    answer.added_tool_names = ["x"]
    out = transform_messages([first, result("dup", "first"), answer], other)
    rewritten = out[0]
    assert isinstance(rewritten, AssistantMessage) and rewritten is not first
    assert rewritten.duration_ms == 1234 and rewritten.timestamp == first.timestamp
    second = out[2]
    assert isinstance(second, ToolResultMessage) and second.tool_call_id != "dup"
    assert (second.duration_ms, second.added_tool_names) == (56, ["x"])
