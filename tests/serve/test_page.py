"""The page at `/` (DESIGN §18) in headless Chromium against a real Uvicorn server of faux
agents: streamed answers, tool calls live with their progress and result, steering by
typing while the agent works, the stop button, approve for a held call, the session list,
the run timeline, and the token asked once. (`test_page_embedded.py` drives it on the
embedded model.)"""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.serve._browser import ask, browser_page, shoot
from tests.serve._kit import Tools, brain, faux_agents, faux_server, serving
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import ToolResultMessage, UserMessage

pytestmark = pytest.mark.timeout(180)


def drive(url: str, tmp_path: Path, store: InMemorySessionStore, tools: Tools) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        page.wait_for_selector("text=What can I do for you?")
        ask(page, "weather Oslo Lima")
        running = page.locator(".tool.running")
        running.first.wait_for()
        assert page.locator("#stop").is_visible()
        assert "looking up" in page.locator(".tool .progress").first.inner_text()
        shoot(page, tmp_path, "faux-running")
        ask(page, "and Paris?")  # typed while it works: steers the run
        page.wait_for_selector(".user .tag:text('steered')")
        page.wait_for_selector(".assistant:has-text('echo: and Paris?')")
        page.wait_for_selector("#state:text('idle')")
        tools_done = page.locator(".tool.ok")
        assert tools_done.count() == 2
        assert "sunny in Oslo" in tools_done.first.inner_text()
        assert page.locator(".tool.ok .time").first.inner_text().endswith(" s")
        (sid,) = store.list_sessions()
        stored = store.load(sid)
        assert [m.content[0].text for m in stored if isinstance(m, UserMessage)] == [  # type: ignore[union-attr]
            "weather Oslo Lima",
            "and Paris?",
        ]

        ask(page, "think deeply")  # thinking, folded above the answer
        page.wait_for_selector(".assistant:has-text('thought: deeply')")
        page.locator(".thinking summary").last.click()
        assert page.locator(".thinking .thought").last.inner_text() == "pondering deeply"

        ask(page, "weather Rome")  # stop it while the tool runs
        page.locator(".tool.running").first.wait_for()
        page.click("#stop")
        page.wait_for_selector(".note:text('Stopped.')")
        last = store.load(sid)[-1]  # the stopped call is answered
        assert isinstance(last, ToolResultMessage) and last.is_error

        ask(page, "launch Apollo")
        approve = page.locator(".tool.held .approve button.primary")
        approve.wait_for()
        assert page.locator(".tool.held .time").inner_text() == "waiting for you"
        page.wait_for_selector("#state:text('waiting for your approval')")  # not "idle"
        assert tools.launched == []
        shoot(page, tmp_path, "faux-held")
        approve.click()
        page.wait_for_selector(".assistant:has-text('Done: launched Apollo')")
        assert tools.launched == ["Apollo"]
        page.wait_for_selector("#state:text('idle')")

        page.click("#show-timeline")
        frame = page.frame_locator("#timeline-frame")
        frame.locator(".bar.tool").first.wait_for()
        assert "tool launch" in frame.locator("#chart").inner_text()
        page.click("#timeline-session")
        page.frame_locator("#timeline-frame").locator(
            ".bar.tool[data-name='weather']"
        ).first.wait_for()
        shoot(page, tmp_path, "faux-timeline")
        page.click("#close-timeline")

        page.click("#new")  # a new chat, then back to the first from the list
        page.wait_for_selector("text=What can I do for you?")
        page.click(f".session[data-sid='{sid}']")
        page.wait_for_selector(".assistant:has-text('Done: launched Apollo')")
        assert page.locator(".tool").count() == 4
        assert page.locator(".thinking .thought").count() == 1  # from the stored message


