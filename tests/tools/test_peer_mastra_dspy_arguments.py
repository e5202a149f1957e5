"""Tool arguments as mastra, DSPy and semantic-kernel check theirs, through an Agent on
the faux provider.

mastra (packages/core/src/tools/validation.test.ts): what a failed validation says, that
an all-optional tool takes no arguments at all, that fields named like the framework's
own (`context`, `inputData`) reach the tool as written, and a string the schema reads as
a number. DSPy (tests/adapters/test_tool.py, tests/predict/test_react.py): `Tool(fn)` from
functions with pydantic, nested, untyped and defaulted parameters, called with what a
model sends. semantic-kernel (python/tests/unit/functions/
test_kernel_function_decorators.py): `Annotated` descriptions, optional and `None`
defaults, unions, a default that is no JSON. Where ours differs by choice (a `format` is
not checked, `**kwargs` and nameless callables are refused) it is written in
docs/tools.md ("Arguments, as peers check them")."""

from __future__ import annotations

import json
import warnings
from typing import Annotated, Any

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import BaseModel

from yiemagent import Agent, AgentTool, ConfigError, ToolResultMessage, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.tools import validate_arguments_against_schema
from yiemagent.types import ToolCall, text_of

USER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "number", "minimum": 0},
        "username": {"type": "string", "minLength": 3},
        "password": {"type": "string", "pattern": "^(?=.*[A-Za-z])(?=.*\\d)[A-Za-z\\d]{8,}$"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "metadata": {
            "type": "object",
            "properties": {"priority": {"enum": ["low", "medium", "high"]}},
        },
        "email": {"type": "string", "format": "email"},
    },
    "required": ["name", "age"],
}
OPTIONAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"start_time": {"type": "string"}, "limit": {"type": "number"}},
}


def echo_tool(name: str, schema: dict[str, Any], received: list[Any]) -> AgentTool:
    """A tool that records the args it gets and answers them as JSON."""

    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        received.append(args)
        return json.dumps(args)

    return AgentTool(name, name, f"the {name} tool", schema, execute)


