"""A valid output given in the same reply as a call held for approval (DESIGN §14):
pydantic-ai #3791 asks what such a batch means. The model read "Final result accepted."
for its `final_result`, so once the held call is decided the run ends with that value, as
the batch would have without the hold; the model is not asked again (it was, and its
"done" in words then failed the output type)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from yiemagent import Agent, AgentTool, InMemorySessionStore
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import OutputMessage, text_of

from ._kit import Person


def pay_and_answer() -> Any:
    return faux_message(
        faux_tool_call("pay", {}, id="c1"),
        faux_tool_call("final_result", {"name": "Ann", "age": "31"}, id="c2"),
    )


def agent_on(
    fm: FauxModel, store: InMemorySessionStore | None, paid: list[str], name: str = "assistant"
) -> Agent[Any]:
    """An agent on session "s" of `store` whose tool `pay` needs approval."""

    async def pay(call_id: str, args: dict[str, Any], *_: Any) -> str:
        paid.append(call_id)
        return "paid"

    tool = AgentTool("pay", "pay", "Pay the bill.", {"type": "object"}, pay)
    tool.requires_approval = True
    return Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[tool],
        output_type=Person,
        session_store=store,
        session_id="s" if store is not None else None,
        name=name,
    )


@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_the_output_beside_a_held_call_ends_the_resumed_run(decision: str) -> None:
    store = InMemorySessionStore()
    paid: list[str] = []
    fm = FauxModel([pay_and_answer(), "All done: paid, and Ann is 31."])
    first = agent_on(fm, store, paid)
    held = await first.prompt("pay, then tell me who Ann is")
    assert isinstance(held, OutputMessage) and held.output is None
    assert [p.tool_call_id for p in first.pending_approvals] == ["c1"]
    await first.close()

    second = agent_on(fm, store, paid)  # another process, the same session
    if decision == "approve":
        second.approve("c1")
    else:
        second.reject("c1", reason="not today")
    reply = await second.resume()

    assert isinstance(reply, OutputMessage)
    assert reply.output == Person(name="Ann", age=31)  # the arguments as the tool ran them
    assert fm.call_count == 1
    assert paid == (["c1"] if decision == "approve" else [])
    results = {m.tool_call_id: text_of(m.content) for m in second.state.messages
               if m.role == "toolResult"}  # fmt: skip
    assert results["c2"] == "Final result accepted."
    assert ("paid" in results["c1"]) == (decision == "approve")
    await second.close()


async def test_a_steering_message_after_the_held_batch_is_answered_with_a_new_output() -> None:
    """A message steered in while the held call was decided is answered in the resumed
    run, as after any valid output; the output is the one the model gives last."""
    store = InMemorySessionStore()
    fm = FauxModel([pay_and_answer(), faux_message(faux_tool_call("final_result", {
        "name": "Bo", "age": 7}))])  # fmt: skip
    agent = agent_on(fm, store, [])
    await agent.prompt("pay, then tell me who Ann is")
    agent.approve("c1")
    agent.steer("actually, Bo")
    reply = await agent.resume()
    assert isinstance(reply, OutputMessage)
    assert reply.output == Person(name="Bo", age=7)
    assert fm.call_count == 2
    await agent.close()


async def test_a_sub_agents_output_beside_its_held_call_answers_the_parent() -> None:
    """The same inside `Agent.as_tool(output="output")`: the sub-run's held call holds the
    parent's; once approved, the parent's resume ends the sub-run with the output it gave
    beside the call, and the parent reads it as the call's result."""
    paid: list[str] = []
    sub_fm = FauxModel([pay_and_answer()])
    sub = agent_on(sub_fm, None, paid, name="payer")
    lead_fm = FauxModel(
        [
            faux_message(faux_tool_call("payer", {"input": "pay, then who is Ann"}, id="p1")),
            lambda context: "lead: " + text_of(context.messages[-1].content),
        ]
    )
    lead = Agent(model=lead_fm.model, stream_fn=lead_fm.stream_fn, name="lead",
                 tools=[sub.as_tool(output="output")])  # fmt: skip
    await lead.prompt("go")
    assert [(p.tool_call_id, p.agent_path) for p in lead.pending_approvals] == [
        ("c1", ("lead", "payer"))
    ]
    lead.approve("c1")
    reply = await lead.resume()
    assert reply.text == 'lead: {"name": "Ann", "age": 31}'
    assert paid == ["c1"] and sub_fm.call_count == 1


