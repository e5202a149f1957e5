"""An `azure/<deployment>` named for a catalogue reasoning model (`gpt-5`, `o3`) thinks as
that model does: a run's reasoning level reaches it as `reasoning_effort` without
`reasoning=True` (`--reasoning` was the only way). Other names do not: sending the level to
a model that does not think is an HTTP 400. Through an Agent and the real `openai` SDK
against `ReplayServer` on 127.0.0.1 standing for the resource, and `yiem run` with an
agent file that sets the level."""

from __future__ import annotations

import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent
from yiemagent.ai.models import MODELS, get_model

pytestmark = pytest.mark.timeout(120)

KEY = "azure-key-0123456789abcdef"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplayServer]:
    for name in ("AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "AZURE_OPENAI_AD_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    with ReplayServer() as replay:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", replay.url)
        yield replay


@pytest.mark.parametrize(
    ("deployment", "thinks"),
    [("gpt-5", True), ("O3", True), ("gpt-5-mini", True), ("gpt-4o", False), ("prod-chat", False)],
)
async def test_a_deployment_named_for_a_reasoning_model_gets_the_run_s_level(
    server: ReplayServer, deployment: str, thinks: bool
) -> None:
    server.enqueue(sse_reply(openai_chunks({"content": "4"})))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await Agent("x", model=f"azure/{deployment}", reasoning="high").prompt("2+2?")
    [request] = server.requests
    assert request.body.get("reasoning_effort") == ("high" if thinks else None)
    ignored = [w for w in caught if "reasoning is ignored" in str(w.message)]
    assert bool(ignored) is not thinks


def test_the_catalogue_says_which_names_think() -> None:
    for name, model in MODELS.items():
        provider, _, model_id = name.partition("/")
        if provider == "openai":
            found = get_model(f"azure/{model_id}", base_url="http://127.0.0.1:9/openai/v1")
            assert found.reasoning is model.reasoning, name
    # said to think, any deployment does
    assert get_model("azure/prod-chat", base_url="http://127.0.0.1:9/v1", reasoning=True).reasoning


def test_yiem_run_of_an_agent_file_s_level_reaches_the_deployment(
    server: ReplayServer, tmp_path: Path
) -> None:
    (tmp_path / "agent.toml").write_text(
        '[agents.solver]\nmodel = "azure/o3"\nreasoning = "low"\nsystem_prompt = "Be brief."\n'
    )
    server.enqueue(sse_reply(openai_chunks({"content": "4"})))
    proc: subprocess.CompletedProcess[str] = yiem_in(
        tmp_path, "run", "2+2?", "--agent", str(tmp_path / "agent.toml")
    )
    assert proc.returncode == 0, proc.stderr
    [request] = server.requests
    assert request.body["reasoning_effort"] == "low"
    assert "warning" not in proc.stderr
