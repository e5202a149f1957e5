"""Where `ollama/<model>` is served (DESIGN §21): `OLLAMA_HOST` read as Ollama's own client
reads it, `base_url` over it, the default without it; a server reached there through the
CLI; one clear line when nothing listens, or when the variable names no server."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, free_port, openai_chunks, sse_reply
from yiemagent.ai import get_model
from yiemagent.ai.models import OLLAMA_URL, ollama_url
from yiemagent.cli.main import main
from yiemagent.errors import ProviderError

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(
    ("host", "url"),
    [
        (None, OLLAMA_URL),
        ("  ", OLLAMA_URL),
        ("0.0.0.0", "http://127.0.0.1:11434/v1"),
        ("0.0.0.0:8000", "http://127.0.0.1:8000/v1"),
        ("gpu-box", "http://gpu-box:11434/v1"),
        ("gpu-box:8080", "http://gpu-box:8080/v1"),
        ("http://gpu-box", "http://gpu-box:80/v1"),
        ("https://ollama.example.com", "https://ollama.example.com:443/v1"),
        ("https://proxy.example/ollama/", "https://proxy.example:443/ollama/v1"),
        ("[::1]:9999", "http://[::1]:9999/v1"),
        ("::", "http://127.0.0.1:11434/v1"),
    ],
)
def test_ollama_host_is_read_as_ollama_reads_it(host: str | None, url: str) -> None:
    assert ollama_url(host) == url


@pytest.mark.parametrize(
    ("host", "says"),
    [
        ("ftp://gpu-box", "is not host[:port] or an http(s):// URL"),
        ("gpu-box:port", "the port 'port' is not a number from 1 to 65535"),
        ("gpu-box:70000", "the port '70000'"),
        ("gpu-box:0", "the port '0'"),
    ],
)
def test_an_ollama_host_naming_no_server_is_one_clear_line(
    host: str, says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ProviderError, match="OLLAMA_HOST=") as caught:
        ollama_url(host)
    assert says in str(caught.value)
    monkeypatch.setenv("OLLAMA_HOST", host)
    assert main(["run", "hi", "--model", "ollama/m"]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("yiem: error: OLLAMA_HOST=") and says in line


_NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,2}", fullmatch=True)


@given(
    name=_NAMES,
    port=st.one_of(st.none(), st.integers(1, 65535)),
    scheme=st.sampled_from(["", "http://", "https://"]),
)
def test_any_host_and_port_come_back_as_given(name: str, port: int | None, scheme: str) -> None:
    url = urlsplit(ollama_url(scheme + name + ("" if port is None else f":{port}")))
    default = {"": 11434, "http://": 80, "https://": 443}[scheme]
    assert url.scheme == (scheme.removesuffix("://") or "http")
    assert url.hostname == name and url.port == (port or default)
    assert url.path == "/v1"


def test_base_url_wins_over_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:8080")
    assert get_model("ollama/qwen3").base_url == "http://gpu-box:8080/v1"
    given_url = "http://127.0.0.1:9/v1"
    assert get_model("ollama/qwen3", base_url=given_url).base_url == given_url
    monkeypatch.delenv("OLLAMA_HOST")
    assert get_model("ollama/qwen3").base_url == OLLAMA_URL


def test_the_cli_reaches_the_server_ollama_host_names(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server.replies.put(sse_reply(openai_chunks({"content": "served"})))
    monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))
    assert main(["run", "hi", "--model", "ollama/qwen3"]) == 0
    assert "served" in capsys.readouterr().out
    [request] = server.requests
    assert request.path == "/v1/chat/completions" and request.body["model"] == "qwen3"


def test_nothing_listening_is_one_line_that_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{port}")
    assert main(["run", "hi", "--model", "ollama/qwen3"]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("yiem: error: ") and f"http://127.0.0.1:{port}/v1" in line
    assert "is Ollama running? Start it with `ollama serve`" in line
    assert "set OLLAMA_HOST" in line and "Traceback" not in line
