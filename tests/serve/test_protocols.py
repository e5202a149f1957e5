"""The protocols front ends speak (DESIGN §18), through a real Uvicorn server: the official
`openai` client against `/v1/chat/completions` (streamed and not), AG-UI events checked
against the `ag-ui-protocol` package's models, and the Vercel AI SDK UI message stream
checked against the chunk shapes of the AI SDK's `uiMessageChunkSchema`."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui
from openai import APIError, OpenAI
from openai.types.chat import ChatCompletionContentPartParam, ChatCompletionMessageParam
from pydantic import TypeAdapter

from tests.serve._kit import error_of, faux_server, run_events, sse
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import AssistantMessage, DocumentContent, ImageContent, UserMessage

pytestmark = pytest.mark.timeout(120)


# ── OpenAI Chat Completions ─────────────────────────────────────────────────


def test_the_openai_client_says_why_a_request_was_refused() -> None:
    """A 400 or 401 from the OpenAI routes was `{"error": text}`, which the OpenAI SDK does
    not read: its exception said only "Error code: 400". They now answer with OpenAI's
    error object, so the reason is in the exception the client raises."""
    import openai

    store = InMemorySessionStore()
    with faux_server(store, token="t0k") as (url, _):
        client = OpenAI(base_url=f"{url}/v1", api_key="t0k", max_retries=0)
        bad_image: ChatCompletionContentPartParam = {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64,!!!"},
        }
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model="yiem-agent", messages=[{"role": "user", "content": [bad_image]}]
            )
        assert "base64" in str(refused.value) and refused.value.type == "invalid_request_error"
        stranger = OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError, match="missing or wrong token"):
            stranger.models.list()
    assert store.list_sessions() == []


def test_more_than_one_choice_is_refused_not_answered_with_one() -> None:
    """llama-cpp-python #1906: a server that ignores `n` answers `n=2` with one choice, and
    the client's `choices[1]` fails far from the cause. A run is one answer: `n` other than
    1 is a 400 saying so, before any run starts; `n=1` is answered."""
    import openai

    store = InMemorySessionStore()
    with faux_server(store) as (url, _):
        client = OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
        ask: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
        for n in (2, 0, True):
            with pytest.raises(openai.BadRequestError, match='"n" must be 1'):
                client.chat.completions.create(model="m", messages=ask, n=n)
        assert store.list_sessions() == []
        reply = client.chat.completions.create(model="m", messages=ask, n=1)
        assert [c.message.content for c in reply.choices] == ["echo: hi"]


def test_a_response_format_other_than_text_is_refused_not_ignored() -> None:
    """webai-at-home #191 (a server that accepts `response_format` and answers in prose):
    a client asking for JSON got text, and failed when it parsed it. `json_object` and
    `json_schema` are a 400 that says where the answer's shape is set; `text` is answered."""
    import openai

    store = InMemorySessionStore()
    with faux_server(store) as (url, _):
        client = OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
        ask: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
        schema = {"name": "s", "schema": {"type": "object"}}
        for shape in ({"type": "json_object"}, {"type": "json_schema", "json_schema": schema}):
            with pytest.raises(openai.BadRequestError, match="output type"):
                client.chat.completions.create(model="m", messages=ask, response_format=shape)  # type: ignore[call-overload]
        assert store.list_sessions() == []
        reply = client.chat.completions.create(
            model="m", messages=ask, response_format={"type": "text"}
        )
        assert reply.choices[0].message.content == "echo: hi"


def test_the_openai_client_uses_the_agent_as_a_model() -> None:
    store = InMemorySessionStore()
    with faux_server(store, token="t0k") as (url, _):
        client = OpenAI(base_url=f"{url}/v1", api_key="t0k", max_retries=0)
        assert [m.id for m in client.models.list()] == ["yiem-agent"]
        raw = client.chat.completions.with_raw_response.create(
            model="yiem-agent",
            messages=[{"role": "user", "content": "weather Oslo Lima"}],
            extra_headers={"X-Session-Id": "trip"},
        )
        reply = raw.parse()
        assert reply.choices[0].message.content == "Done: sunny in Oslo; sunny in Lima"
        assert reply.choices[0].finish_reason == "stop"
        assert reply.object == "chat.completion" and reply.model == "yiem-agent"
        session = raw.headers["x-session-id"]
        assert session == "trip"
        assert [m.role for m in store.load(session)] == [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant",
        ]
        # the session continues under its header; the server's transcript is the truth
        again = client.chat.completions.create(
            model="any",
            messages=[{"role": "user", "content": "thanks"}],
            extra_headers={"X-Session-Id": session},
        )
        assert again.choices[0].message.content == "echo: thanks"
        assert len(store.load(session)) == 7

        denied = OpenAI(base_url=f"{url}/v1", api_key="wrong", max_retries=0)
        with pytest.raises(APIError) as caught:
            denied.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert getattr(caught.value, "status_code", None) == 401


def test_streamed_completions_and_a_seeded_history() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _):
        client = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        stream = client.chat.completions.create(
            model="yiem-agent",
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": [{"type": "text", "text": "weather Rome"}]},
            ],
            stream=True,
            stream_options={"include_usage": True},
            extra_headers={"X-Session-Id": "seeded"},
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "Done: sunny in Rome"
        assert chunks[0].choices[0].delta.role == "assistant"
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
        assert finishes[-1] == "stop" and finishes.count("stop") == 1
        assert chunks[-1].choices == [] and chunks[-1].usage is not None
        assert len({c.id for c in chunks}) == 1
        assert store.list_sessions() == ["seeded"]
        stored = store.load("seeded")
        assert isinstance(stored[0], UserMessage) and isinstance(stored[1], AssistantMessage)
        assert stored[1].text == "hello" and len(stored) == 6

        with pytest.raises(APIError):  # the last message must be the user's
            client.chat.completions.create(
                model="m", messages=[{"role": "assistant", "content": "x"}]
            )


