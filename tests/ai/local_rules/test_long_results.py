"""`long_results`: the model reads a long tool result as its excerpt for the request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, strategies as st

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import READ_FILE, answer, conversation, notes, run
from yiemagent.ai.providers.local.excerpt import GAP, HEAD_LINES, LONG_RESULT, excerpt
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY
from yiemagent.types.messages import (
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
)

FILLER = [
    f"Chapter {n} covers bed {n} of the garden planner, watering and soil, at length."
    for n in range(60)
]
GUIDE = "\n".join(
    [
        "[![Build](https://example.org/badge.svg)](https://example.org/ci)",
        "Tidepool",
        "========",
        "A planner for small gardens.",
        *FILLER[:30],
        "The name Tidepool comes from the founder's first garden, by the sea.",
        *FILLER[30:],
        "Install it with: pip install tidepool",
        "Questions go to the mailing list.",
    ]
)
ASK_NAME = "Read guide.md and tell me the name of the project."


def _results_turn(request: dict[str, Any]) -> str:
    # The user turn that hands the round's results back, as the runtime got it.
    return next(
        m["content"]
        for m in reversed(request["messages"])
        if m["role"] == "user" and "<tool_response>" in m["content"]
    )


async def test_the_model_reads_the_lines_about_the_request(
    fake: Callable[..., FakeRuntime],
) -> None:
    assert len(GUIDE) > LONG_RESULT
    messages = conversation(ASK_NAME, ("read_file", {"path": "guide.md"}, GUIDE))
    runtime = fake([answer("The project is Tidepool.")])
    message = await run(messages, [READ_FILE])
    shown = _results_turn(runtime.requests[-1])
    assert "Tidepool\nA planner for small gardens." in shown  # the opening lines
    assert "The name Tidepool comes from" in shown  # the line about the request
    assert "Chapter 45 covers" not in shown and GAP in shown and "badge.svg" not in shown
    assert [n["action"] for n in notes(message, "long_results")] == ["shortened"]
    result = messages[2]
    assert isinstance(result, ToolResultMessage) and result.content[0].text == GUIDE  # type: ignore[union-attr]


async def test_without_the_rule_or_with_a_short_result_the_model_reads_it_whole(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation(ASK_NAME, ("read_file", {"path": "guide.md"}, GUIDE))
    runtime = fake([answer("Tidepool.")])
    message = await run(messages, [READ_FILE], DEFAULT_POLICY.without("long_results"))
    assert GUIDE in _results_turn(runtime.requests[-1]) and not notes(message, "long_results")
    short = "\n".join(GUIDE.splitlines()[:20])
    messages = conversation(ASK_NAME, ("read_file", {"path": "guide.md"}, short))
    runtime = fake([answer("Tidepool.")])
    message = await run(messages, [READ_FILE])
    assert short in _results_turn(runtime.requests[-1]) and not notes(message, "long_results")


async def test_an_earlier_result_stays_shortened_for_its_own_request(
    fake: Callable[..., FakeRuntime],
) -> None:
    # The prompt's earlier turns do not change from one reply to the next (its cached
    # prefix is reused): the first read is shortened for the first question, not the last.
    first = conversation(ASK_NAME, ("read_file", {"path": "guide.md"}, GUIDE))
    runtime = fake([answer("Tidepool.")])
    await run(first, [READ_FILE])
    shown_then = _results_turn(runtime.requests[-1])
    reply = AssistantMessage(content=[TextContent("Tidepool.")], stop_reason="stop")
    later = [*first, reply, UserMessage("And how do I install it?")]
    runtime = fake([answer("pip install tidepool")])
    message = await run(later, [READ_FILE])
    chat = runtime.requests[-1]["messages"]
    assert any(m["content"] == shown_then for m in chat)
    assert not notes(message, "long_results")  # nothing of the current request was shortened


@given(
    st.lists(
        st.text(alphabet=st.sampled_from("abc xyz.[]<!:|=-#12"), max_size=90),
        min_size=1,
        max_size=120,
    ),
    st.text(alphabet=st.sampled_from("abc xyz 12"), max_size=40),
)
def test_an_excerpt_keeps_lines_of_the_text_in_their_order(lines: list[str], request: str) -> None:
    text = "\n".join(lines)
    short = excerpt(text, request)
    if len(text) <= LONG_RESULT:
        assert short == text
        return
    kept = [line for line in short.split("\n") if line != GAP]
    it = iter(lines)
    assert all(any(line == original for original in it) for line in kept)  # a subsequence
    assert len(kept) >= min(HEAD_LINES, len([x for x in lines if any(c.isalnum() for c in x)]))
    assert "\n".join([GAP, GAP]) not in short
