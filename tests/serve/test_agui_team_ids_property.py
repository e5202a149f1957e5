"""Property (DESIGN §17, §18; docs/serve.md "AG-UI"): a chain of agents 1 to 3 levels deep
whose last one holds `launch` for approval 1 to 3 times in a row, each held call approved
by the next `RunAgentInput`, with ids of their own or numbered `call_0` in every reply (as
many servers give them). Over the thread's runs: each stream keeps AG-UI's order, each
`TOOL_CALL_RESULT` names a call some run of the thread streamed a `TOOL_CALL_START` for,
each interrupt names a streamed call, a sub-agent's `parentToolCallId` too, and each launch
runs exactly once. Through one Uvicorn server on 127.0.0.1, a thread per example."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.serve._kit import SCHEMA, serving, text_of
from tests.serve.test_protocols import agui_run, check_agui_order
from yiemagent import Agent, AgentTool, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(600)

DEEPEST = 3
_THREADS = itertools.count()


def reply(context: Context) -> Any:
    """Agent `L<n>` of a chain, told "DEPTH HOLDS NUMBERED" (its input, passed down): above
    the last level it asks `L<n+1>`, then says the result; the last one launches `c0`,
    `c1`, … one call a reply, HOLDS of them, then says "done"."""
    level = int(context.system_prompt[1:])
    asked = text_of(context.messages[0])
    depth, holds, numbered = (int(word) for word in asked.split())
    results = [m for m in context.messages if m.role == "toolResult"]
    call_id = "call_0" if numbered else None
    if level < depth:
        if results:
            return faux_message(faux_text(f"L{level}: {text_of(results[-1])}"))
        return faux_message(faux_tool_call(f"L{level + 1}", {"input": asked}, id=call_id))
    if len(results) < holds:
        city = f"c{len(results)}"
        return faux_message(faux_tool_call("launch", {"city": city}, id=call_id))
    return faux_message(faux_text("done"))


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[httpx.Client, list[str]]]:
    store = InMemorySessionStore()
    launched: list[str] = []
    fm = FauxModel([reply] * 100_000)

    async def launch(call_id: str, args: dict[str, Any], *_: Any) -> str:
        launched.append(args["city"])
        return f"launched {args['city']}"

    def make_agent(session_id: str) -> Agent[Any]:
        held = AgentTool("launch", "Launch", "launch", SCHEMA, launch, requires_approval=True)
        below: list[AgentTool] = []
        for level in range(DEEPEST, -1, -1):
            options: dict[str, Any] = {}
            if level == 0:
                options = {"session_store": store, "session_id": session_id}
            agent = Agent(
                f"L{level}", fm.model, stream_fn=fm.stream_fn, name=f"L{level}",
                tools=[held, *below], **options,
            )  # fmt: skip
            below = [agent.as_tool()]
        return agent

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client, launched


def run_input(thread: str, run: int, **fields: Any) -> agui.RunAgentInput:
    given: dict[str, Any] = {"messages": [], "tools": [], "context": [], **fields}
    return agui.RunAgentInput(
        thread_id=thread, run_id=f"r{run}", state={}, forwarded_props={}, **given
    )


def interrupts_of(events: list[Any]) -> agui.RunFinishedInterruptOutcome | None:
    """The interrupt outcome a run's stream ends with, if it ends with one."""
    outcome = getattr(events[-1], "outcome", None)
    return outcome if isinstance(outcome, agui.RunFinishedInterruptOutcome) else None


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(depth=st.integers(1, DEEPEST), holds=st.integers(1, 3), numbered=st.booleans())
def test_every_result_names_a_streamed_call_and_each_launch_runs_once(
    server: tuple[httpx.Client, list[str]], depth: int, holds: int, numbered: bool
) -> None:
    client, launched = server
    launched.clear()
    thread = f"t{next(_THREADS)}"
    user = agui.UserMessage(id="u", role="user", content=f"{depth} {holds} {int(numbered)}")
    runs = [agui_run(client, run_input(thread, 1, messages=[user]))]
    while (held := interrupts_of(runs[-1])) is not None:
        assert len(runs) <= holds, "more interrupts than held calls"
        [interrupt] = held.interrupts
        resume = [agui.ResumeEntry(interrupt_id=interrupt.id, status="resolved")]
        runs.append(agui_run(client, run_input(thread, len(runs) + 1, resume=resume)))

    assert len(runs) == holds + 1
    started: set[str] = set()
    for events in runs:
        check_agui_order(events)
        started |= {e.tool_call_id for e in events if e.type.value == "TOOL_CALL_START"}
        for event in events:
            if event.type.value == "TOOL_CALL_RESULT":
                assert event.tool_call_id in started, event
            elif event.type.value == "SUBAGENT_STARTED":
                assert event.parent_tool_call_id in started, event
        held = interrupts_of(events)
        if held is not None:
            assert {i.tool_call_id for i in held.interrupts} <= started
    assert launched == [f"c{i}" for i in range(holds)]
    answer = "".join(e.delta for e in runs[-1] if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert answer.endswith(" ".join(f"L{level}:" for level in range(depth)) + " done")
