"""`help(Agent)` lists every constructor argument with what it takes, so a reader at the
REPL need not open `docs/agent.md` to build one."""

from __future__ import annotations

import inspect
import pydoc
import re

from yiemagent import Agent


def test_help_on_agent_lists_every_constructor_argument() -> None:
    # it sent readers to docs/agent.md for the arguments and named only a few of them
    shown = pydoc.render_doc(Agent, "Help on %s:", renderer=pydoc.plaintext)
    args = shown.split("Args:", 1)[1].split("Raises:", 1)[0]
    lines = [line.removeprefix(" |  ") for line in args.splitlines() if line.strip(" |")]
    indent = min(len(line) - len(line.lstrip()) for line in lines)
    described = [
        match.group(1)
        for line in lines
        if len(line) - len(line.lstrip()) == indent
        and (match := re.match(r"\s*(\w+): \S", line)) is not None
    ]
    parameters = [name for name in inspect.signature(Agent.__init__).parameters][1:]
    assert described == parameters  # each once, in the signature's order
