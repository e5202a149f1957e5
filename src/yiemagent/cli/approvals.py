"""`yiem run`'s held tool calls and `--output-schema` (DESIGN §14; docs/approvals.md,
docs/output.md).

`continue_held` asks y/n on the terminal for each tool call a run held (or approves all with
`--yes`; without a terminal it rejects them, saying so) and returns the decisions for the
continuing run. `load_output_schema` reads the JSON Schema file of `--output-schema`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from yiemagent.errors import ConfigError
from yiemagent.types import AgentContext, OutputSpec, ToolApproval

__all__ = ["NO_TERMINAL_REASON", "ask_approvals", "load_output_schema"]

NO_TERMINAL_REASON = "no terminal to ask the user for approval (run with --yes to approve)"


def ask_approvals(
    context: AgentContext,
    *,
    yes: bool,
    ask: Callable[[str], str] | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, ToolApproval]:
    """A decision for each call of the transcript's last assistant message held for approval.

    Args:
        context: the run's context after it ended "awaiting_approval".
        yes: approve every held call without asking (`--yes`).
        ask: reads one answer to a question (default: `input` on the terminal, when stdin
            is one); "y"/"yes" approves, anything else (an empty line too) rejects.
        say: where to print what was decided (default: stderr).
    """
    from yiemagent.loop import held_tool_calls

    held = held_tool_calls(context.messages)
    if held is None:
        return {}
    shown = [
        (call.id, f"{call.name}({json.dumps(call.arguments, ensure_ascii=False)})")
        for call in held[1]
    ]
    return decide(shown, yes=yes, ask=ask, say=say)


def decide(
    shown: list[tuple[str, str]],
    *,
    yes: bool,
    ask: Callable[[str], str] | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, ToolApproval]:
    """A decision for each held call, given as (tool-call id, how the call is shown), asked
    on the terminal one after another (arguments as for `ask_approvals`)."""
    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    if ask is None and not yes and sys.stdin is not None and sys.stdin.isatty():
        ask = input
    decisions: dict[str, ToolApproval] = {}
    for call_id, call in shown:
        if yes:
            decisions[call_id] = ToolApproval(True)
            say(f"approved (--yes): {call}")
        elif ask is None:
            decisions[call_id] = ToolApproval(False, NO_TERMINAL_REASON)
            say(f"rejected: {call}: {NO_TERMINAL_REASON}")
        else:
            try:
                answer = ask(f"Run {call}? [y/N] ")
            except EOFError:
                answer = ""
            approved = answer.strip().lower() in ("y", "yes")
            decisions[call_id] = ToolApproval(approved, None if approved else "the user said no")
    return decisions


def load_output_schema(path: Path) -> OutputSpec[Any]:
    """The output type of `--output-schema FILE.json`.

    Raises:
        ConfigError: the file is missing, not JSON, or not a valid JSON Schema object.
    """
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"--output-schema {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"--output-schema {path}: not JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise ConfigError(f"--output-schema {path}: a JSON Schema must be an object")
    try:
        return OutputSpec(schema)
    except ConfigError as exc:
        raise ConfigError(f"--output-schema {path}: {exc}") from None
