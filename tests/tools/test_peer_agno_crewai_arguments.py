"""Argument text as agno (tests/unit/utils/test_functions.py) and crewAI
(tests/tools/test_tool_usage.py, test_validate_tool_input_*) check theirs, through an Agent
on the faux provider: what the model wrote reaches the tool as it meant it, or the model
reads what was wrong. Ours differs by choice where agno turns the strings "None" and "True"
into None and True for any parameter, and where crewAI reads JSON5 (keys without quotes):
docs/tools.md, "Argument validation"."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from yiemagent import Agent, AssistantMessage, ToolCall, ToolResultMessage, tool
from yiemagent.ai.builder import complete_arguments
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_malformed_tool_call,
    faux_message,
    faux_tool_call,
)
from yiemagent.types import text_of

received: list[dict[str, Any]] = []


@tool
def record(key: str, flag: bool = False, number: int = 0, items: list[int] | None = None) -> str:
    """Record what the tool was given.

    Args:
        key: any text.
        flag: a yes or no.
        number: a whole number.
        items: whole numbers.
    """
    given_args = {"key": key, "flag": flag, "number": number, "items": items}
    received.append(given_args)
    return json.dumps(given_args)


async def run_call(call: ToolCall | AssistantMessage) -> tuple[bool, str, list[dict[str, Any]]]:
    """(is_error, result text, what the tool got) for one call then the answer "done"."""
    received.clear()
    fm = FauxModel([call if isinstance(call, AssistantMessage) else faux_message(call), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[record])
    reply = await agent.prompt("go")
    assert text_of(reply.content) == "done"  # the model always gets its turn back
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    return result.is_error, text_of(result.content), list(received)


@pytest.mark.parametrize(
    "raw",
    [
        '{"key": "value", "number": 42, "flag": true,}',  # crewAI ..._with_trailing_commas
        '{"key": "value", "items": [1, 2, 3,], "flag": true}',  # ..._invalid_json_repairable
        '{"key": "value", "items": [1, 2, 3,],\n "flag": true ,\n}',
    ],
)
async def test_a_trailing_comma_is_read_as_the_object_it_ends(raw: str) -> None:
    is_error, text, got = await run_call(faux_malformed_tool_call("record", raw))
    assert not is_error, text
    expected = json.loads(raw.replace(",]", "]").replace(",\n}", "}").replace(",}", "}"))
    assert got == [{"number": 0, "items": None, **expected}]


async def test_a_comma_inside_a_string_is_the_string_s_own() -> None:
    is_error, _, got = await run_call(
        faux_malformed_tool_call("record", '{"key": "a,} b,]", "flag": true,}')
    )
    assert not is_error and got[0]["key"] == "a,} b,]" and got[0]["flag"] is True


@given(
    st.dictionaries(
        st.text(max_size=5),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda inner: (
                st.lists(inner, min_size=1, max_size=3)
                | st.dictionaries(st.text(max_size=4), inner, min_size=1, max_size=3)
            ),
            max_leaves=6,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_object_with_trailing_commas_reads_as_itself(value: dict[str, Any]) -> None:
    # a comma before every closer of a non-empty container, strings left as they are
    def written(node: Any) -> str:
        if isinstance(node, dict) and node:
            pairs = [f"{json.dumps(k)}: {written(v)}" for k, v in node.items()]
            return "{" + ", ".join(pairs) + ",}"
        if isinstance(node, list) and node:
            return "[" + ", ".join(written(v) for v in node) + ",]"
        return json.dumps(node)

    call = ToolCall("c1", "record", {})
    complete_arguments(call, written(value))
    assert call.partial_json is None and call.arguments == value


CREWAI_COMPLEX = """
    {
        "key": "Alice",
        "items": [
            1,
            2,
        ],
        "flag": true,
    }
    """  # crewAI test_validate_tool_input_complex_structure's shape: commas at two levels


async def test_commas_before_closers_at_every_level_of_a_written_out_object() -> None:
    is_error, text, got = await run_call(faux_malformed_tool_call("record", CREWAI_COMPLEX))
    assert not is_error, text
    assert got == [{"key": "Alice", "items": [1, 2], "flag": True, "number": 0}]


@pytest.mark.parametrize(
    "code",
    ["def hello():\n    print('Hello, world!')", "line one\n\tindented\r\nlast", "\n"],
)
async def test_line_breaks_written_as_is_in_a_string_are_the_string_s(code: str) -> None:
    # crewAI test_validate_tool_input_code_content, the way models write code in a call:
    # the line breaks as they are, not as \n
    raw = '{"key": "' + code.replace('"', '\\"') + '"}'
    assert "\n" in raw  # a real line break inside the JSON string: not valid JSON as is
    is_error, text, got = await run_call(faux_malformed_tool_call("record", raw))
    assert not is_error, text
    assert got[0]["key"] == code


async def test_a_large_argument_object_arrives_whole() -> None:
    # crewAI test_validate_tool_input_large_json_content: 1000 items
    items = list(range(1000))
    is_error, text, got = await run_call(faux_tool_call("record", {"key": "k", "items": items}))
    assert not is_error, text
    assert got[0]["items"] == items


@given(
    st.dictionaries(
        st.text(alphabet="abxyz", max_size=5),
        # no letter n, t or r: each escape in the JSON text below is a control character's
        st.text(alphabet=st.sampled_from('ab\n\t\r "\\'), max_size=8),
        min_size=1,
        max_size=4,
    )
)
def test_any_object_whose_strings_break_lines_as_written_reads_as_itself(
    value: dict[str, str],
) -> None:
    written = json.dumps(value)
    for escape, raw in (("\\n", "\n"), ("\\t", "\t"), ("\\r", "\r")):
        written = written.replace(escape, raw)
    call = ToolCall("c1", "record", {})
    complete_arguments(call, written)
    assert call.partial_json is None and call.arguments == value


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # crewAI ..._booleans_and_none, ..._python_dict, ..._single_quotes
        ('{"key": "k", "flag": True, "items": None}', {"key": "k", "flag": True}),
        ("{'key': 'value', 'number': 42, 'flag': True}", {"key": "value", "number": 42}),
        # crewAI ..._with_special_characters, ..._with_escaped_quotes
        ('{"key": "Hello, world! \\u263a", "flag": True}', {"key": "Hello, world! \u263a"}),
        ('{"key": "a \\"quoted\\" word"}', {"key": 'a "quoted" word'}),
    ],
)
async def test_python_literals_and_escapes_reach_the_tool_as_meant(
    raw: str, expected: dict[str, Any]
) -> None:
    is_error, text, got = await run_call(faux_malformed_tool_call("record", raw))
    assert not is_error, text
    assert {k: got[0][k] for k in expected} == expected


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        # crewAI test_validate_tool_input_invalid_input: one clear message for each
        ("Just a string", "arguments are not valid JSON"),
        ("['list', 'of', 'values']", "arguments are not valid JSON"),
        ("12345", "arguments must be a JSON object, got a JSON number"),
        ("[]", "arguments must be a JSON object, got a JSON array"),  # agno reads [] as none
        ("{key: 'value', number: 42}", "arguments are not valid JSON"),  # JSON5: a choice
    ],
)
async def test_text_that_is_no_object_is_an_error_the_model_reads(raw: str, problem: str) -> None:
    is_error, text, got = await run_call(faux_malformed_tool_call("record", raw))
    assert is_error and got == []
    assert text.startswith('Invalid arguments for tool "record":')
    assert problem in text and raw in text  # what was wrong, and what was sent


async def test_no_argument_text_is_no_arguments() -> None:
    # agno test_get_function_call_empty_arguments / crewAI ..._none_input: {} then the schema
    is_error, text, got = await run_call(faux_malformed_tool_call("record", ""))
    assert is_error and got == []
    assert "'key' is a required property" in text


@pytest.mark.parametrize(
    "value",
    ["\n  return value\n", "  \t  ", "\n \n", "  test  ", "None", "True", "x = True; y = None;"],
)
async def test_a_string_argument_is_passed_exactly_as_written(value: str) -> None:
    # agno test_get_function_call_preserves_*_whitespace; agno turns "None" and "True"
    # into None and True even for a string parameter, ours only where the schema asks
    is_error, text, got = await run_call(faux_tool_call("record", {"key": value}))
    assert not is_error, text
    assert got[0]["key"] == value


@pytest.mark.parametrize(
    ("sent", "flag"),
    [(" true ", True), ("FALSE", False), ("  False  ", False), ("true", True)],
)
async def test_a_boolean_written_as_text_is_the_boolean(sent: str, flag: bool) -> None:
    # agno test_get_function_call_coercion_with_surrounding_whitespace
    is_error, text, got = await run_call(faux_tool_call("record", {"key": "k", "flag": sent}))
    assert not is_error, text
    assert got[0]["flag"] is flag


async def test_a_missing_required_argument_is_named_and_the_tool_does_not_run() -> None:
    # crewAI test_schema_validation_catches_missing_args_on_native_path
    is_error, text, got = await run_call(faux_tool_call("record", {"number": 3}))
    assert is_error and got == []
    assert "'key' is a required property" in text and '"number": 3' in text
