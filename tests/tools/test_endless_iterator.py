"""A tool that returns an endless iterator (DESIGN §8): the call ends in one clear error
result after a bounded read, and the process keeps running. `itertools.count()` is read in
C with the GIL held, so reading all of it froze every thread, the event loop included."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

import pytest

from yiemagent import Agent, AgentToolResult, ToolResultMessage, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.tools.decorator import MAX_RETURNED_ITEMS

from ._kit import text_of

pytestmark = pytest.mark.timeout(120)


async def test_endless_iterators_are_one_clear_error_and_finite_ones_are_read() -> None:
    closed: list[str] = []

    def numbers() -> Iterator[int]:
        try:
            yield from itertools.count()
        finally:
            closed.append("numbers")

    async def ticks() -> AsyncIterator[int]:
        try:
            for n in itertools.count():
                yield n
        finally:
            closed.append("ticks")

    @tool
    def counter() -> object:
        """Count."""
        return itertools.count()

    @tool
    def generated() -> object:
        """Count in Python."""
        return numbers()

    @tool
    async def streamed() -> object:
        """Count asynchronously."""
        return ticks()

    @tool
    def most() -> object:
        """As many items as a tool may return."""
        return iter(range(MAX_RETURNED_ITEMS))

    tools = [counter, generated, streamed, most]
    fm = FauxModel([faux_message(*(faux_tool_call(t.name, {}) for t in tools)), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    await agent.prompt("count")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    texts = [text_of(AgentToolResult(r.content)) for r in results]
    for result, text in zip(results[:3], texts[:3], strict=True):
        assert result.is_error, text
        assert f"the tool returned an iterator of more than {MAX_RETURNED_ITEMS:,} items" in text
    assert sorted(closed) == ["numbers", "ticks"]  # their cleanup ran
    assert not results[3].is_error
    assert texts[3].startswith("[0,1,2,3,"), texts[3][:80]
