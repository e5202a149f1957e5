"""A process recording a cassette, SIGKILLed at random moments (DESIGN §8, §19): each
time, the lines before its writer started are untouched, the lines it finished are its own
whole recordings in order, the next recording (another process) drops whatever it left
half-written and appends after them, and at the end every whole recording replays once, in
order. The cut of a line at every byte is covered in test_cassettes.py; this kills real
writers, holding the cassette's lock, between and (now and then) inside their writes."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sys
import textwrap
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest

from yiemagent.ai import Context, complete
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.testing import record, replay
from yiemagent.types import UserMessage

TRIALS = 10

FORKER = textwrap.dedent(
    """
    import asyncio, os, sys
    from yiemagent.ai import Context, complete
    from yiemagent.ai.providers.faux import FauxModel
    from yiemagent.testing import record
    from yiemagent.types import UserMessage

    big = "z" * 200_000  # a line of 600 kB: a kill can land inside its write
    fm = FauxModel(chunk_size=1_000_000)

    async def warm_up():  # the first recording imports and starts what the rest reuse
        fm.add("warm " + big)
        await complete(record(fm.model, sys.argv[2]), Context("x", [UserMessage("warm")]))

    async def record_until_killed(trial):
        recording = record(fm.model, sys.argv[1])
        n = 0
        while True:
            fm.add(f"{trial}-{n} {big}")
            await complete(recording, Context("x", [UserMessage(f"{trial}-{n}")]))
            n += 1

    asyncio.run(warm_up())
    print("READY", flush=True)
    while line := sys.stdin.readline():  # "t3": fork a writer of trial t3, to kill
        pid = os.fork()
        if pid == 0:
            asyncio.run(record_until_killed(line.strip()))
        print(pid, flush=True)
        sys.stdin.readline()  # killed: reaped only now, so its pid is not reused before
        os.waitpid(pid, 0)
        print("DEAD", flush=True)
    """
)
"""Forks, for each trial, a process that records into the cassette until it is killed:
the imports are paid once, so the kills are many and the test short."""


async def _ask(model: object, prompt: str) -> str:
    reply = await complete(model, Context("x", [UserMessage(prompt)]))  # type: ignore[arg-type]
    return reply.text if reply.stop_reason == "stop" else f"ERROR {reply.error_message}"


@pytest.mark.timeout(300)
async def test_a_recorder_killed_at_random_moments_leaves_whole_recordings(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "c.jsonl"
    rng = random.Random(7)
    expected: list[str] = []  # the prompts of the whole recordings, in order
    kept = b""  # the cassette as it was before the trial's writer started
    forker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        FORKER,
        str(cassette),
        str(tmp_path / "warm.jsonl"),
        stdin=PIPE,
        stdout=PIPE,
    )
    assert forker.stdin is not None and forker.stdout is not None
    assert (await asyncio.wait_for(forker.stdout.readline(), 60)).strip() == b"READY"
    for trial in range(TRIALS):
        forker.stdin.write(f"t{trial}\n".encode())
        await forker.stdin.drain()
        writer = int(await asyncio.wait_for(forker.stdout.readline(), 60))
        await asyncio.sleep(rng.uniform(0.02, 0.4))
        os.kill(writer, signal.SIGKILL)
        forker.stdin.write(b"reap\n")
        await forker.stdin.drain()
        assert (await asyncio.wait_for(forker.stdout.readline(), 60)).strip() == b"DEAD"

        data = cassette.read_bytes() if cassette.exists() else b""
        assert data.startswith(kept)  # nothing written before this writer was touched
        new = data[len(kept) :].split(b"\n")[:-1]  # its whole lines; a torn tail left out
        died = [json.loads(line)["request"]["messages"][0]["content"][0]["text"] for line in new]
        assert died == [f"t{trial}-{n}" for n in range(len(died))]  # its own, in order
        after = f"after t{trial}"
        fm = FauxModel([f"{after} ok"])
        answer = await _ask(record(fm.model, cassette), after)
        assert answer == f"{after} ok"
        expected += [*died, after]
        kept = cassette.read_bytes()
        assert kept.endswith(b"\n")  # a torn tail the writer left was dropped first
    forker.stdin.close()
    await asyncio.wait_for(forker.wait(), 60)

    assert len(expected) > TRIALS  # the writers did record before they were killed
    replaying = replay(cassette)
    for prompt in expected:  # every whole recording answers, once, in order
        assert (await _ask(replaying, prompt)).startswith(prompt)