def test_a_held_call_is_named_in_the_answer() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools):
        client = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "launch Soyuz"}]
        )
        [choice] = raw.parse().choices
        content = choice.message.content or ""
        session = raw.headers["x-session-id"]
        assert "await approval: launch(" in content and f"/v1/sessions/{session}/" in content
        # not "stop": the content is no answer, the run waits on the calls it made
        assert (choice.finish_reason, choice.message.tool_calls) == ("tool_calls", None)
        assert tools.launched == []
        # the request named no session, but its held call waits there for a decision
        assert store.list_sessions() == [session]
        chunks = list(
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "launch Soyuz"}], stream=True
            )
        )
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
        assert [f for f in finishes if f] == ["tool_calls"]
        assert "await approval: launch(" in "".join(
            c.choices[0].delta.content or "" for c in chunks if c.choices
        )
        assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)


def test_a_request_that_names_no_session_leaves_none_in_the_store() -> None:
    """Chat Completions is stateless: each client sends the whole conversation. A request
    without `X-Session-Id` stored a session of its own that nothing ever removed."""
    store = InMemorySessionStore()
    with faux_server(store) as (url, _):
        client = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        history: list[ChatCompletionMessageParam] = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "weather Oslo"},
        ]
        raw = client.chat.completions.with_raw_response.create(model="m", messages=history)
        assert raw.parse().choices[0].message.content == "Done: sunny in Oslo"
        session = raw.headers["x-session-id"]  # the run's, as long as it ran
        assert store.list_sessions() == [] and store.load(session) == []
        stream = client.chat.completions.create(model="m", messages=history, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert text == "Done: sunny in Oslo"
        assert store.list_sessions() == []


# ── AG-UI ───────────────────────────────────────────────────────────────────

EVENT = TypeAdapter(agui.Event)


def agui_input(
    thread_id: str,
    run_id: str,
    *messages: agui.Message | str,
    resume: list[agui.ResumeEntry] | None = None,
    context: list[agui.Context] | None = None,
) -> agui.RunAgentInput:
    """A `RunAgentInput` with no tools or state (what most clients send); a text message
    is a user message."""
    return agui.RunAgentInput(
        thread_id=thread_id,
        run_id=run_id,
        messages=[
            agui.UserMessage(id=f"u{i}", content=m) if isinstance(m, str) else m
            for i, m in enumerate(messages)
        ],
        resume=resume,
        context=context or [],
        tools=[],
        state={},
        forwarded_props={},
    )


def agui_body(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """`agui_input(...)` as the JSON body a client posts."""
    return agui_input(*args, **kwargs).model_dump(mode="json", by_alias=True, exclude_none=True)


def agui_run(client: httpx.Client, run_input: agui.RunAgentInput) -> list[Any]:
    body = run_input.model_dump(mode="json", by_alias=True, exclude_none=True)
    with client.stream("POST", "/ag-ui", json=body) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return [EVENT.validate_python(data) for _, data in sse(response)]


def check_agui_order(events: list[Any]) -> None:
    """The protocol's ordering rules: the run opens and closes once; a text message is
    start, content…, end; a tool call is start, args…, end, then at most one result."""
    kinds = [e.type.value for e in events]
    assert kinds[0] == "RUN_STARTED" and kinds.count("RUN_STARTED") == 1
    assert kinds[-1] in ("RUN_FINISHED", "RUN_ERROR")
    open_text: set[str] = set()
    calls: dict[str, str] = {}
    for event in events[1:-1]:
        kind = event.type.value
        if kind == "TEXT_MESSAGE_START":
            assert event.message_id not in open_text
            open_text.add(event.message_id)
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert event.message_id in open_text and event.delta
        elif kind == "TEXT_MESSAGE_END":
            open_text.remove(event.message_id)
        elif kind == "TOOL_CALL_START":
            assert event.tool_call_id not in calls
            calls[event.tool_call_id] = "open"
        elif kind == "TOOL_CALL_ARGS":
            assert calls[event.tool_call_id] == "open"
        elif kind == "TOOL_CALL_END":
            assert calls[event.tool_call_id] == "open"
            calls[event.tool_call_id] = "ended"
        elif kind == "TOOL_CALL_RESULT":
            assert calls.get(event.tool_call_id, "ended") == "ended"
            calls[event.tool_call_id] = "answered"
    assert not open_text
    assert all(state != "open" for state in calls.values())


def test_agui_events_follow_the_protocol() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        events = agui_run(client, agui_input("thread-1", "run-1", "weather Oslo Lima"))
        check_agui_order(events)
        assert (events[0].thread_id, events[0].run_id) == ("thread-1", "run-1")
        starts = [e for e in events if isinstance(e, agui.ToolCallStartEvent)]
        assert [s.tool_call_name for s in starts] == ["weather", "weather"]
        args = "".join(e.delta for e in events if isinstance(e, agui.ToolCallArgsEvent))
        assert '"city":"Oslo"' in args.replace(" ", "")
        results = [e.content for e in events if isinstance(e, agui.ToolCallResultEvent)]
        assert sorted(results) == ["sunny in Lima", "sunny in Oslo"]
        assert any(isinstance(e, agui.CustomEvent) and e.name == "tool_progress" for e in events)
        text = "".join(e.delta for e in events if isinstance(e, agui.TextMessageContentEvent))
        assert text == "Done: sunny in Oslo; sunny in Lima"
        finished = events[-1]
        assert isinstance(finished, agui.RunFinishedEvent) and finished.run_id == "run-1"
        assert finished.outcome is None or finished.outcome.type == "success"
        assert len(store.load("thread-1")) == 5


def test_agui_context_reaches_the_agent_with_the_prompt() -> None:
    """agno-agi/agno #5145 and #7805: the `context` of a `RunAgentInput` (CopilotKit's
    `useCopilotReadable`, what the page shows) was accepted and dropped, and the agent
    answered as if it could not see the page. Here too: only the messages were read."""
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        films = agui.Context(description="Films on the page", value="Dune, Alien")
        events = agui_run(client, agui_input("thread-ctx", "run-1", "which films", context=[films]))
    text = "".join(e.delta for e in events if isinstance(e, agui.TextMessageContentEvent))
    assert text.startswith("echo: which films") and "Films on the page: Dune, Alien" in text
    [prompt, _] = store.load("thread-ctx")
    assert [b.text for b in prompt.content] == [  # type: ignore[union-attr]
        "which films",
        "Context from the application:\n- Films on the page: Dune, Alien",
    ]


def test_agui_shared_state_is_refused_not_dropped() -> None:
    """A `RunAgentInput`'s `state` was ignored without a word: the page's state never
    reached the agent. It is a 400 saying what to send; nothing is run or stored. (Front-end
    `tools` are run: tests/serve/test_agui_front_end_tools.py.)"""
    store = InMemorySessionStore()
    with_state = agui_input("t", "r", "weather Oslo").model_copy(update={"state": {"n": 1}})
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        body = with_state.model_dump(mode="json", by_alias=True, exclude_none=True)
        refused = client.post("/ag-ui", json=body)
        assert refused.status_code == 400, refused.text
        said = refused.json()["error"]
        assert store.list_sessions() == []
        assert "shared state is not supported" in said and 'send "state": {}' in said
        events = agui_run(client, agui_input("t", "r", "weather Oslo"))  # empty one: a run
        assert isinstance(events[-1], agui.RunFinishedEvent)


def test_agui_reasoning_events() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        events = agui_run(client, agui_input("t", "r", "think hard"))
        check_agui_order(events)
        kinds = [e.type.value for e in events if e.type.value.startswith("REASONING")]
        assert kinds[:2] == ["REASONING_START", "REASONING_MESSAGE_START"]
        assert kinds[-2:] == ["REASONING_MESSAGE_END", "REASONING_END"]
        thought = "".join(
            e.delta for e in events if isinstance(e, agui.ReasoningMessageContentEvent)
        )
        assert thought == "pondering hard"
        text = "".join(e.delta for e in events if isinstance(e, agui.TextMessageContentEvent))
        assert text == "thought: hard"


async def test_agui_sub_agents() -> None:
    from tests.serve._kit import Tools, brain, serving
    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel
    from yiemagent.serve import create_app

    store = InMemorySessionStore()
    fm = FauxModel([brain] * 100)

    def make_agent(session_id: str) -> Any:
        helper = Agent(name="helper", model=fm.model, stream_fn=fm.stream_fn, tools=Tools().all())
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[helper.as_tool()],
            session_store=store,
            session_id=session_id,
        )

    def drive(url: str) -> list[Any]:
        with httpx.Client(base_url=url) as client:
            return agui_run(client, agui_input("t", "r", "delegate weather Oslo"))

    with serving(create_app(make_agent, session_store=store)) as url:
        events = await asyncio.to_thread(drive, url)
    check_agui_order(events)
    started = [e for e in events if isinstance(e, agui.SubagentStartedEvent)]
    sub_run = started[0].subagent_run_id
    calls = [e for e in events if isinstance(e, agui.ToolCallStartEvent)]
    assert [(s.name, s.parent_tool_call_id) for s in started] == [("helper", calls[0].tool_call_id)]
    assert [(c.tool_call_name, c.subagent_run_id) for c in calls] == [
        ("helper", None),
        ("weather", sub_run),
    ]
    args: dict[str, str] = {}
    for event in events:
        if isinstance(event, agui.ToolCallArgsEvent):
            args[event.tool_call_id] = args.get(event.tool_call_id, "") + event.delta
    # each call's arguments once: the outer call's not sent again when its sub-run ends
    assert [json.loads(args[c.tool_call_id]) for c in calls] == [
        {"input": "weather Oslo"},
        {"city": "Oslo"},
    ]
    inner_text = "".join(
        e.delta for e in events if isinstance(e, agui.TextMessageContentEvent) and e.subagent_run_id
    )
    assert inner_text == "Done: sunny in Oslo"
    finished = [e for e in events if isinstance(e, agui.SubagentFinishedEvent)]
    assert [f.subagent_run_id for f in finished] == [sub_run]
    assert events.index(finished[0]) < len(events) - 1  # before the run's own end
    assert isinstance(events[-1], agui.RunFinishedEvent)


def test_agui_interrupts_for_approval_and_resumes() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools), httpx.Client(base_url=url) as client:
        first = agui_run(client, agui_input("t", "r1", "launch Vostok"))
        check_agui_order(first)
        outcome = first[-1].outcome
        assert isinstance(outcome, agui.RunFinishedInterruptOutcome)
        (interrupt,) = outcome.interrupts
        assert interrupt.reason == "tool_approval" and "launch" in (interrupt.message or "")
        assert tools.launched == []
        for payload in ("false", {"approve": "false"}, 0, "no", ["no"]):  # no boolean: refused
            fuzzy = agui.ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload)
            refused = client.post("/ag-ui", json=agui_body("t", "r-bad", resume=[fuzzy]))
            assert refused.status_code == 400 and "must be true" in refused.json()["error"]
        reject = agui.ResumeEntry(
            interrupt_id=interrupt.id,
            status="resolved",
            payload={"approve": False, "reason": "LONE"},
        )
        rejected = agui_input("t", "r-bad", resume=[reject])
        body = rejected.model_dump_json(by_alias=True).replace('"LONE"', '"bad \\ud800"')
        refused = client.post("/ag-ui", content=body)
        assert refused.status_code == 400 and "lone surrogates" in refused.json()["error"]
        assert tools.launched == []
        approve = agui.ResumeEntry(
            interrupt_id=interrupt.id, status="resolved", payload={"approve": True}
        )
        resumed = agui_run(client, agui_input("t", "r2", resume=[approve]))
        check_agui_order(resumed)
        assert [e.content for e in resumed if isinstance(e, agui.ToolCallResultEvent)] == [
            "launched Vostok"
        ]
        assert tools.launched == ["Vostok"]
        assert resumed[-1].outcome is None or resumed[-1].outcome.type == "success"

        bad = client.post("/ag-ui", json={"threadId": "t"})
        assert bad.status_code == 400 and "RunAgentInput" in bad.json()["error"]


