"""`yiem run --max-cost`, `yiem run --otel` and `yiem run --json | yiem trace` (DESIGN §13),
in-process on the faux model."""

from __future__ import annotations

import asyncio
import http.server
import importlib
import json
import os
import re
import stat
import sys
import threading
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.cli.main import main
from yiemagent.cli.render import counted
from yiemagent.errors import install_hint
from yiemagent.telemetry._timeline import UNFINISHED
from yiemagent.types import Cost, Usage

cli_main_module = importlib.import_module("yiemagent.cli.main")


def use_faux(monkeypatch: pytest.MonkeyPatch, fm: FauxModel) -> None:
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)


def calculator_then_answer(model_id: str, cost: float = 0.0) -> FauxModel:
    call = faux_tool_call("calculator", {"expression": "17 * 23"})
    first = faux_message(call, usage=Usage(input=100, output=10, cost=Cost(total=cost)))
    return FauxModel([first, "The answer is 391."], model_id=model_id)


def test_max_cost_stops_the_run_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = calculator_then_answer("cli-costly", cost=0.02)
    use_faux(monkeypatch, fm)
    code = main(["run", "What is 17 * 23?", "--max-cost", "0.01"])
    _, err = capsys.readouterr()
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last == (
        "yiem: error: the run was stopped: usage limit reached: max_cost_usd=0.01 "
        "(used $0.020000); raise it with --max-cost"
    )
    assert "→ calculator" in err and "not executed: usage limit reached" in err
    assert fm.call_count == 1  # no second model call


def test_max_cost_above_the_spend_lets_the_run_answer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_faux(monkeypatch, calculator_then_answer("cli-cheap", cost=0.001))
    assert main(["run", "What is 17 * 23?", "--max-cost", "0.05"]) == 0
    assert capsys.readouterr().out == "The answer is 391.\n"


