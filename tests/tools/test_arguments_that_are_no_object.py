"""Tool-call arguments that are JSON but no object (openai-agents'
`test_function_tool_rejects_non_object_json_input`): the call is answered with an error
naming the kind in JSON's words, which the model knows ("a JSON number", not Python's
"int"), the tool never runs, and the model is asked again. The text "null" is no arguments
at all, as an empty argument text is (R-4.4)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from yiemagent import Agent, AgentTool, AgentToolResult, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_malformed_tool_call
from yiemagent.tools import ToolArgumentsError, validate_arguments_against_schema

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"city": {"type": "string"}}}
PYTHON_NAMES = ("int", "float", "str", "bool", "list", "NoneType")


def recording_tool(ran: list[dict[str, Any]]) -> AgentTool:
    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> Any:
        ran.append(args)
        return AgentToolResult(content="weather: fine")

    return AgentTool("weather", "weather", "the weather in a city", SCHEMA, execute)


async def answer_to(raw: str) -> tuple[ToolResultMessage, list[dict[str, Any]], FauxModel]:
    ran: list[dict[str, Any]] = []
    fm = FauxModel([faux_malformed_tool_call("weather", raw), "sorry"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[recording_tool(ran)])
    await agent.prompt("weather?")
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    return result, ran, fm


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("[1, 2]", "a JSON array"),
        ("1", "a JSON number"),
        ("2.5", "a JSON number"),
        ('"Oslo"', "a JSON string"),
        ("true", "a JSON boolean"),
    ],
)
async def test_arguments_of_another_json_kind_are_named_in_json_words(raw: str, kind: str) -> None:
    result, ran, fm = await answer_to(raw)

    assert ran == [] and result.is_error
    assert f"- root: arguments must be a JSON object, got {kind}\n" in result.content[0].text
    assert result.content[0].text.endswith(f"Received: {json.dumps(raw)}")
    assert fm.call_count == 2  # the error went back to the model, which answered


async def test_the_text_null_is_no_arguments() -> None:
    result, ran, _ = await answer_to("null")

    assert ran == [{}] and not result.is_error


@given(
    st.one_of(
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(st.characters(categories=["L"]), min_size=1, max_size=12).filter(
            lambda s: s != "null"  # the text "null" is no arguments
        ),
        st.booleans(),
        st.lists(st.integers(), max_size=3),
    )
)
def test_no_kind_of_json_value_is_named_by_a_python_type(value: object) -> None:
    # as JSON text (what a provider leaves) and as the value itself (an llm_call's dict)
    for arguments in (json.dumps(value), value):
        with pytest.raises(ToolArgumentsError) as info:
            validate_arguments_against_schema(SCHEMA, arguments, tool_name="weather")
        problem = str(info.value).splitlines()[1]
        if problem.startswith("- root: arguments must be a JSON object"):
            assert problem.split("got ")[1].split()[-1] not in PYTHON_NAMES
