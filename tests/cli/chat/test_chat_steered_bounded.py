"""The chat remembers the steering lines it sent only while they are in the transcript
(`ChatApp.steered`, which `/undo` reads to tell steering from prompts): it kept every line
for the chat's life, those `/undo` had taken away and those of sessions left with `/new`
too. In process, with the terminal tests' scripted model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from yiemagent.cli.chat._app import ChatApp
from yiemagent.cli.chat.setup import ChatOptions, build_setup
from yiemagent.types import UserMessage, text_of

pytestmark = pytest.mark.timeout(120)

FAUX = str(Path(__file__).resolve().parent / "faux_chat.py")
TOOLS = Path(__file__).resolve().parent / "tools"  # `slow`, for "progress N"


async def run(app: ChatApp, text: str, *, steer: str | None = None) -> None:
    """`text` as a prompt; `steer` typed while its tool runs; back when the run ended."""
    app.submit(text)
    if steer is not None:
        await asyncio.sleep(0.3)  # into the run (a steering line is delivered either way)
        assert app.busy
        app.submit(steer)
    assert app.run_task is not None
    await app.run_task


async def test_steering_lines_are_forgotten_once_gone_from_the_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YIEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("YIEM_CHAT_FAUX_SCRIPT", FAUX)
    setup = build_setup(ChatOptions(model="faux", session="t", tools=TOOLS))
    app = ChatApp(setup)
    state = setup.agent.state
    await run(app, "progress 6", steer="steer: one")
    [one] = app.steered
    assert any(m is one for m in state.messages)  # delivered: /undo must know it
    await run(app, "hello")
    assert app.steered == [one]  # still in the transcript
    app.submit("/undo")  # takes "hello" away
    app.submit("/undo")  # takes the steered run away, its steering line with it
    assert not any(isinstance(m, UserMessage) for m in state.messages)
    await run(app, "progress 6", steer="steer: two")
    assert [text_of(m.content) for m in app.steered] == ["steer: two"]