# ── Vercel AI SDK UI message stream ─────────────────────────────────────────

CHUNKS: dict[str, tuple[set[str], set[str]]] = {
    # type: (required keys, optional keys), from the AI SDK's uiMessageChunkSchema
    # (packages/ai/src/ui-message-stream/ui-message-chunks.ts; every object is strict)
    "start": (set(), {"messageId", "messageMetadata"}),
    "finish": (set(), {"finishReason", "messageMetadata"}),
    "start-step": (set(), set()),
    "finish-step": (set(), set()),
    "abort": (set(), set()),
    "error": ({"errorText"}, set()),
    "text-start": ({"id"}, {"providerMetadata"}),
    "text-delta": ({"id", "delta"}, {"providerMetadata"}),
    "text-end": ({"id"}, {"providerMetadata"}),
    "reasoning-start": ({"id"}, {"providerMetadata"}),
    "reasoning-delta": ({"id", "delta"}, {"providerMetadata"}),
    "reasoning-end": ({"id"}, {"providerMetadata"}),
    "tool-input-start": ({"toolCallId", "toolName"}, {"providerExecuted", "dynamic", "title"}),
    "tool-input-delta": ({"toolCallId", "inputTextDelta"}, set()),
    "tool-input-available": (
        {"toolCallId", "toolName", "input"},
        {"providerExecuted", "providerMetadata", "dynamic", "title"},
    ),
    "tool-approval-request": ({"approvalId", "toolCallId"}, set()),
    "tool-output-available": (
        {"toolCallId", "output"},
        {"providerExecuted", "dynamic", "preliminary"},
    ),
    "tool-output-error": ({"toolCallId", "errorText"}, {"providerExecuted", "dynamic"}),
    "tool-output-denied": ({"toolCallId"}, set()),
}
FINISH_REASONS = {"stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"}


