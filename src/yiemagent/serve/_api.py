"""The server's own HTTP API: runs and their event streams, steering, sessions, approvals.

Every body and answer is JSON; an error is `{"error": text}` with its status (400 bad input,
404 unknown run or session, 409 the session is busy, calls await approval, or its stored
transcript is interleaved and no agent opens it: `DELETE` clears it). The event
stream of a run is server-sent events, one per `AgentEvent` (`wire_json`), numbered from 1
in `id:`; a client that reconnects with `Last-Event-ID: n` (or `?after=n`) gets the events
after n, and the stream ends after `agent_end`.
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from pydantic_core import from_json
from sse_starlette import EventSourceResponse
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from yiemagent.errors import ConfigError, SessionCorruptError
from yiemagent.serve._runs import Busy, Run, RunHub, run_ends
from yiemagent.sessions import check_session_id
from yiemagent.types import DocumentContent, ImageContent, message_from_dict, message_to_dict
from yiemagent.types.json_text import refuse_huge_numbers

if TYPE_CHECKING:
    from yiemagent.agent import Agent
    from yiemagent.sessions import SessionStore

__all__ = [
    "Api",
    "BadRequest",
    "SessionPaths",
    "checked_document",
    "checked_image",
    "checked_session_id",
    "error",
    "read_json",
    "route_path",
    "session_header",
    "sse_ping_s",
]

sse_ping_s = 15.0
"""Seconds between keep-alive comments on an idle event stream."""


class _SessionIdConvertor(Convertor[str]):
    """A session id in a route: any text, "/" and newlines included (`check_session_id`
    refuses what is not one, with a 400 that says why). Under `SessionPaths` a "/" of the
    id sent as %2F stays %2F (and "%" stays %25) until here, where it is decoded."""

    regex = "(?s:.+)"

    def convert(self, value: str) -> str:
        return _ESCAPED.sub(lambda m: "/" if m[0] == "%2F" else "%", value)

    def to_string(self, value: str) -> str:
        return value.replace("%", "%25").replace("/", "%2F")


class _SessionOnlyConvertor(_SessionIdConvertor):
    """A session id that is the whole rest of the path (`/v1/sessions/{sid}`): not one that
    ends in a literal "/" and the name of a route under a session, so `GET
    /v1/sessions/b/runs` is the runs route of "b" with a method it does not take (405),
    not the session "b/runs". Such an id is reached with its "/" escaped as %2F."""

    regex = "(?s:(?!.*/(?:runs|approvals(?:/[^/]+)?|resume|timeline)$).+)"


register_url_convertor("session_id", _SessionIdConvertor())
register_url_convertor("session_only", _SessionOnlyConvertor())

_ESCAPED = re.compile("%2F|%25")
_KEPT = re.compile("(%2[fF]|%25)")
_SESSIONS = "/v1/sessions/"


def route_path(scope: Any) -> str:
    """The path of a request within this app: `scope["path"]` without the `root_path` a
    `Mount` of the application's own app (or a server's `--root-path`) puts before it, as
    Starlette's routing reads it. "/healthz" both at `/healthz` and mounted at
    `/agent/healthz`."""
    path: str = scope.get("path", "")
    root = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
        return path[len(root) :] or "/"
    return path


class SessionPaths:
    """ASGI middleware: under /v1/sessions/, the path routed on keeps a "/" the client
    escaped as %2F (and a "%" as %25), instead of the decoded path where it is a "/" like
    any other. So a session id ending like a route ("plan/timeline", "a/approvals") is one
    id when its slash is escaped, as the page and `quote(sid, safe="")` do: GET of that
    session is not the timeline of "plan". A literal "/" still works where it is not
    ambiguous (the session routes take the rest of the path)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and route_path(scope).startswith(_SESSIONS):
            scope = dict(scope, path=_routed_path(scope["path"], scope.get("raw_path")))
        await self.app(scope, receive, send)


def _routed_path(path: str, raw_path: bytes | None) -> str:
    """`path` with "%" as %25 and, where `raw_path` (the path as sent) had %2F, that "/" as
    %2F; without a `raw_path` that decodes to `path` (a server that gives none, a root
    path), every "/" stays a separator."""
    if raw_path is not None:
        parts = _KEPT.split(raw_path.decode("latin-1"))
        if unquote("".join(parts)) == path:
            return "".join(
                part.upper() if n % 2 else unquote(part).replace("%", "%25")
                for n, part in enumerate(parts)
            )
    return path.replace("%", "%25")


