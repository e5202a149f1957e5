"""Agent files (DESIGN §17): a team of agents described in TOML.

Public: `load_agent(path, name=None)` (also `yiemagent.load_agent`), and `AgentFile(path,
name=None)`, which builds the entry agent again and again with the file's MCP servers
started once (`yiem serve`). The agents themselves, handoffs, agents as tools and
guardrails are in `yiemagent.agent`; this package only reads files into them.
"""

from __future__ import annotations

from yiemagent.teams._file import AgentFile, load_agent

__all__ = ["AgentFile", "load_agent"]
