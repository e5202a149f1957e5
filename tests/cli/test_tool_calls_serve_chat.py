"""`--tool-calls MODE` in `yiem serve` and `yiem chat`, as in `yiem run`: a local server's
model that writes its tool calls as text (`<tool_call>{...}</tool_call>`) has them run. The
real `yiem serve` in a subprocess against a replay server on 127.0.0.1 speaking the OpenAI
wire format; the chat's model as its setup resolves it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ai.servers import ReplayServer, Reply, openai_chunks
from tests.cli.test_reasoning_vision_every_command import serve_one_run
from yiemagent.cli.chat.setup import ChatOptions, build_setup
from yiemagent.cli.main import main

pytestmark = pytest.mark.timeout(240)

PING_TOOL = """
from yiemagent import AgentTool

def execute(tool_call_id, args, signal, on_update):
    return "pong"

def get_tool():
    return AgentTool(name="ping", label="Ping", description="Answer pong",
                     input_schema={"type": "object", "properties": {}}, execute=execute)
"""
CALL_AS_TEXT = '<tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>'


@pytest.mark.parametrize("mode", ["text", None], ids=["text", "native"])
def test_serve_runs_the_calls_a_model_writes_as_text(tmp_path: Path, mode: str | None) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "ping.py").write_text(PING_TOOL)
    with ReplayServer() as server:
        server.enqueue(
            Reply(events=openai_chunks({"role": "assistant", "content": CALL_AS_TEXT})),
            Reply(events=openai_chunks({"role": "assistant", "content": "It said pong."})),
        )
        events = serve_one_run(
            "--tools", str(tmp_path / "tools"), "--model", "openai-compatible/m",
            "--base-url", server.url + "/v1", "--sessions", str(tmp_path / "s.db"),
            *(["--tool-calls", mode] if mode else []),
        )  # fmt: skip
    ran = [e for e in events if e["type"] == "tool_execution_end"]
    assert events[-1]["type"] == "agent_end", events[-1]
    if mode == "text":
        assert [e["tool_name"] for e in ran] == ["ping"]
    else:  # the server's native calls: the text is the answer
        assert ran == []


def test_chat_resolves_its_model_with_the_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("YIEM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("YIEM_CHAT_FAUX_SCRIPT", raising=False)
    options = ChatOptions(
        model="openai-compatible/m", base_url="http://127.0.0.1:9/v1", tool_calls="text"
    )
    assert build_setup(options).model.api == "openai-text-calls"
    # the option is the chat's: no "No such option" (here no terminal is the one problem)
    code = main(["chat", "--model", "openai-compatible/m", "--tool-calls", "text"])
    err = capsys.readouterr().err
    assert code == 1 and "yiem chat needs a terminal" in err, err
