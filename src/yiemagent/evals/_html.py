"""The HTML form of an `EvalReport`: one self-contained page (inline CSS, nothing fetched)
with a row per case — its checks and their reasons, tokens, cost, time, pass@k — and for
each run its answer and a link to its timeline, written beside it with the `yiem trace`
page builder."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from yiemagent.files import write_atomically
from yiemagent.telemetry import build_timeline, timeline_html

if TYPE_CHECKING:
    from yiemagent.evals._outcomes import CaseReport, RunReport

__all__ = ["write_report"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:80] or "case"


def write_report(cases: Sequence[CaseReport], summary: Sequence[str], k: int, path: Path) -> Path:
    """Write the page of `cases` (the header showing `summary`, pass@k columns when `k` > 1)
    to `path` and their runs' timelines to `<stem>.runs/`; returns `path`. A `path` that is
    no file (/dev/null, a pipe) gets the page alone: a folder beside it would land in /dev
    or beside the pipe, where the page's links cannot lead."""
    special = path.exists() and not path.is_file()
    links = {} if special else _write_timelines(cases, path.with_name(path.stem + ".runs"))
    rows = "".join(_case_row(index, case, k, links) for index, case in enumerate(cases))
    spans = "".join(f"<span>{_e(s)}</span>" for s in summary)
    failed = [
        f'<a href="#case-{index + 1}">{_e(case.name)}</a>'
        for index, case in enumerate(cases)
        if not case.passed
    ]
    if failed:  # rows keep the dataset's order; the failures are one click away
        spans += f'<div class="failed">failed: {" · ".join(failed)}</div>'
    # One pass over the template: a marker inside a filled part (a case named "__ROWS__")
    # stays that part's text.
    parts = {"__SUMMARY__": spans, "__ROWS__": rows}
    page = re.sub("__SUMMARY__|__ROWS__", lambda marker: parts[marker.group()], _PAGE)
    write_atomically(path, page.encode("utf-8"))
    return path


def _write_timelines(cases: Sequence[CaseReport], runs_dir: Path) -> dict[tuple[str, int], str]:
    """Write each run's timeline page (a run that kept its messages) into `runs_dir`, made
    when there is one; returns the link to each, relative to the report's folder, by case
    name and repeat."""
    links: dict[tuple[str, int], str] = {}
    for index, case in enumerate(cases):
        for run in case.runs:
            if not run.messages:
                continue
            runs_dir.mkdir(parents=True, exist_ok=True)
            name = f"{index + 1:03d}-{_slug(case.name)}-run{run.repeat + 1}.html"
            timeline = build_timeline(
                run.messages,
                title=f"{case.name}, run {run.repeat + 1}",
                end_reason=run.end_reason,
                nested=run.sub_agent_runs,
            )
            write_atomically(runs_dir / name, timeline_html(timeline).encode("utf-8"))
            # a relative URL: the report's own name may hold "#", "?" or "%"
            links[(case.name, run.repeat)] = quote(f"{runs_dir.name}/{name}")
    return links


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _run_cell(case: CaseReport, run: RunReport, links: dict[tuple[str, int], str]) -> str:
    mark = "pass" if run.passed else "fail"
    link = links.get((case.name, run.repeat))
    label = f"run {run.repeat + 1}"
    name = f'<a href="{_e(link)}">{label} timeline</a>' if link else label
    error = f'<div class="err">{_e(run.error)}</div>' if run.error else ""
    # the answer the checks judged, so a reader sees what a judge passed or a `contains`
    # missed without opening the timeline
    answer = f'<div class="answer">{_e(run.text)}</div>' if run.text else ""
    return (
        f'<li class="{mark}">{name}: <b>{mark}</b> · {run.tokens} tokens · '
        f"${run.cost_usd:.6f} · {run.seconds:.2f} s{answer}{error}</li>"
    )


def _case_row(index: int, case: CaseReport, k: int, links: dict[tuple[str, int], str]) -> str:
    mark = "pass" if case.passed else "fail"
    checks = "".join(
        f'<li class="{"pass" if c.passed else "fail"}"><span class="icon">'
        f"{'✓' if c.passed else '✗'}</span> <code>{_e(c.name)}</code>"
        + (f' <span class="why">— {_e(c.reason)}</span>' if c.reason else "")
        + "</li>"
        for c in case.checks
    )
    runs = "".join(_run_cell(case, run, links) for run in case.runs)
    pass_k = ""
    if k > 1 and case.pass_at_k:
        pass_k = (
            f"<div>pass@1 {case.pass_at_k.get(1, 0):.2f} · pass@{k} "
            f"{case.pass_at_k.get(k, 0):.2f} · pass^{k} {case.pass_all_k.get(k, 0):.2f}</div>"
        )
    prompt = f'<div class="prompt">{_e(case.input)}</div>' if case.input else ""
    return (
        f'<tr class="case {mark}" data-case="{_e(case.name)}" id="case-{index + 1}">'
        f'<td><span class="badge {mark}">'
        f"{mark.upper()}</span></td><td><b>{_e(case.name)}</b>{prompt}</td>"
        f'<td><ul class="checks">{checks or "<li>no checks</li>"}</ul></td>'
        f'<td class="num">{case.tokens}</td><td class="num">${case.cost_usd:.6f}</td>'
        f'<td class="num">{case.seconds:.2f} s</td>'
        f'<td><ul class="runs">{runs}</ul>{pass_k}</td></tr>'
    )


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>yiem eval report</title>
<style>
 body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
 header{padding:12px 20px;background:#1d232b;color:#fff}
 header h1{font-size:18px;margin:0 0 4px}
 header span{margin-right:18px;color:#c9d1d9}
 header .failed{margin-top:4px;color:#ffb3b3}
 header .failed a{color:#ffd7d5}
 main{padding:12px 20px}
 table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #d0d7de}
 th,td{text-align:left;vertical-align:top;padding:6px 8px;border-bottom:1px solid #eaeef2}
 th{background:#f0f3f6;font-size:12px;color:#57606a}
 td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
 .badge{display:inline-block;padding:1px 6px;border-radius:4px;color:#fff;font-size:12px;
  font-weight:600}
 .badge.pass{background:#1a7f37}.badge.fail{background:#cf222e}
 tr.fail{background:#fff5f5}
 ul{margin:0;padding-left:0;list-style:none}
 .checks li.fail .icon{color:#cf222e}.checks li.pass .icon{color:#1a7f37}
 .why{color:#57606a}
 .prompt{color:#57606a;font-size:12px;max-width:360px}
 .runs li{white-space:nowrap;font-size:12px}
 .runs li.fail b{color:#cf222e}.runs li.pass b{color:#1a7f37}
 .err{color:#cf222e;white-space:normal}
 .answer{white-space:pre-wrap;overflow-wrap:anywhere;max-width:420px;max-height:9em;overflow:auto;
  margin:2px 0 6px;padding:4px 6px;background:#f6f8fa;border-radius:4px;color:#1d232b}
 code{font-size:12px}
 .wide{overflow-x:auto}
 /* A phone: the page keeps the screen's width; the runs' lines wrap, and what is still
    wider scrolls inside the table's box. */
 @media (max-width:820px){
  header,main{padding-left:10px;padding-right:10px}
  .runs li{white-space:normal}
 }
</style></head>
<body>
<header><h1>yiem eval report</h1><div class="sum">__SUMMARY__</div></header>
<main><div class="wide"><table>
<thead><tr><th></th><th>case</th><th>checks</th><th>tokens</th><th>cost</th><th>time</th>
<th>runs</th></tr></thead>
<tbody>__ROWS__</tbody></table></div></main>
</body></html>
"""
