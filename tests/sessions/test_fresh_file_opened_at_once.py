"""Several processes that open one new SQLite session file at the same moment (DESIGN §8,
§18): the first time a file is used, each process creates the tables and switches the file
to WAL. Every one of them opens it, takes its own session and writes to it; none is
refused with "database is locked", and every message is there afterwards."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from yiemagent import UserMessage
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import text_of

pytestmark = pytest.mark.timeout(180)

PROCESSES = 4
FILES = 6

CHILD = textwrap.dedent(
    """
    import sys
    from yiemagent import UserMessage
    from yiemagent.sessions import SqliteSessionStore
    me = sys.argv[1]
    print("ready", flush=True)
    for path in sys.stdin:
        try:
            store = SqliteSessionStore(path.strip())
            try:
                token = store.acquire(me)
                store.append(me, UserMessage(f"from {me}"))
                store.release(me, token)
            finally:
                store.close()
            print("ok", flush=True)
        except Exception as exc:
            print(f"failed: {type(exc).__name__}: {exc}", flush=True)
    """
)


def test_processes_opening_a_new_file_at_once_all_write_to_it(tmp_path: Path) -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, f"p{k}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(PROCESSES)
    ]
    try:
        for child in children:  # each has imported yiemagent: the opens below coincide
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
        paths = [tmp_path / f"fresh{n}.db" for n in range(FILES)]
        for path in paths:
            for child in children:
                assert child.stdin is not None
                child.stdin.write(f"{path}\n")
                child.stdin.flush()
            said = [child.stdout.readline().strip() for child in children if child.stdout]
            assert said == ["ok"] * PROCESSES, (path.name, said)
    finally:
        for child in children:
            if child.stdin is not None:
                child.stdin.close()
            child.wait(30)
    for path in paths:
        with SqliteSessionStore(path) as store:
            assert sorted(store.list_sessions()) == [f"p{k}" for k in range(PROCESSES)]
            for k in range(PROCESSES):
                [message] = store.load(f"p{k}")
                assert isinstance(message, UserMessage)
                assert text_of(message.content) == f"from p{k}"
