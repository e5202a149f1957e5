"""The two kinds of MCP server: `MCPServerStdio` (a subprocess) and `MCPServerHTTP`
(streamable HTTP) (DESIGN §12). Their connection's lifetime and failure handling are
`_connection.MCPServer`'s; these only say how to open the transport."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from yiemagent.errors import ConfigError
from yiemagent.mcp._connection import DEFAULT_CONNECT_TIMEOUT_S, MCPServer
from yiemagent.types.tools import is_seconds, is_whole_number

if TYPE_CHECKING:
    import httpx2

__all__ = ["MCPServerHTTP", "MCPServerStdio"]


DEFAULT_TIMEOUT_S = 30.0
"""The longest a server may stay silent about a call unless told otherwise, seconds."""

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest message a server may send unless told otherwise, bytes."""


def _own_program(command: str) -> str:
    """The program to start for `command`: this process's Python for `python`/`python3`,
    the `yiem` beside it for `yiem` (when installed there; a venv need not be on PATH),
    else `command` as given."""
    if command in ("python", "python3"):
        return sys.executable
    if command == "yiem":
        return shutil.which("yiem", path=str(Path(sys.executable).parent)) or command
    return command


class MCPServerStdio(MCPServer):
    """An MCP server started as a subprocess, spoken to over its stdin/stdout.

    The process gets the SDK's safe default environment (HOME, PATH, ...) plus `env`; its
    stderr goes to `stderr` (default: ours). Closing stops it (stdin closed, then SIGTERM,
    then SIGKILL, each wait bounded by the SDK).

    Args:
        command: the program, or a whole command line when `args` is empty and it holds a
            space (split with `shlex`). `python` or `python3` is the Python running this
            process (`sys.executable`): it has the MCP SDK, which the `python` on PATH
            (the system's, another venv's) often lacks; give a path to choose another.
            `yiem` is the `yiem` installed with that Python, when there is one, so
            `yiem mcp serve --tools DIR` starts without the venv on PATH.
        args: its arguments.
        env: extra environment variables.
        cwd: its working folder.
        name: defaults to the command line as given (the program and its arguments, folders
            kept), so two servers of one file name in two folders read apart; the CLI's
            `--mcp`, `yiem mcp list` and agent files name their servers so. A secret
            option's value (`--api-key X`, `--token=X`) is `***` in it (`command_label`).
        connect_timeout_s: seconds for `initialize` and the first `tools/list`.
        timeout_s: the longest the server may stay silent about a call, seconds: from
            sending it, or from its last progress notification, to its result. A call
            that hears nothing for that long is cancelled (`notifications/cancelled`) and
            fails, saying the server went silent; the process keeps serving the others.
            A slow tool that sends no progress needs a larger value.
        stderr: where the server's stderr goes (a file with a descriptor).
        max_message_bytes: the largest message the server may send (a tool's result, as
            one line of its stdout), bytes. A longer line fails the call it answers (every
            call in flight when its id cannot be read in its first 4 KiB), and its rest is
            skipped without being held, so a runaway server cannot exhaust memory; the
            session goes on. Not on Windows, where the SDK's transport has no bound.

    Raises:
        ConfigError: an empty command, a command line that does not split (an unclosed
            quote), a `timeout_s` or `connect_timeout_s` that is no number of seconds > 0,
            or a `max_message_bytes` that is no whole number >= 1.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        *,
        name: str | None = None,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        stderr: TextIO | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if not args and " " in command.strip():
            try:
                command, *rest = shlex.split(command)
            except ValueError as exc:  # an unclosed quote
                shown = masked_line(command)
                raise ConfigError(f"cannot split the command {shown!r}: {exc}") from None
            args = rest
        if not command.strip():
            raise ConfigError("MCPServerStdio needs a command, e.g. 'python server.py'")
        _check_bounds(timeout_s, max_message_bytes)
        default = command_label([command, *args])
        self.command = _own_program(command)
        self.args = list(args)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stderr = stderr
        self.timeout_s = timeout_s
        self.max_message_bytes = max_message_bytes
        self._tee: _StderrTee | None = None
        super().__init__(name=name or default, connect_timeout_s=connect_timeout_s)

    @property
    def _end_reason(self) -> str:
        return "the server process exited or closed its output"

    @property
    def _silence_s(self) -> float:
        return self.timeout_s

    def _last_said(self) -> str | None:
        tee = self._tee
        return tee.last_line(wait_s=1.0) if tee is not None else None

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        from yiemagent.mcp._stdio import stdio_transport

        self._tee = tee = _StderrTee(_errlog(self.stderr))
        try:
            # "replace": a byte that is not UTF-8 on the server's stdout (a binary log
            # line) is U+FFFD, and the line one that is not JSON-RPC (logged); read
            # strictly, it ended the SDK's reader and every call waited for ever
            async with stdio_transport(
                self.command,
                self.args,
                self.env,
                self.cwd,
                errlog=tee.pipe,
                errors="replace",
                max_line_bytes=self.max_message_bytes,
            ) as streams:
                yield streams
        finally:
            tee.close()


class _StderrTee:
    """A pipe for a server's stderr that a thread copies on to `to`, keeping the last
    line, so a server that dies at start-up can be quoted ("missing config") where the SDK
    only saw its output close. The thread ends when every write end is closed: ours on
    `close`, the process's when it exits."""

    def __init__(self, to: TextIO) -> None:
        import threading

        read_fd, write_fd = os.pipe()
        self.pipe = os.fdopen(write_fd, "w")
        self._to = to.fileno()
        self._last = b""
        self._thread = threading.Thread(
            target=self._copy, args=(read_fd,), name="mcp-stderr", daemon=True
        )
        self._thread.start()

    def _copy(self, read_fd: int) -> None:
        tail = b""
        with os.fdopen(read_fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                with contextlib.suppress(OSError):
                    os.write(self._to, chunk)
                tail = (tail + chunk)[-4096:]
                lines = [line for line in tail.splitlines() if line.strip()]
                if lines:
                    self._last = lines[-1]

    def last_line(self, *, wait_s: float) -> str | None:
        """The last non-blank line written so far, after waiting up to `wait_s` (s) for
        the server's stderr to end."""
        self._thread.join(wait_s)
        text = " ".join(self._last.decode("utf-8", "replace").split())
        return text[:300] or None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.pipe.close()


_SECRET_OPTION = re.compile(
    r"^--?(?:[\w.]+[-_.])*(?:api)?(?:key|token|secret|password|passwd)(?:[-_.][\w.]+)*$",
    re.IGNORECASE,
)
"""An option whose name says it holds a secret: `--api-key`, `--token`, `-client_secret`."""

_SECRET_IN_LINE = re.compile(
    r"(?<!\S)(--?(?:[\w.]+[-_.])*(?:api)?(?:key|token|secret|password|passwd)(?:[-_.][\w.]+)*)"
    r"(=|\s+)(?!-)(\S+)",
    re.IGNORECASE,
)

_URL_PASSWORD = re.compile(r"(://[^\s/?#@:]+:)[^\s/?#@]+@")
"""The password of a URL's `user:password@`."""


def command_label(words: Sequence[str]) -> str:
    """A command line as messages show it: shell-quoted, folders kept, and the value of an
    option whose name says key, token, secret or password as `***` (`--api-key ***`,
    `--token=***`) and a URL's password (`https://user:***@host`), so a server's name does
    not print its credentials. The command itself runs with the real values."""
    shown: list[str] = []
    hide_next = False
    for word in words:
        option, eq, value = word.partition("=")
        if hide_next and not word.startswith("-"):
            shown.append("***")
        elif eq and value and _SECRET_OPTION.match(option):
            shown.append(f"{shlex.quote(option)}=***")
        else:
            shown.append(_URL_PASSWORD.sub(r"\1***@", shlex.quote(word)))
        hide_next = not eq and bool(_SECRET_OPTION.match(word))
    return " ".join(shown)


def masked_line(text: str) -> str:
    """`text`, a command line that may not split (an unclosed quote), with the word after
    a secret option (`--api-key X`, `--token=X`) and a URL's password as `***`, as
    `command_label` shows it."""
    return _URL_PASSWORD.sub(r"\1***@", _SECRET_IN_LINE.sub(lambda m: f"{m[1]}{m[2]}***", text))


def _errlog(wanted: TextIO | None) -> TextIO:
    """Where the server's stderr goes: a file with a descriptor (the process inherits it).
    A captured `sys.stderr` (pytest, an IDE) has none; the real stderr is used instead."""
    for candidate in (wanted, sys.stderr, sys.__stderr__):
        if candidate is None:
            continue
        try:
            candidate.fileno()
        except (AttributeError, OSError, ValueError):
            continue
        return candidate
    return open(os.devnull, "w")  # lives as long as the process


def _check_bounds(timeout_s: object, max_message_bytes: object) -> None:
    """Refuse a `timeout_s` that is no number of seconds above 0, or a `max_message_bytes`
    that is no whole number of at least 1, naming the option (a text such as "30", as a
    settings file may give it, is no number: compared, it was a bare `TypeError`).

    Raises:
        ConfigError: either is out of bounds or of another type.
    """
    if not is_seconds(timeout_s):
        raise ConfigError(f"timeout_s must be > 0 seconds, not {timeout_s!r}")
    if not isinstance(max_message_bytes, int) or isinstance(max_message_bytes, bool):
        raise ConfigError(
            f"max_message_bytes must be a whole number >= 1, not {max_message_bytes!r}"
        )
    if not is_whole_number(max_message_bytes, 1):
        raise ConfigError(f"max_message_bytes must be >= 1, not {max_message_bytes!r}")


class MCPServerHTTP(MCPServer):
    """An MCP server reached over streamable HTTP at `url`.

    Args:
        url: the endpoint, e.g. `http://127.0.0.1:8000/mcp`.
        headers: sent with every request (e.g. an `Authorization` header).
        name: defaults to the URL's host and port (without a user or password).
        connect_timeout_s: seconds for `initialize` and the first `tools/list`.
        timeout_s: the longest the server may stay silent, seconds: connecting, sending a
            request, and waiting for the next bytes of a reply (a progress notification
            counts). A call whose server sends nothing for that long fails, saying the
            server went silent. A slow tool that sends no progress needs a larger value.
            The stream on which an idle server may send notifications has no bound.
        max_message_bytes: the largest message the server may send (a tool's result, as
            one server-sent event), bytes; a larger one ends the connection. The MCP SDK's
            own bound, 1 MiB, failed every call whose result was larger (a long page, a
            file); `add_server(max_result_chars=...)` bounds what the model then gets.

    Raises:
        ConfigError: a URL that is not http(s), a `timeout_s` or `connect_timeout_s` that is
            no number of seconds > 0, or a `max_message_bytes` that is no whole number >= 1.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"MCP server URL must be http(s)://host[:port]/path, not {url!r}")
        _check_bounds(timeout_s, max_message_bytes)
        self.url = url
        self.headers = dict(headers) if headers is not None else None
        self.timeout_s = timeout_s
        self.max_message_bytes = max_message_bytes
        # not `user:password@`: the name is in every message and log line about the server
        host = parts.netloc.rpartition("@")[2]
        super().__init__(name=name or host, connect_timeout_s=connect_timeout_s)

    @property
    def _end_reason(self) -> str:
        return "the HTTP server went away"

    @property
    def _silence_s(self) -> float:
        return self.timeout_s

    @property
    def _silence_in_transport(self) -> bool:
        return True

    def _heard_silence(self) -> None:
        self._silences += 1

    def _heard_refusal(self, refusal: str | None, session_gone: bool) -> None:
        self._refusal = refusal
        self._session_gone = session_gone

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        watch = _make_silence_watch(
            httpx2.AsyncHTTPTransport(), self._heard_silence, self._heard_refusal
        )
        async with (
            httpx2.AsyncClient(
                headers=self.headers, timeout=httpx2.Timeout(self.timeout_s), transport=watch
            ) as client,
            streamable_http_client(
                self.url, http_client=client, max_sse_event_size=self.max_message_bytes
            ) as streams,
        ):
            yield streams


def _make_silence_watch(
    inner: httpx2.AsyncBaseTransport,
    on_silence: Callable[[], None],
    on_refusal: Callable[[str | None, bool], None] | None = None,
) -> Any:
    """An httpx transport around `inner` that reports each read timeout to `on_silence`
    (the SDK turns it into a plain "stream ended", so the error could not say why), each
    POST's status to `on_refusal` (a refused one as "HTTP 401 Unauthorized" with the
    server's `WWW-Authenticate` challenge, since the SDK says only that the server answered
    an error; None for one it took) with whether it was a 404 to a request naming a session
    (the server knows no such session), and lifts the read bound of GET requests: the SDK's
    listening stream, idle while the server has nothing to announce."""
    import httpx2

    class SilenceWatch(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            if request.method == "GET":
                request.extensions = {
                    **request.extensions,
                    "timeout": {**request.extensions.get("timeout", {}), "read": None},
                }
            try:
                response = await inner.handle_async_request(request)
            except httpx2.ReadTimeout:
                on_silence()
                raise
            if on_refusal is not None and request.method == "POST":
                on_refusal(
                    _refusal_text(response, request) if response.status_code >= 400 else None,
                    response.status_code == 404 and _SESSION_HEADER in request.headers,
                )
            response.stream = WatchedBody(response.stream)
            return response

        async def aclose(self) -> None:
            await inner.aclose()

    class WatchedBody(httpx2.AsyncByteStream):
        def __init__(self, body: Any) -> None:
            self._body = body

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._body:
                    yield chunk
            except httpx2.ReadTimeout:
                on_silence()
                raise

        async def aclose(self) -> None:
            await self._body.aclose()

    return SilenceWatch()


_SESSION_HEADER = "mcp-session-id"


def _refusal_text(response: httpx2.Response, request: httpx2.Request) -> str:
    """ "HTTP 401 Unauthorized", then the server's `WWW-Authenticate` challenge if any; a 404
    to a request naming a session says the server does not know it, another 404 names the
    URL asked and, when its path is not /mcp, the /mcp URL of that host (a server's root
    URL, copied from where it says it listens, is the usual slip)."""
    from http import HTTPStatus

    try:
        phrase = HTTPStatus(response.status_code).phrase
    except ValueError:
        phrase = ""
    text = f"HTTP {response.status_code} {phrase}".rstrip()
    if response.status_code == 404 and _SESSION_HEADER in request.headers:
        text += ": the server knows no such session (it restarted or ended it)"
    elif response.status_code == 404:
        url = request.url
        text += f": no MCP endpoint at {url}"
        if url.path.rstrip("/") != "/mcp":
            usual = url.copy_with(path="/mcp", query=None, fragment=None)
            text += f"; streamable-HTTP servers usually answer at /mcp: {usual}"
    challenge = " ".join(response.headers.get("www-authenticate", "").split())[:300]
    return f"{text}: {challenge}" if challenge else text
