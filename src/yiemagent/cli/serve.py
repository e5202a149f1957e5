"""`yiem serve`: agents behind the chat page, the HTTP API and the protocols front ends speak
(DESIGN §18; `docs/serve.md`).

    yiem serve                                   # then open http://127.0.0.1:8000/
    yiem serve --tools ./my_tools --model openai/gpt-4o-mini
    yiem serve --host 0.0.0.0 --token "$TOKEN" --sessions postgresql://db/app
    yiem serve --agent team.toml:support          # an agent file (docs/teams.md)

Sessions live in the user data folder's `sessions.db` (the one `yiem chat` and `yiem trace`
use) unless `--sessions` names another SQLite file or a `postgresql://` URL. It binds
127.0.0.1 unless told otherwise, and refuses a host other machines can reach without a
token. Every problem before serving is one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import html
import http.server
import json
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from yiemagent.ai.providers import missing_api_key, missing_sdk
from yiemagent.cli.options import (
    DEFAULT_MODEL,
    DEFAULT_SYSTEM,
    DEFAULT_TOOLS_DIR,
    BaseUrlOption,
    CliError,
    MaxTokensOption,
    MaxTurnsOption,
    McpMaxMessageBytesOption,
    McpOption,
    McpTimeoutOption,
    McpUrlOption,
    ReasoningOption,
    TemperatureOption,
    ToolCallsOption,
    ToolsOption,
    VisionOption,
    no_tool_files_note,
    reasoning_ignored,
    reasoning_level,
    resolve_model,
    sigterm_raises,
)
from yiemagent.cli.render import counted
from yiemagent.cli.stores import open_store
from yiemagent.cli.teams import (
    AgentOption,
    refuse_agent_flags,
    refuse_factory,
    refuse_sampling_with_agent,
    split_agent_option,
)
from yiemagent.errors import ConfigError, ToolLoadError, install_hint

if TYPE_CHECKING:
    from uvicorn import Server

    from yiemagent.compaction import Compactor
    from yiemagent.teams import AgentFile
    from yiemagent.tools import ToolStore
    from yiemagent.types import AgentTool, Model

__all__ = ["load_served_tools", "serve"]


def load_served_tools(store: ToolStore, folder: Path) -> None:
    """Load the tool files of `folder` into `store` for a server (`yiem serve`, `yiem mcp
    serve`), which refuses to start when any of them fails. `yiem run`, `chat`, `batch` and
    `eval` warn and go on with the rest, as their user reads the warning at once; a server
    runs unattended, and a client would find the missing tool only when it calls it.

    Raises:
        CliError: a tool file failed: one line naming each file and its error.
    """
    try:
        store.load_dir(folder)
    except ToolLoadError as exc:
        failures = "; ".join(f"{path}: {reason}" for path, reason in exc.failures)
        raise CliError(
            f"--tools {folder}: {failures}; a server starts only when every tool file loads "
            "(its clients expect them): fix each file named, or move it out of the folder"
        ) from None


def _tools(folder: Path | None, model: Model) -> list[AgentTool]:
    from yiemagent.tools import ToolStore

    folder = folder or DEFAULT_TOOLS_DIR
    if not folder.is_dir():
        raise CliError(f"--tools {folder}: not a folder")
    note = no_tool_files_note(folder)
    if note:
        print(f"yiem serve: warning: {note}", file=sys.stderr)
    store = ToolStore("serve")
    load_served_tools(store, folder)
    if model.api == "local":  # as `yiem run`: the small model calls it instead of answering
        store.unregister("listTools")
    return list(store.tools.values())


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        said = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):  # taken, or below 1024 for a user
            said += "; give another port: --port PORT (--port 0 picks a free one)"
        raise CliError(said) from exc
    return sock


class _LoadingAnswers(http.server.BaseHTTPRequestHandler):
    """Every request while the model loads: 503 with `Retry-After`; `GET /healthz`
    `{"ok": false, "loading": MODEL}`, the page a note that reloads itself, any other
    route `{"error": ...}`, as the API's errors. A `--cors` origin's page gets the CORS
    headers the app sends (its preflight 200), so it reads the 503 instead of a failed
    fetch."""

    model = ""
    cors: tuple[str, ...] = ()

    def _answer(self) -> None:
        from yiemagent.serve import cors_headers

        with contextlib.suppress(ValueError, OSError):  # a body left unread resets the answer
            length = int(self.headers.get("Content-Length") or 0)
            if 0 < length <= 1 << 20:
                self.rfile.read(length)
        origin = self.headers.get("Origin")
        if self.command == "OPTIONS" and "Access-Control-Request-Method" in self.headers:
            allowed = cors_headers(
                origin,
                self.cors,
                preflight=True,
                requested_headers=self.headers.get("Access-Control-Request-Headers"),
            )
            if allowed:
                self.send_response(200)
                for name, value in allowed:
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.send_header("Connection", "close")
                self.end_headers()
                return
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            body, kind = json.dumps({"ok": False, "loading": self.model}), "application/json"
        elif path == "/" and self.command == "GET":
            # a script reloads: a meta refresh to an address with a #fragment (a session's,
            # /#session=ID) is a move within the page in Chromium, which reloads nothing
            body = (
                "<!doctype html><title>yiem</title>"
                "<script>setTimeout(() => location.reload(), 2000)</script>"
                '<noscript><meta http-equiv="refresh" content="2"></noscript>'
                f"<p>Loading {html.escape(self.model)}…</p>"
            )
            kind = "text/html; charset=utf-8"
        else:
            text = f"the model {self.model} is loading; try again once GET /healthz says ok"
            body, kind = json.dumps({"error": text}), "application/json"
        data = body.encode("utf-8")
        self.send_response(503)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Retry-After", "2")
        for name, value in cors_headers(origin, self.cors):
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = _answer

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: the server logs warnings only."""


