"""`yiem chat`: an interactive terminal agent you can steer while it works (DESIGN §15).

Public: `chat` (the typer command `yiem` registers) and `ChatOptions`. The terminal app
(`app.py`, prompt_toolkit input and rich output), the live view of a run (`view.py`), the
slash commands (`commands.py`), the approval questions (`approvals.py`) and the chat's
agent, tools and session (`setup.py`) are internals of the command. See docs/chat.md.
"""

from yiemagent.cli.chat.command import chat as chat

__all__ = ["chat"]
