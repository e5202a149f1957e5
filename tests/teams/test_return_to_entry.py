"""`Agent(return_to_entry=True)` (docs/teams.md "Back to the entry"): after a handoff the
entry agent takes each new prompt itself, so a router routes every question, not only the
first; within a run the target answers on, a held batch is finished by its writer, and a
reopened session starts at the entry. Without it the target answers the next prompt
(DESIGN §17)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent, AgentTool, ConfigError, load_agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.sessions import SqliteSessionStore

from ._kit import calls, scripted

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def team(**router_options: Any) -> tuple[Agent[Any], FauxModel, FauxModel, FauxModel]:
    math, math_fm = scripted("math", ["144"])
    time, time_fm = scripted("time", ["It is 09:00 in Tokyo.", "It is 09:00 in Tokyo."])
    router, router_fm = scripted(
        "router",
        [calls(("transfer_to_time", {})), calls(("transfer_to_math", {}))],
        handoffs=[time, math],
        **router_options,
    )
    return router, router_fm, time_fm, math_fm


async def test_each_new_prompt_goes_back_to_the_router() -> None:
    router, router_fm, time_fm, math_fm = team(return_to_entry=True)

    first = await router.prompt("What time is it in Tokyo?")
    assert first.agent == "time" and router.state.active_agent == "router"

    second = await router.prompt("What is 12 * 12?")

    assert second.text == "144" and second.agent == "math"
    assert router_fm.call_count == 2 and time_fm.call_count == 1 and math_fm.call_count == 1
    offered = [t.name for t in router_fm.contexts[1].tools]
    assert offered == ["transfer_to_time", "transfer_to_math"]
    assert router_fm.contexts[1].messages[-1].content[0].text == "What is 12 * 12?"  # type: ignore[union-attr]


async def test_without_it_the_target_answers_the_next_prompt() -> None:
    router, router_fm, time_fm, math_fm = team()

    await router.prompt("What time is it in Tokyo?")
    second = await router.prompt("What is 12 * 12?")

    assert router.state.active_agent == "time" and second.agent == "time"
    assert router_fm.call_count == 1 and time_fm.call_count == 2 and math_fm.call_count == 0


async def test_the_target_answers_the_rest_of_its_run() -> None:
    """Its own tool calls, and a follow-up queued during the run, stay with it."""
    router_ref: list[Agent[Any]] = []

    def clock(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        router_ref[0].follow_up("and in Paris?")
        return "09:00"

    clock_tool = AgentTool("clock", "clock", "the time", SCHEMA, clock)
    time, time_fm = scripted(
        "time", [calls(("clock", {})), "09:00 in Tokyo.", "02:00 in Paris."], tools=[clock_tool]
    )
    router, router_fm = scripted(
        "router", [calls(("transfer_to_time", {}))], handoffs=[time], return_to_entry=True
    )
    router_ref.append(router)

    reply = await router.prompt("What time is it in Tokyo?")

    assert reply.text == "02:00 in Paris." and reply.agent == "time"
    assert router_fm.call_count == 1 and time_fm.call_count == 3
    assert router.state.active_agent == "router"


async def test_a_reopened_session_starts_at_the_entry(tmp_path: Path) -> None:
    with SqliteSessionStore(tmp_path / "s.db") as store:
        router, *_ = team(return_to_entry=True, session_store=store, session_id="s")
        await router.prompt("What time is it in Tokyo?")
        await router.close()

        again, router_fm, _, _ = team(return_to_entry=True, session_store=store, session_id="s")
        assert again.state.active_agent == "router"
        await again.prompt("What time is it in Osaka?")
        assert router_fm.call_count == 1
        await again.close()


def test_an_agent_file_sets_it_and_a_bad_value_names_table_and_key(tmp_path: Path) -> None:
    file = tmp_path / "team.toml"
    body = '[agents.router]\nhandoffs = ["math"]\n{line}\n\n[agents.math]\nsystem_prompt = "Add."\n'
    file.write_text(body.format(line="return_to_entry = true"))
    assert load_agent(file).return_to_entry is True

    file.write_text(body.format(line='return_to_entry = "yes"'))
    with pytest.raises(ConfigError, match=r"\[agents\.router\] return_to_entry: must be true"):
        load_agent(file)
    with pytest.raises(ConfigError, match="return_to_entry must be True or False"):
        Agent(return_to_entry=1)  # type: ignore[arg-type]
