"""`yiem chat` streaming an answer that is one very long line (no line break: a model
repeating itself, a minified JSON): the live region shows the line's end as it grows, and
the chat's memory stays bounded. The whole line was rendered into the live region at
every frame, and prompt_toolkit's caches kept many frames of it, about 1 KB of memory
per character streamed: hundreds of MB for a few hundred KB of text, and the stream
slowed to a crawl. A real terminal (tmux), a replay server on 127.0.0.1 speaking the
OpenAI wire format, the chat's memory read from /proc."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.ai.servers import ReplayServer, Reply, openai_chunks
from tests.cli.chat._tmux import Pane
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import AssistantMessage, text_of

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc"),
]

WORDS = 60_000
"""The answer: word1 … word60000 on one line, about 530,000 characters."""
GROWTH_MB = 150
"""A generous bound on the chat's memory growth while it streams and shows that line
(its text and the session's copy take a few MB; drawn whole at every frame, the line
took over 1 KB per character)."""


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def test_a_very_long_line_streams_in_bounded_memory(tmp_path: Path) -> None:
    answer = " ".join(f"word{n}" for n in range(1, WORDS + 1))
    deltas = [answer[i : i + 24] for i in range(0, len(answer), 24)]  # ~token-sized
    with ReplayServer() as server:
        server.enqueue(Reply(events=openai_chunks(*({"content": d} for d in deltas))))
        args = ["--model", "openai-compatible/m", "--base-url", server.url + "/v1"]
        pane = Pane(tmp_path, [*args, "--session", "long"], faux=False, width=100, height=30)
        try:
            pane.ready()
            pid = pane.chat_pid()
            before = _rss_mb(pid)
            pane.type("say it all on one line")
            peak, newest = before, 0
            deadline = time.monotonic() + 240
            while True:
                peak = max(peak, _rss_mb(pid))
                assert peak - before < GROWTH_MB, f"{before:.0f} MB → {peak:.0f} MB"
                visible = pane._tmux("capture-pane", "-p", "-J", "-t", "chat")
                if "tokens:" in visible:
                    break
                # the line's newest words are on screen while it streams
                newest = max([newest, *map(int, re.findall(r"word(\d+)", visible))])
                assert time.monotonic() < deadline, visible
                time.sleep(0.2)
            screen = pane.screen()
            pane.type("/exit")
            assert pane.exit_code() == 0
        finally:
            pane.close()
    assert newest > WORDS // 10, newest
    assert "Traceback" not in screen
    # the whole line in the scrollback: its last words, the usage line after them
    assert f"word{WORDS}\ntokens:" in screen and f"word{WORDS - 1}" in screen, screen[-2000:]
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        last = store.load("long")[-1]
    assert isinstance(last, AssistantMessage) and text_of(last.content) == answer
