"""The embedded model serves several sessions at once (DESIGN §18): two sessions' replies are
decoded in llama.cpp's parallel slots at the same time, not one after the other, and each
session's next turn still reads its earlier prompt from its slot's cache. On the
real Qwen2.5-Coder-0.5B; the checks are orderings and token counts, not durations."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from yiemagent import AssistantMessage, UserMessage
from yiemagent.ai import Context, StreamOptions, get_model, stream

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

pytest.importorskip("xllamacpp")
MODEL = get_model("local/qwen2.5-coder-0.5b")


async def _turn(messages: list[Any], deltas: list[float]) -> AssistantMessage:
    """One reply; the time of each text delta goes into `deltas`."""
    s = stream(MODEL, Context("Be brief.", messages), StreamOptions(max_tokens=48))
    async for event in s:
        if event.type == "text_delta":
            deltas.append(time.monotonic())
    reply = await s.result()
    assert reply.stop_reason in ("stop", "length"), reply.error_message
    return reply


def _interleaved(a: list[float], b: list[float]) -> bool:
    """Whether one stream's tokens arrived while the other was still writing."""
    return any(a[0] < t < a[-1] for t in b) or any(b[0] < t < b[-1] for t in a)


@pytest.mark.timeout(900)
async def test_two_sessions_decode_together_and_keep_their_own_cache() -> None:
    from yiemagent.ai.providers.local import load_runtime, local_spec

    runtime = await asyncio.to_thread(load_runtime, local_spec(MODEL.id))
    assert runtime.slots >= 2
    first_a = [UserMessage("Write a short poem about a red fox in the snow.")]
    first_b = [UserMessage("Describe how a steam engine works, step by step.")]
    times: dict[str, list[float]] = {"a1": [], "b1": [], "a2": [], "b2": []}
    a1, b1 = await asyncio.gather(_turn(first_a, times["a1"]), _turn(first_b, times["b1"]))
    assert len(times["a1"]) > 3 and len(times["b1"]) > 3
    assert _interleaved(times["a1"], times["b1"]), "the two replies were decoded one by one"

    # Each session's second turn, both at once: each finds its own first turn in a slot.
    second_a = [*first_a, a1, UserMessage("Now make it rhyme.")]
    second_b = [*first_b, b1, UserMessage("Which step loses the most heat?")]
    a2, b2 = await asyncio.gather(_turn(second_a, times["a2"]), _turn(second_b, times["b2"]))
    for first, second in ((a1, a2), (b1, b2)):
        first_prompt = first.usage.input + first.usage.cache_read
        assert second.usage.cache_read >= first_prompt, (first.usage, second.usage)
