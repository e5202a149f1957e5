"""The page opened at `/#session=ID` for a session that holds no message yet (a shared link
meant to start a named session, DESIGN §18): the page keeps the id the address names, the
first prompt creates that session, and the browser logs no error on the way (the page
asked for the session and got a 404). Headless Chromium against Uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import faux_server
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import UserMessage

pytestmark = pytest.mark.timeout(180)


def open_named(url: str, tmp_path: Path, sid: str) -> tuple[list[str], str]:
    with browser_page(tmp_path / "profile") as page:
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{url}/#session={sid.replace('/', '%2F')}")
        page.wait_for_selector("text=What can I do for you?")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("decodeURIComponent(location.hash)") == f"#session={sid}"
        ask(page, "hello")
        page.wait_for_selector(".assistant:has-text('echo: hello')")
        page.wait_for_selector("#state:text('idle')")
        page.locator(f".session[data-sid='{sid}']").wait_for()
        return errors, str(page.evaluate("decodeURIComponent(location.hash)"))


@pytest.mark.parametrize("sid", ["team-standup", "plan/q3"])
async def test_a_named_session_in_the_address_is_started_under_its_name(
    tmp_path: Path, sid: str
) -> None:
    # The page asked for the session, logged the 404, and replaced the id with a new
    # `web-…` one: the first prompt went to a session the link did not name.
    store = InMemorySessionStore()
    with faux_server(store) as (url, _):
        errors, address = await asyncio.to_thread(open_named, url, tmp_path, sid)
    assert errors == []
    assert address == f"#session={sid}"
    assert store.list_sessions() == [sid]
    first: Any = store.load(sid)[0]
    assert isinstance(first, UserMessage) and first.content[0].text == "hello"  # type: ignore[union-attr]