def test_otel_prints_the_spans(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    use_faux(monkeypatch, calculator_then_answer("cli-otel"))
    assert main(["run", "What is 17 * 23?", "--otel"]) == 0
    out, err = capsys.readouterr()
    assert out == "The answer is 391.\n"  # spans never mix into the answer
    for name in ("invoke_agent yiemagent", "chat cli-otel", "execute_tool calculator"):
        assert f'"name": "{name}"' in err
    assert '"gen_ai.tool.name": "calculator"' in err


def test_otel_sends_the_spans_to_the_otlp_endpoint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the `otel` extra installed and an endpoint set, the spans go over OTLP/HTTP to
    a collector (here a server on 127.0.0.1 that keeps what it is sent)."""
    received: list[tuple[str, bytes]] = []

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        use_faux(monkeypatch, calculator_then_answer("cli-otlp"))
        assert main(["run", "What is 17 * 23?", "--otel"]) == 0
    finally:
        server.shutdown()
        server.server_close()
    out, err = capsys.readouterr()
    assert out == "The answer is 391.\n"
    assert '"name"' not in err  # sent, not printed
    assert {path for path, _ in received} == {"/v1/traces"}
    sent = b"".join(body for _, body in received)
    for name in (b"invoke_agent yiemagent", b"chat cli-otlp", b"execute_tool calculator"):
        assert name in sent


def extra_requirements(extra: str) -> set[str]:
    """The distributions pyproject.toml's extra `extra` installs, as normalized names."""
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert extra in extras, f"the hint names [{extra}], which pyproject.toml does not define"
    return {canonicalize_name(Requirement(spec).name) for spec in extras[extra]}


@pytest.mark.parametrize(
    ("hidden", "endpoint", "package"),
    [
        ("opentelemetry.sdk.trace", None, "opentelemetry-sdk"),
        (
            "opentelemetry.exporter.otlp.proto.http.trace_exporter",
            "http://127.0.0.1:4318",
            "opentelemetry-exporter-otlp-proto-http",
        ),
    ],
)
def test_otel_without_the_sdk_names_an_extra_that_installs_it(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    hidden: str,
    endpoint: str | None,
    package: str,
) -> None:
    """The hint is this Python's pip installing an extra of yiemagent (a bare `pip` from a
    checkout installs into another Python than yiem's `.venv`), and that extra holds the
    package `--otel` missed, so following the hint makes `--otel` work."""
    monkeypatch.setitem(sys.modules, hidden, None)  # its import fails
    if endpoint is None:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    else:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    use_faux(monkeypatch, calculator_then_answer("cli-otel-missing"))
    assert main(["run", "What is 17 * 23?", "--otel"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    hint = install_hint("otel")
    assert hint in line, line
    named = re.search(r"\[([\w-]+)\]'?$", line)
    assert named is not None, line
    assert package in extra_requirements(named.group(1)), line


def test_run_json_then_trace(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_faux(monkeypatch, calculator_then_answer("cli-trace"))
    assert main(["run", "What is 17 * 23?", "--json"]) == 0
    log = tmp_path / "run.jsonl"
    log.write_text(capsys.readouterr().out, encoding="utf-8")
    ends = [json.loads(line) for line in log.read_text().splitlines()]
    timed = [e["message"] for e in ends if e["type"] == "message_end"]
    assert all(m.get("duration_ms") is not None for m in timed if m["role"] != "user")
    page = tmp_path / "run.html"
    assert main(["trace", str(log), "--html", str(page)]) == 0
    assert f"wrote {page} (2 turns, 3 calls)" in capsys.readouterr().err
    text = page.read_text(encoding="utf-8")
    assert "17 * 23 = 391" in text and "<script" in text and "http" not in text.split("<body>")[1]


def test_trace_of_a_log_cut_short_counts_the_turns_and_calls_it_holds(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A run killed mid-way leaves the first lines of its `--json` log. `yiem trace` counted
    only ended messages: killed while the first model call streamed it said "0 turns, 0
    calls", and a tool call still running was left out. Every cut of a log counts the model
    calls and tool calls it started, the unfinished ones shown as such."""
    use_faux(monkeypatch, calculator_then_answer("cli-trace-cut"))
    assert main(["run", "What is 17 * 23?", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    events = [json.loads(line) for line in lines]
    assert events[-1]["type"] == "agent_end"
    first_end = next(i for i, e in enumerate(events) if e["type"] == "message_end")
    log, page = tmp_path / "run.jsonl", tmp_path / "run.html"
    for cut in range(first_end + 1, len(lines) + 1):
        log.write_text("\n".join(lines[:cut]) + "\n", encoding="utf-8")
        assert main(["trace", str(log), "--html", str(page)]) == 0
        held = events[:cut]
        turns = sum(e["type"] == "message_start" and e["message"]["role"] == "assistant"
                    for e in held)  # fmt: skip
        calls = turns + sum(e["type"] == "tool_execution_start" for e in held)
        said = capsys.readouterr().err
        assert f"({counted(turns, 'turn')}, {counted(calls, 'call')})" in said, (cut, said)
        assert (UNFINISHED in page.read_text(encoding="utf-8")) == _unended(held), cut


def test_trace_of_a_log_cut_mid_line_draws_the_whole_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A run killed while it wrote a line (a long `message_end`) leaves a last line cut
    off, perhaps inside a character. `yiem trace`, made to draw killed runs, refused such a
    log whole ("line 26 is not JSON"). Every cut at any byte now draws the whole lines,
    says in one warning naming the file that the last one was cut (it named no file,
    where the errors do), and counts what they hold."""
    use_faux(monkeypatch, calculator_then_answer("cli-trace-torn", cost=0.0))
    assert main(["run", "What is 17 * 23? ünïcödé", "--json"]) == 0
    data = capsys.readouterr().out.encode("utf-8")
    first_end = data.index(b"\n", data.index(b'"type": "message_end"')) + 1
    log, page = tmp_path / "run.jsonl", tmp_path / "run.html"

    @settings(max_examples=60, deadline=None)
    @given(cut=st.integers(min_value=first_end, max_value=len(data)))
    def cut_anywhere(cut: int) -> None:
        log.write_bytes(data[:cut])
        whole = data[: data.rindex(b"\n", 0, cut) + 1]
        tail = data[len(whole) : cut]
        try:  # cut right before a newline: the last line is whole, and is read
            json.loads(tail)
            whole, torn = whole + tail + b"\n", False
        except ValueError:
            torn = bool(tail)
        assert main(["trace", str(log), "--html", str(page)]) == 0
        err = capsys.readouterr().err
        warned = [line for line in err.splitlines() if "cut off mid-write" in line]
        assert len(warned) == (1 if torn else 0), err
        if torn:
            number = whole.count(b"\n") + 1
            assert warned[0] == (
                f"yiem: warning: {log}: line {number} was cut off mid-write (the run was "
                "killed): skipped"
            )
        events = [json.loads(line) for line in whole.decode("utf-8").splitlines()]
        turns = sum(e["type"] == "message_start" and e["message"]["role"] == "assistant"
                    for e in events)  # fmt: skip
        calls = turns + sum(e["type"] == "tool_execution_start" for e in events)
        assert f"({counted(turns, 'turn')}, {counted(calls, 'call')})" in err, err

    cut_anywhere()


def _unended(events: list[dict[str, Any]]) -> bool:
    """Whether the events end while a model call streams or a tool runs."""
    streaming, running = False, set()
    for event in events:
        if event["type"] in ("message_start", "message_end"):
            if event["message"]["role"] == "assistant":
                streaming = event["type"] == "message_start"
        elif event["type"] == "tool_execution_start":
            running.add(event["tool_call_id"])
        elif event["type"] == "tool_execution_end":
            running.discard(event["tool_call_id"])
    return streaming or bool(running)


def test_trace_writes_its_page_readable_as_any_file_the_umask_allows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The page is written atomically, through a temporary file, yet gets the mode a plain
    `open` gives (0644 under umask 022), not the temporary file's private 0600, so it can
    be shared or served; a page written over keeps the mode its owner gave it."""
    use_faux(monkeypatch, calculator_then_answer("cli-trace-mode"))
    assert main(["run", "What is 17 * 23?", "--json"]) == 0
    log = tmp_path / "run.jsonl"
    log.write_text(capsys.readouterr().out, encoding="utf-8")
    page = tmp_path / "run.html"
    old = os.umask(0o022)
    try:
        assert main(["trace", str(log), "--html", str(page)]) == 0
        assert stat.S_IMODE(page.stat().st_mode) == 0o644
        page.chmod(0o640)
        assert main(["trace", str(log), "--html", str(page)]) == 0
        assert stat.S_IMODE(page.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_trace_reads_a_log_from_stdin_and_writes_the_page_to_stdout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`-` as the log or as `--html` named a file "-": `yiem run --json ... | yiem trace -
    --html page.html` said "- is not a file", and `--html - > page.html` left page.html
    empty and a page in a file called "-"."""
    import io

    use_faux(monkeypatch, calculator_then_answer("cli-trace-stdio"))
    assert main(["run", "What is 17 * 23?", "--json"]) == 0
    log = capsys.readouterr().out
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO(log))
    assert main(["trace", "-", "--html", "-"]) == 0
    shown = capsys.readouterr()
    assert shown.out.lower().startswith("<!doctype html>")
    assert "17 * 23 = 391" in shown.out
    assert shown.err.strip() == "wrote the page to standard output (2 turns, 3 calls)"
    assert list(tmp_path.iterdir()) == []  # no file named "-"

    monkeypatch.setattr(sys, "stdin", io.StringIO(log + '{"type": "message_e'))  # cut off
    assert main(["trace", "-", "--html", "-"]) == 0
    [warned] = [line for line in capsys.readouterr().err.splitlines() if "cut off" in line]
    assert warned.startswith("yiem: warning: standard input: line "), warned


def test_trace_reads_a_session_from_the_postgresql_store_serve_shares(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`yiem serve --sessions postgresql://...` keeps its sessions there, and docs/serve.md
    names `yiem trace` among that store's readers; `--db` took only a file ("no session
    database at postgresql:/..."), the URL's // folded and its password shown."""
    from yiemagent import Agent
    from yiemagent.sessions import PostgresSessionStore

    fm = FauxModel(["Hello there."], model_id="trace-pg")
    with PostgresSessionStore(postgres_dsn) as store:
        agent = Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store,
                      session_id="pg-trace")  # fmt: skip
        agent.prompt_sync("Hi")
        asyncio.run(agent.close())
    page = tmp_path / "pg.html"
    assert main(["trace", "pg-trace", "--db", postgres_dsn, "--html", str(page)]) == 0
    assert "Hello there." in page.read_text(encoding="utf-8")
    assert main(["trace", "nobody", "--db", postgres_dsn, "--html", str(page)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("yiem: error: no session 'nobody' in postgresql://"), err
