"""A session's history after a run fails, as agno checks its own
(tests/unit/agent/test_error_message_flush.py: "if a tool raises an error on the first
batch, the conversation isn't persisted on the run"), end to end: an OpenAI-compatible
server on 127.0.0.1 that answers with a tool call and then refuses the next request, a
tool writing a real file, a SQLite session file reopened by a new Agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, json_reply, openai_chunks, sse_reply
from yiemagent import Agent, AgentRunError, AgentTool, SqliteSessionStore
from yiemagent.types import Model, text_of

NOTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


def note_tool(folder: Path) -> AgentTool:
    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        with (folder / "notes.txt").open("a", encoding="utf-8") as notes:
            notes.write(args["text"] + "\n")
        return "noted"

    return AgentTool("note", "note", "Write a note.", NOTE_SCHEMA, execute)


def call_note(text: str) -> list[str]:
    delta = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "note", "arguments": '{"text": "' + text + '"}'},
    }
    return openai_chunks({"role": "assistant", "tool_calls": [delta]}, finish_reason="tool_calls")


async def test_a_run_that_fails_after_a_tool_ran_keeps_its_conversation(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with ReplayServer() as server:
        model = Model(
            id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1"
        )
        server.enqueue(
            sse_reply(call_note("buy milk")),
            json_reply(400, {"error": {"message": "context too long", "type": "invalid_request"}}),
        )
        store = SqliteSessionStore(path)
        first = Agent(
            model=model, tools=[note_tool(tmp_path)], session_store=store, session_id="s1"
        )
        with pytest.raises(AgentRunError, match="context too long"):
            await first.prompt("remember to buy milk")
        store.close()

        # a new agent on the reopened file: the prompt, the call and its result are there,
        # and the next prompt goes on from them
        server.enqueue(sse_reply(openai_chunks({"role": "assistant", "content": "Noted it."})))
        store = SqliteSessionStore(path)
        second = Agent(
            model=model, tools=[note_tool(tmp_path)], session_store=store, session_id="s1"
        )
        reply = await second.prompt("did you note it?")
        store.close()
        body = server.requests[2].body

    assert text_of(reply.content) == "Noted it."
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "buy milk\n"  # ran once
    wire = [(m["role"], m.get("tool_call_id"), m.get("content")) for m in body["messages"]]
    assert [w for w in wire if w[0] != "system"] == [
        ("user", None, "remember to buy milk"),
        ("assistant", None, None),
        ("tool", "call_1", "noted"),
        ("user", None, "did you note it?"),
    ]  # the failed reply is kept in the session, never sent back to the provider
    kept = [(m.role, getattr(m, "stop_reason", None)) for m in second.state.messages]
    assert kept == [
        ("user", None),
        ("assistant", "toolUse"),
        ("toolResult", None),
        ("assistant", "error"),  # what went wrong stays readable in the session
        ("user", None),
        ("assistant", "stop"),
    ]
