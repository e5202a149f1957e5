"""Hypothesis: any transcript of the DESIGN §3 message types survives the SQLite store
unchanged, in order, and sessions written interleaved stay apart."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from yiemagent import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Cost,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from yiemagent.sessions import SqliteSessionStore

text = st.text(max_size=30)
ints = st.integers(min_value=0, max_value=2**53)
floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | floats | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(text, json_values, max_size=4)
images = st.builds(ImageContent, st.text("ABCDabcd0123+/=", max_size=12), st.just("image/png"))
usages = st.builds(
    Usage, ints, ints, ints, ints, ints, st.builds(Cost, floats, floats, floats, floats, floats)
)
assistant_blocks = st.one_of(
    st.builds(TextContent, text),
    st.builds(ThinkingContent, text, st.none() | text, st.booleans()),
    st.builds(ToolCall, text, text, json_objects, st.none() | text),
)
messages: st.SearchStrategy[Any] = st.one_of(
    st.builds(UserMessage, st.lists(st.builds(TextContent, text) | images, max_size=3), ints),
    st.builds(
        AssistantMessage,
        st.lists(assistant_blocks, max_size=4),
        text,
        text,
        text,
        usages,
        st.sampled_from(["stop", "length", "toolUse", "error", "aborted"]),
        st.none() | text,
        ints,
    ),
    st.builds(
        ToolResultMessage,
        text,
        text,
        st.lists(st.builds(TextContent, text) | images, max_size=3),
        json_objects,
        st.none() | usages,
        st.none() | st.lists(text, max_size=2),
        st.booleans(),
        ints,
    ),
    st.builds(BashExecutionMessage, text, text, st.none() | st.integers(-255, 255)),
    st.builds(CompactionSummaryMessage, text, ints, ints),
    st.builds(BranchSummaryMessage, text, text, ints),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "ü/ß"]), messages), max_size=12))
def test_any_transcript_round_trips_through_sqlite(
    writes: list[tuple[str, AgentMessage]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.db"
        with SqliteSessionStore(path) as store:
            for session_id, message in writes:
                store.append(session_id, message)
        with SqliteSessionStore(path) as reopened:
            for session_id in {sid for sid, _ in writes}:
                expected = [m for sid, m in writes if sid == session_id]
                assert reopened.load(session_id) == expected
            assert sorted(reopened.list_sessions()) == sorted({sid for sid, _ in writes})