@pytest.mark.parametrize("resumer", ["same_agent", "another_process"])
async def test_an_output_function_beside_a_held_call_runs_once(resumer: str) -> None:
    """An output function that acts (saves a note) ran when its call ran in the held batch,
    and again when the resumed run read the output back: the note was saved twice. The
    resumed run, in this process or another one on the session, takes the value the call
    stored in its result."""
    saved: list[str] = []

    def save(note: str) -> str:
        saved.append(note)
        return note.upper()

    store = InMemorySessionStore()
    paid: list[str] = []
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("pay", {}, id="c1"),
                faux_tool_call("final_result", {"note": "paid"}, id="c2"),
            )
        ]
    )

    async def pay(call_id: str, args: dict[str, Any], *_: Any) -> str:
        paid.append(call_id)
        return "paid"

    def saving_agent() -> Agent[Any]:
        tool = AgentTool("pay", "pay", "Pay the bill.", {"type": "object"}, pay)
        tool.requires_approval = True
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[tool],
            output_type=save,
            session_store=store,
            session_id="s",
        )

    agent = saving_agent()
    await agent.prompt("pay, then note it")
    assert saved == ["paid"] and [p.tool_call_id for p in agent.pending_approvals] == ["c1"]
    if resumer == "another_process":
        await agent.close()
        agent = saving_agent()
    agent.approve("c1")
    reply = await agent.resume()
    assert isinstance(reply, OutputMessage) and reply.output == "PAID"
    assert saved == ["paid"] and paid == ["c1"]
    assert fm.call_count == 1  # the model is not asked again


async def test_the_resumed_runs_answer_is_the_message_that_gave_the_output() -> None:
    """The resumed run makes no model call: its answer is the held reply that gave the
    output, as it is for a run that was never held. It was a made-up message with stop
    reason "error" ("The run ended before the model answered"), which the agent's
    `state.error_message` kept and `yiem run` printed nothing for."""
    fm = FauxModel([pay_and_answer()])
    agent = agent_on(fm, None, [])
    await agent.prompt("pay, then tell me who Ann is")
    agent.approve("c1")

    reply = await agent.resume()

    [gave] = [m for m in agent.state.messages if m.role == "assistant"]
    assert (reply.stop_reason, reply.error_message, reply.agent) == ("toolUse", None, "assistant")
    assert reply.content == gave.content and reply.timestamp == gave.timestamp
    assert reply.output == Person(name="Ann", age=31)
    assert agent.state.error_message is None


def test_yiem_run_prints_the_output_given_beside_a_call_it_approved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`yiem run --agent` of an agent file with an `output_schema`: the run it resumed
    after `--yes` ended with the output, and nothing was printed (exit 0, empty stdout):
    the printer looked for the output tool's call among the resumed run's messages."""
    import yiemagent.cli.main as cli_main_module
    from yiemagent.cli.main import main

    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "pay.py").write_text(PAY_TOOL)
    (tmp_path / "person.json").write_text(json.dumps(Person.model_json_schema()))
    team = tmp_path / "team.toml"
    team.write_text('[agents.clerk]\ntools = ["tools"]\noutput_schema = "person.json"\n')
    fm = FauxModel([pay_and_answer()], model_id="held-output")
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args: fm.model)

    assert main(["run", "--agent", str(team), "--yes", "pay"]) == 0

    out, err = capsys.readouterr()
    assert json.loads(out) == {"name": "Ann", "age": 31}, err
    assert "approved (--yes): pay({})" in err


PAY_TOOL = '''
from yiemagent import tool

@tool(requires_approval=True)
def pay() -> str:
    """Pay the bill."""
    return "paid"

def get_tool():
    return pay
'''
