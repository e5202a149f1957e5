"""DESIGN §8 / R-4.4: a tool call whose argument JSON is malformed is answered with a clear
error and the tool does not run on a parsed fragment."""

from __future__ import annotations

from typing import Any

from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    ToolResultMessage,
    UserMessage,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_empty_arguments_call,
    faux_malformed_tool_call,
)


def _recording_tool(calls: list[dict[str, Any]]) -> AgentTool:
    def execute(
        tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: Any
    ) -> str:
        calls.append(args)
        return "ran"

    return AgentTool(
        name="read",
        label="Read",
        description="Read a path.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
        },
        execute=execute,
    )


async def _run(message: Any, calls: list[dict[str, Any]]) -> list[ToolResultMessage]:
    fm = FauxModel([message, "done"])
    context = AgentContext(tools=[_recording_tool(calls)])
    messages = await run_agent_loop(
        [UserMessage("go")],
        context,
        AgentLoopConfig(model=fm.model),
        lambda event: None,
        stream_fn=fm.stream_fn,
    )
    return [m for m in messages if isinstance(m, ToolResultMessage)]


async def test_malformed_json_is_an_error_result_and_the_tool_does_not_run() -> None:
    calls: list[dict[str, Any]] = []
    results = await _run(
        faux_malformed_tool_call("read", '{"path": "a.txt", "limit": 5 oops'), calls
    )
    assert calls == []
    assert len(results) == 1 and results[0].is_error
    text = results[0].content[0].text  # type: ignore[union-attr]
    assert "not valid JSON" in text
    assert "oops" in text  # the raw text is echoed so the model can correct itself


async def test_empty_argument_text_is_treated_as_an_empty_object() -> None:
    calls: list[dict[str, Any]] = []
    results = await _run(faux_empty_arguments_call("read"), calls)
    assert calls == []  # "path" is required: a validation error, not a JSON error
    assert results[0].is_error
    assert "path" in results[0].content[0].text  # type: ignore[union-attr]
    assert "not valid JSON" not in results[0].content[0].text  # type: ignore[union-attr]


async def test_well_formed_call_runs() -> None:
    from yiemagent.ai.providers.faux import faux_message, faux_tool_call

    calls: list[dict[str, Any]] = []
    message = faux_message(faux_tool_call("read", {"path": "a.txt", "limit": "5"}))
    results = await _run(message, calls)
    assert calls == [{"path": "a.txt", "limit": 5}]
    assert not results[0].is_error
