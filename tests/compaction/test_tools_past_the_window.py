"""A request whose system prompt and tools alone leave no room for an answer (DESIGN §8: a
clear message that says what to change): the error names the tools, not the user's short
message, and the model is not called. The faux model declares a small window; the tools
are 300 real ones, as a large MCP server or tool folder offers."""

from __future__ import annotations

import dataclasses

import pytest

from yiemagent import Agent, AgentRunError, AgentTool
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.compaction import Compactor

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to look for, in words."}},
    "required": ["query"],
}


async def test_tools_that_fill_the_window_are_named_as_what_to_cut() -> None:
    """It said "the last message is about 5 tokens ... shorten it", of a prompt of one word,
    when the 300 tools' schemas were what passed the window."""
    fm = FauxModel(["never asked"], model_id="small-window")
    model = dataclasses.replace(fm.model, context_window=8192)
    tools = [
        AgentTool(f"search_{n}", f"search {n}", "Searches one index of the library.", SCHEMA,
                  lambda *_: "ok")
        for n in range(300)
    ]  # fmt: skip
    agent = Agent(
        model=model,
        stream_fn=fm.stream_fn,
        tools=tools,
        transform_context=Compactor(model, stream_fn=fm.stream_fn),
    )
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("hi")
    text = str(raised.value)
    assert text.startswith("ContextWindowExceeded: the system prompt and the 300 tools"), text
    assert "8,192-token context window" in text and "fewer tools" in text, text
    assert "shorten it" not in text
    assert fm.contexts == []  # the model was not called
