"""A tool whose input schema nests deeper than the schema check can follow (openai-agents'
`test_function_tool_rejects_deep_schema_before_copying`): refused where the tool is given,
with one clear error that says what to change, not a `RecursionError` out of `jsonschema`
(DESIGN §8). A deep but reasonable schema still works end to end, and arguments nested
deeper than the tool's copy of them can follow are an argument error the model reads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from yiemagent import Agent, AgentTool, AgentToolResult, ConfigError, ToolResultMessage, ToolStore
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.tools import write_tool_tool


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"inner": schema}}
    return schema


def echo_tool(schema: dict[str, Any]) -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content=json.dumps(args))

    return AgentTool("echo", "echo", "echoes its arguments", schema, execute)


def test_an_agent_given_a_too_deep_schema_says_so_at_construction() -> None:
    fm = FauxModel([])
    with pytest.raises(ConfigError, match="nests too deeply to check; flatten it") as info:
        Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[echo_tool(nested(300))])
    assert "echo" in str(info.value)


def test_a_store_refuses_it_and_keeps_its_tools() -> None:
    store = ToolStore("s")
    store.register(echo_tool(nested(3)))
    deep = echo_tool(nested(300))
    deep.name = "deep"
    with pytest.raises(ConfigError, match="nests too deeply"):
        store.register(deep)
    assert list(store.tools) == ["echo"]


async def test_write_tool_answers_with_the_error_and_writes_nothing(tmp_path: Any) -> None:
    store = ToolStore("s")
    writer = write_tool_tool(store, tmp_path)
    call = faux_tool_call(
        "writeTool",
        {
            "name": "deep",
            "label": "deep",
            "description": "too deep",
            "inputSchema": {"type": "object", "properties": {"x": nested(150)}},
            "executeCode": "return 'x'",
        },
    )
    fm = FauxModel([faux_message(call), "ok"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[writer])
    await agent.prompt("write it")

    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and "nests too deeply" in result.content[0].text
    assert list(tmp_path.iterdir()) == [] and "deep" not in agent.tool_store.tools


async def test_a_deep_but_reasonable_schema_runs() -> None:
    value: Any = "leaf"
    for _ in range(40):
        value = {"inner": value}
    fm = FauxModel([faux_message(faux_tool_call("echo", value)), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[echo_tool(nested(40))])
    await agent.prompt("go")

    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert not result.is_error and json.loads(result.content[0].text) == value


async def test_arguments_nested_too_deeply_to_copy_are_an_argument_error() -> None:
    # the schema accepts any object; the value passes validation but is deeper than the
    # copy the tool gets can follow: the model reads why, not Python's recursion message
    ran: list[Any] = []

    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        ran.append(args)
        return AgentToolResult(content="ran")

    value: Any = "leaf"
    for _ in range(700):
        value = {"k": value}
    anything = AgentTool("anything", "anything", "takes any object", {"type": "object"}, execute)
    fm = FauxModel([faux_message(faux_tool_call("anything", {"v": value})), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[anything])
    await agent.prompt("go")

    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert ran == [] and result.is_error
    assert result.content[0].text.startswith(
        'Invalid arguments for tool "anything":\n- root: arguments are nested too deeply\n'
    )
