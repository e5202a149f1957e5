"""What the property tests of streamed tool calls share (`test_openai_tool_call_property`,
`test_openai_responses_property`, `test_anthropic_tool_call_property`): the arguments
strategy, JSON cut into fragments, the calls' events interleaved as servers send them,
the hypothesis settings, one streamed call run to its message, each block's deltas joined
at its end, and the check that every call kept exactly its own id, name and arguments.
The replay server they share across examples is the `stream_server` fixture (conftest).
No tests live here."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings, strategies as st

from yiemagent.types.messages import AssistantMessage
from yiemagent.types.model import AssistantMessageEvent

T = TypeVar("T")

values = st.one_of(
    st.text(max_size=8),
    st.integers(-1000, 1000),
    st.booleans(),
    st.lists(st.integers(0, 9), max_size=3),
)
"""An argument's value: text, numbers, booleans, small lists."""

arguments = st.dictionaries(st.text("abcxyz_", min_size=1, max_size=5), values, max_size=3)
"""One call's arguments (possibly none)."""


def property_settings(max_examples: int) -> settings:
    """Hypothesis settings for a test that streams from the module's replay server."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


def fragments(draw: st.DrawFn, text: str, *, max_cuts: int = 4) -> list[str]:
    """`text` cut at up to `max_cuts` places, as a server streams it: pieces that join to
    `text`, none empty (a text of one character stays whole)."""
    if len(text) < 2:
        return [text]
    cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=max_cuts)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def interleave(draw: st.DrawFn, queues: Sequence[Sequence[T]]) -> list[T]:
    """One stream order of the calls' events (`queues`: each call's, in its own order): a
    call opens only after the one before it has opened; after that the events of the open
    calls interleave freely."""
    pending = [list(queue) for queue in queues]
    order: list[T] = []
    opened = 0
    while any(pending):
        choices = [i for i in range(len(pending)) if pending[i] and i <= opened]
        pick = draw(st.sampled_from(choices))
        order.append(pending[pick].pop(0))
        opened = max(opened, pick + 1)
    return order


def streamed(call: Callable[[], Awaitable[AssistantMessage]]) -> AssistantMessage:
    """The message of one streamed call (`call()`: the provider's `stream(...).result()`),
    in a fresh event loop, as a hypothesis example needs."""

    async def run() -> AssistantMessage:
        return await call()

    return asyncio.run(run())


def assert_each_call_kept_its_own(
    message: AssistantMessage, calls: Sequence[dict[str, Any]], *, id_prefix: str
) -> None:
    """The message asks for the tools `tool_<i>` with ids `<id_prefix><i>` and exactly the
    arguments `calls[i]`, in order, each parsed whole (no partial JSON left)."""
    assert message.stop_reason == "toolUse", message.error_message
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (f"{id_prefix}{i}", f"tool_{i}", args) for i, args in enumerate(calls)
    ]
    assert all(c.partial_json is None for c in message.tool_calls)


def joined_at_end(events: Iterable[AssistantMessageEvent]) -> tuple[list[str], list[Any]]:
    """Each block's deltas joined at its end, as pi-mono's stream test reads them: the texts
    at their `text_end`, and the calls' arguments (parsed JSON) at their `toolcall_end`,
    each list in the order the blocks ended."""
    joined: dict[int, str] = {}
    texts: list[str] = []
    ended: list[Any] = []
    for event in events:
        if event.type in ("toolcall_start", "text_start"):
            joined[event.content_index] = ""
        elif event.type in ("toolcall_delta", "text_delta"):
            joined[event.content_index] += event.delta
        elif event.type == "toolcall_end":
            ended.append(json.loads(joined[event.content_index]))
        elif event.type == "text_end":
            texts.append(joined[event.content_index])
    return texts, ended
