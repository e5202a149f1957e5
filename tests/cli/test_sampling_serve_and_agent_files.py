"""`yiem serve --temperature T --max-tokens N`, and an agent file's `temperature` and
`max_tokens` keys: the real CLI in a subprocess against a replay server on 127.0.0.1
speaking the OpenAI wire format; the model calls carry both. Beside `--agent` the options
are one line that says where to set them, in every command."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks
from tests.cli.test_reasoning_vision_every_command import serve_one_run
from yiemagent import ConfigError, load_agent

pytestmark = pytest.mark.timeout(180)


def test_serve_asks_the_model_with_them(tmp_path: Path) -> None:
    with ReplayServer() as server:
        server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hi."})))
        events = serve_one_run(
            "--model", "openai-compatible/m", "--base-url", server.url + "/v1",
            "--sessions", str(tmp_path / "s.db"), "--tools", str(tmp_path),
            "--temperature", "0.3", "--max-tokens", "40",
        )  # fmt: skip
        assert events[-1]["type"] == "agent_end" and events[-1]["reason"] == "stop", events[-1]
        [request] = server.requests
        assert request.body["temperature"] == 0.3 and request.body["max_tokens"] == 40


def test_an_agent_files_keys_reach_the_model(tmp_path: Path) -> None:
    team = tmp_path / "team.toml"
    team.write_text("[agents.brief]\ntemperature = 0.25\nmax_tokens = 24\n")
    with ReplayServer() as server:
        server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hello."})))
        proc = yiem_in(
            tmp_path, "run", "Hi", "--agent", str(team),
            "--model", "openai-compatible/m", "--base-url", server.url + "/v1",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "Hello."
        [request] = server.requests
        assert request.body["temperature"] == 0.25 and request.body["max_tokens"] == 24


def test_an_answer_cut_off_by_the_files_max_tokens_names_it(tmp_path: Path) -> None:
    """The replay server says 5 tokens were written: the file's limit cut the answer."""
    team = tmp_path / "team.toml"
    team.write_text("[agents.brief]\nmax_tokens = 5\n")
    with ReplayServer() as server:
        server.enqueue(
            Reply(
                events=openai_chunks(
                    {"role": "assistant", "content": "A bicycle is"}, finish_reason="length"
                )
            )
        )
        proc = yiem_in(
            tmp_path, "run", "What is a bicycle?", "--agent", str(team),
            "--model", "openai-compatible/m", "--base-url", server.url + "/v1",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "⋯ cut off: the answer reached --max-tokens 5" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("max_tokens = 0", "max_tokens: must be a whole number >= 1, not 0"),
        ("max_tokens = 2.5", "max_tokens: must be a whole number >= 1, not 2.5"),
        ("temperature = -1", "temperature: must be a number >= 0, not -1"),
        ("temperature = inf", "temperature: must be a number >= 0, not inf"),
        ("temperature = nan", "temperature: must be a number >= 0, not nan"),
        ('temperature = "hot"', "temperature: must be a number >= 0, not 'hot'"),
        ("temperature = true", "temperature: must be a number >= 0, not True"),
    ],
)
def test_a_bad_value_in_the_file_names_the_table_and_key(
    tmp_path: Path, line: str, said: str
) -> None:
    team = tmp_path / "team.toml"
    team.write_text(f"[agents.brief]\n{line}\n")
    with pytest.raises(ConfigError) as caught:
        load_agent(team)
    assert str(caught.value) == f"{team}: [agents.brief] {said}"


@pytest.mark.parametrize("command", ["serve", "run"])
def test_beside_an_agent_file_they_are_one_line_naming_the_file(
    tmp_path: Path, command: str
) -> None:
    team = tmp_path / "team.toml"
    team.write_text("[agents.brief]\n")
    args = ["serve", "--port", "0"] if command == "serve" else ["run", "Hi"]
    proc = yiem_in(tmp_path, *args, "--agent", str(team), "--max-tokens", "5")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == (
        "yiem: error: --max-tokens does not go with --agent: set it in the agent file"
    )
