"""Deciding held calls on the page (DESIGN §14, §18) in headless Chromium against a real
Uvicorn server of faux agents: Reject stores the plain rejection, and a tab whose call was
decided in another tab shows the session as it now is instead of staying held."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import faux_server
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import ToolResultMessage, text_of

pytestmark = pytest.mark.timeout(180)


def reject_in_one_tab_then_approve_in_the_other(url: str, tmp_path: Path) -> tuple[str, str]:
    """Hold a call in tab A, reject it in tab B, then press Approve in A's stale card.
    Returns A's state line and its messages' text at the end."""
    with browser_page(tmp_path / "profile") as a:
        a.goto(url)
        a.wait_for_selector("text=What can I do for you?")
        ask(a, "launch Apollo")
        a.locator(".tool.held .approve button.primary").wait_for()
        b = a.context.new_page()
        b.set_default_timeout(60_000)
        b.goto(a.url)  # the session is in the address
        b.locator(".tool.held .approve button:not(.primary)").click()  # Reject
        b.wait_for_selector(".assistant:has-text('Done:')")
        a.locator(".tool.held .approve button.primary").click()  # decided already
        a.wait_for_selector(".assistant:has-text('Done:')")
        a.wait_for_selector("#state:text('idle')")
        return a.locator("#state").inner_text(), a.locator("#msgs").inner_text()


async def test_a_call_decided_in_another_tab_shows_as_decided(tmp_path: Path) -> None:
    """The page sent Reject with the reason "rejected by the user", which the result
    repeated ("Tool call rejected by the user: rejected by the user"); and a tab whose
    held call another tab had decided kept its Approve button and "waiting for your
    approval" after its click failed."""
    store = InMemorySessionStore()
    with faux_server(store) as (url, tools):
        state, text = await asyncio.to_thread(
            reject_in_one_tab_then_approve_in_the_other, url, tmp_path
        )
        assert tools.launched == []
    assert state == "idle"
    assert "This call needs your approval." not in text
    (sid,) = store.list_sessions()
    (result,) = [m for m in store.load(sid) if isinstance(m, ToolResultMessage)]
    assert result.is_error and text_of(result.content) == "Tool call rejected by the user"
