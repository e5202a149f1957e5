"""DESIGN §12 and §8 on the command line: `yiem run --mcp "command"` / `--mcp-url URL` add
an MCP server's tools to the run, `yiem mcp list` prints a server's tools, and every error
is one line with a non-zero exit. (`yiem mcp serve` is used by the SDK client in
test_serve.py.) The model is the faux one; the servers are real subprocesses."""

from __future__ import annotations

import importlib
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._yiem import yiem_in
from tests.mcp.conftest import SERVER, HttpTestServer
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.cli.main import main

cli_main_module = importlib.import_module("yiemagent.cli.main")

pytestmark = pytest.mark.timeout(120)

SERVER_COMMAND = f"{sys.executable} {SERVER}"


def _faux(monkeypatch: pytest.MonkeyPatch, *responses: object) -> FauxModel:
    fm = FauxModel(list(responses), model_id="cli-mcp-faux")  # type: ignore[arg-type]
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda *args, **kwargs: fm.model)
    return fm


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.startswith("yiem:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_run_with_mcp_offers_and_calls_the_servers_tools(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = _faux(monkeypatch, faux_message(faux_tool_call("add", {"a": 20, "b": 22})), "It is 42.")
    code, out, err = _run(capsys, "run", "What is 20 + 22?", "--mcp", SERVER_COMMAND)
    assert code == 0, err
    assert out == "It is 42.\n"
    assert '→ add {"a": 20, "b": 22}' in err
    assert "← add: {" in err
    offered = [t.name for t in fm.contexts[0].tools or []]
    assert {"calculator", "get_time", "add", "echo", "sleep"} <= set(offered)


def test_run_with_mcp_url_uses_a_streamable_http_server(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    http_server: HttpTestServer,
) -> None:
    _faux(monkeypatch, faux_message(faux_tool_call("echo", {"text": "over http"})), "Done.")
    code, out, err = _run(capsys, "run", "echo it", "--mcp-url", http_server.url, "--json")
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    [end] = [e for e in events if e["type"] == "tool_execution_end"]
    assert end["tool_name"] == "echo" and not end["is_error"]
    assert end["result"]["content"] == [{"type": "text", "text": "over http"}]
    assert events[-1]["reason"] == "stop"


def test_run_with_two_mcp_servers_that_clash_is_one_error_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _faux(monkeypatch, "unused")
    code, _, err = _run(capsys, "run", "hi", "--mcp", SERVER_COMMAND, "--mcp", SERVER_COMMAND)
    assert code == 1
    said = _error_line(err)
    assert "is already registered from" in said
    assert "name the servers in an agent file (--agent FILE)" in said, said  # not add_server


def test_run_with_a_server_that_does_not_start_is_one_error_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _faux(monkeypatch, "unused")
    code, _, err = _run(capsys, "run", "hi", "--mcp", "/nonexistent/server --flag")
    assert code == 1
    assert 'MCP server "/nonexistent/server --flag": cannot start' in _error_line(err)


DIES = (
    "python -c \"import sys; print('starting', file=sys.stderr); sys.exit('boom: missing config')\""
)


@pytest.mark.parametrize("command", ["run", "list"])
def test_a_server_that_dies_at_start_ends_the_line_with_its_last_stderr_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    # It said only "MCPError: Connection closed"; the server's reason was on its stderr.
    _faux(monkeypatch, "unused")
    argv = ["run", "hi", "--mcp", DIES] if command == "run" else ["mcp", "list", DIES]
    code, _, err = _run(capsys, *argv)
    assert code == 1
    assert _error_line(err).endswith("boom: missing config"), err


def test_a_server_that_exits_silently_at_start_says_it_exited(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`yiem mcp list "python -c pass"` (a command that is no MCP server) said only
    "MCPError: Connection closed", not that the process had ended before it answered."""
    code, out, err = _run(capsys, "mcp", "list", "python -c pass")
    assert code == 1 and out == ""
    assert _error_line(err) == (
        'yiem: error: MCP server "python -c pass": MCPError: Connection closed (the server '
        "process exited or closed its output before it answered initialize)"
    )


def test_a_key_given_to_a_server_is_shown_as_stars_in_its_name(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its name was the whole command line, so the key was in every message about it.
    code, _, err = _run(capsys, "mcp", "list", f"{SERVER_COMMAND} --api-key sk-123 --token=t-456")
    assert code == 0, err
    name = f"{SERVER_COMMAND} --api-key *** --token=***"
    assert err.strip().splitlines()[-1].endswith(f'tools from MCP server "{name}"'), err
    assert "sk-123" not in err and "t-456" not in err
    _faux(monkeypatch, "unused")
    dies = "python -c \"import sys; sys.exit('key ends ' + sys.argv[-1][-3:])\" --api-key sk-123"
    code, _, err = _run(capsys, "run", "hi", "--mcp", dies)
    line = _error_line(err)
    assert code == 1 and "--api-key ***" in line and "sk-123" not in line
    assert line.endswith("key ends 123")  # the server got the real key
    code, _, err = _run(capsys, "run", "hi", "--mcp", '"server --api-key sk-123')
    assert code == 1 and "--api-key ***" in _error_line(err) and "sk-123" not in err


def test_a_password_in_a_url_is_shown_as_stars(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a key after `--api-key` is (openai-agents hides a URL's credentials too): a URL
    given as a command was echoed whole, twice, and a command that passes a URL to a
    bridge (`npx mcp-remote https://user:pw@host/mcp`) was the server's name."""
    _faux(monkeypatch, "unused")
    url = "http://user:s3cr3t@127.0.0.1:9/mcp"
    code, _, err = _run(capsys, "run", "hi", "--mcp", url)
    line = _error_line(err)
    assert code == 1 and "is a URL" in line and "user:***@127.0.0.1:9" in line
    assert "s3cr3t" not in err
    dies = f"python -c \"import sys; sys.exit('bridge failed')\" {url}"
    code, _, err = _run(capsys, "run", "hi", "--mcp", dies)
    assert code == 1 and "user:***@" in _error_line(err) and "s3cr3t" not in err


def test_a_command_with_an_unclosed_quote_is_one_line_naming_the_option(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _faux(monkeypatch, "unused")
    code, _, err = _run(capsys, "run", "hi", "--mcp", '"python server.py')
    assert code == 1
    line = _error_line(err)
    assert "--mcp '\"python server.py'" in line and "No closing quotation" in line


def test_mcp_list_prints_each_tool_on_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "mcp", "list", SERVER_COMMAND)
    assert code == 0, err
    lines = out.splitlines()
    assert "echo — Return the text unchanged." in lines
    assert "add — Add two numbers; the result is structured content." in lines
    assert f"{len(lines)} tools from MCP server" in err


def test_mcp_list_names_the_server_as_given_with_its_folder(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # It said 'from MCP server "python3 mcp_test_server.py"', where the chat, `yiem run`'s
    # errors and agent files name a server by its command line as given.
    code, _, err = _run(capsys, "mcp", "list", SERVER_COMMAND)
    assert code == 0, err
    assert err.strip().splitlines()[-1].endswith(f'tools from MCP server "{SERVER_COMMAND}"')


def test_mcp_list_over_http(
    capsys: pytest.CaptureFixture[str], http_server: HttpTestServer
) -> None:
    code, out, _ = _run(capsys, "mcp", "list", "--url", http_server.url)
    assert code == 0
    assert "noop — Do nothing and answer ok (for the overhead bench)." in out.splitlines()


@pytest.mark.parametrize("path", ["", "/", "/api"])
def test_a_url_without_the_mcp_path_says_where_the_endpoint_usually_is(
    capsys: pytest.CaptureFixture[str], http_server: HttpTestServer, path: str
) -> None:
    """The server's root URL (a README's `http://host:port`) said only "MCPError: Not Found
    (HTTP 404 Not Found)": not which URL was asked, nor that the endpoint is at /mcp."""
    root = http_server.url.removesuffix("/mcp")
    code, _, err = _run(capsys, "mcp", "list", "--url", root + path)
    line = _error_line(err)
    assert code == 1
    assert f"HTTP 404 Not Found: no MCP endpoint at {root}{path}" in line, line
    assert f"streamable-HTTP servers usually answer at /mcp: {root}/mcp" in line, line


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["mcp", "list"], "give a command"),
        (["mcp", "list", "python server.py", "--url", "http://x/mcp"], "not both"),
        (["mcp", "list", "--url", "ftp://x/mcp"], "must be http(s)"),
        (["mcp", "serve", "--tools", "/nonexistent/tools"], "not a folder"),
    ],
)
def test_mcp_usage_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    code, _, err = _run(capsys, *argv)
    assert code != 0
    assert expected in _error_line(err)


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["run", "hi", "--mcp", "http://127.0.0.1:9/mcp"], "--mcp-url"),
        (["mcp", "list", "https://example.org/mcp"], "--url"),
    ],
)
def test_a_url_given_as_a_command_names_the_url_option(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    option: str,
) -> None:
    # It was started as a program: "cannot start: FileNotFoundError: [Errno 2] No such
    # file or directory: 'http://...'", which does not say what to type instead.
    _faux(monkeypatch, "unused")
    code, _, err = _run(capsys, *argv)
    line = _error_line(err)
    assert code == 1
    assert "is a URL, not a command" in line and f"give it as {option} {argv[-1]}" in line
    assert "FileNotFoundError" not in line