async def run_calls(tools: list[AgentTool], *calls: ToolCall) -> list[tuple[bool, str]]:
    """Run one batch of `calls` and a final answer; each result's (is_error, text)."""
    fm = FauxModel([faux_message(*calls), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    await agent.prompt("go")
    sent = fm.contexts[1].messages
    assert all(m in sent for m in agent.state.messages[:-1])  # the model read every result
    return [
        (m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


# ── mastra: validation messages ─────────────────────────────────────────────


async def test_missing_required_fields_are_each_named_and_the_tool_does_not_run() -> None:
    # should validate required fields
    received: list[Any] = []
    [(is_error, text)] = await run_calls(
        [echo_tool("user_registration", USER_SCHEMA, received)],
        faux_tool_call("user_registration", {}),
    )
    assert is_error and received == []
    assert text.startswith('Invalid arguments for tool "user_registration":')  # names the tool
    assert "'name' is a required property" in text
    assert "'age' is a required property" in text
    assert text.endswith("Received: {}")


async def test_wrong_types_are_each_named_with_their_path() -> None:
    # should validate field types
    received: list[Any] = []
    [(is_error, text)] = await run_calls(
        [echo_tool("reg", USER_SCHEMA, received)],
        faux_tool_call("reg", {"name": 5, "age": "not a number"}),
    )
    assert is_error and received == []
    assert "$.name: 5 is not of type 'string'" in text
    assert "$.age: 'not a number' is not of type 'number'" in text


async def test_string_array_enum_and_range_constraints_each_say_what_failed() -> None:
    # should validate string constraints / arrays and objects / "Must be 18 or older"
    received: list[Any] = []
    args = {
        "name": "a",
        "age": -1,
        "username": "ab",
        "password": "weak",
        "tags": [],
        "metadata": {"priority": "urgent"},
    }
    [(is_error, text)] = await run_calls(
        [echo_tool("reg", USER_SCHEMA, received)], faux_tool_call("reg", args)
    )
    assert is_error and received == []
    problems = [line for line in text.splitlines() if line.startswith("- ")]
    assert sorted(p.split(":")[0] for p in problems) == [
        "- $.age",
        "- $.metadata.priority",
        "- $.password",
        "- $.tags",
        "- $.username",
    ]
    assert "-1 is less than the minimum of 0" in text
    assert "'ab' is too short" in text
    assert "[] should be non-empty" in text
    assert "'urgent' is not one of ['low', 'medium', 'high']" in text
    assert f"Received: {json.dumps(args)}" in text  # the model sees what it sent


async def test_valid_arguments_reach_the_tool_unchanged() -> None:
    # should pass validation with valid data
    received: list[Any] = []
    args = {"name": "John Doe", "age": 30, "username": "john", "tags": ["a"]}
    [(is_error, text)] = await run_calls(
        [echo_tool("reg", USER_SCHEMA, received)], faux_tool_call("reg", args)
    )
    assert not is_error
    assert received == [args] and json.loads(text) == args


async def test_a_format_is_an_annotation_the_tool_checks_itself() -> None:
    # mastra's zod .email() refuses "not-an-email"; JSON Schema 2020-12 leaves `format` an
    # annotation unless asked, and so do we (docs/tools.md): the tool's own
    # validate_arguments is where such a check goes.
    received: list[Any] = []
    plain = echo_tool("reg", USER_SCHEMA, received)

    def email_check(args: dict[str, Any]) -> str | None:
        return None if "@" in args.get("email", "@") else "email: not an e-mail address"

    checked = AgentTool(
        "checked", "checked", "checks e-mails", USER_SCHEMA, plain.execute,
        validate_arguments=email_check,
    )  # fmt: skip
    args = {"name": "n", "age": 1, "email": "not-an-email"}
    results = await run_calls(
        [plain, checked], faux_tool_call("reg", args), faux_tool_call("checked", args)
    )
    assert results[0] == (False, json.dumps(args))
    assert results[1][0] and "email: not an e-mail address" in results[1][1]
    assert received == [args]


async def test_a_number_sent_as_a_string_reaches_the_tool_as_that_number() -> None:
    # should use transformed data after validation: mastra's schema turns "25" into 25
    received: list[Any] = []
    [(is_error, _)] = await run_calls(
        [echo_tool("reg", USER_SCHEMA, received)],
        faux_tool_call("reg", {"name": "n", "age": "25"}),
    )
    assert not is_error
    assert received == [{"name": "n", "age": 25}]
    assert type(received[0]["age"]) is int  # as if the model had written 25, not 25.0


@settings(max_examples=200, deadline=None)
@given(
    number=st.one_of(
        st.integers(min_value=-(10**30), max_value=10**30),
        st.floats(allow_nan=False, allow_infinity=False),
    )
)
def test_a_quoted_number_reads_as_the_json_number_it_spells(number: int | float) -> None:
    text = json.dumps(number)
    schema = {"type": "object", "properties": {"n": {"type": "number"}}}
    args = validate_arguments_against_schema(schema, {"n": text}, tool_name="n")
    assert args == {"n": json.loads(text)}
    assert type(args["n"]) is type(json.loads(text))


@pytest.mark.parametrize(
    "arguments",
    [None, {}, {"start_time": None, "limit": None}],
    ids=["no-arguments", "empty-object", "nulls"],
)
async def test_an_all_optional_tool_takes_no_arguments(arguments: dict[str, Any] | None) -> None:
    # should accept undefined / null / empty object input when all parameters are optional
    received: list[Any] = []
    call = faux_tool_call("window", {})
    call.arguments = arguments  # type: ignore[assignment]  # as some models send it
    [(is_error, _)] = await run_calls([echo_tool("window", OPTIONAL_SCHEMA, received)], call)
    assert not is_error
    assert received == [{}]


async def test_partial_arguments_pass_and_a_wrong_type_still_fails() -> None:
    # should still validate when partial args are provided / still reject invalid types
    received: list[Any] = []
    results = await run_calls(
        [echo_tool("window", OPTIONAL_SCHEMA, received)],
        faux_tool_call("window", {"limit": 10}),
        faux_tool_call("window", {"limit": "not-a-number"}),
    )
    assert results[0] == (False, '{"limit": 10}')
    assert results[1][0] and "$.limit: 'not-a-number' is not of type 'number'" in results[1][1]
    assert received == [{"limit": 10}]


async def test_fields_named_like_the_pipelines_own_reach_the_tool_as_written() -> None:
    # should handle schema with context / inputData fields without unwrapping
    schema = {
        "type": "object",
        "properties": {
            "context": {"type": "string"},
            "inputData": {"type": "number"},
            "signal": {"type": "boolean"},
        },
        "required": ["context", "inputData", "signal"],
    }
    received: list[Any] = []
    args = {"context": "ctx", "inputData": 42, "signal": True}
    results = await run_calls(
        [echo_tool("both", schema, received)],
        faux_tool_call("both", args),
        faux_tool_call("both", {"context": 123, "inputData": 1, "signal": False}),
    )
    assert results[0] == (False, json.dumps(args))
    assert results[1][0] and "$.context: 123 is not of type 'string'" in results[1][1]
    assert received == [args]


# ── DSPy: tools from functions ──────────────────────────────────────────────


class DummyModel(BaseModel):
    field1: str = "hello"
    field2: int


def dummy_with_pydantic(model: DummyModel) -> str:
    """A dummy function that accepts a Pydantic model."""
    return f"{type(model).__name__} {model.field1} {model.field2}"


async def test_a_pydantic_parameter_gets_a_model_built_from_the_json() -> None:
    # test_tool_call_parses_args / test_tool_from_function_with_pydantic
    results = await run_calls(
        [tool(dummy_with_pydantic)],
        faux_tool_call("dummy_with_pydantic", {"model": {"field2": 123}}),
        faux_tool_call("dummy_with_pydantic", {"model": {"field1": "x", "field2": "abc"}}),
    )
    assert results[0] == (False, "DummyModel hello 123")  # the default filled in
    assert results[1][0] and "$.model.field2: 'abc' is not of type 'integer'" in results[1][1]


async def test_an_async_tool_with_a_pydantic_parameter() -> None:
    # test_async_tool_with_pydantic
    async def async_dummy(model: DummyModel) -> str:
        """An async dummy function that accepts a Pydantic model."""
        return f"{model.field1} {model.field2}"

    assert await run_calls(
        [tool(async_dummy)], faux_tool_call("async_dummy", {"model": {"field1": "t", "field2": 1}})
    ) == [(False, "t 1")]


async def test_a_nested_list_of_models_is_built_at_every_level() -> None:
    # test_tool_call_parses_nested_list_of_pydantic_model
    def nested(x: list[list[DummyModel]]) -> str:
        """Nested models."""
        assert all(isinstance(m, DummyModel) for row in x for m in row)
        return repr(x)

    assert await run_calls(
        [tool(nested)], faux_tool_call("nested", {"x": [[{"field1": "a", "field2": 1}]]})
    ) == [(False, "[[DummyModel(field1='a', field2=1)]]")]


async def test_a_function_without_type_hints_takes_any_json() -> None:
    # test_tool_calling_without_typehint: foo(a, b) called with 1 and 2 answers 3
    def foo(a, b):  # type: ignore[no-untyped-def]
        """Add two numbers."""
        return a + b

    made = tool(foo)
    assert made.input_schema["properties"] == {"a": {}, "b": {}}
    assert made.input_schema["required"] == ["a", "b"]
    assert await run_calls([made], faux_tool_call("foo", {"a": 1, "b": 2})) == [(False, "3")]


async def test_a_default_is_advertised_used_and_not_required() -> None:
    # test_tool_with_default_args_without_type_hints / ..._excludes_defaulted_args_from_required
    def dummy_function(x: int, y: str = "hello") -> str:
        """A dummy function for testing.

        Args:
            x: An integer parameter
            y: A string parameter
        """
        return f"{y} {x}"

    def untyped(x=100):  # type: ignore[no-untyped-def]
        """Returns x."""
        return x

    made = tool(dummy_function)
    assert made.input_schema["required"] == ["x"]
    assert made.input_schema["properties"]["y"]["default"] == "hello"
    assert made.input_schema["properties"]["x"]["description"] == "An integer parameter"
    assert tool(untyped).input_schema["properties"] == {"x": {"default": 100}}
    assert await run_calls(
        [made, tool(untyped)],
        faux_tool_call("dummy_function", {"x": 42}),
        faux_tool_call("untyped", {}),
        faux_tool_call("dummy_function", {"x": "not an integer"}),
    ) == [
        (False, "hello 42"),
        (False, "100"),
        (
            True,
            'Invalid arguments for tool "dummy_function":\n'
            "- $.x: 'not an integer' is not of type 'integer'\n"
            'Received: {"x": "not an integer"}',
        ),
    ]


def test_var_keyword_parameters_and_nameless_callables_are_refused_clearly() -> None:
    # DSPy's Tool(fn) passes extra arguments to **kwargs and names a callable object after
    # its class; ours refuses both at registration (docs/tools.md): a model's stray keys
    # would reach the function unchecked, and a class name is rarely the tool's name.
    def fn(x: int, **kwargs: Any) -> dict[str, Any]:
        """Keywords."""
        return kwargs

    class Foo:
        def __call__(self, a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

    with pytest.raises(ConfigError, match=r"tool 'fn': parameter 'kwargs' must be an ordinary"):
        tool(fn)
    with pytest.raises(ConfigError, match=r"has no __name__: name it with tool\(obj, name="):
        tool(Foo())
    named = tool(name="add")(Foo())
    assert named.name == "add" and named.description == "Add two numbers."
    assert set(named.input_schema["properties"]) == {"a", "b"}


# ── semantic-kernel: @kernel_function's parameters ──────────────────────────


class InputObject(BaseModel):
    arg1: str
    arg2: int


class EqualityErrorDefault:
    """A default that must be kept, never compared."""

    def __eq__(self, other: object) -> bool:
        raise ValueError("equality should not be called")

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "EqualityErrorDefault()"


async def test_annotated_descriptions_optional_defaults_and_unions() -> None:
    # test_kernel_function_param_annotated / _annotated_optional / _none_default /
    # _input_object_union / _input_object_annotated_optional, called as a model calls them
    def annotated(
        city: Annotated[str, "The city name"],
        unit: Annotated[str | None, "input description"] = "test",
    ) -> str:
        """Annotated."""
        return f"{city} {unit!r}"

    def none_default(input: str = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        """None by default."""
        return repr(input)

    def union(input: InputObject | str) -> str:
        """A model or a text."""
        return repr(input)

    def object_optional(input: Annotated[InputObject | None, "input description"] = None) -> str:
        """An optional model."""
        return repr(input)

    made = tool(annotated)
    assert made.input_schema["properties"]["city"]["description"] == "The city name"
    assert made.input_schema["required"] == ["city"]
    assert await run_calls(
        [made, tool(none_default), tool(union), tool(object_optional)],
        faux_tool_call("annotated", {"city": "Oslo"}),
        faux_tool_call("annotated", {"city": "Oslo", "unit": None}),
        faux_tool_call("none_default", {}),
        faux_tool_call("union", {"input": {"arg1": "a", "arg2": 1}}),
        faux_tool_call("union", {"input": "s"}),
        faux_tool_call("object_optional", {}),
        faux_tool_call("object_optional", {"input": {"arg1": "a", "arg2": "2"}}),
    ) == [
        (False, "Oslo 'test'"),
        (False, "Oslo None"),  # null is a value the type allows: kept
        (False, "None"),
        (False, "InputObject(arg1='a', arg2=1)"),
        (False, "'s'"),
        (False, "None"),
        (False, "InputObject(arg1='a', arg2=2)"),
    ]


async def test_a_default_that_is_no_json_is_passed_and_never_compared() -> None:
    # test_kernel_function_param_default_does_not_call_equality
    default = EqualityErrorDefault()

    def custom_default(input: object = default) -> str:
        """A custom default."""
        return "the default" if input is default else repr(input)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pydantic's "not JSON serializable" stays quiet
        made = tool(custom_default)
    assert "default" not in made.input_schema["properties"]["input"]
    assert await run_calls(
        [made],
        faux_tool_call("custom_default", {}),
        faux_tool_call("custom_default", {"input": 3}),
    ) == [(False, "the default"), (False, "3")]
