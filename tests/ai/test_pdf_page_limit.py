"""A PDF past the pages Anthropic's Messages API takes in a request (100: the API refuses
the request, and a session keeping the PDF would fail every later one) goes to it as a text
naming its pages, with one warning before the request, the newest PDFs going first; one
within the limit goes as a document; Chat Completions, which has no such limit, gets the
long PDF as it is. Real PDFs written with pypdf, `yiem run --attach` and an Agent against a
server on 127.0.0.1."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.ai import get_model
from yiemagent.ai.attachments import attachment_warning, load_attachment, pdf_pages
from yiemagent.cli.main import main

pytestmark = pytest.mark.timeout(120)
pypdf = pytest.importorskip("pypdf")


def pdf_of(pages: int) -> bytes:
    writer = pypdf.PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


def _user_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    user = next(m for m in body["messages"] if m["role"] == "user")
    parts: list[dict[str, Any]] = user["content"]
    return parts


@pytest.mark.parametrize(("pages", "sent"), [(100, True), (101, False)])
def test_anthropic_gets_a_pdf_over_its_page_limit_as_a_note_and_one_warning(
    pages: int,
    sent: bool,
    server: ReplayServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    path = tmp_path / "manual.pdf"
    path.write_bytes(pdf_of(pages))
    server.enqueue(sse_reply("anthropic_text.sse"))
    model = "anthropic/claude-sonnet-4-5"
    argv = ["run", "Summarise it.", "--model", model, "--base-url", server.url]
    assert main([*argv, "--attach", str(path)]) == 0
    _, err = capsys.readouterr()
    [document] = _user_parts(server.requests[0].body)[1:]
    if sent:
        assert document["type"] == "document" and "warning" not in err
        return
    assert (document["type"], document["text"]) == (
        "text",
        "[PDF manual.pdf omitted: 101 pages, more than the 100 the Messages API takes]",
    )
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert warnings == [
        f"yiem: warning: {model} takes at most 100 PDF pages in a request: it gets a short "
        "note in place of each PDF past them"
    ]


def test_the_limit_is_the_request_s_the_newest_pdf_going_first(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two PDFs of 60 pages, one a turn: the second request holds both, 120 pages, which
    the API refuses; the older goes as a note, the one just attached as a document."""
    import asyncio

    from yiemagent import Agent

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    server.enqueue(sse_reply("anthropic_text.sse"), sse_reply("anthropic_text.sse"))
    agent = Agent(model=get_model("anthropic/claude-sonnet-4-5", base_url=server.url))
    first, second = (load_attachment(pdf_of(60), name=f"{n}.pdf") for n in ("a", "b"))

    async def two_turns() -> None:
        await agent.prompt("Read a.", attachments=[first])
        await agent.prompt("Read b.", attachments=[second])

    asyncio.run(two_turns())
    [only] = _user_parts(server.requests[0].body)[1:]
    assert only["type"] == "document" and only["title"] == "a.pdf"
    user_turns = [m for m in server.requests[1].body["messages"] if m["role"] == "user"]
    older, newer = user_turns[0]["content"][1], user_turns[1]["content"][1]
    assert (older["type"], older["text"]) == (
        "text",
        "[PDF a.pdf omitted: 60 pages, which with the request's other PDFs are more than the "
        "100 the Messages API takes]",
    )
    assert newer["type"] == "document" and newer["title"] == "b.pdf"


def test_chat_completions_gets_the_long_pdf_as_it_is(
    server: ReplayServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    path = tmp_path / "manual.pdf"
    path.write_bytes(pdf_of(101))
    server.enqueue(sse_reply(openai_chunks({"content": "seen"})))
    argv = ["run", "Summarise it.", "--model", "openai/gpt-4o-mini"]
    assert main([*argv, "--base-url", server.url + "/v1", "--attach", str(path)]) == 0
    assert "warning" not in capsys.readouterr().err
    [document] = _user_parts(server.requests[0].body)[1:]
    assert document["type"] == "file"


def test_pages_are_counted_and_a_damaged_pdf_is_not_held_back() -> None:
    block = load_attachment(pdf_of(3), name="a.pdf")
    assert pdf_pages(block.data) == 3
    damaged = base64.b64encode(b"%PDF-1.7\n" + b"\x00garbage" * 50).decode()
    assert pdf_pages(damaged) is None
    model = get_model("anthropic/claude-sonnet-4-5")
    assert attachment_warning(model, [block]) is None
