"""The timeline page (`yiem trace --html`, and the chat page's Timeline) read on a phone: at
375 CSS pixels the details panel goes under the chart instead of over it, nothing is wider
than the screen, the bars keep a usable track, the axis labels do not run into each other,
and a tapped bar's details scroll into view. At desktop width the panel stays beside the
chart."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

from tests._chromium import chromium_page
from tests.telemetry.test_timeline import write_event_log
from yiemagent.cli.main import main


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    """Whether two bounding boxes share any area."""
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def box(page: Any, selector: str) -> dict[str, float]:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, f"{selector} is not shown"
    return dict(found)


def measure(page_path: Path, tmp_path: Path, width: int, height: int) -> dict[str, Any]:
    """What the page looks like at `width` × `height`, after a tap on a tool bar."""
    with chromium_page(tmp_path / f"profile-{width}", width=width, height=height) as page:
        page.goto(page_path.as_uri())
        chart, panel = box(page, "#chart"), box(page, "#panel")
        track = box(page, ".track")
        shown = [
            box(page, f".axis .tick >> nth={i}")
            for i in range(page.locator(".axis .tick").count())
            if page.locator(".axis .tick").nth(i).evaluate("t => getComputedStyle(t).visibility")
            == "visible"
        ]
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        page.locator('.bar.tool[data-id="call_lima"]').click()
        details = box(page, "#details")
        return {
            "chart": chart,
            "panel": panel,
            "track": track,
            "ticks": shown,
            "scroll_width": scroll_width,
            "details_top": details["y"],
        }


async def trace_page(tmp_path: Path) -> Path:
    log = tmp_path / "run.jsonl"
    await write_event_log(log)
    out = tmp_path / "trace.html"
    assert main(["trace", str(log), "--html", str(out)]) == 0
    return out


async def test_on_a_phone_the_details_go_under_the_chart(tmp_path: Path) -> None:
    page = await trace_page(tmp_path)
    seen = await asyncio.to_thread(measure, page, tmp_path, 375, 740)
    assert not overlaps(seen["chart"], seen["panel"]), seen
    assert seen["panel"]["y"] >= seen["chart"]["y"] + seen["chart"]["height"] - 1, seen
    assert seen["scroll_width"] <= 375, seen
    assert seen["panel"]["x"] + seen["panel"]["width"] <= 375, seen
    assert seen["track"]["width"] >= 200, seen
    ticks = seen["ticks"]
    assert len(ticks) >= 2, seen  # the start and the end at least
    for left, right in itertools.pairwise(ticks):
        assert left["x"] + left["width"] <= right["x"], ticks
    assert 0 <= seen["details_top"] < 740, seen  # the tapped bar's details are on screen


async def test_on_a_desktop_the_details_stay_beside_the_chart(tmp_path: Path) -> None:
    page = await trace_page(tmp_path)
    seen = await asyncio.to_thread(measure, page, tmp_path, 1280, 800)
    assert not overlaps(seen["chart"], seen["panel"]), seen
    assert seen["panel"]["x"] >= seen["chart"]["x"] + seen["chart"]["width"], seen
    assert abs(seen["panel"]["y"] - seen["chart"]["y"]) < 20, seen
    assert len(seen["ticks"]) == 11, seen
    for left, right in itertools.pairwise(seen["ticks"]):
        assert left["x"] + left["width"] <= right["x"], seen["ticks"]
