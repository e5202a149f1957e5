"""An answer the client cannot read still ends the call it answers (docs/mcp.md "Failures
never hang"): a line that is not JSON, found by the id before the point where it broke
(`request_id_in`), fails its call at once instead of after `timeout_s` as "went silent".
The server is a real subprocess, `mcp_raw_lines_server.py`."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import os
import re
import sys
import threading
from pathlib import Path

import anyio
import pytest
from hypothesis import given, strategies as st
from pydantic import ValidationError

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import HERE
from yiemagent.errors import ConfigError
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.mcp._sdk import request_id_in
from yiemagent.mcp._stdio import LineTooLong, MessageReader
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


async def test_a_stray_line_is_one_warning_with_the_server_and_the_line_as_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What replaces the SDK's "Failed to parse JSONRPC message from server" and its
    traceback: one warning naming the server and quoting the line's start, a JSON line as
    JSON (it read as a Python dict, `{'ok': True}`)."""
    caplog.set_level(logging.WARNING)
    assert await _echo_calls("json_log", "hi") == [(False, "hi")]
    [warning] = [r for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert warning.levelno == logging.WARNING and warning.exc_info is None
    assert warning.getMessage() == (
        "MCP server json_log wrote a line that is not JSON-RPC "
        """('{"level": "info", "ok": true, "msg": "started é"}'); a server writes its logs """
        "to stderr, not stdout"
    )
    assert not [r for r in caplog.records if r.name.startswith("mcp.")]


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
def _messages(draw: st.DrawFn) -> tuple[bytes, int | str, int, int | None]:
    """A message's line, its top-level id, the offset of the byte after the id's value,
    and, for a request (a top-level `method`), the offset after the method's value."""
    members = draw(
        st.dictionaries(st.text(max_size=6).filter(lambda k: k not in ("id", "method")), _JSON)
    )
    order: list[tuple[str, object]] = list(members.items())
    request_id = draw(_IDS)
    order.insert(draw(st.integers(0, len(order))), ("id", request_id))
    if draw(st.booleans()):
        order.insert(draw(st.integers(0, len(order))), ("method", draw(st.text(max_size=8))))
    ascii_only = draw(st.booleans())
    comma = draw(st.sampled_from([b",", b", ", b" ,\t"]))
    line = b"{"
    ends: dict[str, int] = {}
    for index, (key, value) in enumerate(order):
        line += (comma if index else b"") + json.dumps({key: value}, ensure_ascii=ascii_only)[
            1:-1
        ].encode()
        ends[key] = len(line)
    return line + b"}", request_id, ends["id"], ends.get("method")


@given(_messages(), st.data())
def test_a_line_cut_or_broken_anywhere_never_gives_another_id(
    message: tuple[bytes, int | str, int, int | None], data: st.DataObject
) -> None:
    """Cut short at any byte, or broken there by a control byte: the id found is the
    message's or none. It is the message's when the break comes after the id's value and
    the byte that ends it (a cut between them can leave the id's digits unfinished), and
    none when the message is a request whose method comes before the break: its id is
    the server's, not one of ours."""
    line, request_id, id_end, method_end = message
    at = data.draw(st.integers(0, len(line)))
    broken = data.draw(st.booleans())
    wire = line[:at] + b"\x01" + line[at:] if broken else line[:at]
    found = request_id_in(wire.decode("utf-8", "replace"))
    assert found in (None, request_id)
    assert type(found) in (type(None), type(request_id))
    if method_end is not None and at > method_end:
        assert found is None
    elif method_end is None and at > id_end:
        assert found == request_id


@given(_messages())
def test_a_whole_line_gives_its_id_unless_it_is_a_request(
    message: tuple[bytes, int | str, int, int | None],
) -> None:
    line, request_id, _, method_end = message
    assert request_id_in(line.decode()) == (request_id if method_end is None else None)


@pytest.mark.parametrize(
    "line",
    ["", "[1, 2", '"id"', '{"result": {"id": 3}, broken', '{"id": true, x', '{"id": 1.0, x'],
)
def test_no_id_is_found_where_there_is_none(line: str) -> None:
    assert request_id_in(line) is None


# ── a line past max_message_bytes ─────────────────────────────────────────────────────


class _PeakRss:
    """The largest resident size of this process while in the `with`, bytes, sampled by a
    thread (the connection reads on a thread of this process)."""

    def __enter__(self) -> _PeakRss:
        self.start = self.peak = self._now()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join()

    @staticmethod
    def _now() -> int:
        resident = Path("/proc/self/statm").read_text().split()[1]
        return int(resident) * os.sysconf("SC_PAGE_SIZE")

    def _sample(self) -> None:
        while not self._done.wait(0.002):
            self.peak = max(self.peak, self._now())


_MiB = 1 << 20


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads RSS from /proc")
async def test_a_line_past_max_message_bytes_fails_its_call_and_is_skipped_in_bounded_memory(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 200 MB answer with `max_message_bytes` of 1 MiB: the call fails naming the bound,
    the process grows by far less than the line (read whole, it held the line several
    times over), and the next call's answer, on the line after it, arrives."""
    caplog.set_level(logging.WARNING)
    options = {"max_message_bytes": _MiB}
    async with MCPServerStdio(
        sys.executable, [RAW_LINES, "huge"], name="huge", **options
    ) as server:
        store = ToolStore("huge")
        await add_server(store, server)
        with _PeakRss() as rss:
            [big] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "200000000"})), 240)
            [small] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "again"})), 240)
    assert big.is_error
    assert re.fullmatch(
        r'MCP server "huge" answered the call to "echo" with a message longer than its '
        r"max_message_bytes \(1048576 bytes\), skipped: "
        r"""'\{"jsonrpc": "2.0", "id": \d+, "result": \{"content": \[\{"type": "text", """
        r""""text": "x+'\.\.\.""",
        text(big),
    ), text(big)
    assert (small.is_error, text(small)) == (False, "again")
    assert rss.peak - rss.start < 60 * _MiB, (rss.start, rss.peak)
    assert "max_message_bytes" not in caplog.text  # told to the call, not logged