_TITLES_KEPT = 4096
"""Session titles `GET /v1/sessions` remembers."""


class BadRequest(Exception):
    """A request the server cannot take (HTTP 400); the text says what is wrong."""


def error(status: int, text: str, path: str = "") -> JSONResponse:
    """The JSON error answer (`error_body`) to a request for `path`."""
    return JSONResponse(error_body(status, text, path), status_code=status)


OPENAI_PATHS = ("/v1/chat/completions", "/v1/models")
"""The routes OpenAI clients call: their errors take OpenAI's shape."""


def error_body(status: int, text: str, path: str = "") -> dict[str, Any]:
    """`{"error": text}`; on an OpenAI route (`OPENAI_PATHS`), OpenAI's error object
    (`{"error": {"message", "type", "param", "code"}}`), whose `message` the OpenAI SDKs
    put in the exception they raise (given a bare text, they say only "Error code: 400")."""
    if path.rstrip("/") not in OPENAI_PATHS:
        return {"error": text}
    kind = (
        "authentication_error"
        if status == 401
        else "server_error"
        if status >= 500
        else "invalid_request_error"
    )
    return {"error": {"message": text, "type": kind, "param": None, "code": None}}


async def read_json(request: Request) -> dict[str, Any]:
    """The request's JSON object (an empty body reads as `{}`), parsed strictly by
    pydantic-core: every string in it is text that can be stored and sent on (a lone
    surrogate escape such as `"\\ud800"` is refused), `NaN`, `Infinity` and numbers too large
    for a float (`1e400`) are refused, and nesting is capped (200 levels), so a hostile
    body costs no recursion.

    Raises:
        BadRequest: the body is not such a JSON object; the text says where it fails.
    """
    body = await request.body() or b"{}"
    try:
        data = from_json(body, allow_inf_nan=False)
        refuse_huge_numbers(body)  # `1e400`, which from_json reads as infinity
    except ValueError as exc:
        raise BadRequest(
            f"the body is not JSON (UTF-8 text, no lone surrogates, no NaN, at most 200 levels "
            f"deep): {exc}"
        ) from exc
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object")
    return data


def checked_session_id(session_id: str) -> str:
    """A session id from a request (a path, a header, a body), checked by
    `yiemagent.sessions.check_session_id` before any store sees it.

    Returns:
        `session_id`, unchanged.

    Raises:
        BadRequest: the id is empty or holds a control character (NUL, a line break, ...).
    """
    try:
        return check_session_id(session_id)
    except ConfigError as exc:
        raise BadRequest(str(exc)) from None


def session_header(session_id: str) -> str:
    """`session_id` as the value of an `X-Session-Id` header: as is where HTTP can carry it
    (Latin-1, as a header the client sent arrives), else percent-encoded UTF-8."""
    try:
        session_id.encode("latin-1")
    except UnicodeEncodeError:
        return quote(session_id, safe="".join(map(chr, range(0x21, 0x7F))).replace("%", ""))
    return session_id


def _sid(request: Request) -> str:
    return checked_session_id(request.path_params["sid"])


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f'"{key}" must be a non-empty string')
    return value


def _images(data: dict[str, Any]) -> list[ImageContent] | None:
    raw = data.get("images")
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(
        isinstance(i, dict) and isinstance(i.get("data"), str) for i in raw
    ):
        raise BadRequest('"images" must be a list of {"data": base64, "mime_type": type}')
    return [checked_image(i["data"], str(i.get("mime_type") or "image/png")) for i in raw]


def checked_reason(reason: object) -> str | None:
    """A rejection's reason from a request body (`read_json`): its text, or None when it
    gives none (or no text)."""
    return reason if isinstance(reason, str) else None


def checked_image(data: str, mime_type: str) -> ImageContent:
    """An image of a request body (`yiemagent.ai.attachments.image_from_base64`): base64 or
    a data URL, checked before the run stores it with the session.

    Raises:
        BadRequest: the data is empty or not valid base64.
    """
    from yiemagent.ai.attachments import AttachmentError, image_from_base64

    try:
        return image_from_base64(data, mime_type)
    except AttachmentError as exc:
        raise BadRequest(str(exc)) from None


