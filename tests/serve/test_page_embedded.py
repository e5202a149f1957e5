"""The page at `/` in headless Chromium against a real Uvicorn server whose agents run on the
embedded model (DESIGN §18): a question that needs a tool shows the tool line and the
answer; a message typed while the agent works steers it; the stop button stops a run; a
call held for approval runs once approved. Slow (the model runs on the CPU): marked
`local_model` and `slow`."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests.serve._browser import ask, browser_page, shoot
from tests.serve._kit import serving
from yiemagent import Agent, AssistantMessage, ToolResultMessage, UserMessage, tool
from yiemagent.cli.options import example_tools
from yiemagent.serve import create_app
from yiemagent.sessions import SqliteSessionStore


def _embedded_model_installed() -> bool:
    if importlib.util.find_spec("xllamacpp") is None:
        return False
    from yiemagent.ai.providers.local.weights import is_installed, local_spec

    return is_installed(local_spec("qwen2.5-coder-0.5b"))


pytestmark = [
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.skipif(not _embedded_model_installed(), reason="the local extra is not installed"),
    pytest.mark.timeout(900),
]

launched: list[str] = []


@tool(requires_approval=True)
def launch_rocket(name: str) -> str:
    """Launch the rocket with this name.

    Args:
        name: The rocket's name.
    """
    launched.append(name)
    return f"Rocket {name} launched."


def make_agents(store: SqliteSessionStore) -> Any:
    def make_agent(session_id: str) -> Agent[Any]:
        tools = [*example_tools("get_time", "calculator"), launch_rocket]
        return Agent(tools=tools, session_store=store, session_id=session_id, max_turns=6)

    return make_agent


def session_messages(store: SqliteSessionStore) -> list[Any]:
    return [m for sid in store.list_sessions() for m in store.load(sid)]


def stop_a_run(page: Any, attempts: int = 3) -> None:
    """Ask for a long answer in a new chat and press stop while the run works.

    The 0.5B may answer with a short refusal, which on a fast machine ends before the click
    lands (CI saw the button hidden again 1.5 s after it showed); then ask again, in a new
    chat, up to `attempts` times. Raises AssertionError if no run was stopped."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(attempts):
        page.click("#new")
        ask(page, "Write a long story about a dragon who learns to code.")
        page.locator("#stop").wait_for(timeout=300_000)
        with contextlib.suppress(PlaywrightTimeout):
            page.click("#stop", timeout=5_000)
        page.wait_for_selector("#state:text('idle')", timeout=300_000)
        if page.locator(".note:text('Stopped.')").count():
            return
    raise AssertionError(f"each of {attempts} runs ended before stop was pressed")


def drive(url: str, tmp_path: Path, store: SqliteSessionStore) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "What time is it in Tokyo?")
        tool_line = page.locator(".tool[data-name='get_time']").first
        tool_line.wait_for(timeout=300_000)
        # typed while the agent works: steers the run (delivered at its next step)
        if page.locator("#stop").is_visible():
            ask(page, "Also, what is 17 * 23?")
            page.wait_for_selector(".user .tag:text('steered')", timeout=300_000)
        page.wait_for_selector("#state:text('idle')", timeout=300_000)
        page.locator(".tool.ok[data-name='get_time']").first.wait_for()
        answers = page.locator(".assistant .text")
        assert answers.count() >= 1 and answers.last.inner_text().strip()
        shoot(page, tmp_path, "embedded-answer")
        messages = session_messages(store)
        assert any(isinstance(m, ToolResultMessage) and m.tool_name == "get_time" for m in messages)
        users = [m for m in messages if isinstance(m, UserMessage)]
        assert len(users) == 2, "the steering message was not delivered"

        stop_a_run(page)
        shoot(page, tmp_path, "embedded-stopped")

        page.click("#new")
        ask(page, "Launch the rocket named Apollo.")
        approve = page.locator(".tool.held .approve button.primary")
        approve.wait_for(timeout=300_000)
        assert launched == []
        shoot(page, tmp_path, "embedded-held")
        approve.click()
        page.locator(".tool.ok[data-name='launch_rocket']").wait_for(timeout=300_000)
        page.wait_for_selector("#state:text('idle')", timeout=300_000)
        assert launched == ["Apollo"]
        shoot(page, tmp_path, "embedded-approved")
        page.click("#show-timeline")
        page.frame_locator("#timeline-frame").locator(".bar.model").first.wait_for()
        shoot(page, tmp_path, "embedded-timeline")


async def test_the_page_on_the_embedded_model(tmp_path: Path) -> None:
    from yiemagent.ai.providers.local.runtime import load_runtime
    from yiemagent.ai.providers.local.weights import ensure_model_file, local_spec

    spec = local_spec("qwen2.5-coder-0.5b")
    ensure_model_file(spec)
    await asyncio.to_thread(load_runtime, spec)  # loaded before the first request
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        app = create_app(make_agents(store), session_store=store)
        with serving(app) as url:
            await asyncio.to_thread(drive, url, tmp_path, store)
        answered = session_messages(store)
        calls = [c.id for m in answered if isinstance(m, AssistantMessage) for c in m.tool_calls]
        results = {m.tool_call_id for m in answered if isinstance(m, ToolResultMessage)}
        assert set(calls) <= results  # every call answered, the stopped run's too
