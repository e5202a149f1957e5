"""`add_server(..., requires_approval=...)`: an MCP server's tools held for a person's
decision (DESIGN §14), as a tool file's `requires_approval` holds its calls. Without it the
only way was a `before_tool_call` hook matching the prefixed names by hand. A real MCP
server over stdio and the faux model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.mcp._kit import text
from tests.mcp.conftest import stdio_server
from yiemagent import Agent, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.errors import ConfigError
from yiemagent.mcp import add_server
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(180)


def _results(agent: Agent) -> dict[str, ToolResultMessage]:
    return {m.tool_name: m for m in agent.state.messages if isinstance(m, ToolResultMessage)}


def test_a_named_tool_is_held_until_approved_and_the_others_run(markers: Path) -> None:
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("t_echo", {"text": "hi"}),
                faux_tool_call("t_add", {"a": 2, "b": 3}),
            ),
            "The sum is 5.",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    server = stdio_server(markers)
    asyncio.run(add_server(agent, server, prefix="t", requires_approval=["add"]))
    reply = agent.prompt_sync("Add 2 and 3, and echo hi.")
    assert reply.stop_reason == "toolUse"
    assert [(p.tool_name, p.arguments) for p in agent.pending_approvals] == [
        ("t_add", {"a": 2, "b": 3})
    ]
    assert list(_results(agent)) == ["t_echo"]  # the call not named ran at once
    agent.approve(agent.pending_approvals[0].tool_call_id)
    assert asyncio.run(agent.resume()).text == "The sum is 5."
    added = _results(agent)["t_add"]
    assert added.details == {"sum": 5} and not added.is_error
    asyncio.run(agent.close())


def test_true_holds_every_tool_of_the_server(markers: Path) -> None:
    fm = FauxModel([faux_message(faux_tool_call("echo", {"text": "hi"})), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    asyncio.run(add_server(agent, stdio_server(markers), requires_approval=True))
    agent.prompt_sync("Echo hi.")
    [held] = agent.pending_approvals
    agent.reject(held.tool_call_id, "not now")
    assert asyncio.run(agent.resume()).text == "done"
    assert text(_results(agent)["echo"]) == "Tool call rejected by the user: not now"
    asyncio.run(agent.close())


@pytest.mark.parametrize(
    ("names", "said"),
    [
        (["ad"], "requires_approval names no tool of MCP server \"test\": 'ad'"),
        ("add", "requires_approval is a text, 'add': give a list of tool names"),
    ],
)
def test_a_name_the_server_has_not_is_refused_and_nothing_is_registered(
    markers: Path, names: object, said: str
) -> None:
    store = ToolStore("s")
    server = stdio_server(markers)
    with pytest.raises(ConfigError) as caught:
        asyncio.run(add_server(store, server, requires_approval=names))  # type: ignore[arg-type]
    assert said in str(caught.value)
    assert list(store) == []
    asyncio.run(server.close())
