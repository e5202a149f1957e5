"""`yiem sessions release ID`: a session whose writer cannot be checked from here (held on
another host, as by a container recreated under a new host name) is freed from the CLI, one
line, after a confirmation (DESIGN §10, §8), on SQLite and on PostgreSQL."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.sessions._backends import OPEN_SPEC, Backend
from yiemagent import SessionBusyError, TextContent, UserMessage
from yiemagent.sessions import SqliteSessionStore

pytestmark = pytest.mark.timeout(120)


def yiem(folder: Path, *args: str, answer: str | None = None) -> subprocess.CompletedProcess[str]:
    """`yiem ARGS` in `folder` (`yiem_in`), `answer` on its standard input."""
    plain = {"NO_COLOR": "1", "COLUMNS": "200"}
    return yiem_in(folder, *args, env=plain, input=answer, timeout=90)


def test_a_lease_held_on_another_host_is_released_after_confirmation(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    SqliteSessionStore(db).close()
    with sqlite3.connect(db) as conn:  # the writer of a container since recreated
        conn.execute(
            "INSERT INTO leases VALUES ('s', 'tok', 'gone.example', 7, '', ?)",
            (int(time.time() * 1000),),  # renewed a moment ago
        )
    with SqliteSessionStore(db) as store, pytest.raises(SessionBusyError, match="yiem sessions"):
        store.acquire("s")

    refused = yiem(tmp_path, "sessions", "release", "s", "--sessions", str(db), answer="")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == "yiem: error: session 's': not released; confirm with --yes\n"
    with SqliteSessionStore(db) as store, pytest.raises(SessionBusyError):
        store.acquire("s")  # unconfirmed: nothing changed

    done = yiem(tmp_path, "sessions", "release", "s", "--yes", "--sessions", str(db))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "session 's': writer lease released\n"
    with SqliteSessionStore(db) as store:
        store.release("s", store.acquire("s"))


def test_a_bad_session_id_is_one_line(tmp_path: Path) -> None:
    bad = yiem(
        tmp_path, "sessions", "release", "a\x1bb", "--yes", "--sessions", str(tmp_path / "s.db")
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("yiem: error: ") and bad.stderr.count("\n") == 1


def test_release_frees_a_session_a_live_writer_holds(
    shared_backend: Backend, tmp_path: Path
) -> None:
    """The holder, another process, still runs (on PostgreSQL its connection is open): after
    the release the session is taken by the next writer and the old holder's write fails."""
    child = subprocess.Popen(
        [sys.executable, "-c", OPEN_SPEC + textwrap.dedent(f"""
            import sys
            from yiemagent import UserMessage
            store = open_store({shared_backend.spec!r})
            token = store.acquire("s")
            print("held", flush=True)
            sys.stdin.readline()
            try:
                store.append("s", UserMessage("late"))
                print("wrote", flush=True)
            except Exception as exc:
                print(type(exc).__name__, flush=True)
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline() == "held\n"
        store = shared_backend.open()
        try:
            with pytest.raises(SessionBusyError):
                store.acquire("s")
            done = yiem(
                tmp_path, "sessions", "release", "s", "--yes", "--sessions", shared_backend.spec
            )
            assert done.returncode == 0, done.stderr
            token = store.acquire("s")
            child.stdin.write("\n")
            child.stdin.flush()
            assert child.stdout.readline() == "SessionBusyError\n"
            store.release("s", token)
            assert store.load("s") == []
        finally:
            store.close()
    finally:
        child.kill()
        child.wait()


def test_releasing_a_session_that_does_not_exist_is_one_line_and_fails(
    shared_backend: Backend, tmp_path: Path
) -> None:
    """A typo in the id is not "released": one line says no such session and the exit is 1;
    a stored session nobody writes is said to have no lease, and nothing fails."""
    store = shared_backend.open()
    try:
        store.append("kept", UserMessage("hello"))
    finally:
        store.close()

    missing = yiem(
        tmp_path, "sessions", "release", "kepd", "--yes", "--sessions", shared_backend.spec
    )
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == (
        "yiem: error: session 'kepd': no such session, nothing released "
        "(`yiem sessions` lists them)\n"
    )

    idle = yiem(tmp_path, "sessions", "release", "kept", "--yes", "--sessions", shared_backend.spec)
    assert (idle.returncode, idle.stderr) == (0, "")
    assert idle.stdout == "session 'kept': no writer lease held, nothing to release\n"
    store = shared_backend.open()
    try:
        assert [m.content for m in store.load("kept")] == [[TextContent("hello")]]
    finally:
        store.close()


def test_an_unconfirmed_release_of_a_session_without_a_lease_says_so_before_asking(
    shared_backend: Backend, tmp_path: Path
) -> None:
    """Without --yes the command asked first ("confirm with --yes", exit 1) and only a
    confirmed run learned that the id was a typo or that nothing held the session."""
    store = shared_backend.open()
    try:
        store.append("kept", UserMessage("hello"))
    finally:
        store.close()
    where = ("--sessions", shared_backend.spec)

    missing = yiem(tmp_path, "sessions", "release", "kepd", *where, answer="y\n")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == (
        "yiem: error: session 'kepd': no such session, nothing released "
        "(`yiem sessions` lists them)\n"
    )
    idle = yiem(tmp_path, "sessions", "release", "kept", *where, answer="y\n")
    assert (idle.returncode, idle.stderr) == (0, "")
    assert idle.stdout == "session 'kept': no writer lease held, nothing to release\n"
