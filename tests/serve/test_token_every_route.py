"""With a token, every route of the app needs it (DESIGN §18): each route `create_app`
serves, the protocol routes (`/ag-ui`, `/api/chat`, `/v1/chat/completions`) and the run
controls too, read from the app itself so a route added later is checked as well. Only
`GET /healthz` and the page (which asks for the token once) answer without it; nothing
a refused request asks for is started or stored. Through Uvicorn on 127.0.0.1."""

from __future__ import annotations

import re

import httpx2 as httpx
import pytest
from starlette.routing import Route

from tests.serve._kit import Tools, faux_agents, serving
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

OPEN = {("GET", "/healthz"), ("GET", "/")}


def test_every_route_but_health_and_the_page_needs_the_token() -> None:
    store = InMemorySessionStore()
    app = create_app(faux_agents(store, Tools()), session_store=store, token="s3cret")
    routes = [
        (method, re.sub(r"\{[^}]+\}", "x", route.path))
        for route in app.routes
        if isinstance(route, Route)
        for method in sorted(route.methods or ()) if method != "HEAD"
    ]  # fmt: skip
    paths = {path for _, path in routes}
    assert {"/ag-ui", "/api/chat", "/v1/chat/completions", "/v1/runs/x/abort"} <= paths
    body = {"input": "hi", "messages": [{"role": "user", "content": "hi"}]}
    with serving(app) as url, httpx.Client(base_url=url) as anonymous:
        for method, path in routes:
            response = anonymous.request(method, path, json=body)
            if (method, path) in OPEN:
                assert response.status_code == 200, (method, path, response.text)
            else:
                assert response.status_code == 401, (method, path, response.text)
                assert response.headers["www-authenticate"] == "Bearer"
        wrong = {"Authorization": "Bearer s3cre"}
        for method, path in routes:
            if (method, path) not in OPEN:
                refused = anonymous.request(method, path, json=body, headers=wrong)
                assert refused.status_code == 401, (method, path)
        assert store.list_sessions() == []
        assert anonymous.get("/v1/sessions", headers={"Authorization": "Bearer s3cret"}).is_success
