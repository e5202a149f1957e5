"""`yiemagent.serve`: agents behind an HTTP API, the protocols front ends speak, and a chat
page (DESIGN §18; `docs/serve.md`). Extra `serve` (Starlette, Uvicorn, sse-starlette,
ag-ui-protocol); `import yiemagent` never imports it.

Public: `create_app(make_agent, *, session_store, token=None, cors=None, ...)`, the ASGI
app to serve with Uvicorn, and `DEFAULT_MAX_BODY_BYTES`, its request body cap (bytes) unless
`max_body_bytes` says otherwise; `is_loopback(host)`, the check that a host serves only this
machine, and `check_origin(origin)`, the check that a `cors` value is an origin a browser
can send; `cors_headers(origin, cors, ...)`, the CORS headers the app answers a request
with, for a server answering in its stead (`yiem serve` while the embedded model loads).
"""

from yiemagent.serve._app import DEFAULT_MAX_BODY_BYTES as DEFAULT_MAX_BODY_BYTES, create_app
from yiemagent.serve._guard import (
    check_origin as check_origin,
    cors_headers as cors_headers,
    is_loopback as is_loopback,
)

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "check_origin",
    "cors_headers",
    "create_app",
    "is_loopback",
]
