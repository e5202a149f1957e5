"""`Compactor` on the real embedded model (DESIGN §15): a 60-turn conversation keeps
answering, the model writing the summaries. The window is set small (512 tokens) so that
compaction happens several times while each turn stays short (about 1 s a turn on an idle
2-core machine). Slow: marked `local_model` and `slow`."""

from __future__ import annotations

import os
import time

import pytest

from yiemagent import Agent
from yiemagent.ai.models import get_model
from yiemagent.compaction import CompactionInfo, Compactor, estimate_tokens
from yiemagent.types import text_of

pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(3600)]

TURNS = int(os.environ.get("YIEM_TEST_COMPACTION_TURNS", "60"))
"""60; the variable only shortens a manual check."""


async def test_sixty_turns_on_the_embedded_model_keep_answering() -> None:
    model = get_model("local/qwen2.5-coder-0.5b")
    infos: list[CompactionInfo] = []
    compactor = Compactor(
        model,
        context_window=512,
        keep_recent_tokens=120,
        summary_max_tokens=64,
        on_compact=infos.append,
    )
    seen: list[int] = []

    async def transform(messages: list, signal: object) -> list:  # type: ignore[type-arg]
        view = await compactor(messages, signal)  # type: ignore[arg-type]
        seen.append(estimate_tokens(view))
        return view

    agent = Agent("Answer with one short sentence.", model, transform_context=transform)
    started = time.perf_counter()
    right = 0
    for n in range(TURNS):
        reply = await agent.prompt(f"Turn {n}: what is {n} + 1? Reply with the number.")
        assert reply.stop_reason == "stop", (n, reply.error_message)
        answer = text_of(reply.content)
        assert answer.strip(), n
        right += str(n + 1) in answer
    elapsed = time.perf_counter() - started
    assert len(infos) >= 2, infos
    assert sum(i.summarised_by_model for i in infos) >= 2
    assert max(seen) <= compactor.threshold  # never near the window
    assert right >= TURNS * 0.7, right  # it keeps answering, and mostly right
    user_turns = sum(1 for m in agent.state.messages if m.role == "user")
    assert user_turns == TURNS  # the transcript keeps every turn
    print(f"{TURNS} turns in {elapsed:.0f} s, {len(infos)} compactions, {right} right")
