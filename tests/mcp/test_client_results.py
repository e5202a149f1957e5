"""DESIGN §12, client side: an MCP server's tools in a `ToolStore`, and what their results
become (text, image, embedded resource, structured content, isError, no content), over stdio
and streamable HTTP, against the SDK test server running as a real subprocess.

The connection is opened by one `asyncio.run` and used by others: it lives on its own
thread, not on the caller's event loop."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp._kit import run_calls, text
from tests.mcp.conftest import open_test_server, stdio_server
from yiemagent import ConfigError
from yiemagent.mcp import add_server
from yiemagent.mcp._client import DEFAULT_MAX_RESULT_CHARS
from yiemagent.tools import ToolStore
from yiemagent.types import ImageContent, TextContent

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module", params=["stdio", "http"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ToolStore]:
    server, http = open_test_server(str(request.param), tmp_path_factory.mktemp("markers"))
    store = ToolStore(f"mcp-{request.param}")
    asyncio.run(add_server(store, server))
    try:
        yield store
    finally:
        asyncio.run(server.close())
        if http is not None:
            http.kill()


def test_tools_keep_the_servers_name_description_and_schema(store: ToolStore) -> None:
    echo = store.tools["echo"]
    assert echo.label == "Echo"  # the MCP title
    assert echo.description == "Return the text unchanged."
    assert echo.input_schema["properties"]["text"]["type"] == "string"
    assert echo.input_schema["required"] == ["text"]
    assert {"image", "add", "resource", "fail", "empty", "progress", "sleep"} <= set(store.tools)
    assert echo.parallel


async def test_text_content_becomes_text_and_structured_content_details(store: ToolStore) -> None:
    [result] = await run_calls(store, ("echo", {"text": "hello"}))
    assert not result.is_error
    assert result.content == [TextContent("hello")]
    assert result.details == {"result": "hello"}


async def test_image_content_becomes_an_image_block(store: ToolStore) -> None:
    [result] = await run_calls(store, ("image", {}))
    assert not result.is_error
    [block] = result.content
    assert isinstance(block, ImageContent) and block.mime_type == "image/png"
    assert base64.b64decode(block.data).startswith(b"\x89PNG")


async def test_an_image_that_is_not_base64_becomes_a_text_naming_it(store: ToolStore) -> None:
    [result] = await run_calls(store, ("broken_image", {}))
    assert not result.is_error
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    assert len(texts) == len(result.content) == 2, result.content
    assert all(t.startswith("[image image/png left out: ") and "base64" in t for t in texts)


async def test_a_huge_output_is_cut_with_a_note_saying_how_much_there_was(
    store: ToolStore,
) -> None:
    """A result carried by every later model call of the session must fit a model's
    context: 3 MB of text would make each of them fail. It is cut as the run's own cap
    cuts (docs/tools.md): each text in its middle, its end kept (an exit status, the error
    after a traceback), with one note each; the run's cap, off here, would leave it so."""
    [result] = await run_calls(
        store, ("huge", {"size": 3_000_000, "end": "EXIT 3"}), max_tool_result_chars=None
    )
    assert not result.is_error
    texts = [b.text for b in result.content if isinstance(b, TextContent)]
    assert sum(len(t) for t in texts) < DEFAULT_MAX_RESULT_CHARS + 200
    assert [t.count("characters of the result left out") for t in texts] == [1, 1]
    assert "\n[… 1,450,000 characters of the result left out …]\n" in texts[0], texts[0][-200:]
    assert texts[-1].endswith("xxEXIT 3")
    assert isinstance(result.content[-1], ImageContent)  # what is not text stays
    [small] = await run_calls(store, ("huge", {"size": 1000}))
    assert [len(b.text) for b in small.content if isinstance(b, TextContent)] == [500, 500]


