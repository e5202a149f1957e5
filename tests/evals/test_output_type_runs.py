"""Checks on the runs of an agent with an output type (DESIGN §14, §19): what the model
answered through its output tool is the run's answer, so `equals`, `contains` and
`output_is` see it, as other eval frameworks' checks see a task's output."""

from __future__ import annotations

from typing import Any

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.batch import BatchTask
from yiemagent.evals import Case, Dataset, contains, equals, output_is, run_eval

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
    "required": ["city", "temp"],
}


def typed_agent(task: BatchTask) -> Agent:
    """Answers through its output tool (`metadata["answer"]`), of type `metadata["type"]`."""
    kind: Any = str if task.metadata["type"] == "str" else WEATHER  # one of two output types
    call = faux_tool_call("final_result", task.metadata["answer"])
    fm = FauxModel([faux_message(call)])
    return Agent(model=fm.model, stream_fn=fm.stream_fn, output_type=kind)


async def test_checks_see_the_value_given_through_the_output_tool() -> None:
    dataset = Dataset(
        [
            Case(
                "text",
                "Capital of France?",
                [equals("Paris"), contains("paris"), output_is("Paris")],
                metadata={"type": "str", "answer": {"result": "Paris"}},
            ),
            Case(
                "object",
                "Weather in Oslo?",
                [
                    equals({"city": "Oslo", "temp": 3.5}),
                    contains("Oslo"),
                    output_is({"required": ["temp"], "type": "object"}),
                ],
                metadata={"type": "object", "answer": {"city": "Oslo", "temp": 3.5}},
            ),
            Case(
                "wrong",
                "Capital of Italy?",
                [equals("Rome")],
                metadata={"type": "str", "answer": {"result": "Paris"}},
            ),
        ]
    )

    report = await run_eval(dataset, typed_agent, concurrency=1)

    cases = {case["name"]: case for case in report.to_json()["cases"]}
    for name in ("text", "object"):
        assert cases[name]["passed"], cases[name]["checks"]
    assert not cases["wrong"]["passed"]
    assert "Paris" in cases["wrong"]["checks"][0]["reason"]
