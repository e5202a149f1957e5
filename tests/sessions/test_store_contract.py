"""The session store contract (DESIGN §10), one suite run against every store: in
memory, SQLite and PostgreSQL (a real server the tests start, tests/_postgres.py). Messages
round-trip and keep their order, sessions are isolated, `replace` swaps a whole transcript,
state values sit beside a session, one writer holds a session at a time and a dead one's
lease is taken over; for the stores whose data several stores and processes share, writes
from two connections keep every message exactly once."""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import textwrap
import threading
from asyncio.subprocess import PIPE
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.sessions._backends import OPEN_SPEC, Backend
from yiemagent import (
    Agent,
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Cost,
    ImageContent,
    SessionBusyError,
    SessionStoreClosedError,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    YiemAgentError,
)
from yiemagent.sessions import SessionStateStore, SessionStore


def every_message_type() -> list[AgentMessage]:
    usage = Usage(10, 5, 2, 1, 18, Cost(0.1, 0.2, 0.01, 0.02, 0.33))
    return [
        UserMessage([TextContent("héllo ✓"), ImageContent("aGVsbG8=", "image/png")], 1),
        AssistantMessage(
            [
                ThinkingContent("hmm", signature="sig", redacted=True),
                TextContent("calling"),
                ToolCall("c1", "get", {"a": [1, {"b": None}], "s": "x"}, partial_json='{"a":'),
            ],
            api="faux",
            provider="faux",
            model="m",
            usage=usage,
            stop_reason="toolUse",
            error_message=None,
            timestamp=2,
        ),
        ToolResultMessage(
            "c1",
            "get",
            [TextContent("ok"), ImageContent("AAAA", "image/jpeg")],
            details={"n": 1, "nested": {"list": [1.5, True]}},
            usage=usage,
            added_tool_names=["newTool"],
            is_error=True,
            timestamp=3,
        ),
        AssistantMessage(stop_reason="error", error_message="boom", timestamp=4),
        BashExecutionMessage(
            "ls", "a\nb", exit_code=1, cancelled=True, truncated=True, timestamp=5
        ),
        CompactionSummaryMessage("summary", tokens_before=1234, timestamp=6),
        BranchSummaryMessage("branch", from_id="x1", timestamp=7),
    ]


def test_round_trip_of_every_message_type(store: SessionStore) -> None:
    messages = every_message_type()
    for message in messages:
        store.append("s", message)
    loaded = store.load("s")
    assert loaded == messages
    assert all(a is not b for a, b in zip(loaded, messages, strict=True))  # new objects


def test_unknown_session_loads_empty_and_clear_is_a_no_op(store: SessionStore) -> None:
    assert store.load("nope") == []
    store.clear("nope")
    assert store.list_sessions() == []


def test_two_sessions_in_one_store_are_isolated(store: SessionStore) -> None:
    store.append("a", UserMessage("a1"))
    store.append("b", UserMessage("b1"))
    store.append("a", UserMessage("a2"))
    assert [m.content[0].text for m in store.load("a")] == ["a1", "a2"]  # type: ignore[union-attr]
    assert [m.content[0].text for m in store.load("b")] == ["b1"]  # type: ignore[union-attr]
    assert store.list_sessions() == ["a", "b"]
    store.clear("a")
    assert store.load("a") == []
    assert len(store.load("b")) == 1
    assert store.list_sessions() == ["b"]
    store.append("a", UserMessage("again"))  # a cleared session starts over
    assert len(store.load("a")) == 1


@dataclass
class Note:
    text: str
    role: str = "note"


def test_custom_message_type_is_skipped_with_a_warning(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="yiemagent.sessions"):
        store.append("s", UserMessage("kept"))
        store.append("s", Note("not persisted"))
    assert [m.role for m in store.load("s")] == ["user"]
    assert "Note" in caplog.text and "skipping" in caplog.text