def ui_chat(client: httpx.Client, body: dict[str, Any]) -> list[dict[str, Any]]:
    with client.stream("POST", "/api/chat", json=body) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
        items = [data for _, data in sse(response)]
    assert items[-1] == "[DONE]"
    chunks: list[dict[str, Any]] = items[:-1]
    for chunk in chunks:
        required, optional = CHUNKS[chunk["type"]]
        keys = set(chunk) - {"type"}
        assert required <= keys <= required | optional, chunk
    finish = [c for c in chunks if c["type"] == "finish"]
    assert all(c.get("finishReason", "stop") in FINISH_REASONS for c in finish)
    return chunks


def user(text: str) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "text", "text": text}]}


def approval_answer(call_id: str, city: str, approval: dict[str, Any]) -> dict[str, Any]:
    """The assistant message `useChat` sends back once the user answered the approval of
    the `launch` call `call_id` (its part in state "approval-responded")."""
    part = {
        "type": "tool-launch",
        "toolCallId": call_id,
        "state": "approval-responded",
        "input": {"city": city},
        "approval": approval,
    }
    return {"id": "a1", "role": "assistant", "parts": [part]}


def test_the_ui_message_stream() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools), httpx.Client(base_url=url) as client:
        chunks = ui_chat(client, {"id": "chat-1", "messages": [user("weather Oslo")]})
        kinds = [c["type"] for c in chunks]
        assert kinds[0] == "start" and kinds[-1] == "finish"
        assert kinds.count("start-step") == kinds.count("finish-step") == 2
        order = [k for k in kinds if k not in ("tool-input-delta", "text-delta")]
        assert order == [
            "start",
            "start-step",
            "tool-input-start",
            "tool-input-available",
            "tool-output-available",
            "finish-step",
            "start-step",
            "text-start",
            "text-end",
            "finish-step",
            "finish",
        ]
        ready = next(c for c in chunks if c["type"] == "tool-input-available")
        assert ready["toolName"] == "weather" and ready["input"] == {"city": "Oslo"}
        deltas = "".join(c["inputTextDelta"] for c in chunks if c["type"] == "tool-input-delta")
        assert json.loads(deltas) == {"city": "Oslo"}
        text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
        assert text == "Done: sunny in Oslo"

        thinking = ui_chat(client, {"id": "chat-3", "messages": [user("think twice")]})
        kinds = [c["type"] for c in thinking if c["type"] not in ("reasoning-delta", "text-delta")]
        assert kinds[2:6] == ["reasoning-start", "reasoning-end", "text-start", "text-end"]
        said = "".join(c["delta"] for c in thinking if c["type"] == "reasoning-delta")
        assert said == "pondering twice"
        held = ui_chat(client, {"id": "chat-2", "messages": [user("launch Mir")]})
        request = next(c for c in held if c["type"] == "tool-approval-request")
        assert held[-1] == {"type": "finish", "finishReason": "tool-calls"}
        call_id = request["toolCallId"]
        answer = approval_answer(call_id, "Mir", {"id": request["approvalId"], "approved": True})
        fuzzy = json.loads(json.dumps(answer))
        fuzzy["parts"][0]["approval"]["approved"] = "false"  # no boolean: refused, not run
        refused = client.post("/api/chat", json={"id": "chat-2", "messages": [fuzzy]})
        assert refused.status_code == 400 and "must be true" in refused.json()["error"]
        lone = json.dumps({"id": "chat-2", "messages": [answer]}).replace(
            '"approved": true', '"approved": false, "reason": "bad \\ud800"'
        )
        refused = client.post("/api/chat", content=lone)
        assert refused.status_code == 400 and "lone surrogates" in refused.json()["error"]
        nameless = {"id": "m", "role": "user", "parts": [{"type": "text", "text": None}]}
        refused = client.post("/api/chat", json={"id": "chat-4", "messages": [nameless]})
        assert refused.status_code == 400 and "must be a string" in refused.json()["error"]
        assert tools.launched == []
        resumed = ui_chat(client, {"id": "chat-2", "messages": [user("launch Mir"), answer]})
        assert resumed[0] == {"type": "start", "messageId": "a1"}  # the same message goes on
        outputs = [c for c in resumed if c["type"] == "tool-output-available"]
        assert outputs == [
            {"type": "tool-output-available", "toolCallId": call_id, "output": "launched Mir"}
        ]
        assert tools.launched == ["Mir"]
        assert resumed[-1]["type"] == "finish"


