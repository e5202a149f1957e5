"""`ChatHost`: what the slash commands, the model loader and the MCP servers may use of the
running chat (DESIGN §15).

`app.ChatApp` is the one implementation; the helpers name this protocol instead of the app
class, so none of them imports `_app.py` (which imports each of them) and `yiem chat`'s
modules form no import circle.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio

    from prompt_toolkit.application import Application
    from rich.console import Console
    from rich.text import Text

    from yiemagent.cli.chat._view import LiveView
    from yiemagent.cli.chat.setup import ChatSetup
    from yiemagent.types import AssistantMessage, PendingApproval, UserMessage

__all__ = ["ChatHost"]


class ChatHost(Protocol):
    """The running chat, as its helpers see it. Every member is used on the event loop
    thread."""

    setup: ChatSetup
    """The agent, tools, session and model being chatted with."""
    view: LiveView
    """The live view of the current run (its `status` line shows load progress)."""
    app: Application[int]
    """The prompt_toolkit application (`invalidate()` redraws, `renderer.clear()`)."""
    ready: asyncio.Task[None] | None
    """What the next prompt waits for (the model's load), or None."""
    steered: list[UserMessage]
    """The steering messages this chat queued, to tell them from prompts (`/undo`)."""

    @property
    def console(self) -> Console:
        """Where committed output is printed (above the input line)."""
        ...

    @property
    def busy(self) -> bool:
        """True while a run is in progress."""
        ...

    def say(self, text: str, style: str = "dim") -> None:
        """Print one line in `style` above the input line."""
        ...

    async def ask(self, question: Text) -> str:
        """Show `question` and return the next entered line, lowered ("" when aborted)."""
        ...

    def follow_up(self, text: str) -> None:
        """Queue `text` to run after the current run (or start it now when idle)."""
        ...

    def begin(self, work: Awaitable[AssistantMessage | None], *, steers: bool = True) -> None:
        """Run `work` (a prompt or a resume) as the one run task; `steers=False`: lines typed
        meanwhile wait for it to end, then run as prompts (a session switch)."""
        ...

    def pending_approvals(self) -> list[PendingApproval]:
        """The agent's tool calls held for approval."""
        ...

    def ask_held(self) -> None:
        """Ask about the held tool calls now, then resume (idle only)."""
        ...

    async def replace_agent(self, session_name: str) -> None:
        """Switch the chat to an agent on session `session_name`."""
        ...

    def exit(self) -> None:
        """Leave the chat."""
        ...
