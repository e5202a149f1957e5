"""`@tool` and the per-call pipeline as haystack checks its tools
(test/tools/test_from_function.py, test/components/agents/test_tool_calling.py) and as
LangChain checks its own (libs/core/tests/unit_tests/test_tools.py): schemas from
signatures, the values a tool gets, what its result reads as, and a failing call's text.
Each tool runs through an Agent on the faux provider.

Where ours differs it is by choice (docs/tools.md, "Arguments, as peers check them"): a
parameter with no hint takes any JSON (haystack refuses it), `*args` / `**kwargs` and a
callable parameter are refused when the tool is made (LangChain filters the first, haystack
leaves a callable out of the schema), and an empty `description=` means "none given"."""

from __future__ import annotations

import asyncio
import datetime
import enum
import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from yiemagent import (
    AbortSignal,
    AfterToolCallResult,
    Agent,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    ConfigError,
    ImageContent,
    TextContent,
    ToolResultMessage,
    tool,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


async def results_of(
    made: list[AgentTool], calls: list[tuple[str, Any]]
) -> tuple[list[ToolResultMessage], FauxModel]:
    """Run one reply holding `calls` (name, arguments) then an answer; the results, in order,
    and the model (whose contexts show what it read)."""
    reply = faux_message(*(faux_tool_call(name, args) for name, args in calls))
    fm = FauxModel([reply, "ok"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=made)
    await agent.prompt("go")
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)], fm


async def result_of(made: AgentTool, args: Any) -> ToolResultMessage:
    [result], _ = await results_of([made], [(made.name, args)])
    return result


def weather_report(city: str) -> str:
    """Get weather report for a city."""
    return f"Weather report for {city}: 20°C, sunny"


async def test_name_description_and_schema_come_from_the_function() -> None:
    # test_from_function_description_from_docstring
    made = tool(weather_report)
    assert made.name == "weather_report"
    assert made.description == "Get weather report for a city."
    assert made.input_schema == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    assert text_of((await result_of(made, {"city": "Berlin"})).content) == (
        "Weather report for Berlin: 20°C, sunny"
    )


async def test_a_custom_name_and_description_are_what_the_model_reads() -> None:
    # test_from_function_with_custom_name / _custom_description
    made = tool(weather_report, name="custom_name", description="custom description")
    _, fm = await results_of([made], [("custom_name", {"city": "Rome"})])
    [offered] = fm.contexts[0].tools
    assert (offered.name, offered.description) == ("custom_name", "custom description")


def test_an_empty_description_means_none_was_given() -> None:
    # haystack keeps description="" as the tool's; here the docstring's summary stands
    assert tool(weather_report, description="").description == "Get weather report for a city."


async def test_annotated_strings_literals_and_nullable_defaults() -> None:
    # test_from_function_annotated: the same schema, key for key
    def weather(
        city: Annotated[str, "the city for which to get the weather"] = "Munich",
        unit: Annotated[Literal["Celsius", "Fahrenheit"], "the unit for the temperature"] = (
            "Celsius"
        ),
        nullable_param: Annotated[str | None, "a nullable parameter"] = None,
    ) -> str:
        """A simple function to get the current weather for a location."""
        return f"{city} {unit} {nullable_param}"

    made = tool(weather)
    assert made.input_schema == {
        "type": "object",
        "properties": {
            "city": {
                "type": "string",
                "description": "the city for which to get the weather",
                "default": "Munich",
            },
            "unit": {
                "type": "string",
                "enum": ["Celsius", "Fahrenheit"],
                "description": "the unit for the temperature",
                "default": "Celsius",
            },
            "nullable_param": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "a nullable parameter",
                "default": None,
            },
        },
    }
    assert text_of((await result_of(made, {})).content) == "Munich Celsius None"
    refused = await result_of(made, {"unit": "Kelvin"})
    assert refused.is_error and "$.unit" in text_of(refused.content)


def test_a_hint_that_names_nothing_is_refused_naming_the_tool() -> None:
    # test_from_function_schema_generation_error
    def broken(city: invalid) -> str:  # type: ignore[name-defined]  # noqa: F821
        return str(city)

    with pytest.raises(ConfigError, match=r"tool 'broken'.*'invalid' is not defined"):
        tool(broken)