def test_a_rejected_call_is_denied_not_failed_in_the_ui_message_stream() -> None:
    """vercel/ai #17136 (fixed by its PR #17438), Agenta-AI/agenta #5381: a call the user
    denied came back as `tool-output-error`, so `useChat` showed a refusal as the tool
    failing, never reaching the `output-denied` state."""
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools), httpx.Client(base_url=url) as client:
        held = ui_chat(client, {"id": "chat-d", "messages": [user("launch Mir")]})
        request = next(c for c in held if c["type"] == "tool-approval-request")
        call_id = request["toolCallId"]
        answer = approval_answer(
            call_id, "Mir", {"id": call_id, "approved": False, "reason": "not today"}
        )
        resumed = ui_chat(client, {"id": "chat-d", "messages": [user("launch Mir"), answer]})
        results = [c for c in resumed if c["type"].startswith("tool-output")]
        assert results == [{"type": "tool-output-denied", "toolCallId": call_id}]
        assert tools.launched == []
        assert resumed[-1] == {"type": "finish", "finishReason": "stop"}
        stored = client.get("/v1/sessions/chat-d").json()["messages"]
        rejection = next(m for m in stored if m["role"] == "toolResult")
        assert rejection["is_error"] and "not today" in rejection["content"][0]["text"]


def test_a_call_held_inside_a_sub_agent_is_answered_on_ag_ui_and_use_chat() -> None:
    """microsoft/agent-framework #4963, redhat-data-and-ai/template-ui #199 (and the review
    of danny-avila/LibreChat #13942): a call held inside a sub-agent could not be approved
    from the UI. Here the AG-UI interrupt and the `tool-approval-request` named the
    parent's call (`helper`), which holds nothing itself, so answering them was a 400 "no
    tool call ... awaits approval" and the held `launch` could never run."""
    from tests.serve._kit import Tools, brain, serving
    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel
    from yiemagent.serve import create_app

    store = InMemorySessionStore()
    tools = Tools()
    fm = FauxModel([brain] * 1000)

    def make_agent(session_id: str) -> Any:
        helper = Agent(name="helper", model=fm.model, stream_fn=fm.stream_fn, tools=tools.all())
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, tools=[helper.as_tool()],
            session_store=store, session_id=session_id,
        )  # fmt: skip

    with serving(create_app(make_agent, session_store=store)) as url:
        client = httpx.Client(base_url=url)
        first = agui_run(client, agui_input("t", "r", "delegate launch Mir"))
        [interrupt] = first[-1].outcome.interrupts
        [held] = client.get("/v1/sessions/t/approvals").json()["approvals"]
        assert (interrupt.id, held["tool_name"]) == (held["tool_call_id"], "launch")
        assert interrupt.message == 'Run launch with {"city": "Mir"}?'
        resolved = agui.ResumeEntry(interrupt_id=interrupt.id, status="resolved")
        resumed = agui_run(client, agui_input("t", "r2", resume=[resolved]))
        check_agui_order(resumed)
        assert tools.launched == ["Mir"]

        held_ui = ui_chat(client, {"id": "v", "messages": [user("delegate launch Vostok")]})
        request = next(c for c in held_ui if c["type"] == "tool-approval-request")
        [held] = client.get("/v1/sessions/v/approvals").json()["approvals"]
        assert request["approvalId"] == held["tool_call_id"]
        part_id = request["toolCallId"]  # the sub-agent's call's own part
        parts = {c["toolCallId"]: c for c in held_ui if c["type"] == "tool-input-available"}
        assert parts[part_id]["toolName"] == "launch"  # a part to answer on
        assert parts[part_id]["input"] == {"city": "Vostok"}
        answer = approval_answer(part_id, "Vostok", {"id": request["approvalId"], "approved": True})
        done = ui_chat(client, {"id": "v", "messages": [user("delegate launch Vostok"), answer]})
        outputs = {c["toolCallId"]: c for c in done if c["type"] == "tool-output-available"}
        assert outputs[part_id]["output"] == "launched Vostok"
        assert tools.launched == ["Mir", "Vostok"]
        client.close()


# ── images: every front end checks one alike ────────────────────────────────