class _LoadingServer(http.server.ThreadingHTTPServer):
    """The server of `_LoadingAnswers`: a client gone before its answer was written (it
    closed or reset the connection) is nothing to report."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Print the traceback of a failed request (socketserver's way), unless the failure
        is only the client's connection ending."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def _answering_while_loading(
    sock: socket.socket, model: Model, cors: Sequence[str]
) -> Iterator[None]:
    """Within: `sock` listens and answers every request 503, the model `model` loading
    (as llama-server does; readable by the pages of the `cors` origins), so a client
    started with the server gets that answer instead of "connection refused". Connections
    made as the block ends wait in the socket's backlog for the real server."""
    sock.listen(128)
    server = _LoadingServer(sock.getsockname()[:2], _LoadingAnswers, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.daemon_threads = True
    _LoadingAnswers.model = f"{model.provider}/{model.id}"
    _LoadingAnswers.cors = tuple(cors)
    thread = threading.Thread(
        target=server.serve_forever, args=(0.1,), name="yiem-serve-loading", daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        server.shutdown()


def _load_embedded(model: Model, sock: socket.socket, cors: Sequence[str]) -> None:
    """Load the embedded model `model`, answering 503 on `sock` meanwhile (with the CORS
    headers of the `cors` origins)."""
    from yiemagent.ai.providers.local.runtime import load_runtime, loaded_runtime
    from yiemagent.ai.providers.local.weights import ensure_model_file, local_spec
    from yiemagent.cli.options import interruptible

    spec = local_spec(model.id)
    if loaded_runtime(spec) is None:
        print(
            f"yiem serve: loading {spec.name}… (the server answers 503 until it is loaded)",
            file=sys.stderr,
            flush=True,
        )
        with _answering_while_loading(sock, model, cors):
            ensure_model_file(spec)
            # llama.cpp's load does not return to Python on Ctrl-C: on this thread it hung
            interruptible(lambda: load_runtime(spec))


def _refuse_without_sdk(model: Model | None) -> None:
    """Refuse to serve when the SDK of `model` (the one every run starts with) is not
    installed: no key and no agent file's function can give it, so every run would fail.

    Raises:
        CliError: the SDK is missing (one line with the install command).
    """
    if model is not None and (extra := missing_sdk(model)) is not None:
        raise CliError(
            f"the {extra} SDK is not installed: {install_hint(extra)} "
            f"({model.provider}/{model.id} needs it for every run)"
        )


def _warn_without_key(model: Model | None) -> None:
    """One warning line when `model`'s API needs a key the environment lacks. Not a
    refusal (an agent file's function may give its agent a key of its own), but without it
    every run failed with nothing said at the start."""
    if model is None or (variable := missing_api_key(model)) is None:
        return
    name = f"{model.provider}/{model.id}"
    print(
        f"yiem serve: warning: no API key for {name}: set {variable} in the environment, "
        "or its runs fail",
        file=sys.stderr,
        flush=True,
    )


def _agent_file(
    spec: str, model: Model, tools: Path | None, system: str
) -> tuple[AgentFile, Model | None]:
    """`--agent FILE[:NAME]`, built once now: a bad file fails before serving, and its MCP
    servers start now, once for the server's lifetime (the caller closes them). Returns
    the file and its entry agent's model.

    Raises:
        CliError: `--tools` or `--system` given too (the file sets them).
        ConfigError: a bad agent file (one line naming the table and key).
    """
    from yiemagent.teams import AgentFile

    refuse_agent_flags(spec, {"--tools": tools, "--system": system != DEFAULT_SYSTEM})
    path, name = split_agent_option(spec)
    team = AgentFile(path, name, model=model)
    try:
        agent = team.build()
        entry_model = agent.state.model
        asyncio.run(agent.close())  # the MCP servers are the file's, not this agent's
    except BaseException:
        asyncio.run(team.close())
        raise
    return team, entry_model


@contextlib.contextmanager
def _hang_up_as_sigterm(server: Server) -> Iterator[None]:
    """Within: SIGHUP (the terminal or ssh connection the server runs in went away) shuts
    `server` down as SIGTERM does, its runs aborted with every tool call
    answered. Uvicorn takes only SIGINT and SIGTERM, and SIGHUP's default action ends the
    process where it stands. A SIGHUP that is ignored (`nohup`) stays ignored."""
    hang_up = getattr(signal, "SIGHUP", None)
    if (
        hang_up is None
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(hang_up) is not signal.SIG_DFL
    ):
        yield
        return
    previous = signal.signal(
        hang_up, lambda signum, frame: server.handle_exit(signal.SIGTERM, frame)
    )
    try:
        yield
    finally:
        signal.signal(hang_up, previous)


def _close(team: AgentFile | None, close_mcp: Callable[[], None] | None = None) -> None:
    """Stop the MCP servers (the agent file's, or `--mcp` and `--mcp-url` ones), started
    once for the server's lifetime."""
    if team is not None:
        with contextlib.suppress(Exception):
            asyncio.run(team.close())
    if close_mcp is not None:
        with contextlib.suppress(Exception):
            close_mcp()


def serve(
    agent: AgentOption = None,
    tools: ToolsOption = None,
    model: Annotated[
        str, typer.Option("--model", help="Model as provider/id (see `yiem models`).")
    ] = DEFAULT_MODEL,
    base_url: BaseUrlOption = None,
    tool_calls: ToolCallsOption = None,
    vision: VisionOption = None,
    reasoning: ReasoningOption = None,
    system: Annotated[str, typer.Option("--system", help="System prompt.")] = DEFAULT_SYSTEM,
    max_turns: MaxTurnsOption = 8,
    max_tokens: MaxTokensOption = None,
    temperature: TemperatureOption = None,
    mcp: McpOption = None,
    mcp_url: McpUrlOption = None,
    mcp_timeout: McpTimeoutOption = None,
    mcp_max_message_bytes: McpMaxMessageBytesOption = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (127.0.0.1: this machine only).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port.")] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            "--token", envvar="YIEM_TOKEN", help="Bearer token every route but /healthz needs."
        ),
    ] = None,
    sessions: Annotated[
        str | None,
        typer.Option(
            "--sessions",
            help="SQLite file (in a folder that exists) or postgresql:// URL (default: the "
            "user data one).",
        ),
    ] = None,
    cors: Annotated[
        list[str] | None,
        typer.Option("--cors", help="An origin whose pages may call the API (repeatable)."),
    ] = None,
) -> None:
    """Serve agents: the chat page at /, the HTTP API, OpenAI Chat Completions, AG-UI and
    the Vercel AI SDK stream; sessions are stored and shared."""
    try:
        import uvicorn

        from yiemagent.serve import check_origin, create_app, is_loopback
    except ImportError as exc:  # the demo's environment has the `local` extra only
        raise CliError(
            f"yiem serve needs the web server libraries ({exc.name} is missing): "
            f"{install_hint('serve')}"
        ) from None
    from yiemagent import Agent
    from yiemagent.cli.chat.setup import compactor_for
    from yiemagent.cli.mcp_options import refuse_lone_bounds

    if not is_loopback(host) and not token:
        raise CliError(
            f"--host {host} lets other machines connect: give a --token (or YIEM_TOKEN), "
            "or bind 127.0.0.1"
        )
    for origin in cors or ():
        try:
            check_origin(origin)  # now, not after the model has loaded
        except ConfigError as exc:
            raise CliError(f"--cors {exc}") from None
    refuse_lone_bounds(mcp, mcp_url, timeout_s=mcp_timeout, max_message_bytes=mcp_max_message_bytes)
    if agent is not None:
        refuse_factory(agent, "serve")
        refuse_sampling_with_agent(agent, temperature, max_tokens)
    level = reasoning_level(reasoning)
    resolved = resolve_model(model, base_url, tool_calls, vision, level is not None)
    if agent is not None:  # the file names its MCP servers (`mcp = [...]`)
        refuse_agent_flags(agent, {"--mcp": mcp, "--mcp-url": mcp_url})
    team, entry_model = _agent_file(agent, resolved, tools, system) if agent else (None, resolved)
    agent_tools = [] if team else _tools(tools, resolved)
    close_mcp: Callable[[], None] | None = None
    try:
        _refuse_without_sdk(entry_model)
        sock = _listen(host, port)
        if mcp or mcp_url:  # connected once, for the server's lifetime
            from yiemagent.cli.mcp_options import add_mcp_tools

            agent_tools, close_mcp = add_mcp_tools(
                agent_tools, mcp or [], mcp_url or [], mcp_timeout, mcp_max_message_bytes
            )
        store = open_store(sessions)
    except BaseException:
        _close(team, close_mcp)
        raise

    def load_entry(session_id: str) -> Agent[Any]:
        assert team is not None
        entry = team.build(session_store=store, session_id=session_id)
        entry.max_turns = entry.max_turns or max_turns
        if level is not None:  # the entry agent's level over the file's, as in `yiem run`
            entry.state.reasoning = level
        return entry

    # One compactor a session, as `yiem chat` has (it remembers its summaries): without
    # it a session past the model's window failed every later run.
    compactors: dict[str, Compactor] = {}

    async def make_agent(session_id: str) -> Agent[Any]:
        if team is not None:  # it reads tool folders (and restarts a server that failed)
            return await asyncio.to_thread(load_entry, session_id)
        compactor = compactors.get(session_id)
        if compactor is None:
            compactor = compactors[session_id] = compactor_for(resolved)
        build = functools.partial(
            Agent,
            system_prompt=system,
            model=resolved,
            tools=agent_tools,
            max_turns=max_turns,
            session_store=store,
            session_id=session_id,
            transform_context=compactor,
            reasoning=level,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        return await asyncio.to_thread(build)  # it loads the session: off the event loop

    # SIGTERM ends the command past the clean-up below, and says so: while the model loads
    # (at once, 143), and after Uvicorn's shutdown, which aborts the runs and then
    # raises the signal again.
    try:
        with sigterm_raises():
            if entry_model is not None and entry_model.api == "local":
                _load_embedded(entry_model, sock, cors or ())
            app = create_app(make_agent, session_store=store, token=token, cors=cors or None)
            _warn_without_key(entry_model)  # once nothing can fail to start: no error follows it
            if ignored := reasoning_ignored(entry_model, level):
                print(f"yiem serve: warning: {ignored}", file=sys.stderr, flush=True)
            shown = f"[{host}]" if ":" in host else host
            print(
                f"yiem serve: http://{shown}:{sock.getsockname()[1]}/ "
                f"({f'agent file {agent}' if team else counted(len(agent_tools), 'tool')}, "
                f"model {resolved.provider}/{resolved.id}"
                f"{', token required' if token else ''})",
                file=sys.stderr,
                flush=True,
            )
            config = uvicorn.Config(
                app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5
            )
            server = uvicorn.Server(config)
            with _hang_up_as_sigterm(server):
                server.run(sockets=[sock])
    finally:
        sock.close()
        with contextlib.suppress(Exception):
            store.close()
        _close(team, close_mcp)
