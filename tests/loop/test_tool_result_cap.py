"""A tool result's text past `max_tool_result_chars` is cut in its middle with a note saying
how much was left out, before the model, the session and the listeners see it; the
`after_tool_call` hook still gets it whole (to save it elsewhere). A huge result neither
goes to the model whole on every later turn nor fills the session store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.agent._kit import faux_agent, make_tool
from yiemagent import (
    AgentLoopConfig,
    AgentToolResult,
    ConfigError,
    TextContent,
    ToolResultMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types.config import DEFAULT_MAX_TOOL_RESULT_CHARS
from yiemagent.types.tools import NOTE_ROOM, cut_tool_result

HUGE = "HEAD " + "x" * 20_000_000 + " TAIL"


def huge_tool() -> Any:
    return make_tool("dump", lambda *_: HUGE)


def sent_results(fm: FauxModel) -> list[str]:
    """The text of each tool result the model was sent, call after call."""
    return [
        "".join(b.text for b in m.content if isinstance(b, TextContent))
        for context in fm.contexts
        for m in context.messages
        if isinstance(m, ToolResultMessage)
    ]


async def test_a_huge_result_is_cut_for_the_model_the_session_and_listeners(
    tmp_path: Path,
) -> None:
    seen_by_hook: list[int] = []
    ended: list[str] = []

    def after(ctx: Any, signal: Any) -> None:
        seen_by_hook.append(sum(len(b.text) for b in ctx.result.content))

    fm = FauxModel([faux_message(faux_tool_call("dump", {}, id="c1")), "done", "again"])
    with SqliteSessionStore(tmp_path / "s.db") as store:
        agent = faux_agent(
            fm,
            tools=[huge_tool()],
            after_tool_call=after,
            session_store=store,
            session_id="s",
            on_event=lambda e: (
                ended.append(e.result.content[0].text) if e.type == "tool_execution_end" else None
            ),
        )
        await agent.prompt("dump it")
        await agent.prompt("and now?")
        stored = [m for m in store.load("s") if isinstance(m, ToolResultMessage)]

    assert seen_by_hook == [len(HUGE)]
    [kept] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    text = kept.content[0].text
    limit = DEFAULT_MAX_TOOL_RESULT_CHARS
    assert limit < len(text) < limit + 200
    assert text.startswith("HEAD x") and text.endswith("x TAIL")
    assert f"[… {len(HUGE) - limit:,} characters of the result left out …]" in text
    assert sent_results(fm) == [text, text]  # both later model calls: the cut text
    assert [m.content[0].text for m in stored] == [text]
    assert ended == [text]


async def test_no_cap_keeps_the_result_whole() -> None:
    fm = FauxModel([faux_message(faux_tool_call("dump", {}, id="c1")), "done"])
    agent = faux_agent(fm, tools=[huge_tool()], max_tool_result_chars=None)
    await agent.prompt("dump it")
    assert sent_results(fm) == [HUGE]


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=3_000), min_size=1, max_size=12),
    limit=st.integers(min_value=1, max_value=2_000),
)
def test_a_result_cut_at_the_cap_is_not_cut_again(sizes: list[int], limit: int) -> None:
    """`add_server` cuts an MCP tool's texts by the same rule, at the same 100,000 characters
    by default: the run's cap then leaves them as they are, one note each, however many
    texts the result has."""
    result = AgentToolResult([TextContent(f"{i}" + "x" * size) for i, size in enumerate(sizes)])
    once = cut_tool_result(result, limit)
    assert cut_tool_result(once, limit) is once


async def test_a_small_cap_counts_every_text_block_and_keeps_images() -> None:
    def execute(*_: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("a" * 600), TextContent("b" * 200)])

    fm = FauxModel([faux_message(faux_tool_call("two", {}, id="c1")), "done"])
    agent = faux_agent(fm, tools=[make_tool("two", execute)], max_tool_result_chars=200)
    await agent.prompt("go")
    [kept] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    first, second = (b.text for b in kept.content)
    assert first.startswith("a" * 100) and "[… 450 characters of the result left out …]" in first
    assert second.startswith("b" * 33) and "[… 150 characters of the result left out …]" in second


@given(
    texts=st.lists(st.text(max_size=600), min_size=1, max_size=5),
    limit=st.integers(min_value=1, max_value=400),
)
def test_cut_results_fit_the_cap_and_keep_both_ends(texts: list[str], limit: int) -> None:
    result = AgentToolResult([TextContent(t) for t in texts], {"k": 1})
    capped = cut_tool_result(result, limit)
    if sum(map(len, texts)) <= limit + NOTE_ROOM:
        assert capped is result
        return
    assert capped.details == {"k": 1} and len(capped.content) == len(texts)
    kept = 0
    for before, after in zip(texts, capped.content, strict=True):
        assert isinstance(after, TextContent)
        if after.text == before:
            kept += len(before)
            continue
        head, _, rest = after.text.partition("\n[… ")
        note, _, tail = rest.partition(" …]\n")
        assert before.startswith(head) and before.endswith(tail)
        assert note.endswith("characters of the result left out")
        kept += len(head) + len(tail)
    assert kept <= limit


def test_a_cap_below_one_is_refused() -> None:
    fm = FauxModel([])
    with pytest.raises(ConfigError, match="max_tool_result_chars"):
        AgentLoopConfig(model=fm.model, max_tool_result_chars=0)
