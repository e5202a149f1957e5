"""`judge(rubric)` without a model grades with the embedded model (DESIGN §19): the
verdict comes from the embedded provider (its runtime scripted here, so no weights load),
asked for the verdict schema with its reason's length bound (which constrained decoding
keeps), and the check passes or fails as it says, with its reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.ai._local_kit import FakeRuntime, _calls
from tests.evals._agents import make_agent
from yiemagent.ai.providers.local import provider
from yiemagent.evals import Case, judge, run_eval

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("passed", [True, False])
async def test_a_judge_without_a_model_asks_the_embedded_one(
    passed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdict = {"reason": "it names Paris" if passed else "no city named", "passed": passed}
    runtime = FakeRuntime([_calls(("final_result", verdict))])  # its reply form

    async def get_runtime(spec: Any) -> FakeRuntime:
        return runtime

    monkeypatch.setattr(provider, "get_runtime", get_runtime)
    case = Case(
        "capital",
        "Capital of France?",
        [judge("The answer names Paris.")],
        metadata={"script": "say", "text": "Paris."},
    )

    report = await run_eval([case], make_agent)

    [check] = report.cases[0].checks
    assert (check.name, check.passed) == ("judge('The answer names Paris.')", passed)
    assert check.reason == f"judge: {verdict['reason']}"
    [request] = runtime.requests
    assert "<answer>\nParis.\n</answer>" in request["messages"][-1]["content"]
    schema = json.dumps(request["response_format"])  # the verdict, its reason kept short
    assert '"final_result"' in schema and '"maxLength": 200' in schema
