"""A report whose file name holds characters a URL gives a meaning ("#", "?", "%", a space)
still links each run to its timeline: opened in headless Chromium, the link leads to the
page written beside the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._chromium import chromium_page
from yiemagent.evals import CaseReport, EvalReport, RunReport
from yiemagent.types import AgentMessage, AssistantMessage, TextContent, UserMessage

pytestmark = pytest.mark.timeout(300)


def one_run_report() -> EvalReport:
    messages: list[AgentMessage] = [
        UserMessage(content="What is 17 * 23?", timestamp=1_000),
        AssistantMessage(
            content=[TextContent("391")],
            stop_reason="stop",
            timestamp=1_010,
            duration_ms=40,
            provider="faux",
            model="faux",
        ),
    ]
    run = RunReport(0, True, [], text="391", messages=messages)
    return EvalReport([CaseReport.from_runs("multiply", [run])])


@pytest.mark.parametrize("name", ["eval #2.html", "what?.html", "100% done.html"])
def test_a_runs_link_leads_to_its_timeline_whatever_the_reports_name(
    tmp_path: Path, name: str
) -> None:
    page_path = one_run_report().to_html(tmp_path / name)
    written = list(page_path.with_name(page_path.stem + ".runs").iterdir())
    assert [p.name for p in written] == ["001-multiply-run1.html"]
    with chromium_page(tmp_path / "profile", width=1000, height=600) as page:
        page.goto(page_path.as_uri())
        page.get_by_text("run 1 timeline").click()
        page.wait_for_url("**/001-multiply-run1.html")
        assert page.locator(".bar.model").count() == 1