def test_tool_result_with_unserialisable_details_keeps_its_pairing(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    with caplog.at_level(logging.WARNING, logger="yiemagent.sessions"):
        store.append("s", ToolResultMessage("c1", "t", [TextContent("r")], details=Opaque()))
    [loaded] = store.load("s")
    assert isinstance(loaded, ToolResultMessage)
    assert loaded.tool_call_id == "c1" and loaded.content == [TextContent("r")]
    assert loaded.details == {"unserializable": "<opaque>"}
    assert "not JSON-serialisable" in caplog.text


def test_text_with_lone_surrogates_is_stored_as_it_was(store: SessionStore) -> None:
    # A file name decoded with surrogateescape, an emoji cut in half: Python strings hold
    # them, UTF-8 cannot, and SQLite and PostgreSQL take UTF-8 text.
    odd = "caf\udce9 and half an emoji \ud83d"
    messages: list[AgentMessage] = [
        UserMessage(odd),
        AssistantMessage([ToolCall("c1", "read", {"path": odd})], stop_reason="toolUse"),
        ToolResultMessage("c1", "read", [TextContent(odd)], details={"path": odd}),
    ]
    for message in messages:
        store.append("s", message)
    assert store.load("s") == messages
    store.replace("s", messages[:1])
    assert store.load("s") == messages[:1]


def test_text_with_nul_characters_is_stored_as_it_was(store: SessionStore) -> None:
    # A binary file read as text, a C string's terminator: PostgreSQL's text and jsonb
    # refuse U+0000 (langgraph#1878), yet a prompt or a tool's output may hold it.
    odd = "before\x00after \\u0000 literal"
    messages: list[AgentMessage] = [
        UserMessage(odd),
        AssistantMessage([ToolCall("c1", "read", {"path": odd})], stop_reason="toolUse"),
        ToolResultMessage("c1", "read", [TextContent(odd)], details={odd: [odd]}),
    ]
    for message in messages:
        store.append("s", message)
    assert store.load("s") == messages
    store.replace("s", messages[:1])
    assert store.load("s") == messages[:1]


def test_closed_store_refuses_use(store: SessionStore) -> None:
    token = store.acquire("s")
    store.append("s", UserMessage("x"))
    store.close()
    store.close()  # idempotent
    store.release("s", token)  # a no-op once closed
    uses: dict[str, Any] = {
        "load": lambda: store.load("s"),
        "append": lambda: store.append("s", UserMessage("y")),
        "replace": lambda: store.replace("s", []),
        "clear": lambda: store.clear("s"),
        "acquire": lambda: store.acquire("t"),
        "list_sessions": store.list_sessions,
    }
    if isinstance(store, SessionStateStore):
        uses["load_state"] = lambda: store.load_state("s", "k")
        uses["save_state"] = lambda: store.save_state("s", "k", "v")
    for name, use in uses.items():
        with pytest.raises(SessionStoreClosedError, match="is closed") as raised:
            use()
        assert isinstance(raised.value, YiemAgentError), name
        assert isinstance(raised.value, RuntimeError), name  # as it was before it had a name


def test_every_store_satisfies_both_protocols(store: SessionStore) -> None:
    assert isinstance(store, SessionStore)
    assert isinstance(store, SessionStateStore)


def _texts(store: SessionStore, session_id: str) -> list[str]:
    return [m.content[0].text for m in store.load(session_id)]  # type: ignore[union-attr]


def test_replace_swaps_the_whole_transcript(store: SessionStore) -> None:
    for n in range(5):
        store.append("s", UserMessage(f"m{n}"))
    store.append("t", UserMessage("other"))
    store.replace("s", [UserMessage("new0"), UserMessage("new1")])
    assert _texts(store, "s") == ["new0", "new1"]
    store.append("s", UserMessage("new2"))  # appends go on after the rewritten rows
    assert _texts(store, "s") == ["new0", "new1", "new2"]
    assert _texts(store, "t") == ["other"]
    store.replace("s", [])
    assert store.load("s") == [] and store.list_sessions() == ["t"]


def test_state_values_sit_beside_a_session(store: SessionStore) -> None:
    assert isinstance(store, SessionStateStore)
    assert store.load_state("s", "held") is None
    store.save_state("s", "held", '{"calls": 1}')
    store.save_state("s", "held", '{"calls": 2}')  # overwritten, not added
    store.save_state("s", "other", "x")
    store.save_state("t", "held", "t's")
    store.save_state("t", "nul", "a\x00b")  # any string, NUL included (PostgreSQL text has none)
    assert store.load_state("t", "nul") == "a\x00b"
    assert store.load_state("s", "held") == '{"calls": 2}'
    assert store.load_state("t", "held") == "t's"
    assert store.list_sessions() == []  # values alone do not make a session
    store.save_state("s", "other", None)
    assert store.load_state("s", "other") is None
    store.append("s", UserMessage("m"))
    store.clear("s")  # deletes the session's values too
    assert store.load_state("s", "held") is None and store.load("s") == []
    assert store.load_state("t", "held") == "t's"


# ── exactly once, in order: a model-based property ─────────────────────────

_example = iter(range(10**9))
ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from("ab"), st.text(max_size=8)),
        st.tuples(
            st.just("replace"),
            st.sampled_from("ab"),
            st.integers(0, 6),
            st.lists(st.text(max_size=8), max_size=3),
        ),
        st.tuples(st.just("clear"), st.sampled_from("ab")),
        st.tuples(st.just("state"), st.sampled_from("ab"), st.none() | st.text(max_size=8)),
    ),
    max_size=25,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops)
