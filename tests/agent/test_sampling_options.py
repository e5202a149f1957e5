"""`Agent(temperature=..., max_tokens=...)` and `yiem run --temperature / --max-tokens`: the
values reach every model call of a run, on the wire, through the real provider SDKs to
replay servers on 127.0.0.1 (and the real CLI in a subprocess); a bad value is one clear
error before anything runs."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks, sse_reply
from yiemagent import Agent, ConfigError, get_model, tool

pytestmark = pytest.mark.timeout(180)

TEAM = Path(__file__).resolve().parents[2] / "examples" / "team" / "team.toml"
KEYS = {"OPENAI_API_KEY": "sk-test-0123456789abcdef", "ANTHROPIC_API_KEY": "sk-ant-test-0123"}


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


@tool
def add(a: int, b: int) -> str:
    """Add two whole numbers.

    Args:
        a: The first.
        b: The second.
    """
    return str(a + b)


def test_every_call_of_a_run_asks_openai_for_the_agent_s_temperature_and_max_tokens(
    server: ReplayServer,
) -> None:
    call = {"role": "assistant", "tool_calls": [{"index": 0, "id": "c1", "type": "function",
            "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]}  # fmt: skip
    server.enqueue(Reply(events=openai_chunks(call, finish_reason="tool_calls")))
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "5"})))
    model = get_model("openai-compatible/m", base_url=server.url + "/v1")
    agent = Agent(model=model, tools=[add], temperature=0.0, max_tokens=64)

    assert agent.prompt_sync("2 + 3?").text == "5"
    assert agent.temperature == 0.0 and agent.max_tokens == 64
    assert len(server.requests) == 2  # the tool call's turn, then the answer's
    for request in server.requests:
        assert request.body["temperature"] == 0.0
        assert request.body["max_tokens"] == 64


def test_anthropic_gets_the_agent_s_values_instead_of_the_model_s(server: ReplayServer) -> None:
    server.enqueue(sse_reply("anthropic_text.sse"))
    model = get_model("anthropic/claude-sonnet-4-5", base_url=server.url)
    Agent(model=model, temperature=0.5, max_tokens=100).prompt_sync("Hi")

    [request] = server.requests
    assert request.body["max_tokens"] == 100 and request.body["temperature"] == 0.5


def test_without_them_the_request_carries_the_provider_s_defaults(server: ReplayServer) -> None:
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hi."})))
    model = get_model("openai-compatible/m", base_url=server.url + "/v1")
    Agent(model=model).prompt_sync("Hi")

    body = server.requests[0].body
    assert "temperature" not in body and "max_tokens" not in body


def test_in_a_team_the_run_keeps_the_values_of_the_agent_it_started_with(
    server: ReplayServer,
) -> None:
    handoff = {"role": "assistant", "tool_calls": [{"index": 0, "id": "h1", "type": "function",
               "function": {"name": "transfer_to_math", "arguments": "{}"}}]}  # fmt: skip
    server.enqueue(Reply(events=openai_chunks(handoff, finish_reason="tool_calls")))
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "5"})))
    model = get_model("openai-compatible/m", base_url=server.url + "/v1")
    math = Agent(model=model, name="math", description="Sums.", temperature=0.9, max_tokens=9)
    router = Agent(model=model, name="router", handoffs=[math], temperature=0.1, max_tokens=50)

    assert router.prompt_sync("2 + 3?").text == "5"
    assert [(r.body["temperature"], r.body["max_tokens"]) for r in server.requests] == [
        (0.1, 50),
        (0.1, 50),
    ]


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"temperature": -0.1}, "temperature must be a number, 0 or more"),
        ({"temperature": float("nan")}, "temperature must be a number"),
        ({"temperature": "0.2"}, "temperature must be a number"),
        ({"temperature": True}, "temperature must be a number"),
        ({"max_tokens": 0}, "max_tokens must be a whole number, 1 or more"),
        ({"max_tokens": 12.5}, "max_tokens must be a whole number"),
        ({"max_tokens": True}, "max_tokens must be a whole number"),
    ],
)
def test_a_bad_value_is_refused_when_the_agent_is_made(
    options: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        Agent(model=get_model("openai/gpt-4o"), **options)


def test_a_built_agent_keeps_them(server: ReplayServer) -> None:
    agent = Agent(model=get_model("openai/gpt-4o"), max_tokens=10)
    with pytest.raises(ConfigError, match="max_tokens is given when the Agent is made"):
        agent.max_tokens = 20


def yiem(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return yiem_in(folder, *args, env=KEYS)


def test_yiem_run_sends_them_and_a_zero_temperature_is_sent(
    server: ReplayServer, tmp_path: Path
) -> None:
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hello."})))
    proc = yiem(
        tmp_path, "run", "Hi", "--model", "openai-compatible/m", "--base-url", server.url + "/v1",
        "--max-tokens", "32", "--temperature", "0",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Hello."
    body = server.requests[0].body
    assert body["max_tokens"] == 32 and body["temperature"] == 0


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--max-tokens", "0"], "yiem: error: Invalid value for '--max-tokens'"),
        (["--temperature", "-1"], "yiem: error: Invalid value for '--temperature'"),
        (
            ["--agent", str(TEAM), "--temperature", "0"],
            "yiem: error: --temperature does not go with --agent: set it in the agent file",
        ),
    ],
)
def test_yiem_run_refuses_a_bad_value_in_one_line(
    tmp_path: Path, args: list[str], line: str
) -> None:
    proc = yiem(tmp_path, "run", "Hi", *args)
    assert proc.returncode != 0
    assert proc.stderr.strip().startswith(line), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
