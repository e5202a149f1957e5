"""Which thread a tool's code runs on, with an object that must stay on the thread that
made it: a real `sqlite3` connection (COM objects and GUI toolkits behave alike). A plain
tool runs on a worker thread (R-4.2), where the connection refuses to work: the call gets
an error result saying so, and the run goes on. An `async def` tool runs on the event
loop's thread, the one `prompt_sync` (or `asyncio.run`) was called from: there it works.
That is the documented way (docs/tools.md); there is no switch for plain tools."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent._kit import faux_agent
from yiemagent import ToolResultMessage, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(tmp_path / "wine.db")  # made on this (the test's) thread
    conn.execute("CREATE TABLE wine (name TEXT)")
    conn.execute("INSERT INTO wine VALUES ('Rioja')")
    yield conn
    conn.close()


def run_count(conn: sqlite3.Connection, count_wines: object) -> ToolResultMessage:
    fm = FauxModel([faux_message(faux_tool_call("count_wines", {}, id="c1")), "done"])
    agent = faux_agent(fm, tools=[count_wines])
    assert agent.prompt_sync("how many wines?").text == "done"
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    return result


def test_a_plain_tool_gets_a_clear_error_from_a_connection_of_another_thread(
    conn: sqlite3.Connection,
) -> None:
    ran_on: list[threading.Thread] = []

    @tool
    def count_wines() -> str:
        """Count the wines."""
        ran_on.append(threading.current_thread())
        return str(conn.execute("SELECT COUNT(*) FROM wine").fetchone()[0])

    result = run_count(conn, count_wines)
    assert ran_on and ran_on[0] is not threading.current_thread()
    assert result.is_error
    assert "SQLite objects created in a thread can only be used in that same thread" in (
        text_of(result.content)
    )


def test_an_async_tool_runs_on_the_loop_thread_where_the_connection_works(
    conn: sqlite3.Connection,
) -> None:
    ran_on: list[threading.Thread] = []

    @tool
    async def count_wines() -> str:
        """Count the wines."""
        ran_on.append(threading.current_thread())
        return str(conn.execute("SELECT COUNT(*) FROM wine").fetchone()[0])

    result = run_count(conn, count_wines)
    assert ran_on == [threading.current_thread()]
    assert (result.is_error, text_of(result.content)) == (False, "1")
