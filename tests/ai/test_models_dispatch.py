"""`yiemagent.ai.stream`/`complete` dispatch on `model.api` (DESIGN §7): built-in providers
load lazily, `register_api` adds one, an unknown api raises a clear `ProviderError`."""

from __future__ import annotations

import pytest

from yiemagent import ProviderError
from yiemagent.ai import (
    AssistantMessageEventStream,
    Context,
    Model,
    StreamOptions,
    complete,
    register_api,
    stream,
)
from yiemagent.ai.builder import MessageBuilder


async def test_register_api_routes_stream_and_complete() -> None:
    seen: list[tuple[Model, Context, StreamOptions | None]] = []

    def echo(
        model: Model, context: Context, options: StreamOptions | None
    ) -> AssistantMessageEventStream:
        seen.append((model, context, options))
        s = AssistantMessageEventStream()
        b = MessageBuilder(model, s)
        b.start()
        b.text_delta(f"echo {context.system_prompt}")
        b.done("stop")
        return s

    register_api("test-echo", echo)
    model = Model(id="e1", provider="mine", api="test-echo")
    options = StreamOptions(temperature=0.1)
    message = await complete(model, Context(system_prompt="hi"), options)
    assert message.text == "echo hi" and message.model == "e1" and message.provider == "mine"
    assert seen[0][2] is options
    assert (await stream(model, Context(system_prompt="x")).result()).text == "echo x"


def test_unknown_api_raises_with_the_known_ones() -> None:
    with pytest.raises(ProviderError) as info:
        stream(Model(id="x", provider="y", api="no-such-api"), Context())
    text = str(info.value)
    assert "no-such-api" in text and "openai-completions" in text and "faux" in text


async def test_faux_model_without_a_live_faux_model_ends_in_error() -> None:
    message = await complete(Model(id="never-created", provider="faux", api="faux"), Context())
    assert message.stop_reason == "error" and "stream_fn=fm.stream_fn" in (
        message.error_message or ""
    )
