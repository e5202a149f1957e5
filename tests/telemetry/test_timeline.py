"""`yiem trace … --html` (DESIGN §13): the timeline page from a `yiem run --json` event log
and from a stored session, opened in headless Chromium (Debian's `chromium`, driven by
Playwright; no browser download): two parallel tools' bars overlap on the time axis and
clicking one shows its result."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests._chromium import chromium_page
from yiemagent import (
    AbortSignal,
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    SqliteSessionStore,
    UserMessage,
    event_to_dict,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.cli.main import main
from yiemagent.telemetry import timeline_from_event_lines
from yiemagent.types import Usage

pytestmark = pytest.mark.timeout(120)

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"city": {"type": "string"}}}


def weather_tool() -> AgentTool:
    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        await asyncio.sleep(0.4)
        return f"sunny in {args['city']}, 21 °C"

    return AgentTool("weather", "weather", "the weather", SCHEMA, execute, parallel=True)


def script() -> FauxModel:
    calls = [
        faux_tool_call("weather", {"city": "Oslo"}, id="call_oslo"),
        faux_tool_call("weather", {"city": "Lima"}, id="call_lima"),
    ]
    answer = faux_message(
        faux_text("Oslo and Lima are both sunny."), usage=Usage(input=512, output=9)
    )
    return FauxModel(
        [faux_message(*calls, usage=Usage(input=380, output=41)), answer], delay_s=0.01
    )


async def write_event_log(path: Path) -> None:
    """What `yiem run --json` prints: one `event_to_dict` line per event."""
    lines: list[str] = []

    def emit(event: AgentEvent) -> None:
        lines.append(json.dumps(event_to_dict(event)))

    fm = script()
    context = AgentContext("sys", [], [weather_tool()])
    config = AgentLoopConfig(model=fm.model)
    await run_agent_loop([UserMessage("weather?")], context, config, emit, None, fm.stream_fn)
    await asyncio.to_thread(path.write_text, "\n".join(lines) + "\n", encoding="utf-8")


def page_data(html_path: Path) -> dict[str, Any]:
    text = html_path.read_text(encoding="utf-8")
    start = text.index('<script type="application/json" id="data">') + len(
        '<script type="application/json" id="data">'
    )
    data: dict[str, Any] = json.loads(text[start : text.index("</script>", start)])
    return data


async def test_event_log_to_page_in_chromium(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    await write_event_log(log)
    out = tmp_path / "trace.html"
    assert main(["trace", str(log), "--html", str(out)]) == 0
    data = page_data(out)
    assert [len(turn["bars"]) for turn in data["turns"]] == [3, 1]
    assert data["end_reason"] == "stop"
    screenshot = await asyncio.to_thread(drive_chromium, out, tmp_path)
    assert screenshot.stat().st_size > 10_000
    if os.environ.get("YIEM_TIMELINE_SCREENSHOT"):  # refresh docs/timeline.png
        shutil.copy(screenshot, os.environ["YIEM_TIMELINE_SCREENSHOT"])


def drive_chromium(page_path: Path, tmp_path: Path) -> Path:
    with chromium_page(tmp_path / "profile", width=1200, height=520) as page:
        page.goto(page_path.as_uri())
        bars = page.locator(".bar.tool")
        assert bars.count() == 2
        oslo = page.locator('.bar.tool[data-id="call_oslo"]').bounding_box()
        lima = page.locator('.bar.tool[data-id="call_lima"]').bounding_box()
        model = page.locator(".bar.model").first.bounding_box()
        assert oslo is not None and lima is not None and model is not None
        # parallel: the two bars overlap on the time (x) axis, on separate rows
        overlap = min(oslo["x"] + oslo["width"], lima["x"] + lima["width"]) - max(
            oslo["x"], lima["x"]
        )
        assert overlap > 0.5 * min(oslo["width"], lima["width"])
        assert oslo["y"] != lima["y"]
        assert model["x"] + model["width"] <= min(oslo["x"], lima["x"]) + 2  # tools after
        page.locator('.bar.tool[data-id="call_lima"]').click()
        details = page.locator("#details")
        assert "sunny in Lima, 21 °C" in details.inner_text()
        assert '"city": "Lima"' in details.inner_text()
        assert "Oslo" not in details.inner_text()
        page.locator('.bar.tool[data-id="call_lima"]').hover()
        assert "weather" in page.locator("#tip").inner_text()
        shot = tmp_path / "timeline.png"
        page.screenshot(path=str(shot), full_page=True)
        return shot


async def test_stored_session_to_page(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    fm = script()
    with SqliteSessionStore(db) as store:
        agent = Agent(
            model=fm.model,
            stream_fn=fm.stream_fn,
            tools=[weather_tool()],
            session_store=store,
            session_id="trip",
        )
        await agent.prompt("weather?")
    out = tmp_path / "session.html"
    assert main(["trace", "trip", "--db", str(db), "--html", str(out)]) == 0
    data = page_data(out)
    tools = [bar for turn in data["turns"] for bar in turn["bars"] if bar["kind"] == "tool"]
    assert len(tools) == 2
    first, second = tools
    # the stored messages carry the timing: the two 0.4 s calls overlap
    assert first["end_ms"] - first["start_ms"] >= 350
    assert min(first["end_ms"], second["end_ms"]) > max(first["start_ms"], second["start_ms"])
    assert data["turns"][0]["prompt"] == "weather?"


def test_a_json_document_is_named_as_one_not_as_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An indented JSON file (`yiem eval --json`'s report, whose runs have timelines) said
    "line 1 is not JSON ... '{\\n'" of a file that is JSON, and not what the command reads."""
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"passed": 1, "cases": []}, indent=2) + "\n")
    assert main(["trace", str(report), "--html", str(tmp_path / "x.html")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        f"yiem: error: {report}: one JSON document over 4 lines, not a yiem run --json "
        "event log (one event a line)"
    ), err


def test_bad_sources_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"type": "agent_start"}\nnot json\n')
    out = tmp_path / "x.html"
    assert main(["trace", str(junk), "--html", str(out)]) == 1
    err = capsys.readouterr().err
    # the line is named in its file: `yiem trace a.jsonl b.jsonl` in a script, or a log
    # passed down from a wrapper, said "line 2 is not JSON" and left the file to guess
    assert f"{junk}: line 2 is not JSON" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type": "agent_start"}\n')
    assert main(["trace", str(empty), "--html", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{empty}: not a yiem run --json event log" in err
    db = tmp_path / "empty.db"
    SqliteSessionStore(db).close()
    assert main(["trace", "nope", "--db", str(db), "--html", str(out)]) == 1
    assert "no session 'nope'" in capsys.readouterr().err
    assert main(["trace", str(db), "--html", str(out)]) == 1
    assert "is a session database" in capsys.readouterr().err
    assert main(["trace", "nope", "--db", str(tmp_path / "none.db"), "--html", str(out)]) == 1
    assert "no session database" in capsys.readouterr().err


def test_a_log_without_messages_is_refused() -> None:
    from yiemagent.errors import ConfigError

    with pytest.raises(ConfigError, match="no message_end"):
        timeline_from_event_lines(['{"type": "agent_start"}'])
    with pytest.raises(ConfigError, match="no lines"):
        timeline_from_event_lines([])


def test_the_page_cannot_be_broken_by_content() -> None:
    from yiemagent.telemetry import build_timeline, timeline_html
    from yiemagent.types import AssistantMessage, TextContent

    evil = AssistantMessage(content=[TextContent("</script><script>alert(1)</script>")])
    page = timeline_html(build_timeline([evil], title="<b>x</b>"))
    assert page.count("</script>") == 2  # the data script and the page script only
    assert "<b>x</b>" not in page


async def test_the_axis_ticks_line_up_with_the_bars(tmp_path: Path) -> None:
    """A tick at i·10 % of the run sits over the gridline at i·10 % of every track: the
    axis once began 20 px left of the tracks (the name column's padding came on top of
    its width), so every label read earlier than the bars under it."""
    log = tmp_path / "run.jsonl"
    await write_event_log(log)
    out = tmp_path / "trace.html"
    assert main(["trace", str(log), "--html", str(out)]) == 0
    offsets = await asyncio.to_thread(tick_offsets, out, tmp_path)
    assert offsets, "no ticks measured"
    assert max(abs(off) for off in offsets) <= 2, offsets


def tick_offsets(page_path: Path, tmp_path: Path) -> list[float]:
    """Each tick's anchor (its centre; the last one's right edge) minus where its time
    falls on the first track, in CSS pixels."""
    with chromium_page(tmp_path / "profile", width=1200, height=520) as page:
        page.goto(page_path.as_uri())
        track = page.locator(".track").first.bounding_box()
        assert track is not None
        ticks = page.locator(".axis .tick")
        assert ticks.count() == 11
        offsets: list[float] = []
        for i in range(11):
            box = ticks.nth(i).bounding_box()
            assert box is not None
            anchor = box["x"] + (box["width"] if i == 10 else box["width"] / 2)
            offsets.append(anchor - (track["x"] + track["width"] * i / 10))
        return offsets
