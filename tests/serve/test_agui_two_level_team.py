"""AG-UI's sub-agent events for a team two levels deep (DESIGN §17, §18; docs/serve.md
"AG-UI"): the lead asks `mid`, which asks `leaf`, whose `launch` is held for approval.
Each `SUBAGENT_STARTED` names as `parentToolCallId` the call that runs it as it was
streamed, and the leaf's names `mid`'s invocation as its `parentSubagentRunId`, in the
held run and in the run that resumes it; the interrupt names the streamed launch call and
the approved launch runs once. The leaf's invocation was attributed to the top run
(`parentToolCallId` the raw id of a call streamed only with its prefix, no parent
invocation), since a deeper level's events reach the top as they are. And the resumed
run streamed its results under new invocation ids, so the approved call's
`TOOL_CALL_RESULT` named no call the client had. Through Uvicorn on 127.0.0.1."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui

from tests.serve._kit import SCHEMA, serving, text_of
from tests.serve.test_protocols import agui_run, check_agui_order
from yiemagent import Agent, AgentTool, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)


def relay(next_tool: str) -> Any:
    """A reply that passes what it is asked on to `next_tool`, then says its result."""

    def reply(context: Context) -> Any:
        last = context.messages[-1]
        if last.role == "toolResult":
            return faux_message(faux_text(f"{context.system_prompt} {text_of(last)}"))
        key = "city" if next_tool == "launch" else "input"
        return faux_message(faux_tool_call(next_tool, {key: text_of(last)}))

    return reply


def run_input(run_id: str, **fields: Any) -> agui.RunAgentInput:
    given: dict[str, Any] = {"messages": [], "tools": [], "context": [], **fields}
    return agui.RunAgentInput(thread_id="t", run_id=run_id, state={}, forwarded_props={}, **given)


def check_sub_agents(events: list[Any], earlier: Sequence[Any] = ()) -> None:
    """The invocations: mid's run by the lead's call, leaf's by mid's call, each named as
    the client had it streamed (in this run, or in `earlier`, the run this one resumes)."""
    started = [e for e in events if e.type.value == "SUBAGENT_STARTED"]
    assert [e.name for e in started] == ["mid", "leaf"]
    mid, leaf = started
    assert mid.parent_subagent_run_id is None
    assert leaf.parent_subagent_run_id == mid.subagent_run_id
    streamed = {e.tool_call_id for e in [*earlier, *events] if e.type.value == "TOOL_CALL_START"}
    assert {mid.parent_tool_call_id, leaf.parent_tool_call_id} <= streamed


def twice(context: Context) -> Any:
    """The leaf launches what it is asked to, then "venus" too; then says both results."""
    launches = [m for m in context.messages if m.role == "toolResult"]
    if len(launches) == 1:
        return faux_message(faux_tool_call("launch", {"city": "venus"}))
    if launches:
        said = "; ".join(text_of(m) for m in launches)
        return faux_message(faux_text(f"{context.system_prompt} {said}"))
    return faux_message(faux_tool_call("launch", {"city": text_of(context.messages[-1])}))


@contextlib.contextmanager
def team_server(
    leaf: Any, launched: list[str], store: InMemorySessionStore | None = None
) -> Iterator[httpx.Client]:
    """A server of lead -> mid -> leaf on `store` (default a new one), `leaf` the leaf's
    reply; `launch` is held."""
    store = store or InMemorySessionStore()

    async def launch(call_id: str, args: dict[str, Any], *_: Any) -> str:
        launched.append(args["city"])
        return f"launched {args['city']}"

    replies = {"lead": relay("mid"), "mid": relay("leaf"), "leaf": leaf}
    models = {name: FauxModel([reply] * 20) for name, reply in replies.items()}

    def agent(name: str, tools: list[AgentTool], **options: Any) -> Agent[Any]:
        fm = models[name]
        return Agent(
            f"{name}:", fm.model, stream_fn=fm.stream_fn, name=name, tools=tools, **options
        )

    def make_agent(session_id: str) -> Agent[Any]:
        held = AgentTool("launch", "Launch", "launch", SCHEMA, launch, requires_approval=True)
        mid = agent("mid", [agent("leaf", [held]).as_tool()])
        return agent("lead", [mid.as_tool()], session_store=store, session_id=session_id)

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client


def approve(client: httpx.Client, run_id: str, interrupt: Any) -> list[Any]:
    resume = [agui.ResumeEntry(interrupt_id=interrupt.id, status="resolved")]
    return agui_run(client, run_input(run_id, resume=resume))


def test_a_leaf_two_levels_down_is_attributed_to_its_callers_invocation() -> None:
    launched: list[str] = []
    with team_server(relay("launch"), launched) as client:
        user = agui.UserMessage(id="u1", role="user", content="mars")
        held_run = agui_run(client, run_input("r1", messages=[user]))
        check_agui_order(held_run)
        check_sub_agents(held_run)
        [interrupt] = held_run[-1].outcome.interrupts
        launch_start = [
            e
            for e in held_run
            if e.type.value == "TOOL_CALL_START" and e.tool_call_name == "launch"
        ]
        assert [e.tool_call_id for e in launch_start] == [interrupt.tool_call_id]
        approvals = client.get("/v1/sessions/t/approvals").json()["approvals"]
        assert [a["agent_path"] for a in approvals] == [["lead", "mid", "leaf"]]

        resumed = approve(client, "r2", interrupt)

    check_agui_order(resumed)
    check_sub_agents(resumed, held_run)
    started = {e.tool_call_id for e in held_run if e.type.value == "TOOL_CALL_START"}
    results = [e.tool_call_id for e in resumed if e.type.value == "TOOL_CALL_RESULT"]
    assert results[0] == interrupt.tool_call_id  # the approved call's, as streamed
    assert set(results) <= started  # every result names a call the client has
    assert resumed[-1].type.value == "RUN_FINISHED"
    answer = "".join(e.delta for e in resumed if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert answer.endswith("lead: mid: leaf: launched mars")
    assert launched == ["mars"]


def test_a_leaf_held_twice_gets_its_results_under_the_first_runs_ids() -> None:
    """Held again in the run that resumed it, the leaf is resumed by a third run: the
    results of mid's call of it and of the lead's call of mid name the ids the first run
    streamed them under, which the second run never streamed."""
    launched: list[str] = []
    with team_server(twice, launched) as client:
        user = agui.UserMessage(id="u1", role="user", content="mars")
        first = agui_run(client, run_input("r1", messages=[user]))
        [mars] = first[-1].outcome.interrupts
        second = approve(client, "r2", mars)
        [venus] = second[-1].outcome.interrupts
        third = approve(client, "r3", venus)

    for run in (first, second, third):
        check_agui_order(run)
    started = {e.tool_call_id for e in [*first, *second] if e.type.value == "TOOL_CALL_START"}
    results = [e.tool_call_id for e in third if e.type.value == "TOOL_CALL_RESULT"]
    assert results[0] == venus.tool_call_id
    assert len(results) == 3 and set(results) <= started
    assert launched == ["mars", "venus"]
    answer = "".join(e.delta for e in third if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert answer.endswith("lead: mid: leaf: launched mars; launched venus")


def client_messages(user: agui.UserMessage, events: list[Any]) -> list[Any]:
    """The conversation as an AG-UI client builds it from a run's stream: the user's
    message and an assistant message per `parentMessageId` holding its streamed calls."""
    calls: dict[str, list[str]] = {}
    for event in events:
        if event.type.value == "TOOL_CALL_START":
            calls[event.tool_call_id] = [event.tool_call_name, "", event.parent_message_id]
        elif event.type.value == "TOOL_CALL_ARGS":
            calls[event.tool_call_id][1] += event.delta
    by_message: dict[str, list[agui.ToolCall]] = {}
    for call_id, (name, arguments, message_id) in calls.items():
        function = agui.FunctionCall(name=name, arguments=arguments)
        made = agui.ToolCall(id=call_id, type="function", function=function)
        by_message.setdefault(message_id, []).append(made)
    return [
        user,
        *(
            agui.AssistantMessage(id=message_id, role="assistant", tool_calls=made)
            for message_id, made in by_message.items()
        ),
    ]


def test_after_a_restart_the_results_name_the_ids_of_the_clients_messages() -> None:
    """The server that held the call is gone (restarted, or another replica answers): the
    ids it streamed are read from the client's messages, which hold its calls."""
    store = InMemorySessionStore()
    launched: list[str] = []
    user = agui.UserMessage(id="u1", role="user", content="mars")
    with team_server(relay("launch"), launched, store) as client:
        held_run = agui_run(client, run_input("r1", messages=[user]))
    [interrupt] = held_run[-1].outcome.interrupts
    messages = client_messages(user, held_run)

    with team_server(relay("launch"), launched, store) as client:
        resume = [agui.ResumeEntry(interrupt_id=interrupt.id, status="resolved")]
        resumed = agui_run(client, run_input("r2", messages=messages, resume=resume))

    check_agui_order(resumed)
    started = {e.tool_call_id for e in held_run if e.type.value == "TOOL_CALL_START"}
    results = [e.tool_call_id for e in resumed if e.type.value == "TOOL_CALL_RESULT"]
    assert results[0] == interrupt.tool_call_id
    assert len(results) == 3 and set(results) <= started
    assert launched == ["mars"]
