"""The embedded model's grounding guard (DESIGN §11, R-11.2): `ungrounded` lists what a
call holds that the user's messages and the tool results do not back."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, strategies as st

from yiemagent import AgentTool, TextContent, ToolResultMessage, UserMessage
from yiemagent.ai.local.grounding import PREFIX, SHORT_WORD, Grounding, ungrounded, words


def _tool(properties: dict[str, Any], required: list[str]) -> AgentTool:
    return AgentTool(
        name="t",
        label="t",
        description="t",
        input_schema={"type": "object", "properties": properties, "required": required},
        execute=lambda *a: "unused",
    )


TOOL = _tool({"a": {"type": "string"}, "b": {"type": "array"}, "c": {}}, ["a", "b"])


@given(
    st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4),
    st.text(max_size=30),
)
def test_ungrounded_words_are_the_unbacked_lettered_ones(parts: list[str], extra: str) -> None:
    grounding = Grounding.of_text(" ".join(parts))
    assert not ungrounded(TOOL, {"a": " ".join(reversed(parts)), "b": [parts[0], True]}, grounding)
    called = {w.lower() for w in re.findall(r"([^\W_]+)\s*\(", extra)}
    expected = {
        w
        for w in words(extra) - called
        if any(c.isalpha() for c in w) and not grounding.knows_word(w)
    }
    assert ungrounded(TOOL, {"a": extra, "b": []}, grounding) == expected
    assert not ungrounded(TOOL, {"a": "", "b": [], "c": extra}, grounding)  # optional: unchecked
    for word in expected:
        assert len(word) > SHORT_WORD and word not in grounding.words


def test_enum_values_stems_short_codes_numbers_and_function_names_are_backed() -> None:
    tool = _tool(
        {"x": {"type": "string", "enum": ["medium", "large"]}, "e": {}, "n": {"type": "array"}},
        ["x", "e", "n"],
    )
    grounding = Grounding.of_text(
        "What is 15% of 240 in NY, as a medium? The square root of 2? Points of ten players, "
        "a 298K gas, 100 million shares, 12,000 miles, (40.7128, -74.0060)."
    )
    backed = {
        "x": "medium",
        "e": "0.15 * 240 + sqrt(2), ny, point, players",
        "n": [0.15, 240, 2.0, 10, 298, 1e8, 12000, -74.006, 0, 1],
    }
    assert not ungrounded(tool, backed, grounding)
    assert ungrounded(tool, {"x": "medium", "e": "", "n": [240, 1.615]}, grounding) == {"1.615"}
    assert ungrounded(tool, {"x": "large", "e": "path/to/your/file.txt", "n": []}, grounding) == {
        "path",
        "your",
        "file",
    }
    assert len("path") < PREFIX  # short words match only whole


def test_the_grounding_of_a_conversation_holds_user_messages_and_results() -> None:
    messages = [
        UserMessage("city.txt names a city"),
        ToolResultMessage("c1", "read_file", [TextContent("Lisbon")]),
    ]
    grounding = Grounding.of(messages)
    tool = _tool({"place": {"type": "string"}}, ["place"])
    assert not ungrounded(tool, {"place": "Lisbon"}, grounding)
    assert ungrounded(tool, {"place": "Tokyo"}, grounding) == {"tokyo"}
