"""The `.text` of a run's answer when its last batch terminated it (R-6.3): the note and
each result's text are paragraphs, not one word run into the next, while the content keeps
its blocks (the note, then each result's text blocks) and a streamed answer's pieces are
still joined as they came."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import AgentToolResult, AssistantMessage, TextContent

from ._kit import faux_agent, make_tool

NOTE = "Tool execution completed."


async def terminated(results: list[str]) -> AssistantMessage:
    """The answer of a run whose one batch calls a tool per text, each ending the run with
    that text as its result."""
    names = [f"t{i}" for i in range(len(results))]
    fm = FauxModel([faux_message(*(faux_tool_call(n, {}) for n in names))])

    def done(text: str) -> Any:
        return lambda *args: AgentToolResult.text(text, terminate=True)

    tools = [make_tool(n, done(text)) for n, text in zip(names, results, strict=True)]
    return await faux_agent(fm, tools=tools).prompt("go")


async def test_the_note_and_each_result_are_paragraphs() -> None:
    # The answer's text read "Tool execution completed.started job 7".
    answer = await terminated(["started job 7", "mailed the team"])
    assert answer.stop_reason == "tool_use_terminated"
    assert answer.text == f"{NOTE}\n\nstarted job 7\n\nmailed the team"
    assert [b.text for b in answer.content] == [NOTE, "started job 7", "mailed the team"]  # type: ignore[union-attr]


@given(st.lists(st.text(min_size=1), min_size=1, max_size=4))
async def test_every_result_text_is_a_paragraph_of_its_own(results: list[str]) -> None:
    answer = await terminated(results)
    assert answer.text == "\n\n".join([NOTE, *results])


async def test_a_streamed_answer_in_pieces_is_still_one_text() -> None:
    fm = FauxModel([faux_message(faux_text("Hel"), faux_text("lo"))])
    answer = await faux_agent(fm).prompt("hi")
    assert len(answer.content) == 2 and answer.text == "Hello"
    pieces = AssistantMessage(content=[TextContent("one "), TextContent("text")])
    assert pieces.text == "one text"
