"""A model call's span counts the prompt tokens written to the provider's cache.

The chat span gave `gen_ai.usage.cache_read.input_tokens` but not the tokens a call wrote
to the cache, which Anthropic bills at 1.25 times (2 times for an hour's cache) the input
price: in a trace, a call that wrote a long prompt to the cache looked as cheap as one that
did not (pydantic/pydantic-ai#5013 added both attributes of the GenAI conventions). The
span now carries `gen_ai.usage.cache_creation.input_tokens` when the call wrote any."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text
from yiemagent.types import Usage

pytestmark = pytest.mark.timeout(60)


async def test_the_chat_span_counts_cache_writes_apart_and_in_the_input() -> None:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    wrote = Usage(input=20, output=5, cache_read=0, cache_write=3000)
    read = Usage(input=20, output=5, cache_read=3000, cache_write=0)
    fm = FauxModel(
        [faux_message(faux_text("one"), usage=wrote), faux_message(faux_text("two"), usage=read)]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tracer_provider=provider)
    await agent.prompt("first")
    await agent.prompt("second")
    provider.shutdown()

    chats = sorted(
        (s for s in memory.get_finished_spans() if s.name.startswith("chat ")),
        key=lambda s: s.start_time or 0,
    )
    first, second = (dict(span.attributes or {}) for span in chats)
    assert first["gen_ai.usage.cache_creation.input_tokens"] == 3000
    assert first["gen_ai.usage.input_tokens"] == 3020  # the writes are prompt tokens too
    assert "gen_ai.usage.cache_read.input_tokens" not in first
    assert second["gen_ai.usage.cache_read.input_tokens"] == 3000
    assert "gen_ai.usage.cache_creation.input_tokens" not in second  # none written
