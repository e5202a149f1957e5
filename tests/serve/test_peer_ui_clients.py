"""What the AG-UI TypeScript client and the AI SDK's `useChat` do with our streams
(DESIGN §18), checked as they do it, through a real Uvicorn server.

AG-UI: `@ag-ui/client` folds the events into messages (sdks/typescript/packages/client/
src/apply/default.ts: a `TEXT_MESSAGE_START` whose id is a message it holds continues that
message, a `TOOL_CALL_START` joins the message named by its `parentMessageId`), checks
their order (src/verify/verify.ts, several runs in one thread), and sends the whole thread
back with each run. `useChat` does the same with the UI message stream's chunks (the AI
SDK's stream protocol page: a part's chunks carry the id of its `text-start` or
`tool-input-start`). So message ids must not repeat across runs, a reply's text and calls
must fold into one message, and a thread sent back whole must be kept once."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui import core as agui

from tests.serve._kit import Tools, faux_server, serving, sse
from tests.serve.test_protocols import EVENT, check_agui_order, ui_chat, user
from yiemagent import Agent, AssistantMessage, UserMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)


def fold_agui(events: list[Any], messages: list[dict[str, Any]]) -> None:
    """Fold one run's events into `messages` as `defaultApplyEvents` does."""
    by_id = {m["id"]: m for m in messages}

    def message(message_id: str) -> dict[str, Any]:
        if message_id not in by_id:
            by_id[message_id] = {"id": message_id, "role": "assistant", "content": ""}
            messages.append(by_id[message_id])
        return by_id[message_id]

    calls: dict[str, dict[str, Any]] = {}
    for event in events:
        if isinstance(event, agui.TextMessageStartEvent):
            message(event.message_id)
        elif isinstance(event, agui.TextMessageContentEvent):
            message(event.message_id)["content"] += event.delta
        elif isinstance(event, agui.ToolCallStartEvent):
            owner = message(event.parent_message_id or event.tool_call_id)
            call = {"id": event.tool_call_id, "type": "function",
                    "function": {"name": event.tool_call_name, "arguments": ""}}  # fmt: skip
            owner.setdefault("toolCalls", []).append(call)
            calls[event.tool_call_id] = call
        elif isinstance(event, agui.ToolCallArgsEvent):
            calls[event.tool_call_id]["function"]["arguments"] += event.delta
        elif isinstance(event, agui.ToolCallResultEvent):
            result = {"id": event.message_id, "role": "tool", "content": event.content}
            messages.append({**result, "toolCallId": event.tool_call_id})
            by_id[event.message_id] = messages[-1]


def agui_turn(
    client: httpx.Client, thread: list[dict[str, Any]], run_id: str, text: str
) -> list[Any]:
    """Send the thread with a new user message, as the client does; fold the answer in."""
    thread.append({"id": f"user-{run_id}", "role": "user", "content": text})
    body = {"threadId": "t", "runId": run_id, "messages": thread, "tools": [], "context": [],
            "state": {}, "forwardedProps": {}}  # fmt: skip
    with client.stream("POST", "/ag-ui", json=body) as response:
        assert response.status_code == 200, response.read()
        events = [EVENT.validate_python(data) for _, data in sse(response)]
    check_agui_order(events)
    fold_agui(events, thread)
    return events


def message_ids(events: list[Any]) -> set[str]:
    return {e.message_id for e in events if isinstance(e, agui.TextMessageStartEvent)} | {
        e.message_id for e in events if isinstance(e, agui.ToolCallResultEvent)
    }


def test_an_agui_thread_sent_whole_each_run_is_kept_once() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        thread: list[dict[str, Any]] = []
        runs = [
            agui_turn(client, thread, "r1", "weather Oslo"),
            agui_turn(client, thread, "r2", "hello"),
            agui_turn(client, thread, "r3", "weather Lima"),
        ]
        ids = [message_ids(run) for run in runs]
        assert all(ids) and not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
        stored = store.load("t")
        assert [m.role for m in stored] == [
            "user", "assistant", "toolResult", "assistant",
            "user", "assistant",
            "user", "assistant", "toolResult", "assistant",
        ]  # fmt: skip
        assert [m["content"] for m in thread if m["role"] == "assistant"][-1] == (
            "Done: sunny in Lima"
        )


