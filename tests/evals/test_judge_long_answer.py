"""What a judge reads of a long answer.

The judge was shown the answer's first 6,000 characters and "…", whatever its model: a
hosted judge with room for the whole answer graded a part of it, and an answer whose
conclusion is at its end failed for what the judge could not see
(langchain-ai/deepagents#4404: rubric grading on truncated transcripts gave false
negatives). A hosted judge now reads as much as half its context window holds, and an
answer cut for any judge keeps its end, with a line saying how much was left out."""

from __future__ import annotations

import dataclasses

import pytest

from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.evals import Case, CheckResult, EvalRun, judge

pytestmark = pytest.mark.timeout(60)

CONCLUSION = "In conclusion, the capital of France is Paris."


def long_answer(chars: int) -> str:
    """An answer of about `chars` characters whose last sentence is the one that counts."""
    filler = "France has many old cities, rivers and regions worth a visit. "
    return filler * (chars // len(filler)) + CONCLUSION


def grader(context_window: int | None = None) -> FauxModel:
    verdict = {"reason": "It names Paris.", "passed": True}
    fm = FauxModel([faux_message(faux_tool_call("final_result", verdict))])
    if context_window is not None:
        fm.model = dataclasses.replace(fm.model, context_window=context_window)
    return fm


def asked(fm: FauxModel) -> str:
    """The text of the judge's one request."""
    [context] = fm.contexts
    return context.messages[0].content[0].text  # type: ignore[union-attr]


async def test_a_hosted_judge_reads_a_long_answer_whole() -> None:
    answer = long_answer(20_000)
    fm = grader()  # a 128,000-token context window
    case = Case("capital", "Capital of France?", [judge("Ends naming Paris.", model=fm.model)])
    result = await case.checks[0](EvalRun(case, 0, "ok", answer))  # type: ignore[misc]
    assert result == CheckResult(True, "judge: It names Paris.")
    assert f"<answer>\n{answer}\n</answer>" in asked(fm)


@pytest.mark.parametrize("window", [4_000, 16_000])
async def test_an_answer_cut_for_its_judge_keeps_its_end(window: int) -> None:
    answer = long_answer(50_000)
    fm = grader(window)
    case = Case("capital", "Capital of France?", [judge("Ends naming Paris.", model=fm.model)])
    await case.checks[0](EvalRun(case, 0, "ok", answer))  # type: ignore[misc]
    text = asked(fm)
    shown = text[text.index("<answer>\n") + len("<answer>\n") : text.rindex("\n</answer>")]
    head, note, tail = shown.split("\n")
    assert answer.startswith(head) and answer.endswith(tail) and tail.endswith(CONCLUSION)
    left_out = len(answer) - len(head) - len(tail)
    assert note == f"[… {left_out:,} characters of the answer left out …]"
    assert len(head) + len(tail) <= max(6_000, window // 2)