def checked_document(data: str, filename: object = None) -> DocumentContent:
    """A PDF of a request body (`yiemagent.ai.attachments.document_from_base64`): base64 or
    a data URL, named `filename` when the client gave a name (anything else is ignored),
    checked before the run stores it with the session.

    Raises:
        BadRequest: the data is empty or not valid base64.
    """
    from yiemagent.ai.attachments import AttachmentError, document_from_base64

    try:
        return document_from_base64(data, filename if isinstance(filename, str) else None)
    except AttachmentError as exc:
        raise BadRequest(str(exc)) from None


def approvals_of(agent: Agent[Any]) -> list[dict[str, Any]]:
    """The agent's held tool calls as JSON; `agent_path` names the sub-agent that holds a
    call (the names from the outermost agent down), empty for the agent's own calls."""
    return [
        {
            "tool_call_id": p.tool_call_id,
            "tool_name": p.tool_name,
            "arguments": p.arguments,
            "agent_path": list(p.agent_path),
            "decision": None
            if p.decision is None
            else {"approve": p.decision.approved, "reason": p.decision.reason},
        }
        for p in agent.pending_approvals
    ]


def refuse_undecided(agent: Agent[Any]) -> None:
    """`prepare` for a new prompt: refuse while tool calls await a decision or a resume."""
    if agent.pending_approvals:
        raise Busy(
            "tool calls await approval: decide each (POST .../approvals/{call_id}), then "
            "POST .../resume"
        )


def refuse_undecided_resume(agent: Agent[Any]) -> None:
    """`prepare` for a resume: every held call needs its decision first."""
    undecided = [p.tool_call_id for p in agent.pending_approvals if p.decision is None]
    if undecided:
        raise Busy(f"tool calls without a decision: {', '.join(undecided)}")


def refuse_nothing_to_resume(agent: Agent[Any]) -> None:
    """`prepare` for `POST .../resume`: refuse up front what the run would only fail on.

    Raises:
        LookupError: the session holds no message (404, as `GET` answers).
        Busy: a held call has no decision yet, or none is held and the transcript ends with
            the agent's answer (nothing to continue from: a new run takes a prompt).
    """
    if agent.pending_approvals:
        refuse_undecided_resume(agent)
        return
    messages = agent.state.messages
    if not messages:
        raise LookupError(f"no session {agent.session_id!r}")
    if getattr(messages[-1], "role", None) == "assistant":
        raise Busy(
            "nothing to resume: no tool call is held for approval and the session ends with "
            "the agent's answer; start a run (POST .../runs) instead"
        )


def accepted(request: Request, run: Run) -> JSONResponse:
    """The 202 answer that starts a run; its `events_url` is under the path the app is
    mounted at, and `output_tool`/`output_tools` (`Run`'s) let a client hide a typed
    agent's output tool from its first call."""
    root = request.scope.get("root_path", "")
    return JSONResponse(
        {
            "run_id": run.id,
            "session_id": run.session_id,
            "events_url": f"{root}/v1/runs/{run.id}/events",
            "output_tool": run.output_tool,
            "output_tools": run.output_tools,
        },
        status_code=202,
    )


