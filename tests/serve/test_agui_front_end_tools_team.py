"""AG-UI front-end tools in a team (docs/serve.md): the client's tools belong to the run, so
after the entry agent hands over, the agent handed to is offered them too, and its call of
one is held, answered by the client and used just as the entry's would be. A real Uvicorn
server; the agents on the faux model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ag_ui import core as agui

from tests.serve._kit import Tools, serving, text_of
from tests.serve.test_agui_front_end_tools import (
    PAINT,
    Server,
    answer,
    answer_text,
    ask,
    assistant_with,
    calls_of,
    roles,
)
from yiemagent import Agent, AgentTool, AssistantMessage, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import SqliteSessionStore

pytestmark = pytest.mark.timeout(120)


def router_brain(context: Context) -> AssistantMessage:
    """Hands every question to the designer."""
    return faux_message(faux_tool_call("transfer_to_designer", {"reason": "a page question"}))


def designer_brain(context: Context) -> AssistantMessage:
    """Calls the front-end `paint` when offered ("no paint tool" else); after its result,
    answers with it."""
    last = context.messages[-1]
    if getattr(last, "role", None) == "toolResult" and last.tool_name == "paint":  # type: ignore[union-attr]
        return faux_message(faux_text("Done: " + text_of(last)))
    if "paint" not in [tool.name for tool in context.tools or []]:
        return faux_message(faux_text("no paint tool"))
    return faux_message(faux_tool_call("paint", {"color": "teal"}))


def _sketch(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return "a sketch"


sketch = AgentTool("sketch", "Sketch", "sketch a page", {"type": "object"}, _sketch)


@pytest.fixture
def team_server(tmp_path: Path) -> Iterator[tuple[Server, FauxModel]]:
    router_fm = FauxModel([router_brain] * 100, chunk_size=8)
    designer_fm = FauxModel([designer_brain] * 100, chunk_size=8, model_id="designer")
    with SqliteSessionStore(tmp_path / "sessions.db") as store:

        def make_agent(session_id: str) -> Agent[Any]:
            designer = Agent(
                "You design pages.",
                designer_fm.model,
                stream_fn=designer_fm.stream_fn,
                name="designer",
                description="Page design.",
                tools=[sketch],
            )
            return Agent(
                "You route.",
                router_fm.model,
                stream_fn=router_fm.stream_fn,
                name="router",
                handoffs=[designer],
                session_store=store,
                session_id=session_id,
            )

        with serving(create_app(make_agent, session_store=store)) as url:
            server = Server(url, store, router_fm, Tools())
            yield server, designer_fm
            server.client.close()


def test_the_agent_handed_to_is_offered_the_client_s_tools_and_its_call_is_held(
    team_server: tuple[Server, FauxModel],
) -> None:
    server, designer_fm = team_server

    first = server.run(ask("th", "r1", "make the page teal"))

    offered = [tool.name for tool in designer_fm.contexts[-1].tools or []]
    assert offered == ["sketch", "paint"]  # its own, then the client's
    calls = calls_of(first)
    [(call_id, (name, args))] = [(i, c) for i, c in calls.items() if c[0] == "paint"]
    assert args == {"color": "teal"}
    assert not [e for e in first if e.type == "TOOL_CALL_RESULT" and e.tool_call_id == call_id]
    messages, held = server.on_disk("th")
    assert [(h["tool_call_id"], h["tool_name"]) for h in held] == [(call_id, "paint")]
    assert messages[-1]["agent"] == "designer"

    user = agui.UserMessage(id="u0", content="make the page teal")
    second = server.run(
        ask("th", "r2", user, assistant_with({call_id: (name, args)}), answer(call_id, "painted"))
    )

    assert answer_text(second) == "Done: painted"
    messages, held = server.on_disk("th")
    assert roles(messages)[-2:] == ["toolResult", "assistant"] and held == []
    assert messages[-2]["tool_call_id"] == call_id and not messages[-2]["is_error"]
    assert messages[-1]["agent"] == "designer"


def test_a_client_tool_named_as_a_tool_of_the_agent_handed_to_is_a_400(
    team_server: tuple[Server, FauxModel],
) -> None:
    server, designer_fm = team_server
    clash = PAINT.model_copy(update={"name": "sketch"})  # the designer's own tool
    refused = server.post(ask("th2", "r1", "hi", tools=[clash]))
    assert refused.status_code == 400, refused.text
    assert designer_fm.call_count == 0 and server.fm.call_count == 0


def test_without_client_tools_the_agent_handed_to_has_none(
    team_server: tuple[Server, FauxModel],
) -> None:
    server, designer_fm = team_server
    events = server.run(ask("th3", "r1", "make the page teal", tools=[]))
    assert answer_text(events) == "no paint tool"
    assert [t.name for t in designer_fm.contexts[-1].tools or []] == ["sketch"]


def test_the_agent_handed_to_reads_the_client_s_system_messages(
    team_server: tuple[Server, FauxModel],
) -> None:
    """The client's system messages belong to the run, as its tools do: they were added to
    the entry agent's system prompt only, so the agent handed to never read them."""
    server, designer_fm = team_server
    system = agui.SystemMessage(id="s0", content="The page's brand color is teal.")

    server.run(ask("ths", "r1", system, "make the page teal", tools=[]))

    [router_context] = server.fm.contexts
    designer_context = designer_fm.contexts[-1]
    assert router_context.system_prompt == "You route.\n\nThe page's brand color is teal."
    assert designer_context.system_prompt == "You design pages.\n\nThe page's brand color is teal."

    server.run(ask("ths", "r2", "and the footer?", tools=[]))  # the next run: its own text
    assert designer_fm.contexts[-1].system_prompt == "You design pages."
