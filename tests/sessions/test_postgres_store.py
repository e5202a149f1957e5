"""What only `PostgresSessionStore` does (DESIGN §18): a lease holder on another host is alive
exactly while its database connection is, the tables live in a schema of their own, a broken
connection is opened again (an append cut after its commit is stored once), and bad
configuration is one clear `ConfigError`. The contract it shares with the other stores is
tests/sessions/test_store_contract.py."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from asyncio.subprocess import PIPE
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from tests._postgres import PostgresServer
from tests.sessions._cut_proxy import CutProxy
from tests.sessions.test_store_contract import acquire_within
from yiemagent import Agent, AgentTool, ConfigError, SessionBusyError, UserMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.sessions import PostgresSessionStore

REMOTE = textwrap.dedent(
    """
    import sys, time
    from yiemagent.sessions import PostgresSessionStore, lease
    lease.this_host = lambda: "elsewhere.example"  # a replica on another machine
    store = PostgresSessionStore(sys.argv[1])
    store.acquire("s")
    print("HOLDING", flush=True)
    time.sleep(120)
    """
)


@pytest.mark.timeout(120)
async def test_a_holder_on_another_host_is_alive_while_its_connection_is(
    postgres_dsn: str, tmp_path: Path
) -> None:
    """Its pid cannot be checked from here; its connection to the database can."""
    script = tmp_path / "remote.py"
    script.write_text(REMOTE)
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), postgres_dsn, stdout=PIPE, stderr=PIPE
    )
    store = PostgresSessionStore(postgres_dsn)
    try:
        assert child.stdout is not None and child.stderr is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        if line.strip() != b"HOLDING":
            pytest.fail(f"the remote holder did not start: {(await child.stderr.read()).decode()}")
        with pytest.raises(SessionBusyError, match=r"elsewhere\.example, whose connection"):
            store.acquire("s")
        with pytest.raises(SessionBusyError):
            store.append("s", UserMessage("refused"))
        child.kill()  # the remote replica dies: the server ends its connection and lock
        await asyncio.wait_for(child.wait(), 10)
        token = await acquire_within(store, "s", 15.0)
        store.append("s", UserMessage("taken over"))
        assert len(store.load("s")) == 1
        store.release("s", token)
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        store.close()


def test_force_release_frees_a_session_whatever_holds_it(postgres_dsn: str) -> None:
    holder, other = PostgresSessionStore(postgres_dsn), PostgresSessionStore(postgres_dsn)
    holder.acquire("s")
    other.force_release("s")
    other.acquire("s")
    with pytest.raises(SessionBusyError):  # the old holder's next write is refused
        holder.append("s", UserMessage("late"))
    holder.close()
    other.close()


def test_schemas_keep_stores_apart(postgres_dsn: str) -> None:
    with (
        PostgresSessionStore(postgres_dsn) as a,
        PostgresSessionStore(postgres_dsn, schema="Other App") as b,
    ):
        a.append("s", UserMessage("in a"))
        assert b.load("s") == [] and b.list_sessions() == []
        b.acquire("s")  # leases are per schema too
        a.acquire("s")


def test_a_broken_connection_is_opened_again_and_keeps_the_lease(postgres_dsn: str) -> None:
    store = PostgresSessionStore(postgres_dsn)
    store.acquire("s")
    store.append("s", UserMessage("before"))
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:  # as a server restart would
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    assert len(store.load("s")) == 1  # the call that meets the break reconnects
    store.append("s", UserMessage("after"))
    assert [m.content[0].text for m in store.load("s")] == ["before", "after"]  # type: ignore[union-attr]
    with PostgresSessionStore(postgres_dsn) as other, pytest.raises(SessionBusyError):
        other.acquire("s")  # the lease's lock was taken again on the new connection
    store.close()


@pytest.mark.timeout(120)
def test_every_call_that_meets_a_broken_idle_connection_goes_through(postgres_dsn: str) -> None:
    """A server restart (or a proxy dropping idle connections) breaks the store's idle
    connection; the next call of any kind reconnects and succeeds, so a `yiem serve`
    replica does not answer its first request after a restart with a 500."""

    def restart() -> None:
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )

    store = PostgresSessionStore(postgres_dsn)
    calls: list[Callable[[], object]] = [
        lambda: store.acquire("s"),
        lambda: store.append("s", UserMessage("one")),
        lambda: store.replace("s", [UserMessage("two"), UserMessage("three")]),
        lambda: store.save_state("s", "k", "v"),
        lambda: store.load_state("s", "k"),
        lambda: store.list_sessions(),
        lambda: store.load("s"),
        lambda: store.append("t", UserMessage("other")),
        lambda: store.clear("t"),
    ]
    for call in calls:
        restart()
        call()
    assert [m.content[0].text for m in store.load("s")] == ["two", "three"]  # type: ignore[union-attr]
    assert store.load_state("s", "k") == "v" and store.list_sessions() == ["s"]
    restart()
    with PostgresSessionStore(postgres_dsn) as other, pytest.raises(SessionBusyError):
        other.acquire("s")  # still held, by the lock taken again on reconnecting
    store.close()


def test_bad_configuration_is_one_clear_config_error(
    postgres_server: PostgresServer, postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    nowhere = f"postgresql://yiem:secret@127.0.0.1:{postgres_server.port}/no_such_db"
    with pytest.raises(ConfigError, match="cannot connect") as caught:
        PostgresSessionStore(nowhere, connect_timeout_s=5)
    assert "secret" not in str(caught.value) and "***" in str(caught.value)
    PostgresSessionStore(postgres_dsn).close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE yiemagent.meta SET value = '99'")
    with pytest.raises(ConfigError, match="newer yiemagent"):
        PostgresSessionStore(postgres_dsn)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ConfigError, match=r"needs psycopg 3: .*pip install .*\[postgres\]"):
        PostgresSessionStore(postgres_dsn)


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://yiem:s3cretpw@[::1/db",  # an unclosed IPv6 host: psycopg quotes the URI
        "host=127.0.0.1 port=1 password='s3cretpw",  # an unclosed quote
    ],
)
def test_a_dsn_that_does_not_parse_keeps_its_password_out_of_the_error(dsn: str) -> None:
    """psycopg's parse error quotes the whole connection string, password and all, and the
    store put it in its ConfigError (whose own repr hid the password)."""
    with pytest.raises(ConfigError, match="cannot connect") as caught:
        PostgresSessionStore(dsn, connect_timeout_s=1)
    assert "s3cretpw" not in str(caught.value), str(caught.value)


@pytest.mark.timeout(120)
async def test_an_append_cut_after_its_commit_is_stored_once(postgres_dsn: str) -> None:
    """The connection breaks after the server committed an append and before the client
    heard so: the agent retries that message, and the session still holds it once."""
    port = int(postgres_dsn.rsplit(":", 1)[1].split("/")[0])
    proxy = CutProxy(port)
    schema = {"type": "object", "properties": {}}
    tool = AgentTool("t", "t", "a tool", schema, lambda *_: "ran")
    fm = FauxModel([faux_message(faux_tool_call("t", {}, id="c1")), "done", "second"])
    try:
        store = PostgresSessionStore(proxy.dsn(postgres_dsn))
        agent = Agent(
            model=fm.model, stream_fn=fm.stream_fn, tools=[tool], session_store=store,
            session_id="cut",
        )  # fmt: skip
        proxy.arm(b'"toolCall"')  # the assistant message that calls the tool
        await agent.prompt("go")
        await agent.prompt("again")
        await agent.close()
        assert proxy.cuts == 1
        stored = store.load("cut")
        assert [m.role for m in stored] == [
            "user", "assistant", "toolResult", "assistant", "user", "assistant",
        ]  # fmt: skip
        assert stored == agent.state.messages
        reopened = Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store,
                         session_id="cut")  # fmt: skip
        assert len(reopened.state.messages) == 6
        await reopened.close()
        store.close()
    finally:
        proxy.close()


async def test_a_saved_value_that_is_not_text_does_not_lock_the_session_out(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Bytes another program wrote where the held-calls record goes (not UTF-8) made the
    session impossible to open: building its Agent raised."""
    store = PostgresSessionStore(postgres_dsn)
    store.append("s", UserMessage("hi"))
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        admin.execute(
            "INSERT INTO yiemagent.session_state VALUES ('s', 'held_tool_calls', %s)",
            (b"\xff\xfe\x00garbage",),
        )
    fm = FauxModel(["hello again"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id="s")
    assert agent.pending_approvals == []
    assert (await agent.prompt("again")).content[0].text == "hello again"  # type: ignore[union-attr]
    await agent.close()
    assert "not UTF-8 text" in caplog.text
    store.close()
