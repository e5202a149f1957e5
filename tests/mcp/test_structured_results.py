"""Structured content reaches the model (DESIGN §12: text, image and structured content
become content blocks), against a real MCP server (`mcp_structured_server.py`, over stdio):
beside a text that does not hold it, instead of any content, and not twice when a text
already holds it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.mcp._kit import run_calls, text
from yiemagent.mcp import MCPServerStdio, add_server
from yiemagent.tools import ToolStore

SERVER = str(Path(__file__).parent / "mcp_structured_server.py")
ISSUES = {"issues": [{"id": 7, "title": "crash on start"}, {"id": 9, "title": "typo"}]}


async def test_structured_content_reaches_the_model_once() -> None:
    async with MCPServerStdio(sys.executable, [SERVER], name="structured") as server:
        store = ToolStore("structured")
        await add_server(store, server)
        issues, data_only, echoed, empty = await run_calls(
            store, ("issues", {}), ("data_only", {}), ("echoed", {}), ("empty_data", {})
        )

    for result in (issues, data_only, echoed):
        assert not result.is_error
        assert result.details == ISSUES
    # a summary that leaves the data out: the data follows it, as JSON
    assert text(issues).startswith("2 issues listed")
    assert "crash on start" in text(issues) and '"id": 9' in text(issues)
    assert json.loads(text(data_only)) == ISSUES
    # a text that already holds the data as JSON: not repeated
    assert json.loads(text(echoed)) == ISSUES
    assert len(echoed.content) == 1
    assert not empty.is_error and json.loads(text(empty)) == {}


async def test_structured_content_off_its_output_schema_is_still_the_result() -> None:
    """The server declares an output schema its answer does not match: the call is not
    failed for it (the model reads the content; the server is what it is)."""
    async with MCPServerStdio(sys.executable, [SERVER], name="structured") as server:
        store = ToolStore("structured")
        await add_server(store, server)
        [result, text_only] = await run_calls(store, ("off_schema", {}), ("text_only", {}))
    assert not result.is_error
    assert text(result).startswith("about 3")
    assert result.details == {"count": "about 3"}
    # declared an output schema, answered with text alone: the text is the result
    assert not text_only.is_error and text(text_only) == "3 of them"


async def test_a_failure_said_only_in_structured_content_reaches_the_model() -> None:
    """pydantic-ai #2742 (a server, the Kotlin SDK's way, answering with structured content
    and no content read as empty): a call that failed (`isError`) with its reason only in
    structured content was "MCP tool data_error failed without saying why". The failure
    does not match the tool's output schema, which describes a success: it is still the
    failure the model reads, not a schema error in its place."""
    async with MCPServerStdio(sys.executable, [SERVER], name="structured") as server:
        store = ToolStore("structured")
        await add_server(store, server)
        [failed] = await run_calls(store, ("data_error", {}))
    assert failed.is_error
    assert json.loads(text(failed)) == {"error": "rate limited", "retry_after_s": 30}


async def test_a_text_nested_too_deeply_to_parse_is_not_the_structured_content() -> None:
    """Whether a text already holds the structured content was asked of `json.loads`, which
    raises RecursionError (not ValueError) on arrays nested a few thousand deep."""
    async with MCPServerStdio(sys.executable, [SERVER], name="structured") as server:
        store = ToolStore("structured")
        await add_server(store, server)
        (deep,) = await run_calls(store, ("deep_text", {}))
    assert not deep.is_error, text(deep)
    assert deep.details == ISSUES
    assert text(deep).startswith("[[[") and "crash on start" in text(deep)
