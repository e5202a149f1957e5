"""Azure OpenAI as its users configure it for the `openai` SDK's `AzureOpenAI`: the key in
`AZURE_OPENAI_API_KEY`, the resource in `AZURE_OPENAI_ENDPOINT` and the API version in
`OPENAI_API_VERSION`. The key was read only from `OPENAI_COMPATIBLE_API_KEY`, and the
deployment's URL had to be written out as `base_url`. `azure/<deployment>` reads all
three, and an `openai-compatible/…` model at an Azure URL the key. Through an Agent and
the real `openai` SDK against `ReplayServer` on 127.0.0.1 standing for the resource."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest

from tests.ai.servers import ReplayServer, json_reply, openai_chunks, sse_reply
from yiemagent import Agent
from yiemagent.agent import AgentRunError
from yiemagent.ai.attachments import AttachmentWarning
from yiemagent.ai.models import get_model
from yiemagent.ai.providers import missing_api_key
from yiemagent.errors import ProviderError
from yiemagent.types import ImageContent

pytestmark = pytest.mark.timeout(120)

KEY = "azure-key-0123456789abcdef"
OTHER = "compatible-key-0123456789"
_PNG = (  # a 1x1 PNG, base64
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION",
                 "OPENAI_COMPATIBLE_API_KEY", "AZURE_OPENAI_AD_TOKEN"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("version", "path"),
    [
        ("2024-10-21", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"),
        (None, "/openai/v1/chat/completions"),  # the v1 API takes no version
    ],
)
async def test_a_deployment_is_found_as_azure_openai_finds_it(
    server: ReplayServer, environ: pytest.MonkeyPatch, version: str | None, path: str
) -> None:
    environ.setenv("AZURE_OPENAI_ENDPOINT", server.url + "/")
    environ.setenv("AZURE_OPENAI_API_KEY", KEY)
    environ.setenv("OPENAI_COMPATIBLE_API_KEY", OTHER)
    if version is not None:
        environ.setenv("OPENAI_API_VERSION", version)
    server.enqueue(sse_reply(openai_chunks({"content": "hello"})))
    answer = await Agent("x", model="azure/gpt-4o").prompt("hi")
    assert (answer.error_message, answer.text) == (None, "hello")
    [request] = server.requests
    assert request.path == path
    assert request.body["model"] == "gpt-4o"
    assert request.headers["api-key"] == KEY


async def test_a_compatible_model_at_an_azure_url_takes_the_azure_key(
    server: ReplayServer, environ: pytest.MonkeyPatch
) -> None:
    environ.setenv("AZURE_OPENAI_API_KEY", KEY)
    environ.setenv("OPENAI_COMPATIBLE_API_KEY", OTHER)  # another server's, maybe
    base = f"{server.url}/openai/deployments/gpt-4o?api-version=2024-10-21"
    server.enqueue(sse_reply(openai_chunks({"content": "hello"})))
    model = get_model("openai-compatible/gpt-4o", base_url=base)
    assert (await Agent("x", model=model).prompt("hi")).text == "hello"
    assert server.requests[0].headers["api-key"] == KEY


async def test_a_refused_request_without_a_key_names_the_azure_variable(
    server: ReplayServer, environ: pytest.MonkeyPatch
) -> None:
    environ.setenv("AZURE_OPENAI_ENDPOINT", server.url)
    server.enqueue(json_reply(401, {"error": {"code": "401", "message": "Access denied."}}))
    with pytest.raises(AgentRunError) as raised:
        await Agent("x", model="azure/gpt-4o").prompt("hi")
    assert str(raised.value) == (
        "HTTP 401 from the server: Access denied. (no key was sent: set AZURE_OPENAI_API_KEY"
        " in the environment, or api_key= in Python)"
    )


def test_a_deployment_without_an_endpoint_says_what_to_set(environ: pytest.MonkeyPatch) -> None:
    with pytest.raises(ProviderError) as raised:
        get_model("azure/gpt-4o")
    assert "AZURE_OPENAI_ENDPOINT" in str(raised.value)
    assert get_model("azure/gpt-4o", base_url="https://a.openai.azure.com/openai/v1").id == (
        "gpt-4o"
    )


def _yiem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    azure = ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION")
    base = {k: v for k, v in os.environ.items() if k not in azure}
    return subprocess.run(
        [sys.executable, "-m", "yiemagent.cli.main", "run", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "COLUMNS": "200", **env},
        check=False,
    )


def test_yiem_run_reaches_a_deployment_by_the_variables(server: ReplayServer) -> None:
    server.enqueue(sse_reply(openai_chunks({"content": "hello from azure"})))
    env = {"AZURE_OPENAI_ENDPOINT": server.url, "AZURE_OPENAI_API_KEY": KEY,
           "OPENAI_API_VERSION": "2024-10-21"}  # fmt: skip
    proc = _yiem(env, "--model", "azure/gpt-4o", "hi")
    assert proc.returncode == 0, proc.stderr
    assert "hello from azure" in proc.stdout
    assert server.requests[0].headers["api-key"] == KEY


def test_yiem_run_without_an_endpoint_is_one_line() -> None:
    proc = _yiem({}, "--model", "azure/gpt-4o", "hi")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "AZURE_OPENAI_ENDPOINT" in line


@pytest.mark.parametrize(
    ("deployment", "image_sent"),
    [("gpt-4o", True), ("my-deployment", True), ("gpt-35-turbo", False)],
)
async def test_a_deployment_reads_images_unless_its_name_says_not(
    server: ReplayServer, environ: pytest.MonkeyPatch, deployment: str, image_sent: bool
) -> None:
    # Azure's chat deployments (GPT-4o, 4.1, 5, o-series) read images: an image sent
    # as a text stand-in was lost to them. GPT-3.5 reads none.
    environ.setenv("AZURE_OPENAI_ENDPOINT", server.url)
    environ.setenv("AZURE_OPENAI_API_KEY", KEY)
    server.enqueue(sse_reply(openai_chunks({"content": "a red dot"})))
    red_dot = ImageContent(data=_PNG, mime_type="image/png")
    with contextlib.nullcontext() if image_sent else pytest.warns(AttachmentWarning):
        await Agent("x", model=f"azure/{deployment}").prompt("What is this?", images=[red_dot])
    [user] = [m for m in server.requests[0].body["messages"] if m["role"] == "user"]
    parts = user["content"] if isinstance(user["content"], list) else []
    assert any(part.get("type") == "image_url" for part in parts) is image_sent


async def test_an_entra_id_token_goes_as_the_bearer(
    server: ReplayServer, environ: pytest.MonkeyPatch
) -> None:
    # The openai SDK's AzureOpenAI takes AZURE_OPENAI_AD_TOKEN when no key is set.
    environ.setenv("AZURE_OPENAI_ENDPOINT", server.url)
    environ.setenv("AZURE_OPENAI_AD_TOKEN", "entra-token-0123456789")
    server.enqueue(sse_reply(openai_chunks({"content": "hello"})))
    assert (await Agent("x", model="azure/gpt-4o").prompt("hi")).text == "hello"
    [request] = server.requests
    assert request.headers["authorization"] == "Bearer entra-token-0123456789"
    assert "api-key" not in request.headers


def test_a_key_for_an_azure_url_is_looked_for_where_the_call_looks(
    server: ReplayServer, environ: pytest.MonkeyPatch
) -> None:
    # OpenAI's model at an Azure deployment's URL takes AZURE_OPENAI_API_KEY first; the
    # check before a run looked for OPENAI_API_KEY only, and named it.
    environ.delenv("OPENAI_API_KEY", raising=False)
    base = f"{server.url}/openai/deployments/gpt-4o?api-version=2024-10-21"
    model = get_model("openai/gpt-4o", base_url=base)
    assert missing_api_key(model) == "AZURE_OPENAI_API_KEY"
    environ.setenv("AZURE_OPENAI_API_KEY", KEY)
    assert missing_api_key(model) is None


async def test_a_call_at_an_azure_url_without_a_key_names_the_azure_variable(
    server: ReplayServer, environ: pytest.MonkeyPatch
) -> None:
    environ.delenv("OPENAI_API_KEY", raising=False)
    base = f"{server.url}/openai/deployments/gpt-4o?api-version=2024-10-21"
    with pytest.raises(AgentRunError) as raised:
        await Agent("x", model=get_model("openai/gpt-4o", base_url=base)).prompt("hi")
    assert str(raised.value) == (
        "no API key for provider 'openai': set AZURE_OPENAI_API_KEY in the environment"
        " (in Python, api_key= also works)"
    )
    assert server.requests == []


def test_yiem_run_at_an_azure_url_without_a_key_names_it(server: ReplayServer) -> None:
    base = f"{server.url}/openai/deployments/gpt-4o?api-version=2024-10-21"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run(
        [sys.executable, "-m", "yiemagent.cli.main", "run", "--model", "openai/gpt-4o",
         "--base-url", base, "hi"],
        capture_output=True, text=True, timeout=120, check=False,
        env={k: v for k, v in env.items() if not k.startswith("AZURE_OPENAI")},
    )  # fmt: skip
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "set AZURE_OPENAI_API_KEY" in line, line
