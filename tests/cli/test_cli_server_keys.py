"""`yiem run` against an OpenAI-compatible server that wants a key (DESIGN §8: one clear
line): the 401 line says which environment variable the key is read from."""

from __future__ import annotations

import pytest

from yiemagent.cli.main import main

pytestmark = pytest.mark.timeout(120)  # the openai SDK's first import: seconds of CPU under load


def _run_against_401(capsys: pytest.CaptureFixture[str]) -> str:
    pytest.importorskip("openai")
    from tests.ai.servers import ReplayServer, json_reply

    with ReplayServer() as server:
        server.enqueue(json_reply(401, {"error": {"message": "Invalid API Key"}}))
        code = main(["run", "hi", "--model", "openai-compatible/m", "--base-url", server.url])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    (line,) = err.strip().splitlines()[-1:]
    return line


def test_a_401_without_a_key_names_the_variable_to_set(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama.cpp started with --api-key answered "Invalid API Key", and nothing said that
    `openai-compatible/...` reads OPENAI_COMPATIBLE_API_KEY (OPENAI_API_KEY is not read)."""
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")  # not this server's
    assert _run_against_401(capsys) == (
        "yiem: error: the run failed: HTTP 401 from the server: Invalid API Key (no key was"
        " sent: set OPENAI_COMPATIBLE_API_KEY in the environment, or api_key= in Python)"
    )


def test_a_401_with_a_key_names_where_it_came_from_never_the_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "wrong-key-0123456789")
    line = _run_against_401(capsys)
    assert line == (
        "yiem: error: the run failed: HTTP 401 from the server: Invalid API Key"
        " (the key sent was OPENAI_COMPATIBLE_API_KEY)"
    )