async def test_a_parameter_with_no_hint_takes_any_json() -> None:
    # test_from_function_missing_type_hint: haystack raises; ours accepts any value
    def echo(city):  # type: ignore[no-untyped-def]
        """Echo it."""
        return repr(city)

    made = tool(echo)
    assert made.input_schema["properties"] == {"city": {}}
    assert text_of((await result_of(made, {"city": [1, "a"]})).content) == "[1, 'a']"


def test_a_callable_parameter_is_refused_saying_what_to_use() -> None:
    # test_from_function_with_callable_params_skipped: haystack leaves it out
    def with_callback(query: str, callback: Callable[[str], None] | None = None) -> str:
        """A function with a callable parameter."""
        return query

    with pytest.raises(ConfigError, match="parameter 'callback' has a type with no JSON Schema"):
        tool(with_callback)


async def test_a_parameter_named_properties_is_a_parameter() -> None:
    # test_from_function_with_parameter_named_properties
    def set_properties(
        entity_id: Annotated[str, "the entity to update"],
        properties: Annotated[dict[str, Any], "the properties to set"],
    ) -> str:
        """Set properties on an entity."""
        return f"Set {properties} on {entity_id}"

    made = tool(set_properties)
    assert made.input_schema["required"] == ["entity_id", "properties"]
    assert made.input_schema["properties"]["properties"]["type"] == "object"
    result = await result_of(made, {"entity_id": "e1", "properties": {"x": 1}})
    assert text_of(result.content) == "Set {'x': 1} on e1"


class title(BaseModel):  # pydantic keys `$defs` by the class name
    text: str


class Report(BaseModel):
    heading: title
    body: str


async def test_a_nested_model_named_title_keeps_its_definition() -> None:
    # test_from_function_with_nested_model_named_title: stripping `title` noise must not
    # dangle the `$ref`
    def make_report(report: Report) -> str:
        """Create a report."""
        return f"{type(report.heading).__name__}: {report.heading.text}"

    made = tool(make_report)
    assert "title" in made.input_schema["$defs"]
    args = {"report": {"heading": {"text": "hi"}, "body": "b"}}
    jsonschema.Draft202012Validator(made.input_schema).validate(args)
    assert text_of((await result_of(made, args)).content) == "title: hi"


def test_defaults_and_examples_holding_a_title_key_reach_the_model() -> None:
    # test_from_function_with_default_containing_title_key, _openapi_example_...
    def render(
        options: Annotated[dict[str, Any], "rendering options"] = {  # noqa: B006
            "title": "Untitled",
            "width": 80,
        },
        extra: Annotated[dict[str, Any], "more"] = Field(  # noqa: B008
            default={}, json_schema_extra={"example": {"title": "Untitled", "width": "80"}}
        ),
    ) -> str:
        """Render a report."""
        return ""

    properties = tool(render).input_schema["properties"]
    assert properties["options"]["default"] == {"title": "Untitled", "width": 80}
    assert properties["extra"]["example"] == {"title": "Untitled", "width": "80"}


async def test_keyword_only_parameters_give_the_same_schema() -> None:
    # test_decorated_function_schema_equivalent / test_structured_args
    def positional(arg1: int, arg2: bool, arg3: dict[str, Any] | None = None) -> str:
        """Return the arguments directly."""
        return f"{arg1} {arg2} {arg3}"

    def keyword_only(*, arg1: int, arg2: bool, arg3: dict[str, Any] | None = None) -> str:
        """Return the arguments directly."""
        return f"{arg1} {arg2} {arg3}"

    assert tool(positional).input_schema == tool(keyword_only).input_schema
    args = {"arg1": 1, "arg2": True, "arg3": {"foo": "bar"}}
    assert text_of((await result_of(tool(keyword_only), args)).content) == ("1 True {'foo': 'bar'}")


class SomeEnum(enum.Enum):
    A = "a"
    B = "b"


class SomeBaseModel(BaseModel):
    foo: str


async def test_enum_and_model_parameters_arrive_as_their_types() -> None:
    # test_structured_tool_types_parsed
    seen: list[Any] = []

    def structured(some_enum: SomeEnum, some_base_model: SomeBaseModel, tags: list[str]) -> str:
        """Return the arguments directly."""
        seen.extend([some_enum, some_base_model, tags])
        return "ok"

    made = tool(structured)
    assert made.input_schema["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string"},
    }
    args = {"some_enum": "a", "some_base_model": {"foo": "bar"}, "tags": ["x"]}
    await result_of(made, args)
    assert seen == [SomeEnum.A, SomeBaseModel(foo="bar"), ["x"]]