def test_mcp_serve_on_a_port_in_use_is_one_line_naming_it_and_what_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It printed only "[Errno 98] Address already in use": which address, and what now?"""
    tools = str(Path(SERVER).parent / "serve_tools")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = _run(capsys, "mcp", "serve", "--tools", tools, "--http", str(port))
    assert code == 1 and out == ""
    assert err == (
        f"yiem: error: cannot serve on 127.0.0.1:{port}: the address is already in use "
        "(another program listens there); give another port: --http PORT (--http 0 picks "
        "a free one)\n"
    )


def test_an_mcp_server_serving_the_default_tools_replaces_them_with_a_notice(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`yiem run --mcp "yiem mcp serve --tools <the default tools>"`: every served tool
    clashes with a default one; the server's tools replace them, and the run says so."""
    from yiemagent.cli.options import DEFAULT_TOOLS_DIR

    fm = _faux(
        monkeypatch,
        faux_message(faux_tool_call("calculator", {"expression": "6 * 7"})),
        "It is 42.",
    )
    served = f"{sys.executable} -m yiemagent.cli.main mcp serve --tools {DEFAULT_TOOLS_DIR}"
    code, out, err = _run(capsys, "run", "What is 6 * 7?", "--mcp", served)
    assert code == 0, err
    assert out == "It is 42.\n"
    assert "tool 'calculator' replaces the tool of that name from the tools folder" in err
    assert "← calculator: 6 * 7 = 42" in err
    offered = [t.name for t in fm.contexts[0].tools or []]
    assert sorted(offered) == ["calculator", "get_time", "listTools", "read_file"]
    [calculator] = [t for t in fm.contexts[0].tools or [] if t.name == "calculator"]
    assert "MCP" in repr(calculator.execute) or "mcp" in calculator.execute.__module__