def test_calls_sharing_an_id_stream_as_calls_of_their_own() -> None:
    """ag-ui-protocol/ag-ui#1016, pydantic/pydantic-ai#2301: a model gave two parallel calls
    one id; the loop gives the second its own id at `message_end`, but while streaming both
    went out under the first's: its arguments arrived after that call's end (AG-UI
    TOOL_CALL_ARGS after TOOL_CALL_END), and then again under its new id."""
    from tests.serve._kit import Tools, brain, serving
    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
    from yiemagent.serve import create_app
    from yiemagent.types import Context

    def twins(context: Context) -> AssistantMessage:
        if context.messages[-1].role != "user":
            return brain(context)
        calls = [faux_tool_call("weather", {"city": c}, id="dup") for c in ("Oslo", "Lima")]
        return faux_message(*calls)

    store = InMemorySessionStore()
    fm = FauxModel([twins] * 10, chunk_size=8)
    tools = Tools().all()

    def make_agent(session_id: str) -> Any:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, tools=tools, session_store=store,
            session_id=session_id,
        )  # fmt: skip

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url) as client:
        events = agui_run(client, agui_input("t", "r", "go"))
        chunks = ui_chat(client, {"id": "ui", "messages": [user("go")]})

    check_agui_order(events)
    args: dict[str, str] = {}
    for event in events:
        if isinstance(event, agui.ToolCallArgsEvent):
            args[event.tool_call_id] = args.get(event.tool_call_id, "") + event.delta
    assert {k: json.loads(v) for k, v in args.items()} == {
        "dup": {"city": "Oslo"},
        "dup_2": {"city": "Lima"},
    }
    results = {e.tool_call_id: e.content for e in events if isinstance(e, agui.ToolCallResultEvent)}
    assert results == {"dup": "sunny in Oslo", "dup_2": "sunny in Lima"}
    deltas: dict[str, str] = {}
    for chunk in chunks:
        if chunk["type"] == "tool-input-delta":
            deltas[chunk["toolCallId"]] = (
                deltas.get(chunk["toolCallId"], "") + chunk["inputTextDelta"]
            )
    assert all(json.loads(text) for text in deltas.values())  # never two calls' text in one
    inputs = {c["toolCallId"]: c["input"] for c in chunks if c["type"] == "tool-input-available"}
    assert inputs == {"dup": {"city": "Oslo"}, "dup_2": {"city": "Lima"}}


def test_an_image_that_is_not_base64_is_a_400_on_every_route_and_nothing_is_stored() -> None:
    store = InMemorySessionStore()
    bad, png = "!!!", "data:image/png;base64,iVBORw0KGgo="
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        native = {"input": "x", "images": [{"data": bad, "mime_type": "image/png"}]}
        openai_parts = [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{bad}"}},
            {"type": "image", "data": bad, "mime_type": "image/png"},
        ]
        file_parts = [
            {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{bad}"},
            {"type": "file", "mediaType": "image/png", "url": bad},
        ]
        image = agui.ImagePart(source=agui.DataSource(value=bad, mime_type="image/png"))
        with_image = agui.UserMessage(id="u", content=[agui.TextPart(text="x"), image])
        requests = [
            ("/v1/sessions/native/runs", native),
            *(
                ("/v1/chat/completions", {"messages": [{"role": "user", "content": [part]}]})
                for part in openai_parts
            ),
            *(
                ("/api/chat", {"id": "ui", "messages": [{"id": "m", "role": "user", "parts": [p]}]})
                for p in file_parts
            ),
            ("/ag-ui", agui_body("ag", "r", with_image)),
        ]
        for path, body in requests:
            refused = client.post(path, json=body)
            assert refused.status_code == 400, (path, refused.text)
            assert "base64" in error_of(refused), (path, refused.text)
        assert store.list_sessions() == []
        good = {"input": "x", "images": [{"data": png, "mime_type": "image/jpeg"}]}
        started = client.post("/v1/sessions/native/runs", json=good)
        assert started.status_code == 202
        run_events(client, started.json()["run_id"])
        stored = store.load("native")[0]
        assert isinstance(stored, UserMessage) and not isinstance(stored.content, str)
        assert stored.content[1] == ImageContent("iVBORw0KGgo=", "image/png")  # the URL's type


def test_a_ui_file_part_is_an_image_or_a_pdf_never_dropped() -> None:
    # A file of another type was dropped without a word: the model answered as if nothing
    # had been attached.
    store = InMemorySessionStore()
    pdf = "data:application/pdf;base64,JVBERi0xLjQK"
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        csv = {"type": "file", "mediaType": "text/csv", "url": "data:text/csv;base64,YSxi"}
        ask = {"id": "csv", "role": "user", "parts": [{"type": "text", "text": "sum it"}, csv]}
        refused = client.post("/api/chat", json={"id": "csv", "messages": [ask]})
        assert refused.status_code == 400 and "images and PDFs" in refused.json()["error"]
        broken = {**csv, "mediaType": "application/pdf", "url": "data:application/pdf;base64,!"}
        ask["parts"] = [{"type": "text", "text": "read it"}, broken]
        refused = client.post("/api/chat", json={"id": "pdf", "messages": [ask]})
        assert refused.status_code == 400 and "base64" in refused.json()["error"]
        assert store.list_sessions() == []
        paper = {"type": "file", "mediaType": "application/pdf", "url": pdf, "filename": "a.pdf"}
        ask["parts"] = [{"type": "text", "text": "weather Oslo"}, paper]
        ui_chat(client, {"id": "pdf", "messages": [ask]})
        stored = store.load("pdf")[0]
        assert isinstance(stored, UserMessage) and not isinstance(stored.content, str)
        assert stored.content[1] == DocumentContent("JVBERi0xLjQK", "application/pdf", "a.pdf")


def test_an_openai_file_part_is_a_pdf_for_the_agent_never_a_400() -> None:
    """openai-agents-python#893 and ogx-ai/ogx#2129: Chat Completions takes a PDF as a
    `{"type": "file", "file": {"file_data": "data:application/pdf;base64,..."}}` part (what
    our own provider sends), yet the agent's endpoint refused it; a file of another type
    or given by id stays a 400 naming it."""
    store = InMemorySessionStore()
    with faux_server(store) as (url, _):
        client = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        paper = {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQK"}
        content: Any = [{"type": "text", "text": "weather Oslo"}, {"type": "file", "file": paper}]
        reply = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": content}],
            extra_headers={"X-Session-Id": "paper"},
        )
        assert reply.choices[0].message.content == "Done: sunny in Oslo"
        stored = store.load("paper")[0]
        assert isinstance(stored, UserMessage) and not isinstance(stored.content, str)
        assert stored.content[1] == DocumentContent("JVBERi0xLjQK", "application/pdf", "a.pdf")
        for bad in ({"file_id": "file-abc"}, {"file_data": "data:text/csv;base64,YSxi"}):
            content[1] = {"type": "file", "file": bad}
            with pytest.raises(APIError) as caught:
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": content}]
                )
            assert getattr(caught.value, "status_code", None) == 400
            assert "PDF" in str(caught.value)


