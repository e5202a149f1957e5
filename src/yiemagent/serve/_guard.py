"""What stands in front of every route: the bearer token, the request body cap, the
origins CORS lets in (`check_origin`) and the headers it answers them with (`cors_headers`,
for a server that is not the app: the one answering while the embedded model loads), and
`Failures`, which answers a route's unexpected
error as JSON.

`Guard` is an ASGI middleware. With a token, every request but `GET /healthz` and the page
itself (`GET /`, which holds no data and asks for the token) needs `Authorization: Bearer
<token>`, else 401. Without a token the server trusts whoever reaches it, which is this
machine (it binds a loopback address) but also any web page the user opens: so a request
must be addressed to this machine (its `Host` a loopback name or address, or one of
`allowed_hosts`), else 421 — a page of another site whose name was rebound to 127.0.0.1
(DNS rebinding) sends its own name — and a request a browser sends from a page of another
origin (its `Origin` neither the server's own nor a CORS origin) is refused with 403, since
a form or a `no-cors` fetch would start runs without asking CORS. A request body larger
than the cap is refused with 413 before any route sees it: the body is read here, up to the
cap, and handed on whole.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from yiemagent.errors import ConfigError, exception_summary, exception_text
from yiemagent.serve._api import error_body, route_path

__all__ = [
    "CORS_EXPOSED_HEADERS",
    "CORS_MAX_AGE_S",
    "CORS_METHODS",
    "OPEN_PATHS",
    "Failures",
    "Guard",
    "check_origin",
    "cors_headers",
    "is_loopback",
]

logger = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/healthz", "/", "/favicon.ico"})
"""Served without the token: the health check and the page (which asks for the token)."""


def is_loopback(host: str) -> bool:
    """Whether binding `host` serves only this machine (127.0.0.0/8, ::1, "localhost")."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_ORIGIN = re.compile(r"[a-z][a-z0-9+.-]*://(\[[0-9a-fA-F:.]+\]|[^\s/?#@:\[\]]+)(:(\d{1,5}))?")
"""`scheme://host[:port]`: a lowercase scheme, a host name or a bracketed IPv6 address."""


def check_origin(origin: str) -> str:
    """Check a CORS origin before the server takes it: the browser sends `Origin` as
    `scheme://host[:port]` and CORS compares it as text, so anything else (a bare host, a
    trailing `/` or path) would never match and the pages it meant would be refused silently.

    Args:
        origin: `scheme://host[:port]`, or `*` (any page).

    Returns:
        `origin`, unchanged.

    Raises:
        ConfigError: not `*` and not `scheme://host[:port]`; the text says what to give.
    """
    found = _ORIGIN.fullmatch(origin)
    if origin != "*" and (found is None or int(found.group(3) or 0) > 65535):
        raise ConfigError(
            f"{origin!r} is not an origin: give scheme://host[:port] with no path "
            "(e.g. http://localhost:3000), or *"
        )
    return origin


CORS_METHODS = ("GET", "POST", "DELETE")
"""The methods a CORS origin's page may send."""

CORS_EXPOSED_HEADERS = ("X-Session-Id", "X-Run-Id")
"""The answer headers a CORS origin's page may read: the session and the run it names."""

CORS_MAX_AGE_S = 600
"""How long a browser may keep a preflight's answer (seconds), as Starlette's default."""


def cors_headers(
    origin: str | None,
    cors: Sequence[str],
    *,
    preflight: bool = False,
    requested_headers: str | None = None,
) -> list[tuple[str, str]]:
    """The CORS headers the app (Starlette's `CORSMiddleware`, configured with the names
    above) answers a request with, for a server that answers in its stead.

    Args:
        origin: the request's `Origin` header, or None.
        cors: the origins whose pages may call the API (`*`: any).
        preflight: the request is a preflight (`OPTIONS` with
            `Access-Control-Request-Method`).
        requested_headers: a preflight's `Access-Control-Request-Headers`: every header is
            allowed, so they are allowed back.

    Returns:
        `(name, value)` pairs; none when `origin` is None or not one of `cors`.
    """
    if origin is None or not ("*" in cors or origin in cors):
        return []
    headers = [("Access-Control-Allow-Origin", "*" if "*" in cors else origin)]
    if "*" not in cors:
        headers.append(("Vary", "Origin"))
    if not preflight:
        return [*headers, ("Access-Control-Expose-Headers", ", ".join(CORS_EXPOSED_HEADERS))]
    headers += [
        ("Access-Control-Allow-Methods", ", ".join(CORS_METHODS)),
        ("Access-Control-Max-Age", str(CORS_MAX_AGE_S)),
    ]
    if requested_headers:
        headers.append(("Access-Control-Allow-Headers", requested_headers))
    return headers


