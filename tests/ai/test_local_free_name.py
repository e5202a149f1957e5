"""The free-name step of the embedded model (R-11.2): before a request's first
reply the provider reads the tool name the model writes with no grammar; a function name of
two or more words that is no tool's and names none means the model reached for a tool that
is not there, and it is told so and answers."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, strategies as st

from tests.ai._local_kit import (
    CALC,
    TIME,
    FakeRuntime,
    _answer,
    _calls,
    _events,
)
from yiemagent import AgentTool
from yiemagent.ai import Context
from yiemagent.ai.providers.local.choice import unknown_tool
from yiemagent.ai.providers.local.grounding import Grounding
from yiemagent.ai.providers.local.prompt import NO_TOOL
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

TOOLS = [CALC, TIME]


async def test_a_tool_that_is_not_there_is_told_and_only_the_answer_is_offered(
    fake: Callable[..., FakeRuntime],
) -> None:
    refusal = "I cannot order a pizza."
    runtime = fake([_answer(refusal)], names=["order_pizza"])
    events = await _events(Context("sys", [UserMessage("Order a large pizza.")], TOOLS))
    final = events[-1].message
    assert final.stop_reason == "stop" and final.text == refusal
    (request,) = runtime.requests
    assert request["messages"][-1] == {
        "role": "user",
        "content": NO_TOOL.format(name="order_pizza"),
    }
    assert request["messages"][-2]["role"] == "assistant"
    # Only the answer branch is left in the reply schema.
    schema = request["response_format"]["json_schema"]["schema"]
    assert "calculator" not in str(schema) and "get_time" not in str(schema)


async def test_a_tool_name_or_a_name_that_names_a_tool_goes_on_as_before(
    fake: Callable[..., FakeRuntime],
) -> None:
    for name in ("calculator", "calculate_sum", "opposite", "pyproject.toml", "answer"):
        call = _calls(("calculator", {"expression": "17 * 23"}))
        runtime = fake([call], names=[name])
        events = await _events(Context("sys", [UserMessage("What is 17 * 23?")], TOOLS))
        final = events[-1].message
        assert final.stop_reason == "toolUse", name
        assert NO_TOOL.split("(")[0] not in str(runtime.requests[0]["messages"]), name
        assert len(runtime.probes) == 1


async def test_after_tool_results_no_name_is_read(fake: Callable[..., FakeRuntime]) -> None:
    call = ToolCall("c1", "calculator", {"expression": "17 * 23"})
    messages: list[Message] = [
        UserMessage("What is 17 * 23?"),
        AssistantMessage([call], stop_reason="toolUse"),
        ToolResultMessage("c1", "calculator", [TextContent("17 * 23 = 391")]),
    ]
    runtime = fake([_answer("391")], names=["order_pizza"])
    events = await _events(Context("sys", messages, TOOLS))
    assert events[-1].message.text == "391"
    assert runtime.probes == []


@given(st.from_regex(r"[a-z]{3,9}", fullmatch=True))
def test_one_word_is_never_taken_for_a_missing_tool(name: str) -> None:
    assert not unknown_tool(name, TOOLS, "answer")


@given(st.lists(st.from_regex(r"[a-z]{3,9}", fullmatch=True), min_size=2, max_size=4))
def test_a_name_naming_a_tool_is_never_taken_for_a_missing_tool(parts: list[str]) -> None:
    # A part shares its first letters with a word of the tool's name ("calcul…").
    assert not unknown_tool("_".join(["calculating", *parts]), TOOLS, "answer")
    assert not unknown_tool("calculator", TOOLS, "answer")


def test_two_word_names_of_no_tool_are_missing_tools() -> None:
    for name in ("order_pizza", "bitcoinPrice", "turn_off_lights", "play_songs"):
        assert unknown_tool(name, TOOLS, "answer"), name


def test_a_name_whose_action_no_tool_has_is_a_missing_tool() -> None:
    """`delete_file` named `read_file` by "file", so the 0.5B read the file it was asked to
    delete: the name's first word is its action, and no tool has it."""
    request = Grounding.of_text("Delete the time zone, then reset it.")
    for name in ("delete_time", "deleteTime", "reset_time_zone"):
        assert unknown_tool(name, TOOLS, "answer", request), name
        assert not unknown_tool(name, TOOLS, "answer"), name  # no request: names a tool
    # A garbled tool name (`suits_search` for `lawsuits_search`): not a word of the request.
    for name in ("time_zone", "get_time_zone", "calculate_area", "set_time", "lask_time"):
        assert not unknown_tool(name, TOOLS, "answer", request), name


async def test_optional_values_nothing_backs_are_left_out_of_the_call(
    fake: Callable[..., FakeRuntime],
) -> None:
    """An optional value of the model's own (`units: "kelvin"`) is left out, so
    the tool's default applies; the rest of the call runs."""
    tool = AgentTool(
        name="get_temperature",
        label="get_temperature",
        description="The temperature of a city.",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}, "units": {"type": "string"}},
            "required": ["city"],
        },
        execute=lambda *a: "unused",
    )
    fake([_calls(("get_temperature", {"city": "Berlin", "units": "kelvin"}))])
    events = await _events(
        Context("sys", [UserMessage("What is the temperature in Berlin?")], [tool])
    )
    final = events[-1].message
    assert final.stop_reason == "toolUse"
    assert [c.arguments for c in final.tool_calls] == [{"city": "Berlin"}]
