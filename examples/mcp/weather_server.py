"""A small MCP server written with the official SDK (docs/mcp.md): one tool that reports
progress and returns structured content.

    .venv/bin/python examples/mcp/weather_server.py    # stdio, as yiemagent starts it
    yiem run "Weather in Lisbon tomorrow?" --mcp "python examples/mcp/weather_server.py"
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("weather", log_level="WARNING")

FORECASTS = {"oslo": ("snow", -3), "lisbon": ("sun", 19), "tokyo": ("rain", 12)}


KNOWN = ", ".join(city.title() for city in FORECASTS)


@server.tool(title="Forecast", description=f"Tomorrow's weather for a city: {KNOWN}.")
async def forecast(city: str, ctx: Context) -> dict[str, object]:
    await ctx.report_progress(0.5, 1.0, f"looking up {city}")
    if city.strip().lower() not in FORECASTS:  # an error result the model can act on
        raise ToolError(f"no forecast for {city!r}; the cities I know are {KNOWN}")
    sky, celsius = FORECASTS[city.strip().lower()]
    return {"city": city, "sky": sky, "celsius": celsius}


if __name__ == "__main__":
    server.run()
