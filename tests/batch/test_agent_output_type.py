"""A task whose Agent has an output type (DESIGN §14, §16): the result's `output` is the
validated value, JSON-ready, and its `text` the value as JSON when the model answered
through the output tool (it wrote no text); a task's `output_schema` checks that value."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from tests.batch._kit import result_lines, write_tasks
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.batch import BatchTask, run_batch


class Weather(BaseModel):
    city: str
    temp: float


def typed_agent(task: BatchTask) -> Agent:
    """Answers through its output tool with the task's metadata `answer`."""
    call = faux_tool_call("final_result", task.metadata["answer"])
    fm = FauxModel([faux_message(call)])
    return Agent(model=fm.model, stream_fn=fm.stream_fn, output_type=Weather)


def test_the_results_output_is_the_agents_validated_output(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"temp": {"maximum": 0}}}
    tasks = [
        {"id": "plain", "prompt": "p", "metadata": {"answer": {"city": "Oslo", "temp": 3.5}}},
        {
            "id": "checked",
            "prompt": "p",
            "output_schema": schema,
            "metadata": {"answer": {"city": "Oslo", "temp": 3.5}},
        },
    ]
    out = tmp_path / "r.jsonl"
    run_batch(write_tasks(tmp_path / "t.jsonl", tasks), typed_agent, results=out, retries=0)
    lines = {line["id"]: line for line in result_lines(out)}

    plain = lines["plain"]
    assert plain["status"] == "ok"
    assert plain["output"] == {"city": "Oslo", "temp": 3.5}
    assert json.loads(plain["text"]) == {"city": "Oslo", "temp": 3.5}

    checked = lines["checked"]  # the task's schema is checked on the agent's value
    assert checked["status"] == "error" and checked["error_kind"] == "output_invalid"
    assert "temp" in checked["error"]
