"""A hosted judge's verdict counts whatever the length of its reason.

The verdict schema bounds the reason to 200 characters so that the embedded model, whose
decoding the schema constrains, cannot run out of output before the verdict. A hosted
model reads the bound as a request it may not keep (reasoning models write long reasons,
pydantic/pydantic-ai#5034): its verdict was refused for the reason's length alone, the
judge was asked twice more, and the check failed "the judge failed" for an answer the
judge had passed, at three times the judge's cost."""

from __future__ import annotations

import pytest

from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.evals import Case, CheckResult, EvalRun, judge

pytestmark = pytest.mark.timeout(60)

LONG_REASON = (
    "The answer names Paris as the capital of France and adds that it lies on the Seine, "
    "which is true; nothing in it is wrong or misleading, and it answers exactly what was "
    "asked, so it meets the rubric in full."
)


@pytest.mark.parametrize("passed", [True, False])
async def test_a_hosted_judges_long_reason_keeps_its_verdict(passed: bool) -> None:
    assert len(LONG_REASON) > 200
    verdict = {"reason": LONG_REASON, "passed": passed}
    grader = FauxModel([faux_message(faux_tool_call("final_result", verdict))] * 3)
    case = Case("capital", "Capital of France?", [judge("Names Paris.", model=grader.model)])

    result = await case.checks[0](EvalRun(case, 0, "ok", "Paris, on the Seine."))  # type: ignore[misc]

    assert result == CheckResult(passed, "judge: " + LONG_REASON)
    assert len(grader.contexts) == 1  # graded once, not asked again for a shorter reason
