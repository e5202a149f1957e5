"""`@tool` as llama_index checks its FunctionTool (llama-index-core tests/tools/test_base.py):
the schema a function gives, the descriptions its docstring gives in each style, bound
arguments, parameters the framework passes itself, and returned blocks, each run through
an Agent on the faux provider."""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

import pytest

from yiemagent import (
    AbortSignal,
    Agent,
    AgentTool,
    AgentToolResult,
    ImageContent,
    TextContent,
    ToolResultMessage,
    tool,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="


async def run_once(made: AgentTool, args: dict[str, Any]) -> ToolResultMessage:
    fm = FauxModel([faux_message(faux_tool_call(made.name, args)), "ok"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[made])
    await agent.prompt("go")
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    return result


def result_text(result: ToolResultMessage) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def sphinx_style(a: int, b: str | None = None) -> str:
    """A test tool function.

    :param a: an integer value
    :param b: an optional string
    :return: a string output
    """
    return f"{a}-{b}"


def javadoc_style(foo: int, bar: str) -> str:
    """Test tool.

    @param foo value for foo
    @param bar value for bar
    @return result string
    """
    return f"{foo}-{bar}"


def epydoc_style(foo: int, bar: str) -> str:
    """Test tool.

    @param foo: value for foo
    @type foo: int
    @param bar: value for bar
        that goes on
    @return: result string
    """
    return f"{foo}-{bar}"


def google_style(a: int, b: str) -> str:
    """Test tool.

    Args:
        a (int): integer input
        b (str): string input
        unknown: should be ignored

    Returns:
        str: output string
    """
    return f"{a}-{b}"


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        # test_fn_schema_docstring_descriptions
        (sphinx_style, {"a": "an integer value", "b": "an optional string"}),
        # test_docstring_param_extraction_javadoc_style: `@param foo value`
        (javadoc_style, {"foo": "value for foo", "bar": "value for bar"}),
        (epydoc_style, {"foo": "value for foo", "bar": "value for bar that goes on"}),
        # test_docstring_param_extraction_google_style, test_docstring_ignores_unknown_params
        (google_style, {"a": "integer input", "b": "string input"}),
    ],
    ids=["sphinx", "javadoc", "epydoc", "google"],
)
async def test_each_docstring_style_describes_the_parameters(
    function: Any, expected: dict[str, str]
) -> None:
    made = tool(function)
    properties = made.input_schema["properties"]
    assert {name: p.get("description") for name, p in properties.items()} == expected
    assert made.description.strip() in ("Test tool.", "A test tool function.")  # fields out
    first, second = list(expected)
    result = await run_once(made, {first: 1, second: "x"})
    assert result_text(result) == "1-x"


async def test_a_bound_argument_is_left_out_of_the_schema_and_given() -> None:
    # test_function_tool_partial_params(_schema)
    def test_function(x: int, y: int) -> str:
        """Show both."""
        return f"x: {x}, y: {y}"

    made = tool(functools.partial(test_function, y=2), name="test_function")
    assert list(made.input_schema["properties"]) == ["x"]
    assert made.input_schema["properties"]["x"]["type"] == "integer"
    assert result_text(await run_once(made, {"x": 1})) == "x: 1, y: 2"


async def test_an_untyped_lambda_takes_any_value() -> None:
    # test_function_tool: a lambda gives a property with no type
    made = tool(lambda x: str(x), name="foo", description="bar")
    assert (made.name, made.description) == ("foo", "bar")
    assert made.input_schema["properties"] == {"x": {}}
    assert result_text(await run_once(made, {"x": 1})) == "1"


async def test_a_plain_and_an_async_function_give_one_schema_and_run_alike() -> None:
    # test_function_tool_async / _async_defaults
    def tmp_function(x: int) -> str:
        return str(x)

    async def async_tmp_function(x: int) -> str:
        await asyncio.sleep(0)
        return "async_" + str(x)

    plain, asynchronous = tool(tmp_function), tool(async_tmp_function)
    assert plain.input_schema == asynchronous.input_schema
    assert plain.input_schema["properties"]["x"]["type"] == "integer"
    assert result_text(await run_once(plain, {"x": 2})) == "2"
    assert result_text(await run_once(asynchronous, {"x": 2})) == "async_2"


async def test_parameters_the_framework_passes_are_not_asked_of_the_model() -> None:
    # test_function_tool_ctx_param / _self_param: the run's own values are given, not asked
    class Holder:
        @tool
        def lookup(self, x: int, signal: AbortSignal, tool_call_id: str) -> str:
            """Look up x."""
            return json.dumps([x, signal.aborted, tool_call_id.startswith("")])

    made = Holder().lookup
    assert list(made.input_schema["properties"]) == ["x"]
    assert result_text(await run_once(made, {"x": 4})) == "[4, false, true]"


@pytest.mark.parametrize(
    ("returned", "blocks"),
    [
        # test_function_tool_output_blocks and _output_single_block
        ([TextContent("Hello"), ImageContent(PNG, "image/png")], ["text", "image"]),
        (TextContent("Hello"), ["text"]),
    ],
    ids=["two-blocks", "one-block"],
)
async def test_returned_blocks_are_the_result_s_content(returned: Any, blocks: list[str]) -> None:
    def test_function() -> Any:
        """Give blocks."""
        return returned

    result = await run_once(tool(test_function), {})
    assert [b.type for b in result.content] == blocks
    assert result_text(result) == "Hello" and not result.is_error


async def test_a_generator_s_items_are_the_result_and_progress_is_on_update() -> None:
    # llama_index test_streaming_tool_results takes each yield but the last as a
    # preliminary result; here the items are the result (docs/tools.md) and progress is
    # what the tool sends through `on_update`, each an update event before the end
    def streaming_tool_sync() -> Any:
        """Report progress."""
        yield {"status": "loading", "is_preliminary": True}
        yield {"status": "done", "is_preliminary": False}

    def reporting(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        on_update(AgentToolResult.text("loading"))
        return "done"

    result = await run_once(tool(streaming_tool_sync), {})
    assert json.loads(result_text(result)) == [
        {"status": "loading", "is_preliminary": True},
        {"status": "done", "is_preliminary": False},
    ]

    fm = FauxModel([faux_message(faux_tool_call("reporting", {})), "ok"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[AgentTool("reporting", "r", "d", {"type": "object"}, reporting)],
    )
    kinds: list[str] = []
    agent.subscribe(lambda e, s: kinds.append(e.type) if "tool_execution" in e.type else None)
    await agent.prompt("go")
    assert kinds == ["tool_execution_start", "tool_execution_update", "tool_execution_end"]
