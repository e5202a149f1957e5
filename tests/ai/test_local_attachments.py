"""The embedded model and images (DESIGN §21): it reads neither images nor PDFs, so an
`Agent()` on it gets a text stand-in for each attachment and for an image a tool returns,
and the user one `AttachmentWarning` for the prompt — not one more per turn of the run.
A scripted runtime stands in for llama.cpp and records each request."""

from __future__ import annotations

import base64
import json
import warnings
from collections.abc import Callable
from typing import Any

from tests.ai._local_kit import FakeRuntime, _answer, _calls
from yiemagent import Agent, AgentTool, AgentToolResult
from yiemagent.ai.attachments import AttachmentWarning
from yiemagent.types.messages import ImageContent, TextContent

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


async def test_stand_ins_for_attachments_and_tool_images_and_one_warning(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake(
        [
            _calls(("screenshot", {"page": "home"})),
            _answer("Both blank."),
        ]
    )
    shot = base64.b64encode(PNG).decode()

    async def screenshot(*_: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("the page"), ImageContent(shot, "image/png")])

    tool = AgentTool(
        "screenshot",
        "screenshot",
        "A screenshot of a page.",
        {"type": "object", "properties": {"page": {"type": "string"}}, "required": ["page"]},
        screenshot,
    )
    agent = Agent(tools=[tool])  # the embedded model
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # every warning counts, none folded
        answer = await agent.prompt("Compare these with the home page.", attachments=[PNG, PDF])
    assert answer.text == "Both blank."
    [warning] = [w for w in caught if issubclass(w.category, AttachmentWarning)]
    assert "cannot read images or PDFs" in str(warning.message)
    assert "\n" not in str(warning.message)

    assert "the page" in json.dumps(runtime.requests[-1])  # sent after the tool result
    sent = json.dumps(runtime.requests)
    assert shot not in sent and base64.b64encode(PDF).decode() not in sent
    last = json.dumps(runtime.requests[-1]["messages"])
    assert "[image omitted: this model cannot see images]" in last
    assert "omitted: this model cannot read PDFs]" in last
    assert last.count("[image omitted") == 2  # the attachment's and the screenshot's