def test_any_sequence_of_writes_leaves_each_message_once_in_order(
    store: SessionStore, operations: list[tuple[Any, ...]]
) -> None:
    """Appends, rewrites, clears and state writes in any order: each session then holds
    exactly the messages a plain list would, each once, in order."""
    assert isinstance(store, SessionStateStore)
    prefix = f"x{next(_example)}-"  # each example starts from sessions nobody wrote
    model: dict[str, list[str]] = {"a": [], "b": []}
    state: dict[str, str | None] = {"a": None, "b": None}
    for op in operations:
        sid = prefix + op[1]
        if op[0] == "append":
            store.append(sid, UserMessage(op[2]))
            model[op[1]].append(op[2])
        elif op[0] == "replace":
            model[op[1]] = model[op[1]][: op[2]] + op[3]
            store.replace(sid, [UserMessage(text) for text in model[op[1]]])
        elif op[0] == "clear":
            store.clear(sid)
            model[op[1]], state[op[1]] = [], None
        else:
            store.save_state(sid, "k", op[2])
            state[op[1]] = op[2]
    for name in "ab":
        assert _texts(store, prefix + name) == model[name]
        assert store.load_state(prefix + name, "k") == state[name]
    listed = {sid for sid in store.list_sessions() if sid.startswith(prefix)}
    assert listed == {prefix + name for name in "ab" if model[name]}


