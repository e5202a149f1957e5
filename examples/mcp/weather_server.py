"""A small MCP server written with the official SDK (docs/mcp.md): one tool that reports
progress and returns structured content.

    python examples/mcp/weather_server.py          # stdio, as yiemagent starts it
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("weather", log_level="WARNING")

FORECASTS = {"oslo": ("snow", -3), "lisbon": ("sun", 19), "tokyo": ("rain", 12)}


@server.tool(title="Forecast", description="Tomorrow's weather for a city.")
async def forecast(city: str, ctx: Context) -> dict[str, object]:
    await ctx.report_progress(0.5, 1.0, f"looking up {city}")
    sky, celsius = FORECASTS.get(city.lower(), ("unknown", 0))
    return {"city": city, "sky": sky, "celsius": celsius}


if __name__ == "__main__":
    server.run()
