"""A Claude model built by hand (`Model(...)` without `max_tokens`) thinking adaptively
asks for room to think and still answer: `max_tokens` bounds thinking and text together,
and the type's default, 4096, let a high effort spend it all thinking, the call ending
"length" with no answer. The request grows to the level's thinking budget plus 1024 for
the answer, as the budget form does; a call's own `max_tokens`, a limit the model's maker
chose (even below that room), and a call without thinking are sent as they are. Through the real
`anthropic` SDK to a server on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer
from tests.ai.test_anthropic_adaptive_thinking import request
from yiemagent.ai.providers.anthropic_messages import THINKING_BUDGETS
from yiemagent.types.model import Model

pytestmark = pytest.mark.timeout(120)


def by_hand(server: ReplayServer, **fields: Any) -> Model:
    return Model(
        id="claude-opus-4-7",
        provider="anthropic",
        api="anthropic-messages",
        base_url=server.url,
        reasoning=True,
        **fields,
    )


@pytest.mark.parametrize("level", ["minimal", "low", "medium", "high", "xhigh"])
async def test_adaptive_thinking_gets_room_for_the_level_and_an_answer(
    server: ReplayServer, level: str
) -> None:
    body = await request(server, by_hand(server), reasoning=level)
    assert body["thinking"]["type"] == "adaptive"
    assert body["max_tokens"] == max(4096, THINKING_BUDGETS[level] + 1024)


@pytest.mark.parametrize(
    ("fields", "options", "sent"),
    [
        ({}, {"reasoning": "high", "max_tokens": 2000}, 2000),  # the call's own bound
        ({"max_tokens": 64_000}, {"reasoning": "high"}, 64_000),  # already room
        ({"max_tokens": 8000}, {"reasoning": "high"}, 8000),  # chosen, though small
        ({}, {}, 4096),  # no thinking
    ],
    ids=["call-bound", "model-limit", "chosen-limit", "no-thinking"],
)
async def test_other_bounds_are_sent_as_they_are(
    server: ReplayServer, fields: dict[str, Any], options: dict[str, Any], sent: int
) -> None:
    body = await request(server, by_hand(server, **fields), **options)
    assert body["max_tokens"] == sent
