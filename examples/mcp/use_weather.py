"""An Agent using the MCP server in weather_server.py (docs/mcp.md), on the faux model so it
runs anywhere; drop `model=`/`stream_fn=` to use the embedded model instead. It needs the
`mcp` extra, which the demo's environment lacks:

    .venv/bin/pip install -e '.[mcp]'
    .venv/bin/python examples/mcp/use_weather.py
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from yiemagent import AbortSignal, Agent, AgentEvent, TextContent, ToolExecutionUpdateEvent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.errors import ConfigError
from yiemagent.mcp import MCPServerStdio, add_server

SERVER = Path(__file__).with_name("weather_server.py")


def main() -> None:
    fm = FauxModel(
        [faux_message(faux_tool_call("weather_forecast", {"city": "Oslo"})), "Snow, -3 °C."]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    server = MCPServerStdio(sys.executable, [str(SERVER)], name="weather")
    try:
        names = asyncio.run(add_server(agent, server, prefix="weather"))
    except ConfigError as exc:  # no MCP SDK: the error says how to install it
        sys.exit(str(exc))
    print("tools:", names)

    def show_progress(event: AgentEvent, signal: AbortSignal) -> None:
        if isinstance(event, ToolExecutionUpdateEvent):  # from notifications/progress
            texts = [b.text for b in event.partial_result.content if isinstance(b, TextContent)]
            print("progress:", *texts)

    agent.subscribe(show_progress)
    reply = agent.prompt_sync("What's the weather in Oslo tomorrow?")
    result = agent.state.messages[-2]
    print("tool result details:", result.details)  # the structured content
    print("answer:", reply.text)
    asyncio.run(agent.close())  # the Agent owns the server: this stops it


if __name__ == "__main__":
    main()
