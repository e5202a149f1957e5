"""A run's event stream read by a browser's `EventSource` (DESIGN §18; the WHATWG
server-sent events rules): the browser reconnects whenever a stream closes, sending
`Last-Event-ID`, and stops only when the server answers 204 No Content. So a stream that
has ended, asked again from its last event, is a 204, and a browser reads a run once
instead of reconnecting every few seconds for as long as the page is open."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._browser import browser_page
from tests.serve._kit import faux_server, run_events, start_run
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(180)


def test_asking_an_ended_stream_from_its_last_event_is_204() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        run_id = start_run(client, "s", "hello")
        events = run_events(client, run_id)
        last = events[-1][0]
        assert events[-1][1]["type"] == "agent_end"

        again = client.get(f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(last)})
        assert again.status_code == 204 and again.content == b""
        assert client.get(f"/v1/runs/{run_id}/events?after={last + 5}").status_code == 204
        # events it has not seen still come, the end included
        rest = run_events(client, run_id, after=last - 1)
        assert [n for n, _ in rest] == [last]


READ_ONCE = """
async (path) => {
  const es = new EventSource(path);
  const seen = { opens: 0, types: [] };
  es.onopen = () => { seen.opens += 1; };
  es.onmessage = (m) => { seen.types.push(JSON.parse(m.data).type); };
  const deadline = Date.now() + 20000;
  while (es.readyState !== EventSource.CLOSED && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  seen.closed = es.readyState === EventSource.CLOSED;
  es.close();
  return seen;
}
"""


async def test_a_browser_event_source_reads_a_run_once_and_stops(tmp_path: Path) -> None:
    store = InMemorySessionStore()

    def drive(url: str) -> dict[str, Any]:
        with httpx.Client(base_url=url) as client:
            run_id = start_run(client, "s", "weather Oslo")
            run_events(client, run_id)  # the run has ended
        with browser_page(tmp_path / "profile") as page:
            page.goto(f"{url}/healthz")
            seen: dict[str, Any] = page.evaluate(READ_ONCE, f"/v1/runs/{run_id}/events")
            return seen

    with faux_server(store) as (url, _):
        seen = await asyncio.to_thread(drive, url)

    assert seen["closed"], seen  # the browser stopped reconnecting
    assert seen["types"][0] == "agent_start" and seen["types"][-1] == "agent_end"
    assert seen["types"].count("agent_end") == 1 and seen["opens"] == 1
