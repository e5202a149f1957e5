"""The cases pydantic-ai's tests/test_direct.py (model requests without an agent) and
tests/models/test_model_function.py (a model that is a Python function) check, on
`yiemagent.ai.complete` / `stream` and the faux provider's function responses."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from yiemagent import AbortSignal, AgentTool, Context, ProviderError, StreamOptions, UserMessage
from yiemagent.ai import AssistantMessageEventStream, Model, complete, register_api, stream
from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

CAPITAL = AgentTool(
    "get_capital",
    "Capital",
    "The capital of a country",
    {"type": "object", "properties": {"country": {"type": "string"}}, "required": ["country"]},
    lambda *a: "Paris",
)


async def test_complete_answers_one_request_without_an_agent() -> None:
    fm = FauxModel(["Paris"])
    context = Context("be brief", [UserMessage("What is the capital of France?")], [])
    message = await complete(fm.model, context)

    assert (message.text, message.stop_reason, message.model) == ("Paris", "stop", fm.model.id)
    assert fm.contexts[0].system_prompt == "be brief"


async def test_a_direct_request_returns_the_tool_call_without_running_it() -> None:
    ran: list[str] = []
    tool = AgentTool(
        "get_capital", "Capital", "d", CAPITAL.input_schema, lambda *a: ran.append("x") or "x"
    )
    fm = FauxModel([faux_message(faux_tool_call("get_capital", {"country": "France"}))])
    message = await complete(fm.model, Context("", [UserMessage("capital?")], [tool]))

    assert message.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("get_capital", {"country": "France"})
    ]
    assert ran == []
    assert [t.name for t in fm.contexts[0].tools] == ["get_capital"]


async def test_a_stream_gives_start_deltas_and_done_then_the_final_message() -> None:
    fm = FauxModel(["the answer is Paris"], chunk_size=5)
    events = stream(fm.model, Context("", [UserMessage("q")], []))
    types = [event.type async for event in events]
    final = await events.result()

    assert types[0] == "start" and types[-1] == "done"
    assert types.count("text_delta") == 4
    assert final.text == "the answer is Paris"


async def test_the_result_is_there_after_reading_only_part_of_a_stream() -> None:
    fm = FauxModel(["one two three four"], chunk_size=3, delay_s=0.001)
    events = stream(fm.model, Context("", [UserMessage("q")], []))
    async for event in events:
        if event.type == "text_delta":
            assert text_of(event.partial.content) != "one two three four"
            break
    final = await events.result()
    assert final.text == "one two three four"


async def test_an_unknown_api_is_refused_at_the_call_naming_the_fix() -> None:
    model = Model(id="m", provider="p", api="no-such-api")
    with pytest.raises(ProviderError, match="register_api"):
        await complete(model, Context("", [UserMessage("q")], []))


async def test_an_aborted_signal_gives_an_aborted_message_not_an_exception() -> None:
    fm = FauxModel(["never"])
    signal = AbortSignal()
    signal.abort("user stopped")
    message = await complete(
        fm.model, Context("", [UserMessage("q")], []), StreamOptions(signal=signal)
    )
    assert message.stop_reason == "aborted"


async def test_a_registered_function_is_a_model_seeing_messages_tools_and_options() -> None:
    seen: list[tuple[list[str], list[str], float | None]] = []

    def answer(model: Model, context: Context, options: StreamOptions | None) -> Any:
        seen.append(
            (
                [text_of(m.content) for m in context.messages],
                [t.name for t in context.tools],
                options.temperature if options else None,
            )
        )
        events = AssistantMessageEventStream()
        builder = MessageBuilder(model, events)
        builder.start()
        builder.text_delta(f"{len(context.messages)} message(s)")
        builder.done("stop")
        return events

    register_api("peer-function-model", answer)
    model = Model(id="fn", provider="me", api="peer-function-model")
    message = await complete(
        model,
        Context("", [UserMessage("a"), UserMessage("b")], [CAPITAL]),
        StreamOptions(temperature=0.2),
    )
    assert message.text == "2 message(s)"
    assert message.api == "peer-function-model"
    assert seen == [(["a", "b"], ["get_capital"], 0.2)]


async def awaited_text() -> str:
    return "coroutine awaited"


def sync_returning_coroutine(context: Context) -> Any:
    return awaited_text()


class AsyncCallable:
    def __init__(self, text: str) -> None:
        self.text = text

    async def __call__(self, context: Context) -> str:
        return self.text


class SyncCallable:
    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self, context: Context) -> str:
        return self.text


def echo_last(prefix: str, context: Context) -> str:
    return prefix + text_of(context.messages[-1].content)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (sync_returning_coroutine, "coroutine awaited"),
        (AsyncCallable("from an async __call__"), "from an async __call__"),
        (SyncCallable("from a __call__"), "from a __call__"),
        (functools.partial(echo_last, "echo: "), "echo: Hello"),
    ],
)
async def test_every_shape_of_function_response_is_awaited_and_answers(
    response: Any, expected: str
) -> None:
    fm = FauxModel([response])
    message = await complete(fm.model, Context("", [UserMessage("Hello")], []))
    assert (message.text, message.stop_reason) == (expected, "stop")


async def test_a_function_answering_nothing_is_an_empty_answer_not_an_error() -> None:
    fm = FauxModel([lambda context: faux_message()])
    message = await complete(fm.model, Context("", [UserMessage("Hello")], []))
    assert (message.content, message.stop_reason, message.error_message) == ([], "stop", None)