async def test_the_page_drives_runs(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    # tools of 4 s: the steer is typed while one runs, also on a loaded machine
    with faux_server(store, Tools(delay_s=4.0), delay_s=0.02) as (url, tools):
        await asyncio.to_thread(drive, url, tmp_path, store, tools)


def untimed(text: str) -> str:
    """The page's text without the calls' durations (measured live, stored apart)."""
    return re.sub(r"\d+\.\d+ s", "", text)


def steered_before_the_calls(url: str, tmp_path: Path) -> list[str]:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        page.wait_for_selector("text=What can I do for you?")
        ask(page, "weather Oslo Lima")
        page.wait_for_selector("#stop")  # running: the model is still writing its calls
        assert page.locator(".tool").count() == 0
        ask(page, "and Paris?")  # typed now: delivered after the calls' results
        page.wait_for_selector(".assistant:has-text('echo: and Paris?')")
        page.wait_for_selector("#state:text('idle')")
        return list(
            page.evaluate(
                """() => [...document.querySelectorAll('#msgs > .msg, #msgs > .tool')]
                .map((n) => n.classList.contains('tool') ? 'tool'
                  : n.classList.contains('user') ? 'user: ' + n.dataset.text : 'assistant')"""
            )
        )


async def test_a_steer_typed_before_the_calls_shows_where_it_was_delivered(
    tmp_path: Path,
) -> None:
    """A steering message typed while the model was still writing its tool calls stayed
    where it was typed, above the calls' cards, though the agent took it after their
    results (the stored session, and the page reopened, have it there)."""
    store = InMemorySessionStore()
    with faux_server(store, Tools(delay_s=2.0), delay_s=0.25) as (url, _):
        order = await asyncio.to_thread(steered_before_the_calls, url, tmp_path)
    assert order[:2] == ["user: weather Oslo Lima", "tool"], order
    assert order.index("user: and Paris?") > max(i for i, x in enumerate(order) if x == "tool")


def stopped_then_reopened(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "weather Rome")  # stopped while its tool runs
        page.locator(".tool.running").first.wait_for()
        page.click("#stop")
        page.wait_for_selector(".note:text('Stopped.')")
        live = untimed(page.locator("#msgs").inner_text())
        sid = page.locator(".session.current").get_attribute("data-sid")
        page.click("#new")
        page.wait_for_selector("text=What can I do for you?")
        page.click(f".session[data-sid='{sid}']")
        page.wait_for_selector(".tool.error")
        page.wait_for_selector(".note:text('Stopped.')")
        assert untimed(page.locator("#msgs").inner_text()) == live
        page.reload()  # a fresh page, the session opened from the list
        page.click(f".session[data-sid='{sid}']")
        page.wait_for_selector(".note:text('Stopped.')")
        assert page.locator("#msgs .note").all_inner_texts() == ["Stopped."]
        ask(page, "hello")  # a later run that answers adds no note
        page.wait_for_selector(".assistant:has-text('echo: hello')")
        page.wait_for_selector("#state:text('idle')")
        page.click("#new")
        page.click(f".session[data-sid='{sid}']")
        page.wait_for_selector(".assistant:has-text('echo: hello')")
        assert page.locator("#msgs .note").all_inner_texts() == ["Stopped."]
        # the first run's stop stays in its place, before the later exchange
        assert page.locator("#msgs .note ~ .assistant:has-text('echo: hello')").count() == 1


async def test_a_reopened_stopped_session_says_stopped_as_the_live_page_did(
    tmp_path: Path,
) -> None:
    # The live page said "Stopped." at agent_end; reopened, the session showed the failed
    # tool call only, as if the run had ended there by itself.
    store = InMemorySessionStore()
    with faux_server(store, Tools(delay_s=4.0), delay_s=0.02) as (url, _):
        await asyncio.to_thread(stopped_then_reopened, url, tmp_path)


def login(url: str, tmp_path: Path) -> list[Any]:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        page.fill("#token", "s3cret")  # asked at once: the page's first API call got 401
        page.click("#login button")
        ask(page, "hello there")
        page.wait_for_selector(".assistant:has-text('echo: hello there')")
        page.reload()  # kept in the browser: not asked again
        page.wait_for_selector(".session")
        assert not page.locator("#login").is_visible()
        return [page.locator(".session").count()]


async def test_the_page_asks_for_the_token_once(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    with faux_server(store, token="s3cret") as (url, _):
        assert await asyncio.to_thread(login, url, tmp_path) == [1]


def wrong_token_then_right(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        assert not page.locator("#token-refused").is_visible()  # first asked: nothing refused
        page.fill("#token", "wrong")
        page.click("#login button")
        refused = page.locator("#token-refused")
        refused.wait_for()  # asked again, and told why
        assert "refused that token" in refused.inner_text()
        shoot(page, tmp_path, "faux-token-refused")
        page.fill("#token", "s3cret")
        page.click("#login button")
        ask(page, "hello there")
        page.wait_for_selector(".assistant:has-text('echo: hello there')")


async def test_a_refused_token_is_said_when_the_page_asks_again(tmp_path: Path) -> None:
    """After a wrong token the same form came back, unchanged, with no word of why."""
    store = InMemorySessionStore()
    with faux_server(store, token="s3cret") as (url, _):
        await asyncio.to_thread(wrong_token_then_right, url, tmp_path)


def nested(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "delegate weather Oslo")
        card = page.locator(".tool[data-name='helper']")
        inner = card.locator(".nest .tool[data-name='weather']")
        inner.wait_for()  # the sub-agent's own tool call, inside the call that runs it
        page.wait_for_selector(".assistant:has-text('Done: Done: sunny in Oslo')")
        assert "sunny in Oslo" in inner.inner_text()
        assert "helper Done: sunny in Oslo" in card.locator(".nest .subtext").inner_text()
        assert page.locator("#msgs > .tool").count() == 1  # not beside it
        shoot(page, tmp_path, "faux-nested")


async def test_a_sub_agent_shows_inside_its_call(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    fm = FauxModel([brain] * 1000, delay_s=0.01)
    tools = Tools(delay_s=0.3)

    def make_agent(session_id: str) -> Agent[Any]:
        helper = Agent(name="helper", model=fm.model, stream_fn=fm.stream_fn, tools=tools.all())
        return Agent(
            name="main",
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[helper.as_tool(description="asks the helper")],
            session_store=store,
            session_id=session_id,
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(nested, url, tmp_path)


def reload_mid_run(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        page.wait_for_selector("text=What can I do for you?")
        assert "#session=" not in page.url  # a new chat is not in the address yet
        ask(page, "weather Oslo")
        page.locator(".tool.running").first.wait_for()
        assert "#session=web-" in page.url
        page.reload()
        # the same session, its call still running, then its answer
        page.wait_for_selector(".user:has-text('weather Oslo')")
        assert page.locator("#title").inner_text() == "weather Oslo"
        page.wait_for_selector(".assistant:has-text('sunny in Oslo')")
        page.wait_for_selector("#state:text('idle')")
        page.click("#new")
        page.wait_for_selector("text=What can I do for you?")
        assert "#session=" not in page.url
        page.goto(url.rstrip("/") + "/#session=no-such-session")  # unknown: a new chat
        page.wait_for_selector("text=What can I do for you?")


async def test_a_reload_reopens_the_session_and_follows_its_run(tmp_path: Path) -> None:
    # A reload (or a bookmark) opened a new chat: the running session was only in the
    # list, and nothing said that the run went on.
    store = InMemorySessionStore()
    with faux_server(store, Tools(delay_s=4.0), delay_s=0.02) as (url, _):
        await asyncio.to_thread(reload_mid_run, url, tmp_path)


def timeline_closed_by_escape(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "hello")
        page.wait_for_selector(".assistant:has-text('echo: hello')")
        page.wait_for_selector("#state:text('idle')")
        overlay = page.locator("#overlay")
        for close in ("Escape", "Escape in the frame", "click beside"):
            page.click("#show-timeline")
            frame = page.frame_locator("#timeline-frame")
            frame.locator(".bar.model").first.wait_for()
            assert overlay.is_visible()
            if close == "Escape":
                page.keyboard.press("Escape")
            elif close == "Escape in the frame":
                frame.locator(".bar.model").first.click()  # the keys now go to the frame
                frame.locator("#details dt").first.wait_for()
                page.keyboard.press("Escape")
            else:
                page.mouse.click(5, 5)  # the dimmed page around the sheet
            page.wait_for_selector("#overlay", state="hidden")
        page.click("#show-timeline")  # the close button still closes it
        page.click("#close-timeline")
        page.wait_for_selector("#overlay", state="hidden")


async def test_escape_or_a_click_beside_it_closes_the_timeline(tmp_path: Path) -> None:
    # Only its Close button closed it: Escape did nothing, and the sheet held the page.
    store = InMemorySessionStore()
    with faux_server(store) as (url, _):
        await asyncio.to_thread(timeline_closed_by_escape, url, tmp_path)


def escape_keeps_the_token_form(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        page.locator("#token").wait_for()
        page.keyboard.press("Escape")
        page.mouse.click(5, 5)
        assert page.locator("#login").is_visible()  # the page cannot work without it


async def test_escape_does_not_dismiss_the_token_form(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    with faux_server(store, token="s3cret") as (url, _):
        await asyncio.to_thread(escape_keeps_the_token_form, url, tmp_path)


def address_while_the_run_starts(url: str, tmp_path: Path, gate: threading.Event) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        page.wait_for_selector("text=What can I do for you?")
        ask(page, "hello")
        # the run's POST waits for make_agent (the gate): the session is in the address already
        page.wait_for_function("location.hash.startsWith('#session=web-')", timeout=20_000)
        gate.set()
        page.wait_for_selector(".assistant:has-text('echo: hello')")


async def test_the_session_is_in_the_address_before_its_first_run_starts(
    tmp_path: Path,
) -> None:
    # On the embedded model the first run's POST waits seconds for the model's load; the
    # address named the session only once it answered, so a reload then lost it.
    store = InMemorySessionStore()
    gate = threading.Event()
    agents = faux_agents(store, Tools())

    async def make_agent(session_id: str) -> Agent[Any]:
        await asyncio.to_thread(gate.wait, 60)
        return agents(session_id)

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(address_while_the_run_starts, url, tmp_path, gate)