def test_the_documented_weather_example_runs_as_written(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/mcp.md: `yiem run "Weather in Lisbon tomorrow?" --mcp "python
    examples/mcp/weather_server.py"` from the checkout: `python` is yiem's own (the one on
    PATH may lack the SDK), and a city the server does not know lists the ones it knows."""
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    fm = _faux(
        monkeypatch,
        faux_message(faux_tool_call("forecast", {"city": "Lisboa"})),
        faux_message(faux_tool_call("forecast", {"city": "Lisbon"})),
        "Sunny, 19 °C.",
    )
    code, out, err = _run(
        capsys,
        "run",
        "Weather in Lisbon tomorrow?",
        "--mcp",
        "python examples/mcp/weather_server.py",
    )
    assert code == 0, err
    assert out == "Sunny, 19 °C.\n"
    assert "no forecast for 'Lisboa'; the cities I know are Oslo, Lisbon, Tokyo" in err
    assert '← forecast: { "city": "Lisbon", "sky": "sun", "celsius": 19 }' in err
    [forecast] = [t for t in fm.contexts[0].tools or [] if t.name == "forecast"]
    assert "Oslo, Lisbon, Tokyo" in forecast.description


def test_a_server_that_prints_a_banner_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    # Servers often print a start-up line to stdout; the SDK logged it with its traceback
    # and Python's last-resort handler printed three screens of it.
    banner = f"sh -c 'echo Server starting...; exec {SERVER_COMMAND}'"
    ran = yiem_in(tmp_path, "mcp", "list", banner, timeout=90)
    assert ran.returncode == 0, ran.stderr
    assert "add" in ran.stdout
    assert "Traceback" not in ran.stderr and "pydantic" not in ran.stderr, ran.stderr
    said, listed = ran.stderr.strip().splitlines()
    assert "not JSON-RPC ('Server starting...')" in said and "stderr" in said
    assert listed.endswith(f'tools from MCP server "{banner}"')


def test_yiem_as_a_server_command_is_the_yiem_beside_this_python(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`yiem mcp list "yiem mcp serve --tools DIR"`, as docs/mcp.md shows it, failed with
    `FileNotFoundError: ... 'yiem'` whenever the venv was not activated (`.venv/bin/yiem`
    run by its path): `yiem`, like `python`, is now the one installed with this Python."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no venv on it
    tools = Path(__file__).parent / "serve_tools"
    code, out, err = _run(capsys, "mcp", "list", f"yiem mcp serve --tools {tools}")
    assert code == 0, err
    assert "add — Add two integers." in out.splitlines(), out
    assert f'from MCP server "yiem mcp serve --tools {tools}"' in err


def _slept(out: str) -> dict[str, Any]:
    """The `tool_execution_end` of the one call, from `--json` lines."""
    events: list[dict[str, Any]] = [json.loads(line) for line in out.splitlines()]
    [end] = [e for e in events if e["type"] == "tool_execution_end"]
    return end


@pytest.mark.parametrize("transport", ["--mcp", "--mcp-url"])
def test_mcp_timeout_bounds_how_long_a_server_may_stay_silent(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    http_server: HttpTestServer,
    transport: str,
) -> None:
    """A tool that sends no progress and takes longer than `--mcp-timeout` fails saying the
    server went silent for that long; the option had no place on the command line, so a
    slow tool always failed after the servers' 30 s."""
    server = SERVER_COMMAND if transport == "--mcp" else http_server.url
    call = faux_message(faux_tool_call("sleep", {"seconds": 3}))
    _faux(monkeypatch, call, "Done.")
    argv = ["run", "nap", transport, server, "--mcp-timeout", "0.5", "--json"]
    code, out, err = _run(capsys, *argv)
    assert code == 0, err
    end = _slept(out)
    assert end["is_error"], end
    # the setting a command-line user changes is named, not the library's `timeout_s`
    assert "went silent" in json.dumps(end) and "nothing came for 0.5 s (--mcp-timeout)" in (
        json.dumps(end)
    )