async def test_max_result_chars_is_the_callers(markers: Path) -> None:
    async with stdio_server(markers) as server:
        whole, tiny = ToolStore("whole"), ToolStore("tiny")
        await add_server(whole, server, max_result_chars=None)
        await add_server(tiny, server, max_result_chars=10)
        # kept whole by the MCP client; the run's own cap would cut it, so it is off here
        [kept] = await run_calls(whole, ("huge", {"size": 300_000}), max_tool_result_chars=None)
        assert sum(len(b.text) for b in kept.content if isinstance(b, TextContent)) == 300_000
        [cut] = await run_calls(tiny, ("huge", {"size": 300_000}))
        assert text(cut).startswith("xxx\n[… 149,995 characters of the result left out …]")
        with pytest.raises(ConfigError, match="max_result_chars"):
            await add_server(ToolStore("zero"), server, max_result_chars=0)


async def test_structured_content_goes_to_details(store: ToolStore) -> None:
    [result] = await run_calls(store, ("add", {"a": 2, "b": "40"}))  # "40" coerced
    assert not result.is_error
    assert result.details == {"sum": 42}
    assert '"sum": 42' in text(result)


async def test_an_embedded_resource_becomes_its_text(store: ToolStore) -> None:
    [result] = await run_calls(store, ("resource", {}))
    assert text(result) == "[resource file:///notes.txt]\nhello notes"


async def test_audio_links_and_blobs_become_blocks_the_model_can_take(store: ToolStore) -> None:
    """pydantic-ai's test_mcp.py: audio, a resource link and blob resources in a result.
    A model gets text and images only, so audio, a link and a non-image blob are one line
    naming each (kind, address, size), and an image blob is the image, in the server's
    order."""
    [result] = await run_calls(store, ("media", {}))
    assert not result.is_error
    audio, link, pdf, png = result.content
    assert audio == TextContent("[audio audio/wav, 16 bytes]")
    assert link == TextContent("[resource link report: file:///report.pdf — Q3 figures]")
    assert pdf == TextContent("[resource file:///a.pdf: application/pdf, 8 bytes]")
    assert isinstance(png, ImageContent) and png.mime_type == "image/png"
    assert base64.b64decode(png.data).startswith(b"\x89PNG")


async def test_is_error_becomes_an_error_result_with_the_servers_text(store: ToolStore) -> None:
    [result] = await run_calls(store, ("fail", {"message": "disk on fire"}))
    assert result.is_error
    assert "disk on fire" in text(result)


async def test_a_huge_error_is_cut_like_a_huge_output(store: ToolStore) -> None:
    """mezmo/aura #247: a failing server's stack trace or error dump is carried by every
    later model call as much as an output is; it was left whole."""
    [result] = await run_calls(store, ("fail", {"message": "trace line\n" * 300_000}))
    assert result.is_error
    assert len(text(result)) < DEFAULT_MAX_RESULT_CHARS + 200
    assert text(result).startswith("Error executing tool fail: trace line\ntrace line")
    assert text(result).count("characters of the result left out") == 1, text(result)[-300:]
    assert text(result).endswith("trace line\ntrace line")  # the end, where the error is


async def test_no_content_still_gives_a_non_empty_result(store: ToolStore) -> None:
    [result] = await run_calls(store, ("empty", {}))
    assert not result.is_error
    assert text(result) == "(MCP tool empty returned no content)"


async def test_arguments_are_validated_before_the_call(store: ToolStore) -> None:
    [result] = await run_calls(store, ("echo", {"text": 5}))
    assert result.is_error
    assert 'Invalid arguments for tool "echo"' in text(result)  # ours, not the server's


async def test_a_parallel_batch_gets_each_answer_in_source_order(store: ToolStore) -> None:
    words = [f"w{i}" for i in range(8)]
    results = await run_calls(store, *[("echo", {"text": w}) for w in words])
    assert [text(r) for r in results] == words


def test_the_connection_outlives_the_event_loop_that_opened_it(store: ToolStore) -> None:
    for word in ("one", "two"):
        [result] = asyncio.run(run_calls(store, ("echo", {"text": word})))
        assert text(result) == word
