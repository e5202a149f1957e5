"""AG-UI front-end tools (the client's own tools, CopilotKit's frontend actions) through a
real Uvicorn server: a `RunAgentInput`'s `tools` are offered to the model beside the
agent's; a call of one is streamed without a result and held, the run finishes, and the
client's next input answers it with a `tool` message; the agent goes on with that result.
After each step the stored session is either what it was or the new state, never half.

Before, any `tools` was a 400 ("front-end tools are not supported")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui
from pydantic import BaseModel

from tests.serve._kit import Tools, faux_agents, serving, sse, text_of
from tests.serve.test_protocols import EVENT, agui_input, check_agui_order
from yiemagent import Agent, AssistantMessage, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import OutputSpec, message_to_dict

pytestmark = pytest.mark.timeout(120)

PAINT = agui.Tool(
    name="paint",
    description="paint the page's background",
    parameters={
        "type": "object",
        "properties": {"color": {"type": "string"}},
        "required": ["color"],
    },
)


class Verdict(BaseModel):
    verdict: str


def brain(context: Context) -> AssistantMessage:
    """ "paint C" calls the front-end `paint`; "both C" calls `weather` and `paint` in one
    reply; "twice C D" calls `paint` twice in one reply; "launchpaint C" calls `launch`
    (held for approval) and `paint`; after tool
    results it answers with their texts (error results marked); else it echoes."""
    last = context.messages[-1]
    if getattr(last, "role", None) == "toolResult":
        results = []
        for message in reversed(context.messages):
            if getattr(message, "role", None) != "toolResult":
                break
            mark = "error " if getattr(message, "is_error", False) else ""
            results.append(mark + text_of(message))
        return faux_message(faux_text("Done: " + "; ".join(reversed(results))))
    words = text_of(last).split()
    if words and words[0] == "paint":
        return faux_message(faux_tool_call("paint", {"color": words[1]}))
    if words and words[0] == "both":
        return faux_message(
            faux_tool_call("weather", {"city": words[1]}),
            faux_tool_call("paint", {"color": words[1]}),
        )
    if words and words[0] == "twice":
        return faux_message(*(faux_tool_call("paint", {"color": color}) for color in words[1:3]))
    if words and words[0] == "launchpaint":
        return faux_message(
            faux_tool_call("launch", {"city": words[1]}),
            faux_tool_call("paint", {"color": words[1]}),
        )
    return faux_message(faux_text("echo: " + " ".join(words)))


class Server:
    """A server of faux agents (`brain`) on a SQLite session store in a file."""

    def __init__(self, url: str, store: SqliteSessionStore, fm: FauxModel, tools: Tools):
        self.client = httpx.Client(base_url=url, timeout=60)
        self.store = store
        self.fm = fm
        self.tools = tools

    def post(self, run_input: agui.RunAgentInput) -> httpx.Response:
        body = run_input.model_dump(mode="json", by_alias=True, exclude_none=True)
        return self.client.post("/ag-ui", json=body)

    def run(self, run_input: agui.RunAgentInput) -> list[Any]:
        body = run_input.model_dump(mode="json", by_alias=True, exclude_none=True)
        with self.client.stream("POST", "/ag-ui", json=body) as response:
            assert response.status_code == 200, response.read()
            events = [EVENT.validate_python(data) for _, data in sse(response)]
        check_agui_order(events)
        return events

    def on_disk(self, thread: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The session as stored: its messages, and the calls it holds."""
        messages = [message_to_dict(m) for m in self.store.load(thread)]
        for message in messages:
            message.pop("timestamp", None)
        held = self.client.get(f"/v1/sessions/{thread}/approvals")
        assert held.status_code == 200, held.text
        return messages, held.json()["approvals"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    tools = Tools()
    fm = FauxModel([brain] * 10_000, chunk_size=8)
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        make_agent = faux_agents(store, tools, fm=fm)

        with serving(create_app(make_agent, session_store=store)) as url:
            server = Server(url, store, fm, tools)
            yield server
            server.client.close()


def ask(thread: str, run: str, *messages: agui.Message | str, **update: Any) -> agui.RunAgentInput:
    """A `RunAgentInput` offering `paint` (unless `tools` is given)."""
    return agui_input(thread, run, *messages).model_copy(update={"tools": [PAINT], **update})


def calls_of(events: list[Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Tool call id -> (tool name, arguments as the streamed `TOOL_CALL_ARGS` say them)."""
    names = {e.tool_call_id: e.tool_call_name for e in events if e.type == "TOOL_CALL_START"}
    args = {i: "" for i in names}
    for event in events:
        if event.type == "TOOL_CALL_ARGS":
            args[event.tool_call_id] += event.delta
    return {i: (names[i], json.loads(args[i])) for i in names}


def assistant_with(calls: dict[str, tuple[str, dict[str, Any]]]) -> agui.AssistantMessage:
    """The assistant message a client builds from the streamed calls."""
    return agui.AssistantMessage(
        id="a1",
        tool_calls=[
            agui.ToolCall(
                id=call_id, function=agui.FunctionCall(name=name, arguments=json.dumps(args))
            )
            for call_id, (name, args) in calls.items()
        ],
    )


def answer(call_id: str, content: str, **more: Any) -> agui.ToolMessage:
    return agui.ToolMessage(id=f"t-{call_id}", tool_call_id=call_id, content=content, **more)


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


def answer_text(events: list[Any]) -> str:
    return "".join(e.delta for e in events if e.type == "TEXT_MESSAGE_CONTENT")


def test_a_front_end_call_is_streamed_held_answered_by_the_client_and_used(
    server: Server,
) -> None:
    first = server.run(ask("th", "r1", "paint teal"))
    [(call_id, call)] = calls_of(first).items()
    assert call == ("paint", {"color": "teal"})
    assert not [e for e in first if e.type == "TOOL_CALL_RESULT"]  # the client runs it
    finished = first[-1]
    assert isinstance(finished, agui.RunFinishedEvent)
    assert finished.outcome is None or finished.outcome.type == "success"  # no interrupt
    offered = [tool.name for tool in server.fm.contexts[-1].tools or []]
    assert offered == ["weather", "launch", "paint"]  # beside the agent's own
    messages, held = server.on_disk("th")
    assert roles(messages) == ["user", "assistant"]
    assert [(h["tool_call_id"], h["tool_name"]) for h in held] == [(call_id, "paint")]

    user = agui.UserMessage(id="u0", content="paint teal")
    calls = calls_of(first)
    second = server.run(
        ask("th", "r2", user, assistant_with(calls), answer(call_id, "painted it teal"))
    )
    assert not [e for e in second if e.type == "TOOL_CALL_RESULT"]  # its own result: not echoed
    assert answer_text(second) == "Done: painted it teal"
    assert second[-1].outcome is None or second[-1].outcome.type == "success"
    messages, held = server.on_disk("th")
    assert roles(messages) == ["user", "assistant", "toolResult", "assistant"]
    result = messages[2]
    assert result["tool_call_id"] == call_id and not result["is_error"]
    assert result["content"] == [{"type": "text", "text": "painted it teal"}]
    assert held == []

    # the same answer again: the call is answered already, a 400; nothing changes
    again = server.post(
        ask("th", "r3", user, assistant_with(calls), answer(call_id, "painted it red"))
    )
    assert again.status_code == 400, again.text
    assert "answered already" in again.json()["error"]
    assert server.on_disk("th") == (messages, held)

    # the tool was this run's only: a run that does not offer it does not show it
    server.run(agui_input("th", "r4", "hello"))
    assert [tool.name for tool in server.fm.contexts[-1].tools or []] == ["weather", "launch"]


def test_a_parallel_batch_runs_the_server_tool_and_holds_the_front_end_one(
    server: Server,
) -> None:
    first = server.run(ask("par", "r1", "both Oslo"))
    calls = calls_of(first)
    by_name = {name: call_id for call_id, (name, _) in calls.items()}
    assert set(by_name) == {"weather", "paint"}
    results = [(e.tool_call_id, e.content) for e in first if e.type == "TOOL_CALL_RESULT"]
    assert results == [(by_name["weather"], "sunny in Oslo")]
    assert first[-1].outcome is None or first[-1].outcome.type == "success"
    messages, held = server.on_disk("par")
    assert roles(messages) == ["user", "assistant", "toolResult"]
    assert messages[2]["tool_call_id"] == by_name["weather"]
    assert [h["tool_call_id"] for h in held] == [by_name["paint"]]

    weather_result = answer(by_name["weather"], "sunny in Oslo")  # an old one: not an answer
    history: list[agui.Message] = [
        agui.UserMessage(id="u0", content="both Oslo"),
        assistant_with(calls),
    ]
    second = server.run(
        ask("par", "r2", *history, weather_result, answer(by_name["paint"], "painted Oslo"))
    )
    assert answer_text(second) == "Done: sunny in Oslo; painted Oslo"
    messages, held = server.on_disk("par")
    assert roles(messages) == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert [m["tool_call_id"] for m in messages[2:4]] == [by_name["weather"], by_name["paint"]]
    assert held == []


def test_two_front_end_calls_of_one_reply_are_both_streamed_held_and_answered(
    server: Server,
) -> None:
    # Parallel front-end calls: only the first was streamed and the run halted there,
    # and the client got "forwarded" results for calls it was meant to run.
    first = server.run(ask("two", "r1", "twice teal red"))
    calls = calls_of(first)
    assert list(calls.values()) == [("paint", {"color": "teal"}), ("paint", {"color": "red"})]
    assert not [e for e in first if e.type == "TOOL_CALL_RESULT"]
    messages, held = server.on_disk("two")
    assert roles(messages) == ["user", "assistant"]
    assert sorted(h["tool_call_id"] for h in held) == sorted(calls)

    history: list[agui.Message] = [
        agui.UserMessage(id="u0", content="twice teal red"),
        assistant_with(calls),
    ]
    answers = [answer(call_id, f"painted {args['color']}") for call_id, (_, args) in calls.items()]
    second = server.run(ask("two", "r2", *history, *answers))
    assert answer_text(second) == "Done: painted teal; painted red"
    messages, held = server.on_disk("two")
    assert roles(messages) == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert held == []


def test_a_server_approval_and_a_front_end_call_are_answered_in_one_input(
    server: Server,
) -> None:
    first = server.run(ask("mix", "r1", "launchpaint Vostok"))
    calls = calls_of(first)
    by_name = {name: call_id for call_id, (name, _) in calls.items()}
    outcome = first[-1].outcome
    assert isinstance(outcome, agui.RunFinishedInterruptOutcome)  # for the server's call only
    assert [i.tool_call_id for i in outcome.interrupts] == [by_name["launch"]]

    history: list[agui.Message] = [
        agui.UserMessage(id="u0", content="launchpaint Vostok"),
        assistant_with(calls),
    ]
    paint_answer = answer(by_name["paint"], "painted")
    only_paint = server.post(ask("mix", "r2", *history, paint_answer))
    assert only_paint.status_code == 409, only_paint.text  # launch still needs a decision
    assert by_name["launch"] in only_paint.json()["error"]
    assert roles(server.on_disk("mix")[0]) == ["user", "assistant"]
    assert all(h["decision"] is None for h in server.on_disk("mix")[1])  # nothing recorded
    approve = agui.ResumeEntry(interrupt_id=by_name["launch"], status="resolved")
    second = server.run(ask("mix", "r3", *history, paint_answer, resume=[approve]))
    assert answer_text(second) == "Done: launched Vostok; painted"
    assert server.tools.launched == ["Vostok"]
    messages, held = server.on_disk("mix")
    assert roles(messages) == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert held == []


def test_a_new_user_message_answers_a_pending_call_with_an_error(server: Server) -> None:
    first = server.run(ask("new", "r1", "paint teal"))
    [call_id] = calls_of(first)
    history: list[agui.Message] = [
        agui.UserMessage(id="u0", content="paint teal"),
        assistant_with(calls_of(first)),
    ]
    second = server.run(ask("new", "r2", *history, agui.UserMessage(id="u1", content="hi")))
    results = [(e.tool_call_id, e.content) for e in second if e.type == "TOOL_CALL_RESULT"]
    assert results == [(call_id, "the client did not run the tool")]
    assert answer_text(second) == "echo: hi"  # the model read the message after the result
    messages, held = server.on_disk("new")
    assert roles(messages) == ["user", "assistant", "toolResult", "user", "assistant"]
    assert messages[2]["is_error"] and messages[2]["tool_call_id"] == call_id
    assert messages[2]["content"][0]["text"] == "the client did not run the tool"
    assert held == []


def test_a_client_error_is_an_error_result(server: Server) -> None:
    first = server.run(ask("err", "r1", "paint teal"))
    [call_id] = calls_of(first)
    history: list[agui.Message] = [
        agui.UserMessage(id="u0", content="paint teal"),
        assistant_with(calls_of(first)),
    ]
    failed = answer(call_id, "", error="no such colour")
    second = server.run(ask("err", "r2", *history, failed))
    assert answer_text(second) == "Done: error no such colour"
    messages, _ = server.on_disk("err")
    assert messages[2]["is_error"]


def test_bad_front_end_tools_and_answers_are_a_400_and_change_nothing(server: Server) -> None:
    def refused(run_input: agui.RunAgentInput, says: str) -> None:
        response = server.post(run_input)
        assert response.status_code == 400, response.text
        assert says in response.json()["error"]

    weather = agui.Tool(name="weather", description="mine", parameters={"type": "object"})
    refused(ask("bad", "r", "hi", tools=[weather]), "the agent has a tool of that name")
    output = agui.Tool(name="final_result", description="x", parameters={"type": "object"})
    refused(ask("bad", "r", "hi", tools=[output]), "the agent has a tool of that name")
    refused(ask("bad", "r", "hi", tools=[PAINT, PAINT]), "two tools of that name")
    named = agui.Tool(name="paint it", description="x", parameters={"type": "object"})
    refused(ask("bad", "r", "hi", tools=[named]), "front-end tool 'paint it'")
    for schema in ({"type": "string"}, {"type": 5}, None, ["object"]):
        tool = agui.Tool(name="p", description="x", parameters=schema)
        refused(ask("bad", "r", "hi", tools=[tool]), "front-end tool 'p'")
    assert server.store.list_sessions() == []
    assert server.fm.call_count == 0

    first = server.run(ask("bad", "r1", "paint teal"))
    [call_id] = calls_of(first)
    before = server.on_disk("bad")
    history: list[agui.Message] = [
        agui.UserMessage(id="u0", content="paint teal"),
        assistant_with(calls_of(first)),
    ]
    refused(ask("bad", "r2", *history, answer("call-nobody-made", "x")), "answered already")
    refused(
        ask("bad", "r2", *history, answer(call_id, "x"), answer(call_id, "y")),
        "two tool messages answer",
    )
    refused(ask("bad", "r2", *history, answer(call_id, "x"), tools=[]), "list it in")
    empty = agui.UserMessage(id="u1", content="")
    refused(ask("bad", "r2", *history, answer(call_id, "x"), empty), "with some content")
    assert server.on_disk("bad") == before
    calls = server.fm.call_count
    done = server.run(ask("bad", "r3", *history, answer(call_id, "painted")))  # still works
    assert answer_text(done) == "Done: painted" and server.fm.call_count == calls + 1


def test_a_history_seeding_a_new_thread_keeps_its_tool_messages_out(server: Server) -> None:
    """A client that starts a thread with a conversation from elsewhere, whose last
    assistant message made calls answered by tool messages: those are its copies (the new
    session has no such call), not answers to a 400; the history seeds the session as
    before front-end tools."""
    calls = {"call-elsewhere": ("weather", {"city": "Rome"})}
    history: list[agui.Message] = [
        agui.UserMessage(id="u0", content="weather Rome"),
        assistant_with(calls),
    ]
    elsewhere = answer("call-elsewhere", "sunny in Rome")
    events = server.run(
        ask("seed", "r1", *history, elsewhere, agui.UserMessage(id="u1", content="hi"))
    )
    assert answer_text(events) == "echo: hi"
    messages, held = server.on_disk("seed")
    assert roles(messages) == ["user", "user", "assistant"] and held == []


def test_a_front_end_tool_named_as_a_transfer_tool_is_a_400(tmp_path: Path) -> None:
    """The agent's handoff tools are its tools too: a front-end tool of that name would
    make the run fail on two tools of one name, after the request was taken."""
    fm = FauxModel([brain] * 10, chunk_size=8)
    with SqliteSessionStore(tmp_path / "sessions.db") as store:

        def make_agent(session_id: str) -> Agent[Any]:
            billing = Agent(name="billing", model=fm.model, stream_fn=fm.stream_fn)
            return Agent(
                model=fm.model,
                stream_fn=fm.stream_fn,
                handoffs=[billing],
                session_store=store,
                session_id=session_id,
            )

        transfer = agui.Tool(
            name="transfer_to_billing", description="x", parameters={"type": "object"}
        )
        run_input = ask("team", "r", "hi", tools=[transfer])
        body = run_input.model_dump(mode="json", by_alias=True, exclude_none=True)
        with (
            serving(create_app(make_agent, session_store=store)) as url,
            httpx.Client(base_url=url) as client,
        ):
            refused = client.post("/ag-ui", json=body)
        assert refused.status_code == 400, refused.text
        assert "the agent has a tool of that name" in refused.json()["error"]
        assert store.list_sessions() == [] and fm.call_count == 0


def test_a_front_end_call_held_on_one_server_is_answered_through_another(
    tmp_path: Path,
) -> None:
    """The held call is in the session store, as a held approval is: a second server on the
    same store takes the client's answer (no state lives in the first server's memory)."""
    tools = Tools()
    fm = FauxModel([brain] * 10, chunk_size=8)
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        make_agent = faux_agents(store, tools, fm=fm)

        with (
            serving(create_app(make_agent, session_store=store)) as first_url,
            serving(create_app(make_agent, session_store=store)) as second_url,
        ):
            one, other = Server(first_url, store, fm, tools), Server(second_url, store, fm, tools)
            first = one.run(ask("two", "r1", "paint teal"))
            calls = calls_of(first)
            [call_id] = calls
            history: list[agui.Message] = [
                agui.UserMessage(id="u0", content="paint teal"),
                assistant_with(calls),
            ]
            answered = other.run(ask("two", "r2", *history, answer(call_id, "painted")))
            assert answer_text(answered) == "Done: painted"
            messages, held = other.on_disk("two")
            one.client.close()
            other.client.close()
    assert roles(messages) == ["user", "assistant", "toolResult", "assistant"] and held == []


def test_a_front_end_tool_named_as_a_renamed_output_tool_is_a_400(tmp_path: Path) -> None:
    """`OutputSpec(T, name=...)` renames the output tool: a front-end tool of that name
    is refused as one named `final_result` is."""
    fm = FauxModel([brain] * 10, chunk_size=8)
    with SqliteSessionStore(tmp_path / "sessions.db") as store:

        def make_agent(session_id: str) -> Agent[Any]:
            return Agent(
                model=fm.model,
                stream_fn=fm.stream_fn,
                output_type=OutputSpec(Verdict, name="submit_verdict"),
                session_store=store,
                session_id=session_id,
            )

        submit = agui.Tool(name="submit_verdict", description="x", parameters={"type": "object"})
        run_input = ask("renamed", "r", "hi", tools=[submit])
        body = run_input.model_dump(mode="json", by_alias=True, exclude_none=True)
        with (
            serving(create_app(make_agent, session_store=store)) as url,
            httpx.Client(base_url=url) as client,
        ):
            refused = client.post("/ag-ui", json=body)
        assert refused.status_code == 400, refused.text
        assert "'submit_verdict'" in refused.json()["error"]
        assert store.list_sessions() == [] and fm.call_count == 0
