"""`yiem serve` (DESIGN §18): refuses to serve other machines without a token, reports bad
options in one line, and serves the page and the API from a real process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2 as httpx
import pytest

from tests._slow_load import slow_load_script
from tests.cli.chat._tmux import TOOLS
from tests.serve._kit import run_events
from yiemagent.cli.main import main
from yiemagent.errors import install_hint
from yiemagent.sessions import SqliteSessionStore

pytestmark = pytest.mark.timeout(120)


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_bad_options_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = one_line_error(capsys, ["serve", "--host", "0.0.0.0", "--model", "openai/gpt-4o-mini"])
    assert "--token" in err and "127.0.0.1" in err
    err = one_line_error(
        capsys, ["serve", "--tools", str(tmp_path / "none"), "--model", "openai/gpt-4o-mini"]
    )
    assert "not a folder" in err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        err = one_line_error(capsys, ["serve", "--port", port, "--model", "openai/gpt-4o-mini"])
        assert f"cannot listen on 127.0.0.1:{port}" in err
        # what to do, as `yiem mcp serve --http` says it
        assert err.endswith("; give another port: --port PORT (--port 0 picks a free one)")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = free.getsockname()[1]  # nothing listens there once closed
    argv = ["serve", "--port", "0", "--model", "openai/gpt-4o-mini"]
    err = one_line_error(capsys, [*argv, "--sessions", f"postgresql://127.0.0.1:{dead}/x"])
    assert err.startswith("yiem: error: --sessions postgresql://")
    # the password in a URL is never said back (the store's own text hides it already)
    for url in (
        f"postgresql://bob:s3cretpw@127.0.0.1:{dead}/x",
        f"postgresql://bob@127.0.0.1:{dead}/x?sslmode=disable&password=s3cretpw",
    ):
        err = one_line_error(capsys, [*argv, "--sessions", url])
        assert "s3cretpw" not in err, err
        assert err.startswith(f"yiem: error: --sessions {url.replace('s3cretpw', '***')}: ")
    # A SQLite file in a folder that does not exist is refused, as `yiem batch --out` and
    # `yiem trace --html` refuse theirs; it used to make the folders silently.
    missing = tmp_path / "typo" / "deeper" / "sessions.db"
    err = one_line_error(capsys, [*argv, "--sessions", str(missing)])
    assert err == (
        f"yiem: error: cannot write {missing} (--sessions): folder {missing.parent} does not exist"
    )
    assert not (tmp_path / "typo").exists()
    for origin in ("notanorigin", "http://localhost:3000/"):
        err = one_line_error(capsys, [*argv, "--cors", "http://ok:1", "--cors", origin])
        assert err == (
            f"yiem: error: --cors {origin!r} is not an origin: give scheme://host[:port] with "
            "no path (e.g. http://localhost:3000), or *"
        )


def test_create_app_takes_only_origins() -> None:
    from yiemagent import Agent
    from yiemagent.errors import ConfigError
    from yiemagent.serve import create_app
    from yiemagent.sessions import InMemorySessionStore

    def make_agent(session_id: str) -> Agent:
        return Agent(session_store=store, session_id=session_id)

    store = InMemorySessionStore()
    for good in ("*", "http://localhost:3000", "https://[::1]:8443", ["app://x", "*"]):
        create_app(make_agent, session_store=store, cors=good)
    with pytest.raises(ConfigError, match=r"^cors: 'localhost:3000' is not an origin"):
        create_app(make_agent, session_store=store, cors=["localhost:3000"])


@pytest.mark.parametrize("bad", [-1, 2.5, True, "10", None])
def test_create_app_takes_only_a_whole_number_of_runs_to_keep(bad: object) -> None:
    """A negative `keep_runs` acted as 0 (every finished run forgotten at once), and any
    other value failed later, at the first finished run."""
    from yiemagent import Agent
    from yiemagent.errors import ConfigError
    from yiemagent.serve import create_app
    from yiemagent.sessions import InMemorySessionStore

    def make_agent(session_id: str) -> Agent:
        return Agent(session_store=store, session_id=session_id)

    store = InMemorySessionStore()
    create_app(make_agent, session_store=store, keep_runs=0)
    with pytest.raises(ConfigError) as raised:
        create_app(make_agent, session_store=store, keep_runs=bad)  # type: ignore[arg-type]
    assert str(raised.value) == f"keep_runs must be a whole number, 0 or more, not {bad!r}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_serve(
    *options: str, script: Path | None = None, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str, str, list[str]]:
    """`yiem serve OPTIONS --port P` as a process (no API keys in its environment but those
    of `env`); returns it, its URL, its banner line and the warning lines before it once
    /healthz answers. `script` runs in place of `yiem` (one that sets a faux model, then
    calls the CLI's `main`)."""
    port = free_port()
    keyless = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    yiem = [str(script)] if script is not None else ["-m", "yiemagent.cli.main"]
    command = [sys.executable, *yiem, "serve", "--port", str(port), *options]
    server = subprocess.Popen(
        command, env={**keyless, **(env or {})}, stderr=subprocess.PIPE, text=True
    )
    assert server.stderr is not None
    warnings: list[str] = []
    while (banner := server.stderr.readline()).startswith("yiem serve: warning: "):
        warnings.append(banner.strip())
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                return server, url, banner, warnings
        except httpx.TransportError:
            assert server.poll() is None and time.monotonic() < deadline, banner
            time.sleep(0.1)


def test_yiem_serve_serves_the_page_and_the_api(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    server, url, banner, _ = start_serve(
        "--model", "openai/gpt-4o-mini", "--sessions", str(db), "--token", "t"
    )
    try:
        assert f"{url}/" in banner and "token required" in banner
        page = httpx.get(url)
        assert page.status_code == 200 and "<title>yiem</title>" in page.text
        assert httpx.get(f"{url}/v1/sessions").status_code == 401
        with httpx.Client(base_url=url, headers={"Authorization": "Bearer t"}) as client:
            run = client.post("/v1/sessions/cli/runs", json={"input": "hello"})
            assert run.status_code == 202
            end = run_events(client, run.json()["run_id"])[-1][1]
            assert end["type"] == "agent_end" and end["reason"] == "error"
            assert "API key" in end["messages"][-1]["error_message"]
            assert client.get("/v1/sessions").json()["sessions"][0]["session_id"] == "cli"
        server.send_signal(signal.SIGINT)  # Ctrl-C: runs aborted, the store closed
        assert server.wait(30) == 130
        assert server.stderr is not None
        rest = server.stderr.read().strip()
        assert rest == "yiem: interrupted", rest
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    with SqliteSessionStore(db) as store:
        assert store.list_sessions() == ["cli"]


def test_a_model_whose_api_key_is_not_set_is_one_warning_line_at_start(tmp_path: Path) -> None:
    """`yiem serve --model openai/gpt-4o-mini` without OPENAI_API_KEY started saying
    nothing, and every run failed later on "no API key". It warns at start, in one line,
    and still serves; with the key set, or a model that needs none, nothing is said."""
    db = str(tmp_path / "s.db")
    server, url, _, warnings = start_serve("--model", "openai/gpt-4o-mini", "--sessions", db)
    try:
        assert warnings == [
            "yiem serve: warning: no API key for openai/gpt-4o-mini: set OPENAI_API_KEY in the "
            "environment, or its runs fail"
        ]
        assert httpx.get(f"{url}/healthz").status_code == 200
    finally:
        server.kill()
        server.wait()
    for argv, env in (
        (["--model", "openai/gpt-4o-mini"], {"OPENAI_API_KEY": "sk-test-not-used"}),
        (["--model", "openai-compatible/m", "--base-url", "http://127.0.0.1:9/v1"], {}),
    ):
        server, _, _, warnings = start_serve(*argv, "--sessions", db, env=env)
        server.kill()
        server.wait()
        assert warnings == [], (argv, warnings)


WITHOUT_OPENAI = """\
import sys

sys.modules["openai"] = None  # as if the openai extra were not installed
from yiemagent.cli.main import main

sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("with_agent_file", [False, True], ids=["model", "agent-file"])
def test_a_model_whose_sdk_is_missing_refuses_to_start(
    tmp_path: Path, with_agent_file: bool
) -> None:
    """Without the openai extra, `yiem serve` warned and served, and every run failed on the
    missing SDK, which no key and no agent file's function can give: it refuses to start,
    in one line with the install command, as `yiem run` fails; with `--agent`, for the
    entry agent's model."""
    script = tmp_path / "without_openai.py"
    script.write_text(WITHOUT_OPENAI)
    argv = ["--model", "openai/gpt-4o-mini"]
    if with_agent_file:
        team = tmp_path / "team.toml"
        team.write_text('[agents.helper]\nmodel = "openai/gpt-4o-mini"\n')
        argv = ["--agent", str(team), "--model", "openai-compatible/m", "--base-url",
                "http://127.0.0.1:9/v1"]  # fmt: skip
    argv += ["--sessions", str(tmp_path / "s.db")]
    proc = subprocess.run(
        [sys.executable, str(script), "serve", "--port", "0", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OPENAI_API_KEY": "sk-test-not-used"},
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        f"yiem: error: the openai SDK is not installed: {install_hint('openai')} "
        "(openai/gpt-4o-mini needs it for every run)"
    ]


def test_the_banner_counts_the_tools_in_the_singular_and_the_plural(tmp_path: Path) -> None:
    """An empty `--tools` folder leaves `listTools` alone: the banner said "1 tools"."""
    empty = tmp_path / "empty"
    empty.mkdir()
    for folder, counted in ((empty, "1 tool"), (TOOLS, "2 tools")):  # TOOLS: `slow`
        argv = ["--tools", str(folder), "--model", "openai/gpt-4o-mini"]
        server, url, banner, warnings = start_serve(*argv, "--sessions", str(tmp_path / "s.db"))
        try:
            assert any("no tool file there" in w for w in warnings) == (folder == empty), warnings
            assert banner.strip() == (
                f"yiem serve: {url}/ ({counted}, model openai/gpt-4o-mini)"
            ), banner
        finally:
            server.kill()
            server.wait()


def test_yiem_serve_an_agent_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    team = tmp_path / "team.toml"
    team.write_text(
        '[agents.triage]\nsystem_prompt = "Route."\nhandoffs = ["helper"]\n'
        '[agents.helper]\nsystem_prompt = "Help."\nmodel = "openai/gpt-4o-mini"\n'
    )
    err = one_line_error(capsys, ["serve", "--agent", f"{team}:nobody"])
    assert "no agent 'nobody'" in err
    err = one_line_error(capsys, ["serve", "--agent", str(team), "--tools", str(tmp_path)])
    assert "--tools does not go with --agent" in err
    db = tmp_path / "sessions.db"
    server, url, banner, warnings = start_serve("--agent", f"{team}:helper", "--sessions", str(db))
    try:
        assert "agent file" in banner
        assert warnings == [  # the file's agent's model, not --model's
            "yiem serve: warning: no API key for openai/gpt-4o-mini: set OPENAI_API_KEY in "
            "the environment, or its runs fail"
        ]
        with httpx.Client(base_url=url) as client:
            run = client.post("/v1/sessions/s1/runs", json={"input": "hello"})
            end = run_events(client, run.json()["run_id"])[-1][1]
            assert end["reason"] == "error"
            assert end["messages"][-1]["agent"] == "helper"  # the file's agent answered
            assert end["messages"][-1]["model"] == "gpt-4o-mini"
    finally:
        server.kill()
        server.wait()
    with SqliteSessionStore(db) as store:
        assert store.load("s1")[0].role == "user"


def test_an_agent_file_s_mcp_servers_start_without_holding_the_server(tmp_path: Path) -> None:
    """Each run builds the session's agent from the file, which starts its MCP servers;
    that ran on the server's event loop, so every client waited for the servers to start
    (a few seconds for an npx server) at every run and every approval read."""
    mcp = Path(__file__).resolve().parents[1] / "mcp" / "mcp_test_server.py"
    team = tmp_path / "team.toml"
    team.write_text(
        f'[agents.helper]\nsystem_prompt = "Help."\nmodel = "openai/gpt-4o-mini"\n'
        f"mcp = [{json.dumps(f'{sys.executable} {mcp} --slow-start 12')}]\n"
    )
    server, url, _, _ = start_serve("--agent", str(team), "--sessions", str(tmp_path / "s.db"))
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            started: list[int] = []
            worker = threading.Thread(
                target=lambda: started.append(
                    client.post("/v1/sessions/s1/runs", json={"input": "hi"}).status_code
                )
            )
            worker.start()
            time.sleep(1.0)  # the run is starting its MCP server
            before = time.monotonic()
            assert httpx.get(f"{url}/healthz", timeout=60).status_code == 200
            assert time.monotonic() - before < 6.0  # not the rest of the server's 12 s start
            worker.join(60)
            assert started == [202]
    finally:
        server.kill()
        server.wait()


FAUX_SERVE = """\
import sys

import yiemagent.cli.serve as serve
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.cli.main import main

replies = []
for word in ("one", "two", "three"):
    replies += [faux_message(faux_tool_call("echo", {"text": word})), f"echoed {word}"]
faux = FauxModel(replies, model_id="serve-faux")
serve.resolve_model = lambda *args, **kwargs: faux.model
sys.exit(main(sys.argv[1:]))
"""


def test_an_agent_file_s_mcp_servers_start_once_and_stop_with_the_server(tmp_path: Path) -> None:
    """The file's MCP servers were started for every run (and approval) and stopped after
    it: seconds per run for a server fetched by npx, and a server's state lost between
    runs. They start once, serve every session's runs, and stop when the server does."""
    mcp = Path(__file__).resolve().parents[1] / "mcp" / "mcp_test_server.py"
    markers = tmp_path / "markers"
    markers.mkdir()
    # MCP_TEST_START_ONCE: a second start of the server exits at once
    command = (
        f"env MCP_TEST_MARKERS={markers} MCP_TEST_START_ONCE={tmp_path / 'once'} "
        f"{sys.executable} {mcp}"
    )
    team = tmp_path / "team.toml"
    team.write_text(f'[agents.helper]\nsystem_prompt = "Help."\nmcp = [{json.dumps(command)}]\n')
    script = tmp_path / "serve_faux.py"
    script.write_text(FAUX_SERVE)
    server, url, _, _ = start_serve(
        "--agent", str(team), "--sessions", str(tmp_path / "s.db"), script=script
    )
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            for session, word in [("s1", "one"), ("s2", "two"), ("s1", "three")]:
                run = client.post(f"/v1/sessions/{session}/runs", json={"input": word})
                assert run.status_code == 202, run.text
                events = [event for _, event in run_events(client, run.json()["run_id"])]
                [ended] = [e for e in events if e["type"] == "tool_execution_end"]
                assert not ended["is_error"], ended
                assert ended["result"]["content"] == [{"type": "text", "text": word}]
                assert events[-1]["type"] == "agent_end", events[-1]
        mcp_pid = int((markers / "pid").read_text())
        server.send_signal(signal.SIGINT)
        assert server.wait(30) == 130
        assert server.stderr is not None
        rest = server.stderr.read().strip()
        assert rest == "yiem: interrupted", rest
        deadline = time.monotonic() + 15
        while True:  # the MCP server stopped with yiem serve
            try:
                os.kill(mcp_pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "the MCP server outlived yiem serve"
            time.sleep(0.1)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


FAUX_WINDOW = """\
import dataclasses
import sys

import yiemagent.cli.serve as serve
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.cli.main import main


def answer(context):
    # a model with a 4,096-token window: it fails on the huge question when it sees it
    seen = "".join(str(m.content) for m in context.messages)
    return "too long" if len(seen) > 4096 * 4 else f"fits ({len(context.messages)} messages)"


faux = FauxModel([answer] * 8, model_id="serve-faux")
model = dataclasses.replace(faux.model, context_window=4096)
serve.resolve_model = lambda *args, **kwargs: model
sys.exit(main(sys.argv[1:]))
"""


def test_a_session_past_the_model_s_window_is_compacted_and_goes_on(tmp_path: Path) -> None:
    """One question longer than the window (a pasted file) was kept in the session and sent
    again with every later question: the session failed from then on. As in `yiem chat`,
    the question is one error naming the window (no model call can take it), the older
    turns are compacted to fit for the next question, and the store keeps them."""
    script = tmp_path / "serve_faux.py"
    script.write_text(FAUX_WINDOW)
    db = tmp_path / "s.db"
    server, url, _, _ = start_serve("--sessions", str(db), script=script)
    huge = "word " * 8000  # about 10,000 tokens
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            answers = []
            for question in (huge, "What is 2 + 2?"):
                run = client.post("/v1/sessions/s/runs", json={"input": question})
                assert run.status_code == 202, run.text
                end = run_events(client, run.json()["run_id"])[-1][1]
                assert end["type"] == "agent_end", end
                answers.append(end["messages"][-1])
            # the huge question alone passes the window: one error, before any model call
            assert answers[0]["stop_reason"] == "error" and not answers[0]["content"]
            assert "context window" in answers[0]["error_message"], answers[0]
            assert answers[1]["content"][0]["text"].startswith("fits"), answers[1]
    finally:
        server.kill()
        server.wait()
    with SqliteSessionStore(db) as store:
        assert len(store.load("s")) == 4  # every message stays stored


def test_ctrl_c_while_the_embedded_model_loads_exits_130_at_once(tmp_path: Path) -> None:
    """The load runs inside llama.cpp, which does not return to Python on Ctrl-C: `yiem
    serve` loaded on its main thread, so Ctrl-C (and a second one) left it hanging there
    for good. As `yiem run` does, it now loads on a worker thread and exits 130."""
    script = slow_load_script(
        tmp_path, resolving="yiemagent.cli.serve", announce=True, blocks_ctrl_c=True
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, str(script), "serve", "--port", str(free_port()),
               "--sessions", str(tmp_path / "s.db")]  # fmt: skip
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline(), proc.stderr.readline()]
        assert lines[-1].strip() == "loading", lines
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 10
    assert err.strip() == "yiem: interrupted"


def test_while_the_embedded_model_loads_every_request_gets_503_saying_so(tmp_path: Path) -> None:
    """A client started with the server (the docs' curl) got "connection refused" for as
    long as the model loaded: the server listened only after. As llama-server does, it
    listens at once and answers 503 with `Retry-After` until the model is loaded."""
    script = slow_load_script(tmp_path, resolving="yiemagent.cli.serve", announce=True)
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, str(script), "serve", "--port", str(port),
               "--sessions", str(tmp_path / "s.db")]  # fmt: skip
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        assert proc.stderr is not None
        said = [proc.stderr.readline(), proc.stderr.readline()]
        assert said[-1].strip() == "loading", said
        health = httpx.get(f"{url}/healthz")
        assert health.status_code == 503 and health.headers["retry-after"] == "2"
        assert health.json() == {"ok": False, "loading": "local/qwen2.5-coder-0.5b"}
        run = httpx.post(f"{url}/v1/sessions/demo/runs", json={"input": "hi"})
        assert run.status_code == 503
        assert "is loading" in run.json()["error"]
        page = httpx.get(url)
        assert page.status_code == 503 and "Loading" in page.text
        assert "503" in said[0], said  # the loading line says so
        proc.send_signal(signal.SIGINT)  # still ends at once, as before it listened
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip() == "yiem: interrupted"
