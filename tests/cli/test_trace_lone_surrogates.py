"""`yiem trace` of a run whose model streamed a lone surrogate (a `\\ud800` escape with no
pair; `yiem run --json` keeps it, as the escape): the page is UTF-8, so the timeline shows
it as U+FFFD. Writing the page failed with "'utf-8' codec can't encode character" and no
page, to a file or to standard output alike (DESIGN §8)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.cli.main import main


def test_trace_shows_a_lone_surrogate_the_model_sent_as_a_replacement_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YIEM_DATA_DIR", str(tmp_path / "data"))
    with ReplayServer() as server:
        server.enqueue(sse_reply(openai_chunks({"content": "bad \ud800 text"})))
        model = ["--model", "openai-compatible/m", "--base-url", server.url + "/v1"]
        assert main(["run", "hi", "--json", *model]) == 0
    log = tmp_path / "run.jsonl"
    log.write_text(capsys.readouterr().out, encoding="utf-8")
    assert "\\ud800" in log.read_text()  # the log keeps what the model sent
    page = tmp_path / "run.html"
    assert main(["trace", str(log), "--html", str(page)]) == 0, capsys.readouterr().err
    assert "bad \ufffd text" in page.read_text(encoding="utf-8")
    capsys.readouterr()
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # a terminal's strict UTF-8
    monkeypatch.setattr("sys.stdout", out)
    assert main(["trace", str(log), "--html", "-"]) == 0, capsys.readouterr().err
    out.flush()
    assert isinstance(out.buffer, io.BytesIO)
    assert "bad \ufffd text" in out.buffer.getvalue().decode("utf-8")
