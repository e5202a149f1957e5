"""`MessageBuilder` grows the partial assistant message and pushes the matching events
(DESIGN §7); its tool-call arguments contract."""

from __future__ import annotations

from yiemagent import AssistantMessage, Usage
from yiemagent.ai import AssistantMessageEventStream, Model, ModelCost
from yiemagent.ai.builder import MessageBuilder

MODEL = Model(
    id="m1",
    provider="p",
    api="openai-completions",
    cost=ModelCost(input=2.0, output=10.0, cache_read=1.0, cache_write=4.0),
)


async def drain(stream: AssistantMessageEventStream) -> list[str]:
    """The event types of an ended stream."""
    assert stream.done
    return [event.type async for event in stream]


async def test_text_thinking_and_tool_call_blocks_open_and_close_in_turn() -> None:
    stream = AssistantMessageEventStream()
    b = MessageBuilder(MODEL, stream)
    b.start()
    b.thinking_delta("hmm", signature="s1")
    b.thinking_delta(" ok", signature="s2")
    b.text_delta("Hel")
    b.text_delta("lo")
    b.tool_call_start("c1", "read")
    b.tool_call_delta('{"pa')
    assert b.message.content[2].arguments == {}
    b.tool_call_delta('th": "/x')
    assert b.message.content[2].arguments == {"path": "/x"}
    b.tool_call_delta('"}')
    final = b.done("toolUse")
    assert await drain(stream) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert stream.done
    thinking, text, call = final.content
    assert thinking.thinking == "hmm ok" and thinking.signature == "s1s2"
    assert text.text == "Hello"
    assert call.arguments == {"path": "/x"} and call.partial_json is None
    assert (final.api, final.provider, final.model) == ("openai-completions", "p", "m1")
    assert final.stop_reason == "toolUse"


def test_invalid_final_json_keeps_raw_text_in_partial_json() -> None:
    b = MessageBuilder(MODEL, AssistantMessageEventStream())
    b.tool_call_start("c1", "x")
    b.tool_call_delta('{"a": 1, "b": ')
    message = b.done("length")
    (call,) = message.tool_calls
    assert call.arguments == {"a": 1} and call.partial_json == '{"a": 1, "b": '


def test_empty_argument_text_means_empty_object() -> None:
    b = MessageBuilder(MODEL, AssistantMessageEventStream())
    b.tool_call_start("c1", "x")
    (call,) = b.done("toolUse").tool_calls
    assert call.arguments == {} and call.partial_json is None


def test_done_computes_cost_in_usd_per_million_tokens() -> None:
    b = MessageBuilder(MODEL, AssistantMessageEventStream())
    b.set_usage(Usage(input=1_000_000, output=500_000, cache_read=2_000_000, cache_write=250_000))
    cost = b.done("stop").usage.cost
    assert (cost.input, cost.output, cost.cache_read, cost.cache_write) == (2.0, 5.0, 2.0, 1.0)
    assert cost.total == 10.0


async def test_fail_closes_open_blocks_and_sets_error_fields() -> None:
    stream = AssistantMessageEventStream()
    b = MessageBuilder(MODEL, stream)
    b.start()
    b.text_delta("partial")
    message = b.fail("aborted", "Request was aborted")
    assert (await drain(stream))[-2:] == ["text_end", "error"]
    assert message.stop_reason == "aborted" and message.error_message == "Request was aborted"
    assert isinstance(message, AssistantMessage) and message.text == "partial"


def test_tool_call_delta_without_open_call_is_a_provider_bug() -> None:
    b = MessageBuilder(MODEL, AssistantMessageEventStream())
    b.text_delta("x")
    try:
        b.tool_call_delta("{}")
    except RuntimeError as exc:
        assert "tool_call_delta" in str(exc)
    else:
        raise AssertionError("expected RuntimeError")


def test_a_new_tool_call_closes_the_previous_one_with_its_own_arguments() -> None:
    """Regression: opening a call used to reset the argument text before closing the previous
    call, which then ended with `{}`."""
    b = MessageBuilder(MODEL, AssistantMessageEventStream())
    b.tool_call_start("c1", "read")
    b.tool_call_delta('{"path": "a"}')
    b.tool_call_start("c2", "read")
    b.tool_call_delta('{"path": "b"}')
    first, second = b.done("toolUse").tool_calls
    assert first.arguments == {"path": "a"} and first.partial_json is None
    assert second.arguments == {"path": "b"}
