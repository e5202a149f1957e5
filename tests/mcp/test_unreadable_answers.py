"""An answer the client cannot read still ends the call it answers (docs/mcp.md "Failures
never hang"): a line that is not JSON, found by the id before the point where it broke
(`request_id_in`), fails its call at once instead of after `timeout_s` as "went silent".
The server is a real subprocess, `mcp_raw_lines_server.py`."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys

import pytest
from hypothesis import given, strategies as st

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HERE
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.mcp._sdk import request_id_in
from yiemagent.tools import ToolStore

pytestmark = pytest.mark.timeout(300)

RAW_LINES = str(HERE / "mcp_raw_lines_server.py")


async def _echo_calls(mode: str, *said: str, **options: int) -> list[tuple[bool, str]]:
    """Whether each call of `echo` with `said` was an error, and its text."""
    answers: list[tuple[bool, str]] = []
    async with MCPServerStdio(sys.executable, [RAW_LINES, mode], name=mode, **options) as server:
        store = ToolStore(mode)
        await add_server(store, server)
        for text_sent in said:
            [echoed] = await asyncio.wait_for(run_calls(store, ("echo", {"text": text_sent})), 120)
            answers.append((echoed.is_error, text(echoed)))
    return answers


async def test_an_answer_that_is_not_json_ends_its_call_saying_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`{"jsonrpc": "2.0", "id": 2, "result": {broken`: the call fails naming the server,
    the problem and the line; it waited out `timeout_s` before and failed as "went silent".
    The next call is answered the same way: the session goes on."""
    caplog.set_level(logging.WARNING)
    answers = await _echo_calls("broken", "one", "two")
    for is_error, said in answers:
        assert is_error
        assert re.fullmatch(
            r'MCP server "broken" answered the call to "echo" with a line that is not JSON '
            r"\(Invalid JSON: key must be a string at line 1 column \d+\): "
            r"""'\{"jsonrpc": "2.0", "id": \d+, "result": \{broken'""",
            said,
        ), said
    assert "not JSON-RPC" not in caplog.text  # told to the call, not logged as a stray line


async def test_a_line_that_is_not_json_with_no_pending_id_stays_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`garbage` writes id 7, which no call has: a warning, and the answer after it counts."""
    caplog.set_level(logging.WARNING)
    assert await _echo_calls("garbage", "still here") == [(False, "still here")]
    assert "wrote a line that is not JSON-RPC" in caplog.text


# ── the id before the break ───────────────────────────────────────────────────────────

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["id", "x", "é☃"]) | st.text(max_size=4), inner, max_size=3
        )
    ),
    max_leaves=8,
)
"""Any JSON value, with `id` keys inside objects (never the message's own)."""

_IDS = st.integers(-(2**63), 2**63) | st.text(max_size=8)


@st.composite
def _messages(draw: st.DrawFn) -> tuple[bytes, int | str, int]:
    """A message's line, its top-level id, and the offset of the byte after the id's value."""
    members = draw(st.dictionaries(st.text(max_size=6).filter(lambda k: k != "id"), _JSON))
    request_id = draw(_IDS)
    at = draw(st.integers(0, len(members)))
    ascii_only = draw(st.booleans())
    comma = draw(st.sampled_from([b",", b", ", b" ,\t"]))

    def member(key: str, value: object) -> bytes:
        return json.dumps({key: value}, ensure_ascii=ascii_only)[1:-1].encode()

    before = [member(k, v) for k, v in list(members.items())[:at]]
    after = [member(k, v) for k, v in list(members.items())[at:]]
    head = b"{" + b"".join(part + comma for part in before) + member("id", request_id)
    return head + b"".join(comma + part for part in after) + b"}", request_id, len(head)


@given(_messages(), st.data())
def test_a_line_cut_or_broken_anywhere_never_gives_another_id(
    message: tuple[bytes, int | str, int], data: st.DataObject
) -> None:
    """Cut short at any byte, or broken there by a control byte: the id found is the
    message's or none; it is the message's when the break comes after the id's value and
    the byte that ends it (a cut between them can leave the id's digits unfinished)."""
    line, request_id, id_end = message
    at = data.draw(st.integers(0, len(line)))
    broken = data.draw(st.booleans())
    wire = line[:at] + b"\x01" + line[at:] if broken else line[:at]
    found = request_id_in(wire.decode("utf-8", "replace"))
    assert found in (None, request_id)
    assert type(found) in (type(None), type(request_id))
    if at > id_end:
        assert found == request_id


@given(_messages())
def test_a_whole_line_gives_its_id(message: tuple[bytes, int | str, int]) -> None:
    line, request_id, _ = message
    assert request_id_in(line.decode()) == request_id


@pytest.mark.parametrize(
    "line",
    ["", "[1, 2", '"id"', '{"result": {"id": 3}, broken', '{"id": true, x', '{"id": 1.0, x'],
)
def test_no_id_is_found_where_there_is_none(line: str) -> None:
    assert request_id_in(line) is None
