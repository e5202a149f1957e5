"""The eval report (`yiem eval --html`) read on a phone: at 375 CSS pixels the page was 900
px wide, the dark header ending at the screen's edge while the table ran on. The page now
keeps the screen's width, the runs' lines wrap, and what is still wider than the screen
scrolls inside the table's own box."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests._chromium import chromium_page
from tests.evals._agents import make_agent
from tests.evals.test_run_eval import cases
from yiemagent.evals import run_eval


def measure(page_path: Path, tmp_path: Path, width: int) -> dict[str, Any]:
    with chromium_page(tmp_path / f"profile-{width}", width=width, height=740) as page:
        page.goto(page_path.as_uri())
        header = page.locator("header").bounding_box()
        assert header is not None
        return {
            "page": page.evaluate("document.documentElement.scrollWidth"),
            "header": header["width"],
            "rows": page.locator("tr.case").count(),
        }


async def test_on_a_phone_the_report_keeps_the_screen_width(tmp_path: Path) -> None:
    report = await run_eval(cases(), make_agent)
    page = report.to_html(tmp_path / "report.html")
    phone = await asyncio.to_thread(measure, page, tmp_path, 375)
    assert phone["page"] <= 375, phone
    assert phone["header"] >= 374, phone  # the header spans what the page spans
    assert phone["rows"] == 4, phone
    desktop = await asyncio.to_thread(measure, page, tmp_path, 1280)
    assert desktop["page"] <= 1280 and desktop["header"] >= 1279, desktop
