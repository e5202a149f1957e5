"""`yiem eval` on cases named and asked in any script (DESIGN §19, docs/evals.md "A
dataset", "The report"): CJK, emoji, right-to-left text and a combining accent reach the
agent, the checks, the table, the JSON report (read back by `EvalReport.load` and compared
as a baseline) and the HTML page as written; two names that differ only in their Unicode
normalisation are two cases. `yiem eval` as a process, a faux agent from `FILE.py:FUNCTION`."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from tests._yiem import yiem_in
from yiemagent.evals import EvalReport

FACTORY = """
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import text_of

def make():
    fm = FauxModel([lambda context: "答え: " + text_of(context.messages[-1].content)])
    return Agent("x", fm.model, stream_fn=fm.stream_fn)
"""

CAFE_NFC = unicodedata.normalize("NFC", "café")
CAFE_NFD = unicodedata.normalize("NFD", "café")
NAMES = ["東京 🚀", "שלום עולם", CAFE_NFC, CAFE_NFD]
DATASET = f"""
cases:
  - name: "東京 🚀"
    input: "Wie spät ist es in 東京? 🚀"
    checks: [{{contains: "東京? 🚀"}}, {{contains: "答え"}}]
  - name: "שלום עולם"
    input: "שלום"
    checks: [{{equals: "答え: שלום"}}]
  - name: "{CAFE_NFC}"
    input: "un {CAFE_NFC}"
    checks: [{{matches: "caf\\u00e9$"}}]
  - name: "{CAFE_NFD}"
    input: "un {CAFE_NFD}"
    checks: [{{contains: "{CAFE_NFC}"}}]
"""


def test_unicode_cases_survive_the_table_the_reports_and_a_baseline(tmp_path: Path) -> None:
    (tmp_path / "factory.py").write_text(FACTORY, encoding="utf-8")
    (tmp_path / "cases.yaml").write_text(DATASET, encoding="utf-8")
    args = ["eval", "cases.yaml", "--agent", "factory.py:make"]

    first = yiem_in(tmp_path, *args, "--json", "base.json", "--html", "report.html")

    # the NFD case's answer holds "café" decomposed: `contains` compares both in NFC
    assert first.returncode == 0, first.stderr
    table = first.stdout
    assert "東京 🚀" in table and "שלום עולם" in table
    written = json.loads((tmp_path / "base.json").read_text(encoding="utf-8"))
    assert [case["name"] for case in written["cases"]] == NAMES
    assert [case["passed"] for case in written["cases"]] == [True, True, True, True]
    assert EvalReport.load(tmp_path / "base.json").cases[0].name == "東京 🚀"
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert all(name in page for name in NAMES)
    assert len(list((tmp_path / "report.runs").iterdir())) == 4  # a page per run, none lost

    again = yiem_in(tmp_path, *args, "--baseline", "base.json")

    assert again.returncode == 0, again.stderr
    assert "regressed" not in again.stdout and "fixed" not in again.stdout
