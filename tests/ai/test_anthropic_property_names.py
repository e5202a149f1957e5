"""Tool schema property names Anthropic's API refuses ("Property keys should match pattern
'^[a-zA-Z0-9_.-]{1,64}$'"): an MCP server's `filter[id]`, a Python parameter named
`größe`. The request offers them under names the API takes; the model's calls under
those names reach the tool under its own, and calls made before go back renamed too.
A replay server on 127.0.0.1 speaks the Messages API."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, Reply, anthropic_events
from yiemagent import Agent, AgentTool, ToolResultMessage, tool
from yiemagent.ai import get_model
from yiemagent.types import text_of
from yiemagent.types.tools import provider_property_names

pytestmark = pytest.mark.timeout(120)

ACCEPTED = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
"""The API's pattern for a property name."""

seen: list[dict[str, Any]] = []


def list_apps(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    seen.append(args)
    return "2 apps"


LIST_APPS = AgentTool(
    "list_apps",
    "List apps",
    "list the apps",
    {
        "type": "object",
        "properties": {"filter[name]": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["filter[name]"],
    },
    list_apps,
)


@tool
def size(größe: int, café: str = "") -> str:
    """A size."""
    return f"{größe} at {café}"


async def test_refused_property_names_are_renamed_and_read_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    calls = anthropic_events(
        {"type": "tool_use", "id": "toolu_1", "name": "list_apps", "input": {"filter_name_": "x"}},
        {"type": "tool_use", "id": "toolu_2", "name": "size", "input": {"groe": 3, "cafe": "b"}},
        stop_reason="tool_use",
    )
    with ReplayServer() as server:
        server.enqueue(
            Reply(events=calls), Reply(events=anthropic_events({"type": "text", "text": "ok"}))
        )
        model = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
        agent = Agent(model=model, tools=[LIST_APPS, size])
        answer = await agent.prompt("list apps named x, size 3 at b")
        bodies = [request.body for request in server.requests]

    assert answer.text == "ok"
    offered = {t["name"]: t["input_schema"] for t in bodies[0]["tools"]}
    assert list(offered["list_apps"]["properties"]) == ["filter_name_", "limit"]
    assert offered["list_apps"]["required"] == ["filter_name_"]
    assert list(offered["size"]["properties"]) == ["groe", "cafe"]
    assert offered["size"]["required"] == ["groe"]
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.is_error, text_of(r.content)) for r in results] == [
        (False, "2 apps"),
        (False, "3 at b"),
    ]
    assert seen[-1] == {"filter[name]": "x"}
    [replayed] = [m for m in bodies[1]["messages"] if m["role"] == "assistant"]
    inputs = [b["input"] for b in replayed["content"] if b["type"] == "tool_use"]
    assert inputs == [{"filter_name_": "x"}, {"groe": 3, "cafe": "b"}]


@given(st.lists(st.text(min_size=1, max_size=80), max_size=8, unique=True))
def test_new_names_are_accepted_distinct_and_leave_accepted_names_alone(
    names: list[str],
) -> None:
    renamed = provider_property_names(names)
    final = [renamed.get(name, name) for name in names]
    assert all(ACCEPTED.fullmatch(name) for name in final)
    assert len(set(final)) == len(final)
    assert all(name not in renamed for name in names if ACCEPTED.fullmatch(name))
