"""An AG-UI client sends back the results it was streamed (DESIGN §18): a `TOOL_CALL_RESULT`
of a sub-agent's call (an agent called as a tool), under its streamed id
`<subagentRunId>/<id>`, becomes a `tool` message of the client's next input. That is the
client's copy, as for the agent's own calls, and is skipped; it was answered 400 ("no call
of a front-end tool awaits that result"), so a client that keeps its messages could not
answer the interrupt that followed. Through Uvicorn on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
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


def helper_reply(context: Context) -> Any:
    """The helper looks the weather up and asks to launch, in one answer; then answers."""
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(faux_text("helper done"))
    city = text_of(last)
    return faux_message(
        faux_tool_call("weather", {"city": city}, id="call_0"),
        faux_tool_call("launch", {"city": city}, id="call_1"),
    )


def lead_reply(context: Context) -> Any:
    last = context.messages[-1]
    if last.role == "toolResult":
        return faux_message(faux_text("lead done"))
    return faux_message(faux_tool_call("helper", {"input": text_of(last)}, id="call_0"))


@pytest.fixture
def served() -> Iterator[tuple[httpx.Client, list[str]]]:
    store = InMemorySessionStore()
    launched: list[str] = []

    async def weather(call_id: str, args: dict[str, Any], *_: Any) -> str:
        return f"sunny in {args['city']}"

    async def launch(call_id: str, args: dict[str, Any], *_: Any) -> str:
        launched.append(args["city"])
        return f"launched {args['city']}"

    helper_fm, lead_fm = FauxModel([helper_reply] * 20), FauxModel([lead_reply] * 20)

    def make_agent(session_id: str) -> Agent[Any]:
        tools = [
            AgentTool("weather", "Weather", "weather", SCHEMA, weather),
            AgentTool("launch", "Launch", "launch", SCHEMA, launch, requires_approval=True),
        ]
        helper = Agent(
            name="helper", model=helper_fm.model, stream_fn=helper_fm.stream_fn, tools=tools
        )
        return Agent(
            name="lead", model=lead_fm.model, stream_fn=lead_fm.stream_fn,
            tools=[helper.as_tool()], session_store=store, session_id=session_id,
        )  # fmt: skip

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client, launched


def run_input(thread: str, run: str, messages: list[Any], **more: Any) -> agui.RunAgentInput:
    """An input with no tools, context or state."""
    return agui.RunAgentInput(
        thread_id=thread, run_id=run, state={}, messages=messages, tools=[], context=[],
        forwarded_props={}, **more,
    )  # fmt: skip


def client_messages(events: list[Any]) -> list[agui.Message]:
    """The messages an AG-UI client keeps from a stream: an assistant message for each
    message a tool call names as its parent, with its calls, and a tool message for each
    result, in the order they came."""
    messages: list[agui.Message] = []
    calls: dict[str, agui.AssistantMessage] = {}
    for event in events:
        if isinstance(event, agui.ToolCallStartEvent):
            parent = calls.get(str(event.parent_message_id))
            if parent is None:
                parent = agui.AssistantMessage(id=str(event.parent_message_id), tool_calls=[])
                calls[parent.id] = parent
                messages.append(parent)
            function = agui.FunctionCall(name=event.tool_call_name, arguments="")
            call = agui.ToolCall(id=event.tool_call_id, function=function)
            parent.tool_calls = [*(parent.tool_calls or []), call]
        elif isinstance(event, agui.ToolCallArgsEvent):
            for parent in calls.values():
                for call in parent.tool_calls or []:
                    if call.id == event.tool_call_id:
                        call.function.arguments += event.delta
        elif isinstance(event, agui.ToolCallResultEvent):
            messages.append(
                agui.ToolMessage(
                    id=event.message_id, tool_call_id=event.tool_call_id, content=event.content
                )
            )
    return messages


def test_a_sub_agents_result_sent_back_with_the_answer_to_its_interrupt(
    served: tuple[httpx.Client, list[str]],
) -> None:
    client, launched = served
    ask = agui.UserMessage(id="u0", content="Oslo")
    first = agui_run(client, run_input("t", "r1", [ask]))
    check_agui_order(first)
    assert isinstance(first[-1], agui.RunFinishedEvent)
    outcome = first[-1].outcome
    assert isinstance(outcome, agui.RunFinishedInterruptOutcome)
    interrupts = outcome.interrupts
    assert [i.reason for i in interrupts] == ["tool_approval"]
    kept = client_messages(first)
    copies = [m for m in kept if isinstance(m, agui.ToolMessage)]
    assert len(copies) == 1 and "/" in copies[0].tool_call_id  # the sub-agent's weather
    assert isinstance(kept[-1], agui.ToolMessage)  # after the last assistant message
    approve = agui.ResumeEntry(interrupt_id=interrupts[0].id, status="resolved")
    resumed = agui_run(client, run_input("t", "r2", [ask, *kept], resume=[approve]))
    check_agui_order(resumed)
    assert isinstance(resumed[-1], agui.RunFinishedEvent)
    assert launched == ["Oslo"]
    texts = "".join(e.delta for e in resumed if isinstance(e, agui.TextMessageContentEvent))
    assert "lead done" in texts


def test_an_unknown_call_answered_is_still_refused(
    served: tuple[httpx.Client, list[str]],
) -> None:
    """Only the client's copies are skipped: a tool message for a call nobody made is a
    400, also one whose id has a slash but is no id this server streams."""
    client, _ = served
    ask = agui.UserMessage(id="u0", content="Oslo")
    for thread, call_id in (("u", "nobody"), ("v", "0123.s1/call_0")):
        agui_run(client, run_input(thread, "r1", [ask]))
        made_up = agui.ToolMessage(id="m", tool_call_id=call_id, content="made up")
        answer = run_input(
            thread, "r2", [ask, agui.AssistantMessage(id="a0", content="ok"), made_up]
        )
        body = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        refused = client.post("/ag-ui", json=body)
        assert refused.status_code == 400, (call_id, refused.text)
        assert call_id in refused.json()["error"]
