"""A tool schema whose `$ref`s lead back to where they start with no property or item
between (`{"$ref": "#"}`, two definitions naming each other; DESIGN §8): checking any value
against it would never end. It is refused when the tool is registered, naming the `$ref`,
instead of every call of the tool failing with "arguments are nested too deeply" (which
blamed the model's arguments). A recursive schema that goes through a property (a tree) is
a schema like any other: it registers and its calls run."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import Agent, AgentTool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.errors import ConfigError
from yiemagent.tools import ToolStore
from yiemagent.types import ToolResultMessage


async def _ran(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    return f"ran with {sorted(args)}"


@pytest.mark.parametrize(
    ("schema", "ref"),
    [
        ({"$ref": "#"}, "#"),
        ({"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}}, "#/properties/a"),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/x"}},
                "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"allOf": [{"$ref": "#/$defs/x"}]}},
            },
            "#/$defs/",
        ),
    ],
    ids=["root", "itself", "two-defs"],
)
def test_a_ref_loop_with_nothing_between_is_refused_at_registration(
    schema: dict[str, Any], ref: str
) -> None:
    tool = AgentTool("loop", "Loop", "a tool whose schema loops", schema, _ran)
    with pytest.raises(ConfigError) as raised:
        ToolStore().register(tool)
    text = str(raised.value)
    assert f"$ref '{ref}" in text and "leads back to itself" in text, text


async def test_a_recursive_tree_schema_registers_and_its_calls_run() -> None:
    children = {"type": "array", "items": {"$ref": "#/$defs/node"}}
    node = {
        "type": "object",
        "properties": {"value": {"type": "integer"}, "children": children},
        "required": ["value"],
    }
    schema = {
        "type": "object",
        "$defs": {"node": node},
        "properties": {"tree": {"$ref": "#/$defs/node"}},
    }
    tool = AgentTool("walk", "Walk", "walks a tree", schema, _ran)
    ToolStore().register(tool)
    tree = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    fm = FauxModel([faux_message(faux_tool_call("walk", {"tree": tree})), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool])
    await agent.prompt("go")
    result = agent.state.messages[2]
    assert isinstance(result, ToolResultMessage) and not result.is_error, result
