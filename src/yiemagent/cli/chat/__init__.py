"""`yiem chat`: an interactive terminal agent you can steer while it works (DESIGN §15).

Public: `chat` (the typer command `yiem` registers) and `ChatOptions`. The terminal app
(`app.py`, prompt_toolkit input and rich output), the live view of a run (`view.py`), the
slash commands (`commands.py`), the approval questions (`approvals.py`), the chat's
agent, tools and session (`setup.py`), the model's background load (`loading.py`) and the
MCP servers (`mcp_servers.py`) are internals of the command. The helpers see the app
through the `host.ChatHost` protocol (approvals through `approvals.Asker`), never through
`app.py`, so the package has no import circle. See docs/chat.md.
"""

from yiemagent.cli.chat.command import chat as chat

__all__ = ["chat"]
