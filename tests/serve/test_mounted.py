"""`create_app` mounted under a path of the application's own Starlette app
(`Mount("/agent", app=create_app(...))`), served by a real Uvicorn: the page at `/agent/`
talks to the API under `/agent/` (in headless Chromium), `events_url` names the mounted
path, an escaped `/` in a session id stays part of it, the page and `/healthz` need no
token, and the OpenAI routes answer errors in OpenAI's shape, as they do unmounted."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route

from tests.serve._browser import ask, browser_page, shoot
from tests.serve._kit import Tools, faux_agents, serving, sse
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)


@contextlib.contextmanager
def mounted(store: InMemorySessionStore, *, token: str | None = None) -> Iterator[str]:
    """The application's own app, with the agent app at /agent and its lifespan run by the
    outer one (docs/serve.md, "Behind your own app"); yields the outer app's URL."""
    agent_app = create_app(faux_agents(store, Tools()), session_store=store, token=token)

    async def home(request: Request) -> Response:
        return PlainTextResponse("the shop")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with agent_app.router.lifespan_context(agent_app):
            yield

    outer = Starlette(routes=[Route("/", home), Mount("/agent", app=agent_app)], lifespan=lifespan)
    with serving(outer) as url:
        yield url


def chat_on_the_mounted_page(url: str, tmp_path: Path) -> str:
    with browser_page(tmp_path / "profile") as page:
        page.goto(f"{url}/agent/")
        page.wait_for_selector("text=What can I do for you?")
        ask(page, "weather Oslo")
        page.wait_for_selector(".assistant:has-text('Done: sunny in Oslo')")
        page.wait_for_selector("#state:text('idle')")
        page.wait_for_selector(".session")  # the session list came from /agent/v1/sessions
        shoot(page, tmp_path, "mounted")
        return str(page.locator("#msgs").inner_text())


async def test_the_page_works_under_a_mount(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    with mounted(store) as url:
        text = await asyncio.to_thread(chat_on_the_mounted_page, url, tmp_path)
    assert "sunny in Oslo" in text
    (sid,) = store.list_sessions()
    assert len(store.load(sid)) == 4  # question, call, result, answer


def test_the_api_under_a_mount() -> None:
    store = InMemorySessionStore()
    with mounted(store) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/").text == "the shop"
        started = client.post("/agent/v1/sessions/plan%2Ftimeline/runs", json={"input": "hi"})
        assert started.status_code == 202, started.text
        events_url = started.json()["events_url"]
        assert events_url.startswith("/agent/v1/runs/")
        with client.stream("GET", events_url) as response:
            assert response.status_code == 200
            kinds = [data["type"] for _, data in sse(response)]
        assert kinds[-1] == "agent_end"
        session = client.get("/agent/v1/sessions/plan%2Ftimeline")
        assert session.status_code == 200, session.text
        assert session.json()["session_id"] == "plan/timeline"
        assert store.list_sessions() == ["plan/timeline"]
        refused = client.post(
            "/agent/v1/chat/completions",
            json={"model": "m", "n": 2, "messages": [{"role": "user", "content": "hi"}]},
        )
        assert refused.status_code == 400
        assert "n" in refused.json()["error"]["message"]  # OpenAI's shape


def test_a_mounted_app_with_a_token_opens_its_page_and_healthz() -> None:
    store = InMemorySessionStore()
    with mounted(store, token="s3cret") as url, httpx.Client(base_url=url, timeout=30) as client:
        page = client.get("/agent/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        assert client.get("/agent/healthz").json() == {"ok": True}
        assert client.get("/agent/v1/sessions").status_code == 401
        headers = {"Authorization": "Bearer s3cret"}
        assert client.get("/agent/v1/sessions", headers=headers).status_code == 200


def test_a_held_calls_note_names_its_arguments_and_the_mounted_routes() -> None:
    """The OpenAI answer of a run held for approval named each call by its id alone
    (`launch(call_…)`: which rocket?) and the approval routes without the mount's path."""
    store = InMemorySessionStore()
    with mounted(store) as url, httpx.Client(base_url=url, timeout=30) as client:
        answer = client.post(
            "/agent/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "launch Soyuz"}]},
            headers={"X-Session-Id": "ops/1"},
        )
        assert answer.status_code == 200, answer.text
        content = answer.json()["choices"][0]["message"]["content"]
        assert 'launch({"city": "Soyuz"})' in content
        approvals = "/agent/v1/sessions/ops%2F1/approvals"
        assert approvals in content and "POST /agent/v1/sessions/ops%2F1/resume" in content
        (held,) = client.get(approvals).json()["approvals"]
        assert held["arguments"] == {"city": "Soyuz"}
