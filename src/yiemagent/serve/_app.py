"""`create_app`: the ASGI application of `yiem serve`, on Starlette."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response

from yiemagent.errors import AgentBusyError, ConfigError, SessionBusyError, SessionCorruptError
from yiemagent.serve._api import OPENAI_PATHS, Api, BadRequest, SessionPaths, error, route_path
from yiemagent.serve._guard import (
    CORS_EXPOSED_HEADERS,
    CORS_MAX_AGE_S,
    CORS_METHODS,
    Failures,
    Guard,
    check_origin,
)
from yiemagent.serve._runs import Busy, MakeAgent, RunHub, busy_text
from yiemagent.types.tools import is_whole_number

if TYPE_CHECKING:
    from yiemagent.sessions import SessionStore

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app"]

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
"""The largest request body accepted unless `create_app(max_body_bytes=...)` says otherwise:
room for a few images in a prompt."""


async def _busy(request: Request, exc: Exception) -> Response:
    text = busy_text(exc) if isinstance(exc, SessionBusyError) else str(exc)
    return error(409, text, route_path(request.scope))


async def _bad(request: Request, exc: Exception) -> Response:
    return error(400, str(exc), route_path(request.scope))


async def _missing(request: Request, exc: Exception) -> Response:
    return error(404, str(exc.args[0]) if exc.args else "not found", route_path(request.scope))


async def _unrouted(request: Request, exc: Exception) -> Response:
    """No route for the path (404), or not for the method (405, with `Allow`): answered as
    every other error is, JSON (OpenAI's shape on its routes), not Starlette's bare text,
    which a client reading `error` (an OpenAI SDK: its `message`) cannot show."""
    assert isinstance(exc, HTTPException)
    path = route_path(request.scope)
    # another OpenAI API under /v1 (completions, embeddings): asked by an OpenAI client
    openai_like = path.startswith("/v1/") and not path.startswith(("/v1/sessions", "/v1/runs"))
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # Starlette builds `Allow` from a set: its order follows the process's hash seed
        allowed = ", ".join(sorted(filter(None, headers.get("Allow", "").split(", "))))
        if allowed:
            headers["Allow"] = allowed
        text = f"{path} does not take {request.method}; send {allowed or 'another method'}"
    elif exc.status_code == 404 and openai_like:
        text = f"no route {path} on this server: OpenAI clients use /v1/chat/completions"
    elif exc.status_code == 404:
        text = f"no route {path} on this server"
    else:
        text = str(exc.detail)
    answer = error(exc.status_code, text, OPENAI_PATHS[0] if openai_like else path)
    answer.headers.update(headers)
    return answer


def create_app(
    make_agent: MakeAgent,
    *,
    session_store: SessionStore,
    token: str | None = None,
    cors: str | Sequence[str] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    keep_runs: int = 256,
    allowed_hosts: Sequence[str] = (),
) -> Starlette:
    """The ASGI app that serves agents over HTTP (see `docs/serve.md`).

    Args:
        make_agent: `make_agent(session_id) -> Agent` (plain or async): the agent of a
            session, built on `session_store` (`Agent(session_store=session_store,
            session_id=session_id, ...)`). Called for each run, and for each approval read
            or decision between runs: a plain one on a worker thread (building the agent
            loads its session, which must not stall the server's event loop), an async one
            on the loop. The server closes the agent when it is done, so the
            session's writer lease is free between runs. An agent of another session, on
            another store or on none is refused (a 500 naming the mistake): its runs would
            be lost or land in another session.
        session_store: where sessions are listed and read from (any `SessionStore`).
        token: when set, every route but `GET /healthz` and the page needs
            `Authorization: Bearer <token>`. Without one, only requests addressed to a
            loopback name or address (or to `allowed_hosts`) are answered (else 421), and
            a browser's request from a page of another origin than the server's own or a
            `cors` one is refused (403): either could come from any site the user visits.
        cors: an origin (or several) whose pages may call the API, each
            `scheme://host[:port]` or `*`; none by default.
        allowed_hosts: names besides loopback ones that requests may be addressed to
            when there is no token (the server behind a proxy that keeps the `Host`).
        max_body_bytes: larger request bodies get 413.
        keep_runs: finished runs whose event streams stay readable (a whole number, 0 or
            more; the oldest go first).

    Returns:
        A Starlette application; serve it with Uvicorn. Its lifespan aborts the runs still
        going when the server stops.

    Raises:
        ConfigError: `session_store` is not a store, `max_body_bytes` is not positive,
            `keep_runs` is not a whole number of at least 0, or a `cors` value is not an
            origin (`check_origin`).
    """
    if not callable(getattr(session_store, "list_sessions", None)):
        raise ConfigError(
            "session_store must be a SessionStore (for example "
            "yiemagent.sessions.SqliteSessionStore(path))"
        )
    if max_body_bytes <= 0:
        raise ConfigError(f"max_body_bytes must be positive, not {max_body_bytes}")
    if not is_whole_number(keep_runs, 0):
        raise ConfigError(f"keep_runs must be a whole number, 0 or more, not {keep_runs!r}")
    origins = [cors] if isinstance(cors, str) else list(cors or ())
    for origin in origins:
        try:
            check_origin(origin)
        except ConfigError as exc:
            raise ConfigError(f"cors: {exc}") from None
    from yiemagent.serve._agui import agui_routes
    from yiemagent.serve._openai import openai_routes
    from yiemagent.serve._page import page_routes
    from yiemagent.serve._vercel import vercel_routes

    hub = RunHub(make_agent, keep_runs=keep_runs, session_store=session_store)
    api = Api(hub, session_store)
    routes = [
        *api.routes(),
        *openai_routes(hub),
        *agui_routes(hub),
        *vercel_routes(hub),
        *page_routes(),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await hub.close()

    middleware = []
    if origins:
        # A listed origin's page is trusted as a client: it may send any header (X-Session-Id,
        # an SDK's own) and read the session and run each answer names.
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=origins,
                allow_methods=CORS_METHODS,
                allow_headers=["*"],
                expose_headers=CORS_EXPOSED_HEADERS,
                max_age=CORS_MAX_AGE_S,
            )
        )
    middleware.append(
        Middleware(
            Guard,
            token=token,
            max_body_bytes=max_body_bytes,
            cors=origins,
            allowed_hosts=allowed_hosts,
        )
    )
    middleware.append(Middleware(Failures))
    middleware.append(Middleware(SessionPaths))  # innermost: the path routed on
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={
            Busy: _busy,
            SessionBusyError: _busy,
            AgentBusyError: _busy,
            SessionCorruptError: _busy,
            BadRequest: _bad,
            LookupError: _missing,
            HTTPException: _unrouted,
        },
        lifespan=lifespan,
    )
    app.state.hub = hub
    return app
