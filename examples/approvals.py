"""A tool call held for a person's approval, on the embedded model (docs/approvals.md).

The run stops with the call held; the held state is stored in `approvals.db`, so the
decision could come from another process. Run: .venv/bin/python examples/approvals.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from yiemagent import Agent, tool
from yiemagent.sessions import SqliteSessionStore


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: the file to delete.
    """
    Path(path).unlink()
    return f"deleted {path}"


async def main(yes: bool) -> None:
    folder = Path(tempfile.gettempdir()) / "yiem-approvals"
    folder.mkdir(exist_ok=True)
    (folder / "approvals.db").unlink(missing_ok=True)
    (folder / "old.log").write_text("stale\n")
    store = SqliteSessionStore(folder / "approvals.db")
    agent = Agent(tools=[delete_file], session_store=store, session_id="cleanup")
    reply = await agent.prompt(f"Delete the file {folder / 'old.log'}")
    if not agent.pending_approvals:
        print("the model did not call delete_file:", reply.text)
    for pending in agent.pending_approvals:
        print(f"held: {pending.tool_name}({pending.arguments})")
        if yes:
            agent.approve(pending.tool_call_id)
        else:
            agent.reject(pending.tool_call_id, reason="keep it for now")
    if agent.pending_approvals:
        answer = await agent.resume()
        print(answer.text)
    print("old.log still there:", (folder / "old.log").exists())
    await agent.close()


if __name__ == "__main__":
    asyncio.run(main(yes="--yes" in sys.argv))
