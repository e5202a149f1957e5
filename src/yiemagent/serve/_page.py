"""`GET /`: the chat page, one self-contained HTML file shipped in this package (`page.html`:
inline CSS and script, nothing fetched from another host, no build step).

The page holds no data: it reads everything through the API with the token it asks for
once (kept in the browser's local storage). It streams answers, shows each tool call live
(arguments, progress, result, time; a sub-agent's steps inside the call that runs it),
steers the run with what is typed while it works,
stops it, approves or rejects held calls, lists the sessions, and shows a run's `yiem trace`
timeline.
"""

from __future__ import annotations

import functools
from importlib import resources

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

__all__ = ["page_routes"]


@functools.cache
def page_html() -> str:
    """The page's HTML."""
    return resources.files("yiemagent.serve").joinpath("page.html").read_text(encoding="utf-8")


async def _page(request: Request) -> Response:
    return HTMLResponse(page_html(), headers={"Cache-Control": "no-cache"})


def page_routes() -> list[Route]:
    """`GET /`."""
    return [Route("/", _page)]
