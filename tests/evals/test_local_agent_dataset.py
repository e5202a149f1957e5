"""`evals/local_agent.yaml`, the project's own task set for the embedded model (DESIGN §11): it
loads, its files are where its workdir says, and its `time_of` check passes only
an answer that gives the time `get_time` returned."""

from __future__ import annotations

from pathlib import Path

from yiemagent.evals import Case, Dataset, EvalRun, check_name
from yiemagent.types import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

ROOT = Path(__file__).resolve().parents[2]
KINDS = {
    "one tool": 7,
    "two independent calls": 6,
    "two-step chain": 6,
    "file question": 7,
    "chat, no tool": 7,
    "no tool serves": 7,
}


def test_the_dataset_loads_with_its_files() -> None:
    data = Dataset.load(ROOT / "evals" / "local_agent.yaml")
    kinds = [case.metadata["kind"] for case in data.cases]
    assert {kind: kinds.count(kind) for kind in KINDS} == KINDS and len(data) == 40
    assert data.workdir == ROOT / "evals" / "local_agent"
    assert (data.workdir / "secret.txt").read_text() == "The code word is tangerine-42.\n"
    tokyo = next(case for case in data.cases if case.name == "single-time-tokyo")
    assert [check_name(c) for c in tokyo.checks][-1] == "time_of('tokyo')"


def _time_run(case: Case, place: str, result: str, answer: str) -> EvalRun:
    call = ToolCall("c1", "get_time", {"place": place})
    messages: list[AgentMessage] = [
        UserMessage(case.input),
        AssistantMessage([call], stop_reason="toolUse"),
        ToolResultMessage("c1", "get_time", [TextContent(result)]),
        AssistantMessage([TextContent(answer)]),
    ]
    return EvalRun(case, 0, "ok", answer, messages=messages)


def test_time_of_needs_the_time_the_tool_returned() -> None:
    data = Dataset.load(ROOT / "evals" / "local_agent.yaml")
    case = next(case for case in data.cases if case.name == "single-time-tokyo")
    time_of = case.checks[-1]
    result = "21:07 on Thursday 2026-12-03 in Tokyo (Asia/Tokyo, UTC+0900)"
    assert time_of(_time_run(case, "Tokyo", result, "It is 21:07 in Tokyo.")).passed  # type: ignore[union-attr]
    assert time_of(_time_run(case, "Tokyo", result, "It is 9:07 pm in Tokyo.")).passed  # type: ignore[union-attr]
    wrong = time_of(_time_run(case, "Tokyo", result, "It is 14:30 in Tokyo."))
    assert not wrong.passed and wrong.reason == "answer lacks the tokyo time 21:07"  # type: ignore[union-attr]
    other = time_of(_time_run(case, "Paris", result, "It is 21:07."))
    assert not other.passed and other.reason == "no get_time result for tokyo"  # type: ignore[union-attr]
