"""`Agent(session_store=..., session_id=...)` end to end on the faux provider (DESIGN §10): the
transcript is stored message by message at each `message_end`, a new agent
on the same file and id resumes it, `reset()` clears it, store failures never break a run."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.sessions._backends import Backend
from yiemagent import (
    Agent,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    ConfigError,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_duplicate_id_calls,
    faux_message,
    faux_tool_call,
)
from yiemagent.sessions import InMemorySessionStore, SessionStore, SqliteSessionStore
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def echo_tool(name: str = "echo") -> AgentTool:
    return AgentTool(name, name, "echoes", SCHEMA, lambda *_: f"{name} ran")


def faux_agent(fm: FauxModel, store: SessionStore | None, **kwargs: Any) -> Agent:
    return Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[echo_tool()],
        session_store=store,
        **kwargs,
    )


def rows(path: Path, session_id: str) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT seq, role FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()


def tool_then_answer(answer: str = "done") -> list[Any]:
    return [faux_message(faux_tool_call("echo", {})), answer]


async def test_run_is_persisted_message_by_message(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteSessionStore(path)
    agent = faux_agent(FauxModel(tool_then_answer()), store, session_id="s1")
    seen: list[tuple[str, int, int]] = []

    def count_rows(event: AgentEvent, signal: Any) -> None:
        if event.type == "message_end":  # the row is committed before listeners see the event
            seen.append((event.message.role, len(rows(path, "s1")), len(agent.state.messages)))

    agent.subscribe(count_rows)
    answer = await agent.prompt("hi")
    assert answer.text == "done"
    assert seen == [
        ("user", 1, 1),
        ("assistant", 2, 2),
        ("toolResult", 3, 3),
        ("assistant", 4, 4),
    ]
    assert rows(path, "s1") == [(1, "user"), (2, "assistant"), (3, "toolResult"), (4, "assistant")]
    store.close()


async def test_new_agent_on_the_same_file_resumes_and_continues(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first_store = SqliteSessionStore(path)
    first = faux_agent(FauxModel(tool_then_answer("first answer")), first_store, session_id="s")
    await first.prompt("first question")
    transcript = list(first.state.messages)
    first_store.close()

    fm = FauxModel(["second answer"])
    store = SqliteSessionStore(path)
    second = faux_agent(fm, store, session_id="s")
    assert second.state.messages == transcript  # equal, loaded from disk
    assert all(a is not b for a, b in zip(second.state.messages, transcript, strict=True))

    answer = await second.prompt("second question")
    assert answer.text == "second answer"
    sent = fm.contexts[0].messages  # the model saw the whole resumed conversation
    assert [m.role for m in sent] == ["user", "assistant", "toolResult", "assistant", "user"]
    assert text_of(sent[0].content) == "first question"
    assert [r[1] for r in rows(path, "s")] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "assistant",
    ]
    assert store.load("s") == second.state.messages
    store.close()


async def test_session_id_is_a_uuid4_when_none_is_given() -> None:
    store = InMemorySessionStore()
    agent = faux_agent(FauxModel(["ok"]), store)
    assert agent.session_id is not None
    assert uuid.UUID(agent.session_id).version == 4
    await agent.prompt("hi")
    assert store.list_sessions() == [agent.session_id]
    assert agent.session_store is store
    plain = faux_agent(FauxModel([]), None)
    assert plain.session_id is None and plain.session_store is None  # no store: nothing invented
    with pytest.raises(ConfigError, match="session_id cannot change"):
        agent.session_id = "other"


async def test_reset_clears_the_stored_session(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteSessionStore(path)
    agent = faux_agent(FauxModel(["one", "two"]), store, session_id="s")
    await agent.prompt("a")
    assert len(rows(path, "s")) == 2
    agent.reset()
    assert rows(path, "s") == []
    assert store.list_sessions() == []
    await agent.prompt("b")
    assert [text_of(m.content) for m in store.load("s")] == ["b", "two"]  # type: ignore[union-attr]
    store.close()


async def test_reset_leaves_no_held_tool_calls_behind(backend: Backend) -> None:
    store = backend.open()
    guarded = AgentTool(
        "guarded", "guarded", "asks", SCHEMA, lambda *_: "ran", requires_approval=True
    )
    fm = FauxModel([faux_message(faux_tool_call("guarded", {}, id="c1"))])
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=[guarded], session_store=store, session_id="s"
    )
    await agent.prompt("go")
    assert [p.tool_call_id for p in agent.pending_approvals] == ["c1"]
    assert store.load_state("s", "held_tool_calls") is not None  # type: ignore[attr-defined]
    agent.reset()
    assert store.load("s") == [] and agent.pending_approvals == []
    assert store.load_state("s", "held_tool_calls") is None  # type: ignore[attr-defined]
    await agent.close()
    store.close()


async def test_two_sessions_in_one_file_are_isolated(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    a = faux_agent(FauxModel(tool_then_answer("A")), store, session_id="a")
    b = faux_agent(FauxModel(["B"]), store, session_id="b")
    await asyncio.gather(a.prompt("to a"), b.prompt("to b"))
    assert store.load("a") == a.state.messages and len(a.state.messages) == 4
    assert store.load("b") == b.state.messages and len(b.state.messages) == 2
    assert sorted(store.list_sessions()) == ["a", "b"]
    b.reset()
    assert store.load("a") == a.state.messages
    store.close()


async def test_given_messages_start_an_empty_session_and_never_overwrite_one() -> None:
    store = InMemorySessionStore()
    history: list[AgentMessage] = [UserMessage("earlier"), AssistantMessage([TextContent("yes")])]
    agent = faux_agent(FauxModel([]), store, session_id="s", messages=history)
    assert store.load("s") == history == agent.state.messages
    await agent.close()  # one writer per session: the next Agent may open it now
    with pytest.raises(ConfigError, match="already holds 2 messages"):
        faux_agent(FauxModel([]), store, session_id="s", messages=[UserMessage("other")])
    assert store.load("s") == history


async def test_assigning_state_messages_rewrites_the_session() -> None:
    store = InMemorySessionStore()
    agent = faux_agent(FauxModel(["a", "b"]), store, session_id="s")
    await agent.prompt("one")
    await agent.prompt("two")
    agent.state.messages = agent.state.messages[:2]
    assert store.load("s") == agent.state.messages
    assert [text_of(m.content) for m in store.load("s")] == ["one", "a"]  # type: ignore[union-attr]


class FlakyStore(InMemorySessionStore):
    """Fails the appends whose 1-based number is in `failing`."""

    def __init__(self, failing: set[int]) -> None:
        super().__init__()
        self.failing = failing
        self.calls = 0

    def append(self, session_id: str, message: AgentMessage) -> None:
        self.calls += 1
        if self.calls in self.failing:
            raise OSError("disk on fire")
        super().append(session_id, message)


async def test_store_failure_is_logged_the_run_goes_on_and_the_session_heals(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FlakyStore(failing={2, 3})  # the first assistant message fails, then its retry
    agent = faux_agent(FauxModel(tool_then_answer("fine")), store, session_id="s")
    with caplog.at_level(logging.WARNING):
        answer = await agent.prompt("hi")
    assert answer.text == "fine"
    assert "disk on fire" in caplog.text and "the run goes on" in caplog.text
    assert store.load("s") == agent.state.messages  # retried in order, nothing lost
    assert [m.role for m in store.load("s")] == ["user", "assistant", "toolResult", "assistant"]


async def test_the_last_message_of_a_run_that_failed_is_stored_when_the_agent_closes() -> None:
    store = FlakyStore(failing={4})  # the run's final answer
    agent = faux_agent(FauxModel(tool_then_answer("the end")), store, session_id="s")
    await agent.prompt("hi")
    assert [m.role for m in store.load("s")] == ["user", "assistant", "toolResult"]
    await agent.close()
    assert store.load("s") == agent.state.messages


async def test_store_that_never_recovers_does_not_break_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FlakyStore(failing=set(range(2, 100)))
    agent = faux_agent(FauxModel(tool_then_answer("still fine")), store, session_id="s")
    with caplog.at_level(logging.WARNING):
        answer = await agent.prompt("hi")
    assert answer.text == "still fine"
    assert len(agent.state.messages) == 4
    assert [m.role for m in store.load("s")] == ["user"]
    levels = [r.levelname for r in caplog.records if r.name == "yiemagent.agent._session_log"]
    assert levels == ["ERROR", "WARNING", "WARNING"]  # one traceback, then short warnings


async def test_duplicate_tool_call_ids_are_stored_as_the_loop_rewrote_them() -> None:
    store = InMemorySessionStore()
    fm = FauxModel([faux_duplicate_id_calls("echo", [{}, {}], id=""), "ok"])
    agent = faux_agent(fm, store, session_id="s")
    await agent.prompt("go")
    loaded = store.load("s")
    assert loaded == agent.state.messages
    call_ids = [c.id for c in loaded[1].tool_calls]  # type: ignore[union-attr]
    result_ids = [m.tool_call_id for m in loaded if isinstance(m, ToolResultMessage)]
    assert call_ids == result_ids and len(set(call_ids)) == 2 and all(call_ids)


@dataclass
class Note:
    text: str
    role: str = "note"


async def test_custom_messages_are_skipped_not_fatal(caplog: pytest.LogCaptureFixture) -> None:
    store = InMemorySessionStore()
    agent = faux_agent(FauxModel(["ok"]), store, session_id="s")
    with caplog.at_level(logging.WARNING, logger="yiemagent.sessions"):
        answer = await agent.prompt([UserMessage("hi"), Note("for the app only")])
    assert answer.text == "ok"
    assert [m.role for m in agent.state.messages] == ["user", "note", "assistant"]
    assert [m.role for m in store.load("s")] == ["user", "assistant"]
    assert "Note" in caplog.text


async def test_a_tail_tool_call_without_result_gets_one_on_load_and_resume_works() -> None:
    store = InMemorySessionStore()
    calls = faux_message(faux_tool_call("echo", {}, id="c1"), faux_tool_call("echo", {}, id="c2"))
    store.append("s", UserMessage("go"))
    store.append("s", calls)
    store.append("s", ToolResultMessage("c1", "echo", [TextContent("echo ran")]))
    fm = FauxModel(["recovered"])
    agent = faux_agent(fm, store, session_id="s")
    repaired = agent.state.messages[-1]
    assert isinstance(repaired, ToolResultMessage)
    assert repaired.tool_call_id == "c2" and repaired.is_error
    assert "interrupted" in text_of(repaired.content)
    assert store.load("s") == agent.state.messages  # the repair is stored too

    answer = await agent.resume()
    assert answer.text == "recovered"
    sent = fm.contexts[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "toolResult", "toolResult"]
    assert len(store.load("s")) == 5


def test_bad_store_and_unreadable_store_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="session_store must be a SessionStore"):
        Agent(llm_call=lambda f: {}, session_store=object())  # type: ignore[arg-type]

    class Broken(InMemorySessionStore):
        def load(self, session_id: str) -> list[AgentMessage]:
            raise OSError("unreadable")

    with pytest.raises(ConfigError, match=r"cannot load session 's'.*unreadable"):
        Agent(llm_call=lambda f: {}, session_store=Broken(), session_id="s")


@pytest.mark.parametrize("session_id", ["", "a\nb", "\x1b[31m", "nul\x00", "caf\udce9"])
def test_a_session_id_that_is_not_one_is_a_config_error_and_nothing_is_stored(
    session_id: str,
) -> None:
    # The check `yiem serve` made on its routes, now made for every Agent on a store: the
    # chat and batch tasks took an empty id or control characters. A lone surrogate (a
    # Latin-1 name on the command line of a UTF-8 system) passed the check, then SQLite and
    # PostgreSQL failed on it with a bare UnicodeEncodeError.
    store = InMemorySessionStore()
    with pytest.raises(ConfigError, match="non-empty text without control characters"):
        Agent(llm_call=lambda f: {}, session_store=store, session_id=session_id)
    assert store.list_sessions() == []


def test_reset_raises_and_changes_nothing_when_the_store_cannot_clear() -> None:
    class NoClear(InMemorySessionStore):
        def replace(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
            raise OSError("read-only")

    store = NoClear()
    store.append("s", UserMessage("kept"))
    agent = Agent(llm_call=lambda f: {}, session_store=store, session_id="s")
    with pytest.raises(OSError, match="read-only"):
        agent.reset()
    assert len(agent.state.messages) == 1 == len(store.load("s"))


async def wait_until_aborted(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    await signal.wait()
    return "stopped"


async def test_abort_steering_follow_up_and_sent_prompts_are_all_stored_in_order(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    fm = FauxModel([faux_message(faux_tool_call("block", {})), "r1", "r2", "r3", "r4"])
    agent = faux_agent(fm, store, session_id="s", steering_mode="all")
    agent.tool_store.register(AgentTool("block", "block", "waits", SCHEMA, wait_until_aborted))
    started = asyncio.Event()
    agent.subscribe(lambda e, s: started.set() if e.type == "tool_execution_start" else None)
    run = asyncio.create_task(agent.prompt("first"))
    await asyncio.wait_for(started.wait(), 5)
    agent.abort()
    assert (await run).stop_reason == "aborted"
    assert store.load("s") == agent.state.messages  # the aborted call's result is stored

    agent.steer("S1")
    agent.follow_up("F1")
    assert (await agent.prompt("second")).text == "r2"
    agent.send("sent")
    assert (await agent.take_response()).text == "r3"
    loaded = store.load("s")
    assert loaded == agent.state.messages
    users = [text_of(m.content) for m in loaded if isinstance(m, UserMessage)]
    assert users == ["first", "second", "S1", "F1", "sent"]
    store.close()


async def test_a_resumed_agent_can_be_resumed_again_identically(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    for round_ in range(3):
        store = SqliteSessionStore(path)
        agent = faux_agent(FauxModel(tool_then_answer(f"a{round_}")), store, session_id="s")
        assert len(agent.state.messages) == 4 * round_
        await agent.prompt(f"q{round_}")
        assert store.load("s") == agent.state.messages
        store.close()
    assert [seq for seq, _ in rows(path, "s")] == list(range(1, 13))
