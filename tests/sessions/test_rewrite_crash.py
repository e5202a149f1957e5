"""A session rewrite is one transaction (DESIGN §10; issue 12 item 1): a process SIGKILLed at a
random moment while it rewrites a 2,000-message `SqliteSessionStore` session (an undo,
`agent.state.messages = transcript[:-2]`, and back) leaves the old transcript or the new one,
never a part; no message is lost; the next Agent takes the dead writer's lease over."""

from __future__ import annotations

import asyncio
import random
import sys
import textwrap
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest

from yiemagent import Agent, AssistantMessage, TextContent, UserMessage
from yiemagent.sessions import SqliteSessionStore

MESSAGES = 2000
TRIALS = 20

CHILD = textwrap.dedent(
    """
    import sys
    from yiemagent import Agent
    from yiemagent.sessions import SqliteSessionStore

    agent = Agent(
        llm_call=lambda formatted: {"role": "assistant", "content": "unused"},
        session_store=SqliteSessionStore(sys.argv[1]),
        session_id="long",
    )
    full = list(agent.state.messages)
    print("READY", len(full), flush=True)
    while True:  # undo the last exchange, then redo it, until killed
        agent.state.messages = full[:-2]
        agent.state.messages = full
    """
)


def transcript() -> list[UserMessage | AssistantMessage]:
    out: list[UserMessage | AssistantMessage] = []
    for n in range(MESSAGES // 2):
        out.append(UserMessage(f"question {n}", timestamp=1_000 + 2 * n))
        out.append(
            AssistantMessage([TextContent(f"answer {n} " + "x" * 40)], timestamp=1_001 + 2 * n)
        )
    return out


@pytest.mark.timeout(300)
async def test_sigkill_during_rewrites_leaves_old_or_new_transcript(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    full = transcript()
    with SqliteSessionStore(db) as store:
        store.replace("long", full)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    rng = random.Random(12)
    outcomes: list[int] = []
    for _trial in range(TRIALS):
        child = await asyncio.create_subprocess_exec(
            sys.executable, str(script), str(db), stdout=PIPE, stderr=PIPE
        )
        try:
            assert child.stdout is not None and child.stderr is not None
            line = await asyncio.wait_for(child.stdout.readline(), timeout=60)
            if not line.startswith(b"READY"):
                pytest.fail(f"the child did not start: {(await child.stderr.read()).decode()}")
            assert line.split()[1] == str(MESSAGES).encode()
            await asyncio.sleep(rng.uniform(0.0, 0.15))
            child.kill()  # SIGKILL: mid-transaction, no cleanup
        finally:
            if child.returncode is None:
                child.kill()
            await asyncio.wait_for(child.wait(), timeout=10)
        store = SqliteSessionStore(db)
        stored = store.load("long")
        assert stored in (full, full[:-2]), f"a part: {len(stored)} messages"
        outcomes.append(len(stored))
        # the dead writer's lease is taken over; the next trial starts from the full transcript
        agent = Agent(llm_call=lambda f: {}, session_store=store, session_id="long")
        agent.state.messages = full
        await agent.close()
        store.close()
    assert len(outcomes) == TRIALS
