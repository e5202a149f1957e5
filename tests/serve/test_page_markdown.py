"""The page renders an answer's markdown (headless Chromium, a faux agent): headings,
lists, links, italics and tables showed as raw text (`## Steps`, `- a`, `[x](url)`), only
paragraphs, code and bold were rendered. Every piece is built as DOM nodes holding text, so
HTML the model writes stays text, and a link goes only to http(s) or mailto."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.serve._browser import ask, browser_page
from tests.serve._kit import serving
from yiemagent import Agent, AssistantMessage, Context
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(300)

ANSWER = """\
## Steps <img src=x onerror=alert(1)>

1. Open *the* file
2. Read _it_ and **save**

- one [docs](https://example.com/a?b=1) `code`
- two [bad](javascript:alert(1))

| name | size |
|---|---:|
| <i>a</i> | 2 |

### Done
"""


def reply(context: Context) -> AssistantMessage:
    return faux_message(faux_text(ANSWER))


def read(url: str, tmp_path: Path) -> None:
    with browser_page(tmp_path / "profile") as page:
        page.goto(url)
        ask(page, "show")
        page.wait_for_selector(".assistant h3:text('Done')")
        answer = page.locator(".assistant .text")
        assert answer.locator("h2").inner_text() == "Steps <img src=x onerror=alert(1)>"
        assert answer.locator("img").count() == 0 and answer.locator("i").count() == 0
        assert answer.locator("ol > li").all_inner_texts() == [
            "Open the file",
            "Read it and save",
        ]
        assert answer.locator("ol em").all_inner_texts() == ["the", "it"]
        assert answer.locator("ol strong").inner_text() == "save"
        assert answer.locator("ul > li").all_inner_texts() == ["one docs code", "two bad"]
        link = answer.locator("ul a")
        assert link.count() == 1 and link.get_attribute("href") == "https://example.com/a?b=1"
        assert link.get_attribute("rel") == "noopener noreferrer"
        assert answer.locator("ul code").inner_text() == "code"
        assert answer.locator("table th").all_inner_texts() == ["name", "size"]
        assert answer.locator("table td").all_inner_texts() == ["<i>a</i>", "2"]
        assert "##" not in answer.inner_text() and "](" not in answer.inner_text()


async def test_headings_lists_links_italics_and_tables_are_rendered(tmp_path: Path) -> None:
    fm = FauxModel([reply] * 3, chunk_size=40)
    store = InMemorySessionStore()

    def make_agent(session_id: str) -> Agent:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id=session_id
        )

    with serving(create_app(make_agent, session_store=store)) as url:
        await asyncio.to_thread(read, url, tmp_path)
