"""`GET /v1/sessions/{sid}/approvals` names the agent that holds each call (DESIGN §17,
§18): a call held inside a sub-agent (`Agent.as_tool`) is listed with its `agent_path`, the
agents' names from the outermost down, as `pending_approvals` lists it; the agent's own
calls with an empty one. Without it a client shown two held `launch` calls could not tell
which agent asked for which. Through Uvicorn on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import SCHEMA, run_events, serving, start_run, text_of
from yiemagent import Agent, AgentTool, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)


def helper_reply(context: Context) -> Any:
    """The helper launches what it is asked to; then answers."""
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(faux_text(f"helper: {text_of(last)}"))
    return faux_message(faux_tool_call("launch", {"city": text_of(last)}))


def lead_reply(context: Context) -> Any:
    """The lead, asked "A B", launches A itself and asks the helper to launch B."""
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(faux_text("lead done"))
    own, other = text_of(last).split()
    return faux_message(
        faux_tool_call("launch", {"city": own}), faux_tool_call("helper", {"input": other})
    )


def test_each_held_call_is_listed_with_the_path_of_the_agent_that_holds_it() -> None:
    store = InMemorySessionStore()
    launched: list[str] = []

    async def launch(call_id: str, args: dict[str, Any], *_: Any) -> str:
        launched.append(args["city"])
        return f"launched {args['city']}"

    helper_fm, lead_fm = FauxModel([helper_reply] * 20), FauxModel([lead_reply] * 20)

    def make_agent(session_id: str) -> Agent[Any]:
        def tools() -> list[AgentTool]:
            return [AgentTool("launch", "Launch", "launch", SCHEMA, launch, requires_approval=True)]

        helper = Agent(
            name="helper", model=helper_fm.model, stream_fn=helper_fm.stream_fn, tools=tools()
        )
        return Agent(
            name="lead", model=lead_fm.model, stream_fn=lead_fm.stream_fn,
            tools=[*tools(), helper.as_tool()], session_store=store, session_id=session_id,
        )  # fmt: skip

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        end = run_events(client, start_run(client, "s", "moon mars"))[-1][1]
        assert end["reason"] == "awaiting_approval"

        held = client.get("/v1/sessions/s/approvals").json()["approvals"]
        by_city = {a["arguments"]["city"]: a for a in held}
        assert {city: a["agent_path"] for city, a in by_city.items()} == {
            "moon": [],
            "mars": ["lead", "helper"],
        }
        decided = client.post(
            f"/v1/sessions/s/approvals/{by_city['mars']['tool_call_id']}", json={"approve": True}
        ).json()["approvals"]
        assert {a["arguments"]["city"]: a["agent_path"] for a in decided} == {
            "moon": [],
            "mars": ["lead", "helper"],
        }
        client.post(
            f"/v1/sessions/s/approvals/{by_city['moon']['tool_call_id']}", json={"approve": False}
        )
        resumed = client.post("/v1/sessions/s/resume")
        assert run_events(client, resumed.json()["run_id"])[-1][1]["reason"] == "stop"
        assert launched == ["mars"]
