"""A cassette on a full disk (DESIGN §8), in a real process past its file size limit
(`RLIMIT_FSIZE`: a write past it fails with "File too large" as a full disk fails with "No
space left"): the recording that did not fit left half a line in the cassette and ended
the call with "OSError: [Errno 27] File too large", naming no file. Now the cassette ends
as it did, the call's error says the call was not recorded and where, and a replay answers
the recordings that were kept."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from yiemagent.ai import stream
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.testing import replay
from yiemagent.types import Context, UserMessage

CHILD = textwrap.dedent(
    """
    import asyncio, json, os, resource, sys

    from yiemagent.ai import stream
    from yiemagent.ai.providers.faux import FauxModel
    from yiemagent.testing import record
    from yiemagent.types import Context, UserMessage

    path = sys.argv[1]
    fm = FauxModel(["short answer", "a long answer " * 5000])
    model = record(fm.model, path)

    async def call(question):
        message = await stream(model, Context("", [UserMessage(question)])).result()
        return [message.stop_reason, message.error_message]

    async def main():
        first = await call("one")
        limit = os.path.getsize(path) + 5000  # half of the next recording fits
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        print(json.dumps([first, await call("two")]))

    asyncio.run(main())
    """
)


@pytest.mark.timeout(60)
def test_a_recording_that_does_not_fit_leaves_the_cassette_as_it_was(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "calls.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(cassette)],
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = json.loads(done.stdout)
    assert first == ["stop", None]
    assert second == [
        "error",
        f"the call was not recorded: cannot write the cassette {cassette}: File too large",
    ]
    lines = cassette.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 2  # one whole recording, its newline
    assert json.loads(lines[0])["message"]["content"][0]["text"] == "short answer"

    model = replay(cassette, model=FauxModel([]).model)
    message = asyncio.run(stream(model, Context("", [UserMessage("one")])).result())
    assert message.stop_reason == "stop", message.error_message
