"""What a summary request shows of each folded message follows the summarizer's window
(DESIGN §15 "Compaction").

Every message was cut to its first 1,200 characters before the summarizer saw it, whatever
its window: a hosted summarizer with room for a whole tool result summarised its first
lines, and what the result established further on (a total, an exit status, the error
after a traceback) was gone from the conversation, as the judge's cut answers were in
langchain-ai/deepagents#4404. Now a summarizer other than the embedded model reads up to
as many characters as its window has tokens; the embedded model keeps 1,200. A longer
message keeps its start and its end, with a line saying how many characters were left
out. Driven through `Compactor` on a faux model whose summaries record each request."""

from __future__ import annotations

import asyncio
import dataclasses
import re

from hypothesis import given, settings, strategies as st

from yiemagent.ai.providers.faux import FauxModel, faux_message
from yiemagent.compaction import Compactor
from yiemagent.types import (
    AgentMessage,
    AssistantMessage,
    Context,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    text_of,
)

LEFT_OUT = re.compile(r"\n\[… ([\d,]+) characters left out …\]\n")


def summarizer(window: int, api: str = "faux") -> tuple[Compactor, list[str]]:
    """A compactor for a model of `window` tokens on `api`, and the summary requests it
    sends (each answered with a short summary)."""
    requests: list[str] = []

    def summarise(context: Context) -> AssistantMessage:
        requests.append(text_of(context.messages[-1].content))  # type: ignore[union-attr]
        return faux_message("SUMMARY: the user ran commands.")

    fm = FauxModel([summarise] * 50, model_id="summarizer")
    model = dataclasses.replace(fm.model, context_window=window, api=api)
    return Compactor(model, stream_fn=fm.stream_fn), requests


def conversation(results: list[str], turns: int = 12, turn_chars: int = 400) -> list[AgentMessage]:
    """A `run` call for each of `results` and its result, then `turns` short turns that
    push the results out of what stays verbatim."""
    messages: list[AgentMessage] = []
    for n, result in enumerate(results):
        call = ToolCall(f"call_{n}", "run", {"command": f"step {n}"})
        messages.append(UserMessage(f"run step {n}"))
        messages.append(AssistantMessage(content=[call], stop_reason="toolUse"))
        messages.append(ToolResultMessage(f"call_{n}", "run", [TextContent(result)]))
    for n in range(turns):
        messages.append(UserMessage(f"question {n}: " + "w" * turn_chars))
        messages.append(AssistantMessage(content=[TextContent(f"answer {n}: " + "b" * turn_chars)]))
    return messages


def log(lines: int, outcome: str) -> str:
    """A build log of `lines` numbered lines, then its outcome."""
    return "\n".join(f"line {n:05d} compiled ok" for n in range(lines)) + f"\n{outcome}"


async def test_a_hosted_summarizer_reads_a_long_tool_result_whole() -> None:
    compactor, requests = summarizer(window=16_000)
    result = log(400, "BUILD FAILED: 3 tests failed in test_parser.py")  # ~10,000 chars
    await compactor(conversation([result], turns=40, turn_chars=700), None)
    assert compactor.compactions == 1
    asked = "\n".join(requests)
    assert "line 00399 compiled ok BUILD FAILED: 3 tests failed in test_parser.py" in asked
    assert "line 00200 compiled ok" in asked  # the middle too
    assert not LEFT_OUT.search(asked)


async def test_a_result_longer_than_the_bound_keeps_its_start_and_its_end() -> None:
    compactor, requests = summarizer(window=16_000)
    result = log(2_000, "EXIT STATUS 2")  # ~46,000 characters: over 16,000
    await compactor(conversation([result], turns=40, turn_chars=700), None)
    asked = "\n".join(requests)
    assert "line 00000 compiled ok" in asked and asked.count("EXIT STATUS 2") == 1
    (left_out,) = LEFT_OUT.findall(asked)
    flat = " ".join(result.split())
    assert int(left_out.replace(",", "")) == len(flat) - 16_000


async def test_the_embedded_model_keeps_its_small_bound() -> None:
    compactor, requests = summarizer(window=16_000, api="local")
    result = log(400, "BUILD FAILED: 3 tests failed in test_parser.py")
    await compactor(conversation([result], turns=40, turn_chars=700), None)
    asked = "\n".join(requests)
    flat = " ".join(result.split())
    (left_out,) = LEFT_OUT.findall(asked)
    assert int(left_out.replace(",", "")) == len(flat) - 1_200
    assert "line 00000 compiled ok" in asked and "BUILD FAILED" in asked  # start and end
    assert "line 00200 compiled ok" not in asked


@settings(max_examples=25, deadline=None)
@given(
    size=st.integers(min_value=1, max_value=6_000),
    window=st.sampled_from([1_000, 2_000, 4_000]),
)
def test_every_result_shows_its_start_and_its_end_and_counts_what_it_left_out(
    size: int, window: int
) -> None:
    """Whatever the result's length and the window: its first and last characters reach
    the summarizer, and the characters shown plus those said to be left out add up to the
    result's (on one line)."""
    result = "A" + "x" * max(size - 2, 0) + "Z" if size > 1 else "A"
    compactor, requests = summarizer(window=window)
    asyncio.run(compactor(conversation([result], turns=10, turn_chars=window // 4), None))
    asked = "\n".join(requests)
    line = next(x for x in asked.split("Tool run result: ")[1:])
    found = LEFT_OUT.search(line)
    bound = max(1_200, window)
    if size <= bound:
        assert line.startswith(result) and found is None
    else:
        assert found is not None
        shown = line[: found.start()] + line[found.end() :].split("\n", 1)[0]
        assert shown.startswith("A") and shown.endswith("Z")
        assert len(shown) + int(found.group(1).replace(",", "")) == size