def test_a_tool_within_mcp_timeout_answers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _faux(monkeypatch, faux_message(faux_tool_call("sleep", {"seconds": 1})), "Done.")
    argv = ["run", "nap", "--mcp", SERVER_COMMAND, "--mcp-timeout", "20", "--json"]
    code, out, err = _run(capsys, *argv)
    assert code == 0, err
    end = _slept(out)
    assert not end["is_error"], end
    assert end["result"]["content"] == [{"type": "text", "text": "slept 1.0 s"}]


@pytest.mark.parametrize("command", [["run", "hi"], ["serve"]])
def test_mcp_timeout_without_a_server_is_one_error_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    _faux(monkeypatch, "unused")
    code, _, err = _run(capsys, *command, "--mcp-timeout", "60")
    assert code != 0
    assert _error_line(err) == (
        "yiem: error: --mcp-timeout goes with --mcp or --mcp-url: it bounds their servers"
    )


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_mcp_timeout_that_is_not_a_positive_number_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    _faux(monkeypatch, "unused")
    code, _, err = _run(capsys, "run", "hi", "--mcp", SERVER_COMMAND, "--mcp-timeout", value)
    assert code == 2
    assert "Invalid value for '--mcp-timeout'" in err and "Traceback" not in err


@pytest.mark.parametrize("transport", ["--mcp", "--mcp-url"])
def test_mcp_max_message_bytes_bounds_a_servers_answer(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    http_server: HttpTestServer,
    transport: str,
) -> None:
    """An answer longer than `--mcp-max-message-bytes` is the call's error result, and a
    short one still comes: the option had no place on the command line, so a server's
    bound was always the library's 64 MiB."""
    server = SERVER_COMMAND if transport == "--mcp" else http_server.url
    calls = faux_tool_call("echo", {"text": "x" * 100_000}), faux_tool_call("echo", {"text": "ok"})
    _faux(monkeypatch, faux_message(*calls), "Done.")
    argv = ["run", "echo", transport, server, "--mcp-max-message-bytes", "50000", "--json"]
    code, out, err = _run(capsys, *argv)
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    long, short = [e for e in events if e["type"] == "tool_execution_end"]
    assert long["is_error"] and "max_message_bytes (50000 bytes)" in json.dumps(long), long
    assert not short["is_error"], short
    assert short["result"]["content"] == [{"type": "text", "text": "ok"}]


@pytest.mark.parametrize("command", [["run", "hi"], ["serve"], ["chat"]])
def test_mcp_max_message_bytes_without_a_server_is_one_error_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    _faux(monkeypatch, "unused")
    code, _, err = _run(capsys, *command, "--mcp-max-message-bytes", "1000")
    assert code != 0
    assert _error_line(err) == (
        "yiem: error: --mcp-max-message-bytes goes with --mcp or --mcp-url: it bounds their servers"
    )


@pytest.mark.parametrize("value", ["0", "-1", "big", "1.5"])
def test_mcp_max_message_bytes_that_is_not_a_positive_whole_number_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    _faux(monkeypatch, "unused")
    argv = ["run", "hi", "--mcp", SERVER_COMMAND, "--mcp-max-message-bytes", value]
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert "Invalid value for '--mcp-max-message-bytes'" in err and "Traceback" not in err