def test_an_agui_part_is_an_image_or_a_pdf_never_dropped() -> None:
    """ag-ui-protocol/ag-ui #2447 (and its #2795: "fail with a clear, actionable error
    rather than silently dropping content"): a user message's document, audio or video
    part, or an image given by URL, was left out without a word, so the model answered
    as if nothing had been attached."""
    store = InMemorySessionStore()

    def ask(thread: str, *parts: Any) -> dict[str, Any]:
        message = agui.UserMessage(id="u", content=[agui.TextPart(text="weather Oslo"), *parts])
        return agui_body(thread, "r", message)

    pdf = agui.DataSource(value="JVBERi0xLjQK", mime_type="application/pdf")
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        refusals = {
            "audio": agui.AudioPart(source=agui.DataSource(value="UklG", mime_type="audio/wav")),
            "by url": agui.ImagePart(
                source=agui.UrlSource(value="https://example.com/a.png", mime_type="image/png")
            ),
            "a csv": agui.DocumentPart(source=agui.DataSource(value="YSxi", mime_type="text/csv")),
            "bad base64": agui.DocumentPart(
                source=agui.DataSource(value="!", mime_type="application/pdf")
            ),
        }
        said = {}
        for name, part in refusals.items():
            refused = client.post("/ag-ui", json=ask("t", part))
            assert refused.status_code == 400, name
            said[name] = refused.json()["error"]
        assert "the agent takes text, images and PDFs" in said["audio"]
        assert "the agent takes text, images and PDFs" in said["a csv"]
        assert 'needs its content as a "data" source' in said["by url"]
        assert "base64" in said["bad base64"]
        assert store.list_sessions() == []

        paper = agui.DocumentPart(source=pdf, metadata={"filename": "a.pdf"})
        agui_run(client, agui.RunAgentInput.model_validate(ask("pdf", paper)))
        stored = store.load("pdf")[0]
        assert isinstance(stored, UserMessage) and not isinstance(stored.content, str)
        assert stored.content[1] == DocumentContent("JVBERi0xLjQK", "application/pdf", "a.pdf")


# ── output guardrails: no answer is shown before they pass it ───────────────


def no_secrets(context: Any) -> bool:
    return "secret" in context.text  # tripped


def guarded_agents(store: InMemorySessionStore) -> Callable[[str], Any]:
    """`make_agent` for serve: the faux brain and its tools, output guarded by
    `no_secrets`, sessions in `store`."""
    from tests.serve._kit import Tools, brain
    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel

    fm = FauxModel([brain] * 1000, chunk_size=2)

    def make_agent(session_id: str) -> Any:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=Tools().all(),
            output_guardrails=[no_secrets],
            session_store=store,
            session_id=session_id,
        )

    return make_agent


async def test_a_guarded_answer_is_never_streamed() -> None:
    from tests.serve._kit import run_events, serving, start_run
    from yiemagent.serve import create_app

    store = InMemorySessionStore()
    make_agent = guarded_agents(store)

    def drive(url: str) -> None:
        with httpx.Client(base_url=url) as client:
            events = run_events(client, start_run(client, "g", "the secret word"))
            assert "echo: the secret" not in json.dumps(events)  # the tripped answer
            assert all(d["type"] != "message_update" for _, d in events)
            end = events[-1][1]
            assert (
                end["reason"] == "guardrail"
                and "no_secrets" in end["messages"][-1]["error_message"]
            )
            fine = run_events(client, start_run(client, "g", "weather Oslo"))
            assert fine[-1][1]["messages"][-1]["content"][0]["text"] == "Done: sunny in Oslo"

            openai = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
            chunks = list(
                openai.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hello"}], stream=True
                )
            )
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            assert text == "echo: hello"  # whole, once the guardrail passed it
            body = {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "u", "role": "user", "content": "hi"}],
            }
            with client.stream("POST", "/ag-ui", json=body) as response:
                agui_events = [EVENT.validate_python(d) for _, d in sse(response)]
            check_agui_order(agui_events)
            said = [e.delta for e in agui_events if isinstance(e, agui.TextMessageContentEvent)]
            assert said == ["echo: hi"]
            chunks_ui = ui_chat(client, {"id": "v", "messages": [user("hey")]})
            assert [c["delta"] for c in chunks_ui if c["type"] == "text-delta"] == ["echo: hey"]

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(drive, url)


async def test_a_tripped_answer_is_no_empty_success_on_any_protocol() -> None:
    """coder/coder #26294, maximhq/bifrost #6103: a turn a filter blocked ended as a
    normal completion with no content, which a client cannot tell from an empty answer.
    Here a guardrail's trip was `finish_reason` "stop", AG-UI `RUN_FINISHED` success and
    `finishReason` "other" with no text at all."""
    from tests.serve._kit import serving
    from yiemagent.serve import create_app

    store = InMemorySessionStore()
    make_agent = guarded_agents(store)

    def drive(url: str) -> None:
        openai = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        asked: list[ChatCompletionMessageParam] = [{"role": "user", "content": "the secret word"}]
        reply = openai.chat.completions.create(model="m", messages=asked)
        assert reply.choices[0].finish_reason == "content_filter"
        assert not reply.choices[0].message.content  # the tripped answer is not in it
        chunks = list(openai.chat.completions.create(model="m", messages=asked, stream=True))
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
        assert finishes[-1] == "content_filter" and "secret" not in str(chunks)

        with httpx.Client(base_url=url) as client:
            body = {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "u", "role": "user", "content": "a secret"}],
            }
            with client.stream("POST", "/ag-ui", json=body) as response:
                events = [EVENT.validate_python(d) for _, d in sse(response)]
            check_agui_order(events)
            end = events[-1]
            assert isinstance(end, agui.RunErrorEvent) and end.code == "guardrail_tripped"
            assert "no_secrets" in end.message and "echo" not in end.message

            chunks_ui = ui_chat(client, {"id": "v", "messages": [user("my secret")]})
            assert chunks_ui[-1] == {"type": "finish", "finishReason": "content-filter"}
            assert all(c["type"] != "text-delta" for c in chunks_ui)

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(drive, url)


