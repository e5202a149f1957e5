"""The page never loses what the user typed (DESIGN §8): a message sent from a second tab
while the session runs in the first, and a steering message the run ended before taking,
come back in the box, said why, in headless Chromium against faux agents."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import Tools, faux_server
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import UserMessage

pytestmark = pytest.mark.timeout(180)


def second_tab_sends(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as first:
        first.goto(url)
        ask(first, "hello")
        first.wait_for_selector(".assistant:has-text('echo: hello')")
        first.wait_for_selector("#state:text('idle')")
        second = first.context.new_page()
        second.set_default_timeout(60_000)
        second.goto(first.url)  # the same session, idle when opened
        second.wait_for_selector(".assistant:has-text('echo: hello')")
        ask(first, "weather Oslo")  # its tool takes seconds
        first.locator(".tool.running").first.wait_for()
        assert second.inner_text("#state") == "idle"  # the second tab has not heard of it
        ask(second, "and Paris?")
        # The session was busy (409): the text was cleared and an error about steering
        # via the API shown; now the tab follows the run and the text is back.
        second.wait_for_selector("#msgs .note:has-text('your message is back in the box')")
        assert second.input_value("#input") == "and Paris?"
        second.wait_for_selector("#state:text('working…')")
        second.keyboard.press("Enter")  # sent again: it steers the first tab's run
        second.wait_for_selector(".user .tag:text('steered')")
        second.wait_for_selector(".assistant:has-text('echo: and Paris?')")
        first.wait_for_selector(".assistant:has-text('echo: and Paris?')")


async def test_a_second_tab_that_sends_while_the_session_runs_keeps_its_text(
    tmp_path: Path,
) -> None:
    store = InMemorySessionStore()
    with faux_server(store, Tools(delay_s=3.0), delay_s=0.02) as (url, _):
        await asyncio.to_thread(second_tab_sends, url, tmp_path)
    (sid,) = store.list_sessions()
    users = [m for m in store.load(sid) if isinstance(m, UserMessage)]
    assert [m.content[0].text for m in users] == ["hello", "weather Oslo", "and Paris?"]  # type: ignore[union-attr]


def steer_then_stop(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "weather Rome")
        page.locator(".tool.running").first.wait_for()
        ask(page, "and Oslo too")  # a steer, taken at the next step
        page.wait_for_selector(".user .tag:text('steering…')")
        page.click("#stop")  # the run ends before that step
        page.wait_for_selector(".note:text('Stopped.')")
        page.wait_for_selector("#state:text('idle')")
        # It said "steering…" for ever, and the text was gone.
        page.wait_for_selector(".user .tag:text('not delivered')")
        assert page.input_value("#input") == "and Oslo too"
        page.focus("#input")
        page.keyboard.press("Enter")  # asked again, it is a run of its own
        page.wait_for_selector(".assistant:has-text('echo: and Oslo too')")


async def test_a_steer_the_stopped_run_never_took_comes_back_in_the_box(
    tmp_path: Path,
) -> None:
    store = InMemorySessionStore()
    with faux_server(store, Tools(delay_s=4.0), delay_s=0.02) as (url, _):
        await asyncio.to_thread(steer_then_stop, url, tmp_path)


def reloads_mid_run(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "weather Oslo")
        page.locator(".tool.running").first.wait_for()
        page.reload()
        # The call showed as waiting (grey, no progress) until its result came.
        page.wait_for_selector(".tool.running .progress:text('looking up Oslo')")
        page.wait_for_selector(".assistant:has-text('sunny in Oslo')")
        page.wait_for_selector("#state:text('idle')")
        ask(page, "tell " + "me more " * 40)  # an answer streamed for seconds
        page.wait_for_selector(".assistant:has-text('echo: tell me more me more')")
        page.reload()
        # The answer went on from where the reload was, its first part missing until it
        # ended.
        text = page.locator(".assistant:has-text('me more')").first
        text.wait_for()
        assert page.inner_text("#state") == "working…"
        assert text.inner_text().startswith("echo: tell me more"), text.inner_text()
        page.wait_for_selector("#state:text('idle')")


async def test_a_reload_mid_run_shows_the_running_call_and_the_answer_so_far(
    tmp_path: Path,
) -> None:
    store = InMemorySessionStore()
    with faux_server(store, Tools(delay_s=4.0), delay_s=0.1) as (url, _):
        await asyncio.to_thread(reloads_mid_run, url, tmp_path)


def server_gone(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    with browser_page(tmp_path / "profile") as page:
        with faux_server(store) as (url, _):
            page.goto(url)
            ask(page, "hello")
            page.wait_for_selector(".assistant:has-text('echo: hello')")
            page.wait_for_selector("#state:text('idle')")
        # The server has stopped (Ctrl-C, a crash): the text vanished and nothing was said.
        ask(page, "are you there?")
        page.wait_for_selector("#msgs .note.error:has-text('The server did not answer')")
        assert page.input_value("#input") == "are you there?"


async def test_a_message_the_server_never_answered_comes_back_in_the_box(
    tmp_path: Path,
) -> None:
    await asyncio.to_thread(server_gone, tmp_path)


def sends_while_a_call_is_held(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "launch Apollo")
        page.wait_for_selector(".approve button:text('Approve')")
        ask(page, "hello")
        # The page said what the API says to a program: "POST .../approvals/{call_id}".
        note = page.locator("#msgs .note:has-text('Approve or Reject')")
        note.wait_for()
        assert "POST" not in note.inner_text()
        assert page.input_value("#input") == "hello"
        page.click(".approve button:text('Approve')")
        page.wait_for_selector(".assistant:has-text('Done: launched Apollo')")
        page.wait_for_selector("#state:text('idle')")
        page.focus("#input")
        page.keyboard.press("Enter")  # sent again, it is a run of its own
        page.wait_for_selector(".assistant:has-text('echo: hello')")


async def test_a_message_sent_while_a_call_awaits_approval_says_to_decide_it(
    tmp_path: Path,
) -> None:
    tools = Tools()
    with faux_server(InMemorySessionStore(), tools) as (url, _):
        await asyncio.to_thread(sends_while_a_call_is_held, url, tmp_path)
    assert tools.launched == ["Apollo"]
