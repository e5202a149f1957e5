"""A PostgreSQL lease holder whose connection broke (a server restart, a network cut) is
taken for dead and its session taken over (DESIGN §18). When it comes back it must not write
the session again: its transcript no longer is the session's, and its writes would land
after the other writer's turn, interleaving two conversations. Its next write is refused
with one clear `SessionBusyError`, whether or not the other writer still holds the session
(tests/sessions/test_lease_lost.py: the same for a lease removed by `force_release`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import psycopg
import pytest

from yiemagent import UserMessage
from yiemagent.sessions import PostgresSessionStore

pytestmark = pytest.mark.timeout(120)

HOLDER = textwrap.dedent(
    """
    import sys
    from yiemagent import UserMessage
    from yiemagent.sessions import PostgresSessionStore
    store = PostgresSessionStore(sys.argv[1])
    store.acquire("s")
    store.append("s", UserMessage("first of the holder"))
    print("held", flush=True)
    for line in sys.stdin:
        try:
            store.append("s", UserMessage(line.strip()))
            print("wrote", flush=True)
        except Exception as error:
            print(f"refused {type(error).__name__}: {error}", flush=True)
    """
)


@pytest.fixture
def holder(postgres_dsn: str) -> Iterator[subprocess.Popen[str]]:
    """A process holding session "s" (one message written), its connection then cut by the
    server, as a restart would."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, postgres_dsn],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        yield child
    finally:
        child.kill()
        child.wait()


def ask_to_write(child: subprocess.Popen[str], text: str) -> str:
    """Have the holder append `text`; what it answers ("wrote" or "refused ...")."""
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(text + "\n")
    child.stdin.flush()
    return child.stdout.readline().strip()


def texts(store: PostgresSessionStore) -> list[str]:
    return [m.content[0].text for m in store.load("s")]  # type: ignore[union-attr]


def test_a_holder_taken_over_while_cut_off_writes_nothing_after_the_new_writer(
    postgres_dsn: str, holder: subprocess.Popen[str]
) -> None:
    """The holder wrote again once the writer that took its session over had released it:
    the session read [holder, other, holder] and the holder's agent never saw the turn in
    between."""
    with PostgresSessionStore(postgres_dsn) as other:
        token = other.acquire("s")  # the holder's lock went with its connection: taken over
        other.append("s", UserMessage("turn of the other writer"))
        assert ask_to_write(holder, "while the other holds it").startswith(
            "refused SessionBusyError"
        )
        other.release("s", token)
        answer = ask_to_write(holder, "after the other is done")
        assert answer.startswith("refused SessionBusyError: session 's'"), answer
        assert "taken over" in answer
        assert texts(other) == ["first of the holder", "turn of the other writer"]
        other.acquire("s")  # the session is free for any new writer
        other.append("s", UserMessage("next turn"))
        assert texts(other)[-1] == "next turn"
