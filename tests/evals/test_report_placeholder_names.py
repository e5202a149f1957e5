"""An eval report whose cases are named like the page's own placeholders (DESIGN §19): the
report and each run's timeline are filled by putting the rows, the summary and the run's
data in place of markers in a page template. A case name that reads like one of them
("__ROWS__", "__DATA__") is text like any other: the page lists each case once, its header
names the failed case, and a run's timeline keeps its title and its data apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.evals._agents import make_agent
from yiemagent.evals import Case, contains, run_eval

NAMES = ["__ROWS__", "__SUMMARY__ and __DATA__", "__TITLE__"]


async def test_cases_named_like_the_pages_markers_are_shown_as_named(tmp_path: Path) -> None:
    cases = [
        Case(name, "Say hi", [contains("hi")], metadata={"script": "say", "text": "bye"})
        for name in NAMES
    ]
    report = await run_eval(cases, make_agent)
    page = report.to_html(tmp_path / "report.html").read_text()
    assert page.count('<tr class="case fail"') == len(NAMES)  # each row once
    header = page.split("<table", 1)[0]
    assert "<tr" not in header
    failed = re.findall(r'<a href="#case-\d+">([^<]*)</a>', header)
    assert failed == NAMES
    for index, name in enumerate(NAMES):
        row = page.split(f'id="case-{index + 1}"')[1]
        found = re.search(r'<a href="([^"#]+)">[^<]*</a>', row)
        assert found is not None
        timeline = (tmp_path / found.group(1)).read_text()
        [title] = re.findall(r"<title>(.*)</title>", timeline)
        assert title == f"yiem trace: {name}, run 1"
        data = re.search(
            r'<script type="application/json" id="data">(.*?)</script>', timeline, re.S
        )
        assert data is not None
        assert json.loads(data.group(1))["title"] == f"{name}, run 1"
