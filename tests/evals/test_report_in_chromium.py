"""The HTML report (DESIGN §19) opened in headless Chromium (Debian's `chromium`, driven by
Playwright): a row per case with its checks and reasons, and each run's link opening its
timeline page, whose bars are the run's model and tool calls."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from tests._chromium import chromium_page
from tests.evals._agents import make_agent
from tests.evals.test_run_eval import cases
from yiemagent.evals import run_eval


async def test_the_report_and_a_runs_timeline_in_chromium(tmp_path: Path) -> None:
    report = await run_eval(cases(), make_agent, repeat=2)
    page = report.to_html(tmp_path / "report.html")
    shot = await asyncio.to_thread(drive_chromium, page, tmp_path)
    assert shot.stat().st_size > 10_000
    if os.environ.get("YIEM_EVAL_REPORT_SCREENSHOT"):
        shutil.copy(shot, os.environ["YIEM_EVAL_REPORT_SCREENSHOT"])


def drive_chromium(page_path: Path, tmp_path: Path) -> Path:
    with chromium_page(tmp_path / "profile", width=1280, height=700) as page:
        page.goto(page_path.as_uri())
        assert "2/4 cases passed" in page.locator("header").inner_text()
        page.locator("header .failed").get_by_text("broken").click()  # to the failed row
        assert page.url.endswith("#case-4")
        assert page.locator("tr.case:target").get_attribute("data-case") == "broken"
        rows = page.locator("tr.case")
        assert rows.count() == 4
        flaky = page.locator('tr.case[data-case="flaky"]')
        assert "FAIL" in flaky.inner_text()
        assert "failed 1/2 runs: error: boom" in flaky.inner_text()
        multiply = page.locator('tr.case[data-case="multiply"]')
        assert "PASS" in multiply.inner_text()
        assert 'called calculator({"expression": "17 * 23"})' in multiply.inner_text()
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        multiply.get_by_text("run 1 timeline").click()
        page.wait_for_url("**/report.runs/001-multiply-run1.html")
        assert page.locator(".bar.model").count() == 2
        tool = page.locator(".bar.tool")
        assert tool.count() == 1 and tool.get_attribute("data-name") == "calculator"
        return shot
