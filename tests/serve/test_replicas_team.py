"""A team served by two `yiem serve --agent team.toml` replicas on one PostgreSQL (DESIGN
§14, §17, §18): the router hands over to `billing`, which holds a call of its own and runs
a `helper` sub-agent that holds one too. The replica that ran it is killed with SIGKILL
while the calls wait; through the other one, the user approves billing's call and rejects
the helper's, and the resumed run finishes with billing's tools: the approved call runs
once, the rejected one never, every call has one result."""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpx2 as httpx
import pytest

from yiemagent.loop import transcript_problems
from yiemagent.types import text_of

from .test_replicas import (
    post_when_free,
    ran,
    replica,
    serve_script,
    setup,
    transcript,
    wait_ended,
)

BRAIN = serve_script(
    """
    def brain(context):
        # The router hands every question to billing. Billing, asked "launch A B", launches
        # A and asks the helper to "launch B"; the helper launches what it is asked. After
        # tool results (other than the transfer's) each answers with their texts.
        last = context.messages[-1]
        if last.role == "toolResult" and not last.tool_name.startswith("transfer_to_"):
            return results_answer(context)
        if context.system_prompt == "Route.":
            return faux_message(faux_tool_call("transfer_to_billing", {}))
        asked = next(m for m in reversed(context.messages) if m.role == "user")
        words = text(asked).split()
        if context.system_prompt == "Bill.":
            return faux_message(
                faux_tool_call("launch", {"city": words[1]}),
                faux_tool_call("helper", {"input": f"launch {words[2]}"}),
            )
        return faux_message(faux_tool_call("launch", {"city": words[1]}))
    """
)

TEAM = textwrap.dedent(
    """
    [agents.router]
    system_prompt = "Route."
    handoffs = ["billing"]

    [agents.billing]
    system_prompt = "Bill."
    tools = ["tools"]
    as_tools = ["helper"]

    [agents.helper]
    description = "Launches what it is asked to."
    system_prompt = "Help."
    tools = ["tools"]
    """
)


@pytest.mark.timeout(300)
def test_a_team_held_on_a_killed_replica_is_decided_and_resumed_on_another(
    postgres_dsn: str, tmp_path: Path
) -> None:
    script, tools, runs = setup(tmp_path, BRAIN)
    team = tmp_path / "team.toml"
    team.write_text(TEAM)
    with (
        replica(script, tools, postgres_dsn, runs, agent=team) as (first_proc, first_url),
        replica(script, tools, postgres_dsn, runs, agent=team) as (_, second_url),
        httpx.Client(base_url=first_url, timeout=30) as first,
        httpx.Client(base_url=second_url, timeout=30) as second,
    ):
        started = first.post("/v1/sessions/t/runs", json={"input": "launch moon mars"})
        assert started.status_code == 202, started.text
        held = wait_ended(first, started.json()["run_id"])
        assert held["end_reason"] == "awaiting_approval", held
        first_proc.kill()  # SIGKILL while the calls wait: nothing released, nothing closed
        first_proc.wait(10)

        approvals = second.get("/v1/sessions/t/approvals").json()["approvals"]
        by_city = {a["arguments"]["city"]: a["tool_call_id"] for a in approvals}
        assert sorted(by_city) == ["mars", "moon"], approvals
        assert {a["tool_name"] for a in approvals} == {"launch"}
        yes = second.post(f"/v1/sessions/t/approvals/{by_city['moon']}", json={"approve": True})
        no = {"approve": False, "reason": "not mars"}
        refused = second.post(f"/v1/sessions/t/approvals/{by_city['mars']}", json=no)
        assert yes.status_code == refused.status_code == 200, (yes.text, refused.text)
        resumed = post_when_free(second, "/v1/sessions/t/resume")
        assert resumed.status_code == 202, resumed.text
        done = wait_ended(second, resumed.json()["run_id"])
        assert done["end_reason"] not in ("error", "aborted", "awaiting_approval"), done

        assert ran(runs) == [f"launch moon {by_city['moon']}"]  # once; mars never
        messages = transcript(second, "t")
        assert transcript_problems(messages) == []
        assert [m.agent for m in messages if m.role == "assistant"] == [
            "router",
            "billing",
            "billing",
        ]
        results = {m.tool_name: text_of(m.content) for m in messages if m.role == "toolResult"}
        assert results["launch"] == "launched moon"
        assert results["helper"] == "Done: Tool call rejected by the user: not mars"
        answer = text_of(messages[-1].content)
        assert answer == "Done: launched moon; Done: Tool call rejected by the user: not mars"
        assert second.get("/v1/sessions/t/approvals").json()["approvals"] == []
