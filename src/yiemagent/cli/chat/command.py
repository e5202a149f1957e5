"""The `yiem chat` command's options (typer); the chat itself is in `_app.py`.

This module imports neither prompt_toolkit nor the agent: `yiem` builds its command list
from it, and only running `yiem chat` loads the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from yiemagent.cli.options import (
    BaseUrlOption,
    MaxTokensOption,
    MaxTurnsOption,
    McpMaxMessageBytesOption,
    McpOption,
    McpTimeoutOption,
    McpUrlOption,
    ReasoningOption,
    TemperatureOption,
    ToolCallsOption,
    ToolsOption,
    VisionOption,
)

__all__ = ["chat"]


def chat(
    model: Annotated[
        str | None,
        typer.Option("--model", help="Model as provider/id (default: the embedded model)."),
    ] = None,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    mcp_url: McpUrlOption = None,
    mcp_timeout: McpTimeoutOption = None,
    mcp_max_message_bytes: McpMaxMessageBytesOption = None,
    session: Annotated[
        str | None,
        typer.Option("--session", help="Resume (or start) the stored session NAME."),
    ] = None,
    system: Annotated[str | None, typer.Option("--system", help="System prompt.")] = None,
    write_tools: Annotated[
        Path | None,
        typer.Option(
            "--write-tools",
            help="Offer writeTool, writing new tools into DIR (each write asks you first).",
        ),
    ] = None,
    base_url: BaseUrlOption = None,
    tool_calls: ToolCallsOption = None,
    vision: VisionOption = None,
    reasoning: ReasoningOption = None,
    temperature: TemperatureOption = None,
    max_tokens: MaxTokensOption = None,
    max_turns: MaxTurnsOption = 24,
    no_compaction: Annotated[
        bool,
        typer.Option("--no-compaction", help="Send the whole history (no summary of old turns)."),
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="An agent file (TOML) as FILE or FILE:NAME (docs/teams.md)."),
    ] = None,
) -> None:
    """Chat with an agent in the terminal: streamed answers, live tool calls, steering while
    it works (Enter), /follow, Ctrl-C to stop a run, stored sessions (--session)."""
    import sys

    from yiemagent.cli.chat.setup import ChatOptions, build_setup
    from yiemagent.cli.mcp_options import refuse_lone_bounds
    from yiemagent.cli.options import DEFAULT_MODEL, reasoning_level
    from yiemagent.cli.teams import refuse_factory, refuse_sampling_with_agent
    from yiemagent.errors import ConfigError
    from yiemagent.sessions import check_session_id

    if session is not None:  # "" too: no name is not "start a new session"
        try:
            check_session_id(session)
        except ConfigError as exc:
            raise ConfigError(f"--session: {exc}") from None
    refuse_lone_bounds(mcp, mcp_url, timeout_s=mcp_timeout, max_message_bytes=mcp_max_message_bytes)
    if agent is not None:
        refuse_factory(agent, "chat")
        refuse_sampling_with_agent(agent, temperature, max_tokens)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError('yiem chat needs a terminal; for one prompt use: yiem run "..."')
    options = ChatOptions(
        model=model or DEFAULT_MODEL,
        tools=tools,
        session=session,
        system=system,
        write_tools=write_tools,
        mcp=list(mcp or []),
        mcp_urls=list(mcp_url or []),
        mcp_timeout_s=mcp_timeout,
        mcp_max_message_bytes=mcp_max_message_bytes,
        base_url=base_url,
        tool_calls=tool_calls,
        compaction=not no_compaction,
        agent=agent,
        vision=vision,
        reasoning=reasoning_level(reasoning),
        temperature=temperature,
        max_tokens=max_tokens,
        max_turns=max_turns,
    )
    setup = build_setup(options)
    from yiemagent.cli.chat._app import run_chat

    code = run_chat(setup)
    if code:
        raise typer.Exit(code)