def test_appends_from_many_threads_keep_every_message_once(store: SessionStore) -> None:
    def write(k: int) -> None:
        for i in range(15):
            store.append(f"s{k % 2}", UserMessage(f"{k}-{i}"))

    threads = [threading.Thread(target=write, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    texts = _texts(store, "s0")
    assert len(texts) == 45 and len(set(texts)) == 45
    for k in (0, 2, 4):  # each thread's messages keep their order
        assert [t for t in texts if t.startswith(f"{k}-")] == [f"{k}-{i}" for i in range(15)]


# ── one writer per session ─────────────────────────────────────────────────


def test_one_writer_per_session_and_a_stale_token_frees_nothing(store: SessionStore) -> None:
    old = store.acquire("s")
    with pytest.raises(SessionBusyError, match="another Agent in this process"):
        store.acquire("s")
    store.release("other", store.acquire("other"))  # other sessions are free
    store.release("s", old)
    current = store.acquire("s")
    store.release("s", old)  # stale: must not free the current holder's lease
    with pytest.raises(SessionBusyError):
        store.acquire("s")
    store.append("s", UserMessage("by the holder"))
    store.release("s", current)
    store.release("s", store.acquire("s"))


def _agent(store: SessionStore, session_id: str = "s") -> Agent:
    return Agent(
        llm_call=lambda f: {"role": "assistant", "content": "ok"},
        session_store=store,
        session_id=session_id,
    )


async def test_a_collected_agent_gives_its_session_back(store: SessionStore) -> None:
    first = _agent(store)
    await first.prompt("hi")
    with pytest.raises(SessionBusyError):
        _agent(store)
    del first
    # The run's cancelled tasks and timers leave the loop's queues at its next turns; until
    # then they hold the run's context, and with it the agent.
    for _ in range(3):
        await asyncio.sleep(0)
    gc.collect()
    second = _agent(store)
    assert [m.role for m in second.state.messages] == ["user", "assistant"]
    await second.close()


# ── stores sharing data: SQLite and PostgreSQL ─────────────────────────────


def test_a_reopened_store_holds_the_sessions(shared_backend: Backend) -> None:
    first = shared_backend.open()
    for message in every_message_type():
        first.append("x", message)
    first.save_state("x", "held", "v")
    first.close()
    again = shared_backend.open()
    assert again.load("x") == every_message_type()
    assert isinstance(again, SessionStateStore) and again.load_state("x", "held") == "v"
    again.close()


def test_a_live_holder_refuses_every_write_of_another_store(shared_backend: Backend) -> None:
    holder, other = shared_backend.open(), shared_backend.open()
    assert isinstance(other, SessionStateStore)
    token = holder.acquire("s")
    holder.append("s", UserMessage("mine"))
    writes = [
        lambda: other.append("s", UserMessage("intruder")),
        lambda: other.replace("s", [UserMessage("intruder")]),
        lambda: other.clear("s"),
        lambda: other.save_state("s", "k", "v"),
        lambda: other.acquire("s"),
    ]
    for write in writes:
        with pytest.raises(SessionBusyError, match="another Agent in this process"):
            write()
    assert _texts(other, "s") == ["mine"] and other.load_state("s", "k") is None
    other.append("free", UserMessage("other sessions are free"))
    holder.release("s", token)
    other.append("s", UserMessage("after release"))
    assert _texts(holder, "s") == ["mine", "after release"]
    holder.close()
    other.close()


def test_closing_a_store_releases_its_leases(shared_backend: Backend) -> None:
    first, second = shared_backend.open(), shared_backend.open()
    first.acquire("s")
    with pytest.raises(SessionBusyError):
        second.acquire("s")
    first.close()
    second.acquire("s")
    second.close()


def test_two_stores_appending_to_one_session_keep_every_message_once(
    shared_backend: Backend,
) -> None:
    """Without a lease (raw store use) two connections may append to one session at once:
    each message is stored once, none is lost to a clash over the next position."""
    stores = [shared_backend.open() for _ in range(3)]

    def write(k: int) -> None:
        for i in range(15):
            stores[k].append("s", UserMessage(f"{k}-{i}"))

    threads = [threading.Thread(target=write, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    texts = _texts(stores[0], "s")
    assert sorted(texts) == sorted(f"{k}-{i}" for k in range(3) for i in range(15))
    for k in range(3):
        assert [t for t in texts if t.startswith(f"{k}-")] == [f"{k}-{i}" for i in range(15)]
    for s in stores:
        s.close()


HOLDER = OPEN_SPEC + textwrap.dedent(
    """
    import sys, time
    store = open_store(sys.argv[1])
    store.acquire("s")
    store.append("s", __import__("yiemagent").UserMessage("from the child"))
    print("HOLDING", flush=True)
    time.sleep(120)
    """
)


@pytest.mark.timeout(120)
async def test_a_killed_process_lease_is_taken_over(
    shared_backend: Backend, tmp_path: Path
) -> None:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), shared_backend.spec, stdout=PIPE, stderr=PIPE
    )
    store = shared_backend.open()
    try:
        assert child.stdout is not None and child.stderr is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        if line.strip() != b"HOLDING":
            pytest.fail(f"the holder did not start: {(await child.stderr.read()).decode()}")
        with pytest.raises(SessionBusyError, match=f"process {child.pid}"):
            store.acquire("s")
        with pytest.raises(SessionBusyError):
            store.append("s", UserMessage("refused"))
        child.kill()  # SIGKILL: no release, no close
        await asyncio.wait_for(child.wait(), 10)
        token = await acquire_within(store, "s", 15.0)
        store.append("s", UserMessage("taken over"))
        assert _texts(store, "s") == ["from the child", "taken over"]
        store.release("s", token)
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        store.close()


async def acquire_within(store: SessionStore, session_id: str, seconds: float) -> str:
    """`acquire`, retried while the dead holder's end is still being noticed (PostgreSQL
    ends a killed client's backend when it reads the closed socket, a moment later)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        try:
            return store.acquire(session_id)
        except SessionBusyError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.05)
