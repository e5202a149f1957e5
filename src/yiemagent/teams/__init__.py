"""Agent files (DESIGN §17): a team of agents described in TOML.

Public: `load_agent(path, name=None)` (also `yiemagent.load_agent`). The agents themselves,
handoffs, agents as tools and guardrails are in `yiemagent.agent`; this package only reads
files into them.
"""

from __future__ import annotations

from yiemagent.teams._file import load_agent

__all__ = ["load_agent"]
