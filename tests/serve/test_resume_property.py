"""Exactly once (DESIGN §18): a client that reads a live run's event stream, hangs up after
any numbers of events and reconnects with `Last-Event-ID` each time, gets every event of the
run exactly once, in order, the same as one uninterrupted read. Through a real Uvicorn
server; Hypothesis picks where the client hangs up."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import pytest
from hypothesis import given, settings, strategies as st

from tests.serve._kit import Tools, faux_server, run_events, sse, start_run
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(300)

_ids = itertools.count()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    store = InMemorySessionStore()
    with (
        faux_server(store, Tools(delay_s=0.05), delay_s=0.003) as (url, _),
        httpx.Client(base_url=url) as http,
    ):
        yield http


def read_with_hangups(client: httpx.Client, run_id: str, cuts: list[int]) -> list[Any]:
    got: list[tuple[int, Any]] = []
    for cut in [*cuts, None]:
        headers = {"Last-Event-ID": str(got[-1][0])} if got else {}
        with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as response:
            for count, (event_id, data) in enumerate(sse(response), start=1):
                got.append((int(event_id or 0), data))
                if cut is not None and count >= cut:
                    break  # hang up mid-stream
        if got and got[-1][1]["type"] == "agent_end":
            break
    return got


@settings(max_examples=12)
@given(cuts=st.lists(st.integers(min_value=1, max_value=12), max_size=8))
def test_every_event_exactly_once_across_hangups(client: httpx.Client, cuts: list[int]) -> None:
    run_id = start_run(client, f"p{next(_ids)}", "weather Oslo Lima Rome")
    pieced = read_with_hangups(client, run_id, cuts)
    whole = run_events(client, run_id)
    assert [n for n, _ in pieced] == list(range(1, len(whole) + 1))
    assert pieced == whole