class Api:
    """The routes of the API (see the module docstring), over one `RunHub` and the store."""

    def __init__(self, hub: RunHub, store: SessionStore) -> None:
        self.hub = hub
        self.store = store
        self._titles: OrderedDict[str, str] = OrderedDict()
        """Session id -> title (`GET /v1/sessions`): reading a title reads the whole
        transcript, and the page lists the sessions after every run."""

    def routes(self) -> list[Route]:
        """The Starlette routes."""
        return [
            Route("/healthz", self.healthz),
            Route("/v1/sessions", self.list_sessions),
            # A session id may hold "/" (`yiem chat --session work/plan`): its %2F reaches
            # routing decoded, so `sid` takes the rest of the path, the longer routes first.
            Route("/v1/sessions/{sid:session_id}/runs", self.start_run, methods=["POST"]),
            Route(
                "/v1/sessions/{sid:session_id}/approvals/{call_id}", self.decide, methods=["POST"]
            ),
            Route("/v1/sessions/{sid:session_id}/approvals", self.list_approvals),
            Route("/v1/sessions/{sid:session_id}/resume", self.resume, methods=["POST"]),
            Route("/v1/sessions/{sid:session_id}/timeline", self.timeline),
            Route("/v1/sessions/{sid:session_only}", self.get_session, methods=["GET"]),
            Route("/v1/sessions/{sid:session_only}", self.delete_session, methods=["DELETE"]),
            Route("/v1/runs/{rid}", self.get_run),
            Route("/v1/runs/{rid}/events", self.events),
            Route("/v1/runs/{rid}/steer", self.steer, methods=["POST"]),
            Route("/v1/runs/{rid}/follow_up", self.follow_up, methods=["POST"]),
            Route("/v1/runs/{rid}/abort", self.abort, methods=["POST"]),
        ]

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    # ── runs ──────────────────────────────────────────────────────────────

    async def start_run(self, request: Request) -> Response:
        sid = _sid(request)
        data = await read_json(request)
        text, images = _text(data, "input"), _images(data)
        run = await self.hub.start(
            sid, lambda agent: agent.prompt(text, images), prepare=refuse_undecided
        )
        return accepted(request, run)

    def _run(self, request: Request) -> Run:
        run = self.hub.run(request.path_params["rid"])
        if run is None:
            raise LookupError(f"no run {request.path_params['rid']!r} on this server")
        return run

    async def get_run(self, request: Request) -> Response:
        return JSONResponse(self._run(request).summary())

    async def events(self, request: Request) -> Response:
        run = self._run(request)
        after = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        if not (after.isascii() and after.isdigit()):  # "²" is a digit int() refuses
            raise BadRequest(f"Last-Event-ID must be an event number, not {after!r}")
        seen = int(after)
        if run.ended and seen >= len(run.texts):
            # nothing is left: 204 is what stops a browser's EventSource from reconnecting
            return Response(status_code=204)

        async def stream() -> AsyncIterator[bytes]:
            async for batch in run.follow(seen):
                yield "".join(
                    f"id: {n}\r\ndata: {run.texts[n - 1]}\r\n\r\n" for n in batch
                ).encode()

        return EventSourceResponse(stream(), ping=sse_ping_s)

    async def _control(self, request: Request, act: Callable[[Agent[Any], str], None]) -> Response:
        run = self._run(request)
        data = await read_json(request)
        text = _text(data, "text")
        if run.agent is None or run.ended:
            raise Busy(f"run {run.id} has ended; start a new run on its session")
        act(run.agent, text)
        return JSONResponse({"ok": True, "run_id": run.id})

    async def steer(self, request: Request) -> Response:
        return await self._control(request, lambda agent, text: agent.steer(text))

    async def follow_up(self, request: Request) -> Response:
        return await self._control(request, lambda agent, text: agent.follow_up(text))

    async def abort(self, request: Request) -> Response:
        run = self._run(request)
        if run.agent is not None and not run.ended:
            run.agent.abort("aborted by the client")
        return JSONResponse({"ok": True, "run_id": run.id, "ended": run.ended})

    # ── sessions ──────────────────────────────────────────────────────────

    async def list_sessions(self, request: Request) -> Response:
        ids = await asyncio.to_thread(self.store.list_sessions)
        shown = list(reversed(ids))[:100]
        missing = [sid for sid in shown if sid not in self._titles]
        found = await asyncio.to_thread(lambda: {sid: self._title(sid) for sid in missing})
        self._remember_titles(found)
        sessions = []
        for sid in shown:
            active = self.hub.active(sid)
            title = self._titles.get(sid) or found.get(sid, "")
            sessions.append({"session_id": sid, "title": title, "active_run": active and active.id})
        return JSONResponse({"sessions": sessions, "total": len(ids)})

    def _remember_titles(self, found: dict[str, str]) -> None:
        """Keep the titles found (the first user message of a session does not change while
        it only grows), up to `_TITLES_KEPT`, the oldest found going first; on the event
        loop thread."""
        for sid, title in found.items():
            if title:
                self._titles[sid] = title
        while len(self._titles) > _TITLES_KEPT:
            self._titles.popitem(last=False)

    def _title(self, sid: str) -> str:
        try:
            messages = self.store.load(sid)
        except SessionCorruptError:  # listed untitled; reading it says which rows are bad
            return ""
        for message in messages:
            if getattr(message, "role", None) == "user":
                content = getattr(message, "content", "")
                text = (
                    content
                    if isinstance(content, str)
                    else " ".join(getattr(block, "text", "") for block in content)
                )
                return " ".join(text.split())[:80]
        return ""

    async def get_session(self, request: Request) -> Response:
        sid = _sid(request)
        messages = await asyncio.to_thread(self.store.load, sid)
        active = self.hub.active(sid)
        if not messages and active is None:
            raise LookupError(f"no session {sid!r}")
        ends = await asyncio.to_thread(run_ends, self.store, sid, len(messages))
        return JSONResponse(
            {
                "session_id": sid,
                "messages": [message_to_dict(m) for m in messages],
                "active_run": active.summary() if active is not None else None,
                "run_ends": ends,
            }
        )

    async def delete_session(self, request: Request) -> Response:
        sid = _sid(request)
        try:
            held = bool(await asyncio.to_thread(self.store.load, sid))
        except SessionCorruptError:  # rows that do not load: the session is there to delete
            held = True
        if not held and self.hub.active(sid) is None:  # as GET /v1/sessions/{sid}
            raise LookupError(f"no session {sid!r}")
        self._titles.pop(sid, None)
        try:
            await self.hub.with_agent(sid, lambda agent: agent.reset())
        except SessionCorruptError:  # no agent opens it; the store's fenced clear still can
            await asyncio.to_thread(self.store.clear, sid)
        return JSONResponse({"ok": True, "session_id": sid})

    async def timeline(self, request: Request) -> Response:
        """The `yiem trace` page of the session (`?run=ID`: of one run of it)."""
        from yiemagent.telemetry import build_timeline, timeline_html

        sid = _sid(request)
        rid = request.query_params.get("run")
        reason = None
        if rid:
            run = self.hub.run(rid)
            if run is None or run.session_id != sid:
                raise LookupError(f"no run {rid!r} of session {sid!r} on this server")
            messages = [
                message_from_dict(e["message"])
                for e in run.events
                if e.get("type") == "message_end" and isinstance(e.get("message"), dict)
            ]
            reason, title = run.end_reason, f"run {rid[:8]} of {sid}"
        else:
            messages, title = await asyncio.to_thread(self.store.load, sid), f"session {sid}"
            if not messages and self.hub.active(sid) is None:  # as GET /v1/sessions/{sid}
                raise LookupError(f"no session {sid!r}")
        return HTMLResponse(timeline_html(build_timeline(messages, title=title, end_reason=reason)))

    # ── approvals ─────────────────────────────────────────────────────────

    async def list_approvals(self, request: Request) -> Response:
        sid = _sid(request)
        active = self.hub.active(sid)
        if active is not None and not active.ended:  # nothing is held while a run goes
            return JSONResponse({"session_id": sid, "approvals": []})
        found = await self.hub.with_agent(sid, approvals_of)
        return JSONResponse({"session_id": sid, "approvals": found})

    async def decide(self, request: Request) -> Response:
        """`POST /v1/sessions/{sid}/approvals/{call_id}` `{"approve", "reason"?}`: record the
        decision on a held call (between runs); answers the session's approvals.

        Raises:
            BadRequest: `approve` not a boolean, `reason` not a string, or a decision the
                agent refuses.
            LookupError: no such call is held (404).
            Busy: a run is active on the session, or another writer holds it (409).
        """
        sid, call_id = _sid(request), request.path_params["call_id"]
        data = await read_json(request)
        approve = data.get("approve")
        if not isinstance(approve, bool):
            raise BadRequest('"approve" must be true or false')
        reason = data.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise BadRequest('"reason" must be a string')

        def take_decision(agent: Agent[Any]) -> list[dict[str, Any]]:
            pending = sorted(p.tool_call_id for p in agent.pending_approvals)
            if call_id not in pending:
                listed = ", ".join(pending) or "none"
                raise LookupError(f"no tool call {call_id!r} awaits approval; pending: {listed}")
            try:
                if approve:
                    agent.approve(call_id)
                else:
                    agent.reject(call_id, reason)
            except ConfigError as exc:  # the call is there: the input is what is wrong
                raise BadRequest(str(exc)) from exc
            return approvals_of(agent)

        found = await self.hub.with_agent(sid, take_decision)
        return JSONResponse({"session_id": sid, "approvals": found})

    async def resume(self, request: Request) -> Response:
        sid = _sid(request)
        run = await self.hub.start(
            sid, lambda agent: agent.resume(), prepare=refuse_nothing_to_resume
        )
        return accepted(request, run)
