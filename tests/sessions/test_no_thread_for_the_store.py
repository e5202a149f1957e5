"""An agent with a session store in a process that cannot start a thread (out of threads
or memory; here every new thread asks for a 1 TiB stack): each append raised "can't start
new thread" out of the event sink (logged with a traceback, the message not stored), and
`close()`, which promises never to raise, raised it too, so the exchange was never stored
and the writer lease never given back. Now the store calls run on the calling thread
while no worker thread can start: the transcript is stored whole, in order, once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys, threading

    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel
    from yiemagent.sessions import SqliteSessionStore
    from yiemagent.types import text_of

    fm = FauxModel(["first answer", "second answer"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn,
                  session_store=SqliteSessionStore(sys.argv[1]), session_id="s")

    async def main():
        threading.stack_size(2**40)  # no thread can start from here on
        try:
            await agent.prompt("hello")
            await agent.prompt("again")
            await agent.close()
        finally:
            threading.stack_size(0)

    asyncio.run(main())
    store = SqliteSessionStore(sys.argv[1])
    stored = [[m.role, m.content if isinstance(m.content, str) else text_of(m.content)]
              for m in store.load("s")]
    store.acquire("s")  # the lease was given back
    print(json.dumps(stored))
    """
)


@pytest.mark.timeout(60)
def test_a_session_is_stored_whole_when_no_thread_can_start(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "sessions.db")],
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [
        ["user", "hello"],
        ["assistant", "first answer"],
        ["user", "again"],
        ["assistant", "second answer"],
    ]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