async def test_a_tool_changing_its_arguments_leaves_the_call_as_the_model_wrote_it() -> None:
    # test_tool_invoke_does_not_mutate_inputs
    def consume(d: dict[str, Any]) -> str:
        """Take a key out."""
        d.pop("k")
        d["added"] = 1
        return "done"

    fm = FauxModel([faux_message(faux_tool_call("consume", {"d": {"k": 1}})), "ok"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool(consume)])
    await agent.prompt("go")
    [call] = [
        c for m in agent.state.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    assert call.arguments == {"d": {"k": 1}}
    [sent] = [
        c for m in fm.contexts[1].messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    assert sent.arguments == {"d": {"k": 1}}


async def test_the_call_id_and_signal_are_given_and_not_in_the_schema() -> None:
    # InjectedToolCallId: the tool knows which call it answers
    def whoami(x: int, tool_call_id: str, signal: AbortSignal) -> str:
        """Say the call id."""
        return f"{x} {tool_call_id} {signal.aborted}"

    made = tool(whoami)
    assert list(made.input_schema["properties"]) == ["x"]
    result = await result_of(made, {"x": 1})
    assert text_of(result.content) == f"1 {result.tool_call_id} False"


@pytest.mark.parametrize(
    ("returned", "text"),
    [
        (
            {"weather": "mostly sunny", "temperature": 7},
            '{"weather":"mostly sunny","temperature":7}',
        ),
        ([1, "two"], '[1,"two"]'),
        (datetime.datetime(2020, 1, 2, 3, 4, 5), '"2020-01-02T03:04:05"'),
        (None, "null"),
    ],
    ids=["dict", "list", "datetime", "none"],
)
async def test_a_returned_value_reaches_the_model_as_json(returned: Any, text: str) -> None:
    # haystack's convert_result_to_json_string, and its StringConversionError for a value
    # json cannot take (a datetime): ours gives its JSON form
    def give() -> Any:
        """Give it."""
        return returned

    result = await result_of(tool(give), {})
    assert not result.is_error and text_of(result.content) == text


async def test_an_artifact_stays_with_the_result_and_out_of_the_model_call() -> None:
    # response_format="content_and_artifact": the model reads the content only
    def search(q: str) -> AgentToolResult:
        """Search."""
        return AgentToolResult([TextContent("3 hits")], details={"rows": [1, 2, 3]})

    [result], fm = await results_of([tool(search)], [("search", {"q": "x"})])
    assert result.details == {"rows": [1, 2, 3]} and text_of(result.content) == "3 hits"
    [sent] = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    assert text_of(sent.content) == "3 hits"


class LookupFailed(Exception):
    pass


async def test_a_raising_tool_is_an_error_result_with_its_text() -> None:
    # ToolException / handle_tool_error=True; haystack's raise_on_failure=False
    def faulty(location: str) -> str:
        """A tool that always fails when invoked."""
        raise LookupFailed(f"This tool always fails ({location}).")

    result = await result_of(tool(faulty), {"location": "Berlin"})
    assert result.is_error
    assert text_of(result.content) == "This tool always fails (Berlin)."


async def test_invalid_arguments_name_the_field_and_echo_what_came() -> None:
    # handle_validation_error: the model reads what to fix
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    result = await result_of(tool(add), {"a": "one", "b": 2})
    assert result.is_error
    assert "$.a" in text_of(result.content) and '"one"' in text_of(result.content)


async def test_results_pair_with_their_calls_in_the_order_they_were_made() -> None:
    # test_run_multiple_tool_calls, a missing tool and a failing one among them
    weather = tool(weather_report, parallel=True)

    def faulty(location: str) -> str:
        """Fails."""
        raise RuntimeError("invocation failed")

    calls = [
        ("weather_report", {"city": "Berlin"}),
        ("non_existent_tool", {"location": "Berlin"}),
        ("faulty", {"location": "Paris"}),
        ("weather_report", {"city": "Rome"}),
    ]
    results, fm = await results_of([weather, tool(faulty, parallel=True)], calls)
    reply = fm.contexts[1].messages[-5]
    assert isinstance(reply, AssistantMessage)
    assert [r.tool_call_id for r in results] == [c.id for c in reply.tool_calls]
    assert [r.is_error for r in results] == [False, True, True, False]
    assert 'Tool "non_existent_tool" not found' in text_of(results[1].content)
    assert "weather_report" in text_of(results[1].content)  # what there is
    assert text_of(results[3].content).startswith("Weather report for Rome")


async def test_a_call_with_empty_arguments_runs_a_tool_without_parameters() -> None:
    # test_run_tool_calls_with_empty_args
    def ping() -> str:
        """Ping."""
        return "pong"

    for empty in ({}, "", None):
        assert text_of((await result_of(tool(ping), empty)).content) == "pong"


async def test_plain_tools_run_on_worker_threads_and_async_ones_on_the_loop() -> None:
    # test_sync_tool_is_dispatched_to_thread / test_async_tool_is_awaited_directly
    threads: dict[str, int] = {}

    def plain() -> str:
        """Plain."""
        threads["plain"] = threading.get_ident()
        return "p"

    async def awaited() -> str:
        """Async."""
        threads["async"] = threading.get_ident()
        return "a"

    await results_of([tool(plain), tool(awaited)], [("plain", {}), ("awaited", {})])
    assert threads["async"] == threading.get_ident()
    assert threads["plain"] != threading.get_ident()


async def test_max_parallel_tools_of_one_runs_async_calls_one_at_a_time() -> None:
    # test_max_workers_serializes_async_tool_calls
    running, most = 0, 0

    async def slow(n: int) -> str:
        """Slow."""
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.2)  # wide: every call starts long before one ends
        running -= 1
        return str(n)

    made = tool(slow, parallel=True)
    reply = faux_message(*(faux_tool_call("slow", {"n": n}) for n in range(4)))
    for cap, expected in ((1, 1), (None, 4)):
        running, most = 0, 0
        fm = FauxModel([reply, "ok"])
        agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[made], max_parallel_tools=cap)
        await agent.prompt("go")
        assert most == expected


