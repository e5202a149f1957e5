"""A very long answer on the page (headless Chromium, a faux agent that streams it in
thousands of deltas): shown whole, quickly, the view kept at its end, and its markup
rendered as text, never as HTML."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import serving
from yiemagent import Agent, AssistantMessage, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text
from yiemagent.cli.render import CUT_OFF
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import Usage

pytestmark = pytest.mark.timeout(300)

LONG = "\n\n".join(f"Paragraph {i}: " + "lorem ipsum dolor sit amet " * 20 for i in range(560))
MARKUP = "Use `x**2`, <b>not html</b> & **bold** 🍎 — доброе утро"


def reply(context: Context) -> AssistantMessage:
    last = context.messages[-1]
    prompt = last.content if isinstance(last.content, str) else last.content[0].text  # type: ignore[union-attr]
    if prompt == "cut":
        cut = faux_message(faux_text("The piston is connected to a crank"), stop_reason="length")
        cut.usage = Usage(input=20, output=8)
        return cut
    return faux_message(faux_text(LONG if prompt == "long" else MARKUP))


def read_long(url: str, tmp_path: Path) -> float:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "markup")
        page.wait_for_selector(".assistant strong:text('bold')")
        text = page.locator(".assistant .text").inner_text()
        assert text == "Use x**2, <b>not html</b> & bold 🍎 — доброе утро"
        assert page.locator(".assistant b").count() == 0
        started = time.monotonic()
        ask(page, "long")
        page.wait_for_selector("#state:text('working…')")
        page.wait_for_selector("#state:text('idle')", timeout=200_000)
        took = time.monotonic() - started
        last = page.locator(".assistant p").last
        assert last.inner_text().startswith("Paragraph 559: lorem ipsum")
        assert last.is_visible()  # followed to its end
        box = last.bounding_box()
        assert box is not None and box["y"] < 800
        return took


async def test_a_very_long_answer_is_shown_whole_and_followed(tmp_path: Path) -> None:
    fm = FauxModel([reply] * 10, chunk_size=40)  # 300k characters: 7,500 deltas
    store = InMemorySessionStore()

    def make_agent(session_id: str) -> Agent:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id=session_id
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        took = await asyncio.to_thread(read_long, url, tmp_path)
    # The page rendered the whole answer again at each delta: minutes of a frozen tab for
    # what the agent streamed in a fraction of a second. Now a few seconds; the bound is
    # wide for a loaded machine and still far below the old time.
    assert took < 60, f"the page took {took:.0f} s to show a 300k-character answer"


def read_cut(url: str, tmp_path: Path, said: str) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "cut")
        page.wait_for_selector(".assistant:has-text('connected to a crank')")
        page.wait_for_selector("#state:text('idle')")
        # It ended mid-sentence with nothing to say so.
        assert page.locator("#msgs .note").all_inner_texts() == [said]
        page.reload()
        page.wait_for_selector(".assistant:has-text('connected to a crank')")
        assert page.locator("#msgs .note").all_inner_texts() == [said]


@pytest.mark.parametrize(
    ("max_tokens", "said"),
    [
        (None, CUT_OFF),
        (8, "⋯ cut off: the answer reached max_tokens 8; raise it for a longer answer"),
    ],
    ids=["model-limit", "max-tokens"],
)
async def test_an_answer_cut_off_at_the_output_limit_says_so(
    tmp_path: Path, max_tokens: int | None, said: str
) -> None:
    """The note is `yiem run`'s, and names the agent's `max_tokens` (`yiem serve
    --max-tokens`) when that cut the answer: the page said only "the model's output
    limit", and a user who set 8 tokens was not told it was theirs."""
    fm = FauxModel([reply] * 10)
    store = InMemorySessionStore()

    def make_agent(session_id: str) -> Agent:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id=session_id,
            max_tokens=max_tokens,
        )  # fmt: skip

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(read_cut, url, tmp_path, said)