async def test_a_line_past_the_bound_without_its_id_up_front_ends_every_call_in_flight() -> None:
    """The id after a 5 MB result cannot be read before the line is skipped: the call in
    flight may be the one it answers, so it ends, and the session goes on."""
    async with MCPServerStdio(
        sys.executable, [RAW_LINES, "huge_id_last"], name="last", max_message_bytes=_MiB
    ) as server:
        store = ToolStore("last")
        await add_server(store, server)
        [big] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "5000000"})), 240)
        [small] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "again"})), 240)
    assert big.is_error
    assert text(big).startswith(
        'MCP server "last" wrote a message longer than its max_message_bytes (1048576 bytes), '
        """skipped, with no id in '{"jsonrpc": "2.0", "result": {"content": """
    ), text(big)
    assert text(big).endswith('; the call to "echo" may never get its answer, so it ended')
    assert (small.is_error, text(small)) == (False, "again")


async def test_a_notification_past_the_bound_is_one_warning_and_the_call_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A log notification of 5 MB during a call answers no call (its `method` comes
    first): it is skipped with one warning, and the call's answer after it arrives."""
    caplog.set_level(logging.WARNING)
    async with MCPServerStdio(
        sys.executable, [RAW_LINES, "huge_notice"], name="notice", max_message_bytes=_MiB
    ) as server:
        store = ToolStore("notice")
        await add_server(store, server)
        [said] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "5000000"})), 240)
    assert (said.is_error, text(said)) == (False, "5000000")
    [warning] = [r.getMessage() for r in caplog.records if "max_message_bytes" in r.getMessage()]
    assert warning == (
        "MCP server notice wrote a line longer than its max_message_bytes (1048576 bytes), "
        """skipped: '{"jsonrpc": "2.0", "method": "notifications/message", "params": """
        """{"level": "info", "data": "xxxxxxxxx'..."""
    )


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads RSS from /proc")
async def test_a_line_past_the_bound_answering_a_call_that_timed_out_is_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The call went silent past its `timeout_s` and failed; its 100 MB answer comes later,
    with no call waiting for it: one warning naming the server, the line skipped in bounded
    memory, and the next call is answered."""
    caplog.set_level(logging.WARNING)

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if "max_message_bytes" in r.getMessage()]

    options = {"max_message_bytes": _MiB, "timeout_s": 3}
    async with MCPServerStdio(
        sys.executable, [RAW_LINES, "huge_late"], name="late", **options
    ) as server:
        store = ToolStore("late")
        await add_server(store, server)
        with _PeakRss() as rss:
            [big] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "100000000"})), 60)
            for _ in range(1200):  # the server writes the line after 6 s
                if warnings():
                    break
                await asyncio.sleep(0.1)
            # answered on the line after the long one, once all of it is skipped: within
            # `timeout_s`, since bytes about another call are silence about this one
            [small] = await asyncio.wait_for(run_calls(store, ("echo", {"text": "again"})), 60)
    assert big.is_error and "went silent" in text(big), text(big)
    [warning] = warnings()
    assert re.fullmatch(
        r"MCP server late wrote a line longer than its max_message_bytes \(1048576 bytes\), "
        r"""skipped: '\{"jsonrpc": "2.0", "id": \d+, "result": \{"content": .*'\.\.\.""",
        warning,
    ), warning
    assert (small.is_error, text(small)) == (False, "again")
    assert rss.peak - rss.start < 40 * _MiB, (rss.start, rss.peak)  # not the line whole


def test_max_message_bytes_below_one_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"max_message_bytes must be >= 1, not 0"):
        MCPServerStdio("python server.py", max_message_bytes=0)


@st.composite
def _bounded_lines(draw: st.DrawFn) -> tuple[int, list[bytes], bytes]:
    """A bound, some lines of lengths around it (`[` and digits: each is no JSON-RPC
    message, and the error that refuses it holds it), and an unfinished last line."""
    bound = draw(st.integers(1, 40))
    count = draw(st.integers(0, 6))
    lines = [b"[" + b"7" * draw(st.integers(0, 2 * bound)) for _ in range(count)]
    return bound, lines, b"[" * draw(st.integers(0, 3 * bound))


@given(_bounded_lines(), st.data())
def test_lines_past_the_bound_are_cut_off_and_the_lines_after_them_read_whole(
    case: tuple[int, list[bytes], bytes], data: st.DataObject
) -> None:
    """Each line within the bound reads as what it holds, each longer one as `LineTooLong`
    with its first bytes (more than the bound), wherever the pipe's reads cut the stream.
    An unfinished last line is dropped, unless it is past the bound already: a server that
    never ends its line fails the call at once."""
    bound, lines, tail = case
    wire = b"".join(line + b"\n" for line in lines) + tail
    cuts = sorted(data.draw(st.sets(st.integers(0, len(wire)), max_size=10)))
    chunks = [wire[start:end] for start, end in itertools.pairwise([0, *cuts, len(wire)])]

    async def read_all() -> list[tuple[str, bytes]]:
        send, receive = anyio.create_memory_object_stream[bytes](math.inf)
        for chunk in chunks:
            send.send_nowait(chunk)
        send.close()
        reader = MessageReader(receive, errors="replace", max_line_bytes=bound)
        read: list[tuple[str, bytes]] = []
        while True:
            try:
                item = await reader.receive()
            except anyio.EndOfStream:
                return read
            if isinstance(item, LineTooLong):
                assert item.limit == bound
                read.append(("too long", item.head))
            else:
                assert isinstance(item, ValidationError)
                read.append(("read", item.errors()[0]["input"].encode()))

    got = anyio.run(read_all)
    whole = [*lines, tail] if len(tail) > bound else lines
    assert [kind for kind, _ in got] == [
        "read" if len(line) <= bound else "too long" for line in whole
    ]
    for (kind, held), line in zip(got, whole, strict=True):
        if kind == "read":
            assert held == line
        else:
            assert line.startswith(held) and len(held) > bound
