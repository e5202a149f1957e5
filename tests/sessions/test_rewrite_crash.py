"""A session rewrite is one transaction (DESIGN §10, §18; issue 12 item 1): a process SIGKILLed at
a random moment while it rewrites a 2,000-message session in SQLite or PostgreSQL (an undo,
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

from tests.sessions._backends import OPEN_SPEC, Backend
from tests.sessions.test_store_contract import acquire_within
from yiemagent import Agent, AssistantMessage, TextContent, UserMessage

MESSAGES = 2000
TRIALS = 20

CHILD = OPEN_SPEC + textwrap.dedent(
    """
    import sys
    from yiemagent import Agent

    agent = Agent(
        llm_call=lambda formatted: {"role": "assistant", "content": "unused"},
        session_store=open_store(sys.argv[1]),
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
async def test_sigkill_during_rewrites_leaves_old_or_new_transcript(
    tmp_path: Path, shared_backend: Backend
) -> None:
    full = transcript()
    store = shared_backend.open()
    store.replace("long", full)
    store.close()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    rng = random.Random(12)
    outcomes: list[int] = []
    for _trial in range(TRIALS):
        child = await asyncio.create_subprocess_exec(
            sys.executable, str(script), shared_backend.spec, stdout=PIPE, stderr=PIPE
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
        store = shared_backend.open()
        stored = store.load("long")
        assert stored in (full, full[:-2]), f"a part: {len(stored)} messages"
        outcomes.append(len(stored))
        # the dead writer's lease is taken over; the next trial starts from the full transcript
        # (PostgreSQL notices the death when it reads the closed socket, a moment later)
        store.release("long", await acquire_within(store, "long", 15.0))
        agent = Agent(llm_call=lambda f: {}, session_store=store, session_id="long")
        agent.state.messages = full
        await agent.close()
        store.close()
    assert len(outcomes) == TRIALS