def test_two_tools_of_one_name_are_refused() -> None:
    # test_init_fails_with_duplicate_tool_names
    with pytest.raises(ConfigError, match="tool names must be unique"):
        Agent(tools=[tool(weather_report), tool(weather_report)])


PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)
"""A 1x1 PNG."""


async def test_content_blocks_a_tool_returns_are_the_results_content() -> None:
    # test_tool_message_content_blocks: a list of blocks stays a list of blocks
    def screenshot() -> list[Any]:
        """Take a screenshot."""
        return ["the screen:", ImageContent(data=PNG, mime_type="image/png")]

    [result], fm = await results_of([tool(screenshot)], [("screenshot", {})])
    assert [type(b) for b in result.content] == [TextContent, ImageContent]
    [sent] = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    assert [type(b) for b in sent.content] == [TextContent, ImageContent]


async def test_a_tool_error_may_be_answered_in_the_applications_words() -> None:
    # handle_tool_error="..." / a callable: an after_tool_call rewrites an error's text
    def flaky(x: int) -> str:
        """Fails."""
        raise RuntimeError("connection reset by peer (10.0.0.7)")

    def polite(ctx: Any, signal: Any) -> AfterToolCallResult | None:
        if ctx.is_error:
            return AfterToolCallResult(content=[TextContent("The service is busy; try later.")])
        return None

    fm = FauxModel([faux_message(faux_tool_call("flaky", {"x": 1})), "ok"])
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=[tool(flaky)], after_tool_call=polite
    )
    await agent.prompt("go")
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and text_of(result.content) == "The service is busy; try later."


async def test_a_tool_that_returns_directly_ends_the_run_with_its_text() -> None:
    # return_direct=True: the tool's output is the answer; the model is not asked again
    def lookup(key: str) -> AgentToolResult:
        """Look it up."""
        return AgentToolResult([TextContent(f"value of {key}")], terminate=True)

    fm = FauxModel([faux_message(faux_tool_call("lookup", {"key": "k"})), "never asked"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool(lookup)])
    reply = await agent.prompt("go")
    assert fm.call_count == 1 and reply.text.endswith("value of k")