async def _reply(
    send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]], path: str = ""
) -> None:
    body = json.dumps(error_body(status, text, path)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Guard:
    """The token check, the host and origin checks without a token, and the body cap (see
    the module docstring).

    Args:
        app: the application behind the guard.
        token: the bearer token, or None for none (loopback only, checked by the CLI).
        max_body_bytes: the largest request body accepted.
        cors: the origins CORS lets in (`*`: any); a browser's request from one of them is
            not refused for its origin.
        allowed_hosts: host names a request may be addressed to besides loopback ones,
            when there is no token (a name the server is reached by through a proxy).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        max_body_bytes: int,
        cors: Sequence[str] = (),
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.cors = frozenset(cors)
        self.allowed_hosts = frozenset(host.lower() for host in allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        if self.token is None and path != "/healthz":
            refusal = self._stranger(scope)
            if refusal is not None:
                await _reply(send, *refusal, [], path)
                return
        if self.token is not None and not self._allowed(scope):
            await _reply(
                send,
                401,
                "missing or wrong token: send Authorization: Bearer <token>",
                [(b"www-authenticate", b"Bearer")],
                path,
            )
            return
        if scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        body = await self._read_body(scope, receive)
        if body is None:
            await _reply(send, 413, f"request body over {self.max_body_bytes} bytes", [], path)
            return
        await self.app(scope, _replay(body, receive), send)

    def _stranger(self, scope: Scope) -> tuple[int, str] | None:
        """(status, text) refusing a request that may come from another site's page, or
        None (see the module docstring)."""
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1").lower()
        name = _netloc_part(host, "hostname")
        if not (name and (is_loopback(name) or name in self.allowed_hosts)):
            return 421, (
                f"this server has no token and answers only requests addressed to this "
                f"machine, not to {host!r}: give it a --token (or allowed_hosts) to serve "
                "other names"
            )
        origin = headers.get(b"origin")
        if origin is None or "*" in self.cors:
            return None
        seen = origin.decode("latin-1")
        if seen in self.cors or _netloc_part(seen.lower(), "netloc", whole=True) == host:
            return None
        return 403, (
            f"a page of {seen!r} may not call this server: it has no token; give it a "
            "--token, or --cors for that origin"
        )

    def _allowed(self, scope: Scope) -> bool:
        if route_path(scope) in OPEN_PATHS and scope["method"] in ("GET", "HEAD"):
            return True
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                assert self.token is not None
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    given.strip(), self.token
                )
        return False

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes | None:
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


class Failures:
    """Answers a route's unexpected exception with 500 `{"error": text}` (the traceback
    goes to the log; for a `ConfigError`, such as an agent file's broken tool file, its one
    line, which says what to fix) while no response has started. Starlette's own answer is
    plain text, and the exception it raises on makes Uvicorn drop the connection, so a
    keep-alive client's next request would fail too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            if started:
                raise
            said = exception_text(exc)
            if isinstance(exc, ConfigError):  # the configuration's problem: its text says
                logger.error("%s %s failed: %s", scope["method"], scope["path"], said)
            else:  # the server's own: where it broke
                logger.exception("%s %s failed", scope["method"], scope["path"])
            text = f"the server failed: {exception_summary(exc)}"
            await _reply(send, 500, text, [], route_path(scope))


def _netloc_part(text: str, part: str, *, whole: bool = False) -> str:
    """`part` ("hostname" or "netloc") of a `Host` value (`whole`: of a whole URL such as
    an `Origin`), or "" where it does not parse."""
    try:
        return str(getattr(urlsplit(text if whole else f"//{text}"), part) or "")
    except ValueError:  # "[not-ipv6"
        return ""


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            message: dict[str, Any] = {"type": "http.request", "body": body, "more_body": False}
            return message
        return await receive()  # then the disconnect, when it comes

    return replay