def test_a_reply_with_text_and_a_call_folds_into_one_message() -> None:
    store = InMemorySessionStore()
    both = faux_message(faux_text("Let me look."), faux_tool_call("weather", {"city": "Oslo"}))
    fm = FauxModel([both, "Sunny.", "Bye."] * 2)
    tools = Tools()

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools.all(),
                     session_store=store, session_id=session_id)  # fmt: skip

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url) as client:
        thread: list[dict[str, Any]] = []
        agui_turn(client, thread, "r1", "weather Oslo")
        first = thread[1]
        assert first["content"] == "Let me look."
        assert json.loads(first["toolCalls"][0]["function"]["arguments"]) == {"city": "Oslo"}
        assert [m["role"] for m in thread] == ["user", "assistant", "tool", "assistant"]
        agui_turn(client, thread, "r2", "thanks")

        chunks = ui_chat(client, {"id": "c", "messages": [user("weather Oslo")]})
        folded = fold_ui(chunks)
        kinds = [p["type"] for p in folded["parts"]]
        assert kinds == ["step-start", "text", "tool-weather", "step-start", "text"]
        ui_chat(client, {"id": "c", "messages": [user("weather Oslo"), folded, user("thanks")]})
        assert [m.role for m in store.load("c")] == [m.role for m in store.load("t")]
    stored = store.load("t")
    assert [m.role for m in stored] == [
        "user", "assistant", "toolResult", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert isinstance(stored[1], AssistantMessage)
    assert stored[1].text == "Let me look." and stored[1].tool_calls[0].name == "weather"
    sent_last = fm.contexts[-1].messages
    asked = [m.content[0].text for m in sent_last if isinstance(m, UserMessage)]  # type: ignore[union-attr]
    assert asked == ["weather Oslo", "thanks"]


def fold_ui(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant `UIMessage` useChat builds from one response's chunks, checking that
    each chunk belongs to a part still open under its id."""
    message: dict[str, Any] = {"id": None, "role": "assistant", "parts": []}
    texts: dict[str, dict[str, Any]] = {}
    calls: dict[str, dict[str, Any]] = {}
    for chunk in chunks:
        kind = chunk["type"]
        if kind == "start":
            message["id"] = chunk["messageId"]
        elif kind == "start-step":
            message["parts"].append({"type": "step-start"})
        elif kind == "text-start":
            assert chunk["id"] not in texts
            texts[chunk["id"]] = {"type": "text", "text": "", "state": "streaming"}
            message["parts"].append(texts[chunk["id"]])
        elif kind in ("text-delta", "text-end"):
            part = texts[chunk["id"]]
            assert part["state"] == "streaming", chunk
            part["text"] += chunk.get("delta", "")
            part["state"] = "done" if kind == "text-end" else "streaming"
        elif kind == "tool-input-start":
            assert chunk["toolCallId"] not in calls
            calls[chunk["toolCallId"]] = {"type": f"tool-{chunk['toolName']}",
                                          "toolCallId": chunk["toolCallId"],
                                          "state": "input-streaming"}  # fmt: skip
            message["parts"].append(calls[chunk["toolCallId"]])
        elif kind == "tool-input-delta":
            assert calls[chunk["toolCallId"]]["state"] == "input-streaming"
        elif kind == "tool-input-available":
            part = calls[chunk["toolCallId"]]
            assert part["state"] == "input-streaming"
            part.update(state="input-available", input=chunk["input"])
        elif kind == "tool-output-available":
            part = calls[chunk["toolCallId"]]
            assert part["state"] == "input-available"
            part.update(state="output-available", output=chunk["output"])
    assert all(p["state"] == "done" for p in texts.values())
    assert all(p["state"] == "output-available" for p in calls.values())
    return message


def test_use_chat_sending_the_whole_chat_each_turn_keeps_it_once() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        chat: list[dict[str, Any]] = []
        starts: list[str] = []
        for text in ("weather Oslo", "hello", "weather Lima"):
            chat.append(user(text))
            chunks = ui_chat(client, {"id": "c", "messages": chat, "trigger": "submit-message"})
            folded = fold_ui(chunks)
            starts.append(folded["id"])
            chat.append(folded)
        assert len(set(starts)) == 3
        assert chat[1]["parts"][1]["output"] == "sunny in Oslo"
        assert chat[-1]["parts"][-1]["text"] == "Done: sunny in Lima"
        assert [m.role for m in store.load("c")] == [
            "user", "assistant", "toolResult", "assistant",
            "user", "assistant",
            "user", "assistant", "toolResult", "assistant",
        ]  # fmt: skip
