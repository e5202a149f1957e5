"""The page says what tripped (DESIGN §17, §18): an answer an output guardrail stops is
never shown, and the page names the guardrail and its message, live and again when the
session is reopened; an answer that passes is shown as usual. Headless Chromium against a
real Uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import brain, serving
from yiemagent import Agent, GuardrailContext, GuardrailResult
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)

SAID = "output guardrail 'no_secrets' tripped: it mentions a secret"


def no_secrets(context: GuardrailContext) -> GuardrailResult:
    return GuardrailResult("secret" in context.text, "it mentions a secret")


def drive(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        page.wait_for_selector("text=What can I do for you?")
        ask(page, "tell the secret")
        page.wait_for_selector("#state:text('idle')")
        page.wait_for_selector(f".note:has-text({SAID!r})")
        assert page.locator(".assistant:has-text('echo: tell the secret')").count() == 0

        page.reload()  # the reopened session says it again
        page.wait_for_selector(".user:has-text('tell the secret')")
        page.wait_for_selector(f".note:has-text({SAID!r})")
        assert page.locator(".assistant:has-text('echo: tell the secret')").count() == 0

        ask(page, "hello")
        page.wait_for_selector(".assistant:has-text('echo: hello')")


async def test_the_page_names_the_guardrail_that_stopped_an_answer(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    fm = FauxModel([brain] * 100, chunk_size=8)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            output_guardrails=[no_secrets],
            session_store=store,
            session_id=session_id,
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(drive, url, tmp_path)