async def test_a_failed_run_says_the_models_error_on_every_protocol() -> None:
    """A run whose model call failed ends in error; each protocol says the model's own
    error message, not a generic one: OpenAI's error object (a 500, streamed or not),
    AG-UI's `RUN_ERROR` "run_failed" and the UI message stream's `error` chunk."""
    from tests.serve._kit import serving
    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel, faux_message
    from yiemagent.serve import create_app

    store = InMemorySessionStore()
    down = faux_message(stop_reason="error", error_message="the model is down")
    fm = FauxModel([down] * 20)

    def make_agent(session_id: str) -> Any:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id=session_id
        )

    def drive(url: str) -> None:
        openai = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        asked: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
        with pytest.raises(APIError, match="the model is down"):
            openai.chat.completions.create(model="m", messages=asked)
        with pytest.raises(APIError, match="the model is down"):
            list(openai.chat.completions.create(model="m", messages=asked, stream=True))

        with httpx.Client(base_url=url) as client:
            body = {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "u", "role": "user", "content": "hi"}],
            }
            with client.stream("POST", "/ag-ui", json=body) as response:
                events = [EVENT.validate_python(d) for _, d in sse(response)]
            end = events[-1]
            assert isinstance(end, agui.RunErrorEvent) and end.code == "run_failed"
            assert end.message == "the model is down"

            chunks = ui_chat(client, {"id": "v", "messages": [user("hi")]})
            errors = [c["errorText"] for c in chunks if c["type"] == "error"]
            assert errors == ["the model is down"]

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(drive, url)


async def test_an_output_types_value_is_the_answer_not_an_empty_one() -> None:
    """griptape-ai/griptape #1642: structured output given through a tool came out empty
    when streamed. Here an agent with an output type answered `/v1/chat/completions`
    with "" (its value is the output tool's arguments, no text), streamed or not, and
    AG-UI's `RUN_FINISHED` carried no `result`."""
    from dataclasses import dataclass

    from tests.serve._kit import serving
    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
    from yiemagent.serve import create_app
    from yiemagent.types import Context
    from yiemagent.types.output import OUTPUT_TOOL_NAME

    @dataclass
    class City:
        name: str
        population: int

    def answer(context: Context) -> AssistantMessage:
        if getattr(context.messages[-1], "role", "") == "toolResult":
            return faux_message("unused")  # the run ends once the output is accepted
        value = {"name": "Oslo", "population": 709_000}
        return faux_message("Found it.", faux_tool_call(OUTPUT_TOOL_NAME, value))

    store = InMemorySessionStore()
    fm = FauxModel([answer] * 100, chunk_size=4)

    def make_agent(session_id: str) -> Any:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, output_type=City,
            session_store=store, session_id=session_id,
        )  # fmt: skip

    expected = '{"name": "Oslo", "population": 709000}'

    def drive(url: str) -> None:
        openai = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        asked: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Which city?"}]
        reply = openai.chat.completions.create(model="m", messages=asked)
        assert reply.choices[0].message.content == f"Found it.\n\n{expected}"
        chunks = list(openai.chat.completions.create(model="m", messages=asked, stream=True))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == f"Found it.\n\n{expected}"
        with httpx.Client(base_url=url) as client:
            body = {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "u", "role": "user", "content": "Which city?"}],
            }
            with client.stream("POST", "/ag-ui", json=body) as response:
                events = [EVENT.validate_python(d) for _, d in sse(response)]
        check_agui_order(events)
        assert isinstance(events[-1], agui.RunFinishedEvent)
        assert events[-1].result == {"name": "Oslo", "population": 709_000}

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(drive, url)


def test_completions_usage_counts_the_sub_agents_tokens() -> None:
    """The usage of a reply is every model call's, the sub-agent's (on its tool result)
    included, each counted once."""
    from tests.serve._kit import Tools, brain, serving
    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel
    from yiemagent.serve import create_app
    from yiemagent.types import Context, Usage

    store = InMemorySessionStore()

    def costly(context: Context) -> AssistantMessage:
        message = brain(context)
        message.usage = Usage(input=10, output=3)
        return message

    fm = FauxModel([costly] * 100)

    def make_agent(session_id: str) -> Any:
        helper = Agent(name="helper", model=fm.model, stream_fn=fm.stream_fn, tools=Tools().all())
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[helper.as_tool()],
            session_store=store,
            session_id=session_id,
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        client = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        reply = client.chat.completions.create(
            model="yiem-agent", messages=[{"role": "user", "content": "delegate weather Oslo"}]
        )
    # two model calls of the parent, two of the helper
    assert fm.call_count == 4
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (40, 12)


def test_completions_usage_counts_cache_writes_as_prompt_tokens() -> None:
    """genkit #5412: Anthropic's `input_tokens` leaves out the tokens read from and written
    to its cache; all three are the prompt, and OpenAI's `prompt_tokens` holds all of it."""
    from tests.serve._kit import brain, serving
    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel
    from yiemagent.serve import create_app
    from yiemagent.types import Context, Usage

    store = InMemorySessionStore()

    def cached(context: Context) -> AssistantMessage:
        message = brain(context)
        message.usage = Usage(input=7, output=3, cache_read=0, cache_write=9000)
        return message

    fm = FauxModel([cached] * 10)

    def make_agent(session_id: str) -> Any:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id=session_id
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        client = OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)
        reply = client.chat.completions.create(
            model="yiem-agent", messages=[{"role": "user", "content": "hello"}]
        )
    assert fm.call_count == 1
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (9007, 3)
    assert reply.usage.total_tokens == 9010
