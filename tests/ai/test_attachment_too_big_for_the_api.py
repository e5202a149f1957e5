"""An image within our 20 MB limit but larger than the Anthropic Messages API takes (5 MB of
base64, DESIGN §21): the model gets a text naming it (sent, it would fail this request and,
kept in the session, every later one), and the user is told, as for a model that cannot
see images — one `AttachmentWarning` from `Agent.prompt`, one `yiem: warning:` line from
`yiem run --attach`. The real CLI and the `anthropic` SDK against a replay server."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, sse_reply
from yiemagent import Agent
from yiemagent.ai import get_model
from yiemagent.ai.attachments import AttachmentWarning

pytestmark = pytest.mark.timeout(180)

PNG_HEAD = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
KEY = "sk-ant-test-0123456789"


@pytest.fixture
def big_png(tmp_path: Path) -> Path:
    """4.5 MB that start like a PNG: 6 MB of base64, within our limit, over the API's."""
    path = tmp_path / "photo.png"
    path.write_bytes(PNG_HEAD + b"\0" * (4_500_000 - len(PNG_HEAD)))
    return path


async def test_agent_prompt_warns_and_sends_a_note(
    big_png: Path, server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.enqueue(sse_reply("anthropic_text.sse"))
    agent = Agent(model=get_model("anthropic/claude-sonnet-4-5", base_url=server.url))
    with pytest.warns(AttachmentWarning, match=r"at most 5\.0 MB") as caught:
        await agent.prompt("What is in this photo?", attachments=[big_png])
    assert len([w for w in caught if issubclass(w.category, AttachmentWarning)]) == 1
    [user] = server.requests[0].body["messages"]
    assert [b["type"] for b in user["content"]] == ["text", "text"]
    assert "more than the 5.0 MB the Messages API takes" in user["content"][1]["text"]


def test_yiem_run_attach_warns_once(big_png: Path, server: ReplayServer) -> None:
    server.enqueue(sse_reply("anthropic_text.sse"))
    args = ["run", "What is in this photo?", "--attach", str(big_png)]
    args += ["--model", "anthropic/claude-sonnet-4-5", "--base-url", server.url]
    proc = yiem_in(big_png.parent, *args, env={"ANTHROPIC_API_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("yiem: warning:")]
    [warning] = warnings
    assert "anthropic/claude-sonnet-4-5" in warning and "at most 5.0 MB" in warning
    [user] = server.requests[0].body["messages"]
    assert [b["type"] for b in user["content"]] == ["text", "text"]
