"""`yiem chat --agent` on a team whose router has `return_to_entry = true`
(docs/teams.md "Back to the entry"): after a prompt the router handed to a specialist, the
next prompt is the router's again, and the chat says so. A real terminal (tmux) on the
faux model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.chat._tmux import TOOLS, Pane, after

pytestmark = pytest.mark.timeout(180)


def test_the_next_prompt_goes_back_to_the_router(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    team = tmp_path / "team.toml"
    team.write_text(
        '[agents.router]\nsystem_prompt = "Route."\nhandoffs = ["helper"]\n'
        "return_to_entry = true\n\n"
        '[agents.helper]\ndescription = "Runs slow jobs."\nsystem_prompt = "Help."\n'
        f"tools = [{json.dumps(str(TOOLS))}]\n"
    )
    pane = Pane(data, ["--agent", str(team)])
    try:
        pane.ready()
        pane.type("mcp transfer_to_helper")  # the scripted model calls the transfer tool
        pane.wait(lambda s: after(s, "✓ transfer_to_helper", "⇢ helper answers", "tokens:"))
        pane.type("/tools")
        pane.wait(lambda s: after(s, "› /tools", "router answers the next prompt"))
        pane.type("hello")
        screen = pane.wait(lambda s: after(s, "› hello", "⇢ router answers", "tokens:"))
        assert "helper answers the next prompt" not in screen
    finally:
        pane.close()
