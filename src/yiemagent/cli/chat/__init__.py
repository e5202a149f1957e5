"""`yiem chat`: an interactive terminal agent you can steer while it works (DESIGN §15).

Public: `chat`, the typer command `yiem` registers. The terminal app
(`_app`, prompt_toolkit input and rich output), the live view of a run (`_view`), the
slash commands (`_commands`), the approval questions (`_approvals`), the model's
background load (`_loading`) and the MCP servers (`_mcp_servers`) are private. `setup`
(the chat's agent, tools and session) stays public: `yiem serve` builds its compactor
with `setup.compactor_for`. The helpers see the app through the `_host.ChatHost`
protocol (approvals through `_approvals.Asker`), never through `_app`, so the package
has no import circle. See docs/chat.md.
"""

from yiemagent.cli.chat.command import chat as chat

__all__ = ["chat"]
