"""An agent file's `model` for every kind of provider (DESIGN §17, §21): a local server's
model (`ollama/…`, `openai-compatible/…`) needs what `--base-url`, `--vision` and
`--tool-calls` say on the command line, so `model` is also a table of `get_model`'s
arguments; and an agent with a reasoning level takes its local server's model to think, as
`yiem run --reasoning` does. Real requests to a replay server on 127.0.0.1 speaking the
OpenAI wire format; a bad table is one `ConfigError` naming the file, table and key."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from tests._snap import PNG, SNAP_CALL, SNAP_TOOL
from tests.ai.servers import ReplayServer, Reply, openai_chunks
from yiemagent import ConfigError, load_agent

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server() -> ReplayServer:
    with ReplayServer() as replay:
        yield replay  # type: ignore[misc]


def team(tmp_path: Path, table: str) -> Path:
    (tmp_path / "tools").mkdir(exist_ok=True)
    (tmp_path / "tools" / "snap.py").write_text(SNAP_TOOL)
    path = tmp_path / "team.toml"
    path.write_text(f'[agents.looker]\ntools = ["tools"]\n{table}\n')
    return path


@pytest.mark.parametrize("provider", ["ollama", "openai-compatible"])
@pytest.mark.parametrize("vision", [True, False])
async def test_a_local_servers_model_that_reads_images_gets_a_tools_image(
    tmp_path: Path, server: ReplayServer, provider: str, vision: bool
) -> None:
    server.enqueue(
        Reply(events=openai_chunks({"tool_calls": [SNAP_CALL]}, finish_reason="tool_calls")),
        Reply(events=openai_chunks({"role": "assistant", "content": "A dot."})),
    )
    flag = "true" if vision else "false"
    model = f'{{ name = "{provider}/llava", base_url = "{server.url}/v1", vision = {flag} }}'
    agent = load_agent(team(tmp_path, f"model = {model}"))
    reply = await agent.prompt("What do you see?")
    assert reply.text == "A dot."
    assert agent.state.model is not None and agent.state.model.base_url == f"{server.url}/v1"
    second = json.dumps(server.requests[1].body)
    assert (f"data:image/png;base64,{PNG}" in second) == vision


async def test_a_reasoning_level_makes_a_local_servers_model_think(
    tmp_path: Path, server: ReplayServer
) -> None:
    server.enqueue(Reply(events=openai_chunks({"role": "assistant", "content": "Hi."})))
    model = f'{{ name = "ollama/qwen3", base_url = "{server.url}/v1", tool_calls = "native" }}'
    agent = load_agent(team(tmp_path, f'model = {model}\nreasoning = "high"'))
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        await agent.prompt("Hello")
    assert [str(w.message) for w in warned if "reasoning" in str(w.message)] == []
    assert server.requests[0].body["reasoning_effort"] == "high"


@pytest.mark.parametrize(
    ("table", "thinks"),
    [
        ('model = "ollama/qwen3"\nreasoning = "low"', True),
        ('model = "ollama/qwen3"\nreasoning = "off"', False),
        ('model = "ollama/qwen3"', False),
        ('model = "openai/o3"\nreasoning = "low"', True),  # the catalogue's, as it is
        ('model = "openai/gpt-4o"\nreasoning = "low"', False),
    ],
)
def test_a_local_servers_model_thinks_when_its_agent_has_a_level(
    tmp_path: Path, table: str, thinks: bool
) -> None:
    agent = load_agent(team(tmp_path, table))
    assert agent.state.model is not None and agent.state.model.reasoning is thinks


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        (
            '{ name = "openai/gpt-4o", vision = true }',
            "vision is for local servers (openai-compatible/..., ollama/...), not 'openai/gpt-4o'",
        ),
        (
            '{ name = "openai/gpt-4o", vision = false }',
            "vision is for local servers (openai-compatible/..., ollama/...), not 'openai/gpt-4o'",
        ),
        (
            '{ name = "openai-compatible/m" }',
            "'openai-compatible/m' needs base_url, the server's OpenAI API root",
        ),
        ('{ name = "ollama/m", colour = "red" }', "unknown key 'colour'; the keys are name,"),
        ('{ base_url = "http://127.0.0.1:9/v1" }', 'a model table needs name = "provider/id"'),
        ('{ name = "ollama/m", vision = "yes" }', "must be true or false, not 'yes'"),
        ('{ name = "ollama/m", tool_calls = "smoke" }', "tool_calls must be one of"),
        ("3", 'must be "provider/id" or a table with keys name, base_url, vision, tool_calls'),
    ],
)
def test_a_bad_model_is_one_line_naming_the_key(tmp_path: Path, model: str, problem: str) -> None:
    path = team(tmp_path, f"model = {model}")
    with pytest.raises(ConfigError) as caught:
        load_agent(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: [agents.looker] model: ") and "\n" not in text
    assert problem in text
