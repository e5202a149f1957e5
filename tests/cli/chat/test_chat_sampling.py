"""`yiem chat --temperature T --max-tokens N`: the chat's agent sends them with every model
call (a replay server on 127.0.0.1 speaking the OpenAI wire format sees them); with
`--agent`, or out of range, they are refused in one line before the chat starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks
from yiemagent.cli.chat.setup import ChatOptions, build_setup

pytestmark = pytest.mark.timeout(120)

TEAM = Path(__file__).resolve().parents[3] / "examples" / "team" / "team.toml"


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YIEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("YIEM_CHAT_FAUX_SCRIPT", raising=False)


def test_the_chats_agent_sends_its_temperature_and_max_tokens() -> None:
    with ReplayServer() as server:
        server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hi."})))
        options = ChatOptions(
            model="openai-compatible/m", base_url=server.url + "/v1", temperature=0.0,
            max_tokens=40,
        )  # fmt: skip
        setup = build_setup(options)
        try:
            assert setup.agent.prompt_sync("Hi").text == "Hi."
            body = server.requests[0].body
            assert body["temperature"] == 0.0 and body["max_tokens"] == 40
        finally:
            setup.sessions.close()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--agent", str(TEAM), "--max-tokens", "100"],
            "yiem: error: --max-tokens does not go with --agent: set it in the agent file",
        ),
        (["--temperature", "-0.5"], "yiem: error: Invalid value for '--temperature'"),
    ],
)
def test_a_refused_value_is_one_line(tmp_path: Path, args: list[str], line: str) -> None:
    proc = yiem_in(tmp_path, "chat", *args, timeout=60)
    assert proc.returncode != 0
    assert proc.stderr.strip().startswith(line), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
