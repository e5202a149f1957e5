"""Questions the chat asks before a tool call runs (DESIGN §14).

- `writeTool` (`--write-tools DIR`): the new tool's name, argument schema and code are shown,
  and the write happens only after a "y". Anything else blocks the call; the model gets the
  error result "the user declined ...". Code that writeTool would refuse (a part that does
  not parse) is shown but not asked about: the call is blocked with writeTool's own reason,
  which the model reads and can retry on, and a person is not asked to approve a write that
  cannot happen.
- Calls held for approval (a run that ends with reason "awaiting_approval" and
  `agent.pending_approvals`): `Run tool(args)? [y/N/a(lways)]` for each, then
  `agent.approve(id)` / `agent.reject(id, reason)` and `agent.resume()`. "a" approves that
  tool for the rest of the chat; Ctrl-C at the question rejects every held call and stops
  (their error results are written, the model is not called). This uses the approvals API
  of approvals when the Agent has it (`pending_approvals`, `approve`, `reject`); with an
  Agent without it there is never anything pending and nothing is asked.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from rich.syntax import Syntax
from rich.text import Text

from yiemagent.cli.approvals import stop_held
from yiemagent.cli.chat._view import short_args
from yiemagent.tools import WriteToolError, function_source
from yiemagent.tools.write_tool import WRITE_TOOL_NAME
from yiemagent.types import AbortSignal, BeforeToolCallContext, BeforeToolCallResult

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["ApprovalGate", "Asker", "approval_question", "settle_pending_approvals"]

DECLINED = "The user declined to write this tool; do not retry it unless they ask."


def approval_question(tool_name: str, args: Any) -> Text:
    """`Run tool(args)? [y/N/a(lways)]`."""
    line = Text("Run ", style="bold yellow")
    line.append(f"{tool_name}({short_args(args)})", style="bold")
    line.append("? [y/N/a(lways)]", style="bold yellow")
    return line


class Asker(Protocol):
    """What the questions use of the terminal app (`app.ChatApp` is one). Not `ChatHost`:
    that names the chat's setup, which holds this module's `ApprovalGate`."""

    @property
    def console(self) -> Console:
        """Where the shown tool code is printed."""
        ...

    def say(self, text: str, style: str = "dim") -> None:
        """Print one line above the input line."""
        ...

    async def ask(self, question: Text) -> str:
        """Show `question` and return the next entered line, lowered ("" when aborted)."""
        ...

    @property
    def stopping(self) -> bool:
        """Whether Ctrl-C stopped the current run (its questions were answered "")."""
        ...


class ApprovalGate:
    """The chat's `before_tool_call` hook; `app` is set when the chat starts (before that,
    and without a terminal, every gated call is blocked)."""

    def __init__(self) -> None:
        self.app: Asker | None = None
        self.always: set[str] = set()
        """Tools approved for the rest of the chat ("a")."""

    async def __call__(
        self, context: BeforeToolCallContext, signal: AbortSignal
    ) -> BeforeToolCallResult | None:
        """Ask before `writeTool` runs; every other call passes."""
        if context.tool_call.name != WRITE_TOOL_NAME:
            return None
        app = self.app
        if app is None:
            return BeforeToolCallResult(block=True, reason=DECLINED)
        args = context.args if isinstance(context.args, dict) else {}
        refusal = show_write(app, args)
        if refusal is not None:
            app.say(f"not asked: writeTool would refuse this tool: {refusal}", "yellow")
            return BeforeToolCallResult(block=True, reason=refusal)
        question = Text(f"Write tool {args.get('name', '?')}? [y/N]", style="bold yellow")
        answer = await app.ask(question)
        written = answer in ("y", "yes")
        # The question and its answer stay in the scrollback.
        question.append(" yes" if written else " no", style="green" if written else "red")
        app.console.print(question)
        if written:
            return None
        app.say("not written", "yellow")
        return BeforeToolCallResult(block=True, reason=DECLINED)


def show_write(app: Asker, args: dict[str, Any]) -> str | None:
    """Print the tool a `writeTool` call would write: name, description, schema, and each
    code part as the function the file will hold (`function_source`).

    Returns:
        None, or why writeTool would refuse the code (its `WriteToolError` text, for the
        first part it refuses; that part is printed as given).
    """
    console = app.console
    head = Text("writeTool wants to add a tool: ", style="bold yellow")
    head.append(str(args.get("name", "?")), style="bold")
    console.print(head)
    if args.get("description"):
        console.print(Text(f"  {args['description']}", style="dim"))
    schema = json.dumps(args.get("inputSchema", {}), ensure_ascii=False)
    if len(schema) > 96:
        schema = json.dumps(args.get("inputSchema", {}), indent=2, ensure_ascii=False)
    console.print(
        Syntax(schema, "json", theme="ansi_dark", background_color="default"), soft_wrap=True
    )  # the code's own lines: wrapped to the width, rich would crop them
    schema_value = args.get("inputSchema")
    parts = [str(args.get("imports") or "")]
    refusal = None
    for part, signature in _CODE_PARTS:
        code = str(args.get(part) or "")
        if part != "executeCode" and not code.strip():
            continue
        try:  # as the file will have it (a whole function definition gets its call)
            parts.append(
                function_source(
                    part,
                    code,
                    schema_value if isinstance(schema_value, dict) else None,
                    str(args.get("name") or ""),
                )
            )
        except WriteToolError as exc:  # writeTool would refuse it: show it as given
            refusal = refusal or str(exc)
            parts.append(f"def {signature}:\n{_indent(code)}")
    code_text = "\n".join(part for part in parts if part)
    console.print(
        Syntax(code_text, "python", theme="ansi_dark", background_color="default"),
        soft_wrap=True,
    )
    return refusal


_CODE_PARTS = (
    ("executeCode", "execute(tool_call_id, args, signal, on_update)"),
    ("validateCode", "validate_arguments(args)"),
    ("prepareCode", "prepare_arguments(args)"),
)


def _indent(code: str) -> str:
    return "\n".join(f"    {line}" for line in code.splitlines())


async def settle_pending_approvals(app: Asker, agent: Any, gate: ApprovalGate) -> None:
    """Ask about each call the last run held, then resume; repeat while runs
    end holding calls. A no-op for an Agent without the approvals API.

    Args:
        app: where the questions are asked.
        agent: the chat's Agent (`pending_approvals`, `approve`, `reject`, `resume`).
        gate: the chat's gate (its `always` set is read and extended).
    """
    while True:
        held_calls = list(getattr(agent, "pending_approvals", None) or [])
        pending = [h for h in held_calls if getattr(h, "decision", None) is None]
        if not held_calls:
            return
        for held in pending:
            call_id, tool_name, args = _held_fields(held)
            if tool_name in gate.always:
                app.say(f"{tool_name}({short_args(args)}) approved (always)", "dim")
                agent.approve(call_id)
                continue
            question = approval_question(tool_name, args)
            answer = await app.ask(question)
            if app.stopping:  # Ctrl-C at the question: reject what is held, and stop
                question.append(" no: stopped (Ctrl-C)", style="red")
                app.console.print(question)
                await stop_held(agent)
                return
            approved = answer in ("y", "yes", "a", "always")
            if answer in ("a", "always"):
                gate.always.add(tool_name)
            # The question and its answer stay in the scrollback.
            outcome = (
                f" always: {tool_name} runs without asking for the rest of the chat"
                if tool_name in gate.always
                else (" yes" if approved else " no: rejected")
            )
            question.append(outcome, style="green" if approved else "red")
            app.console.print(question)
            if approved:
                agent.approve(call_id)
            else:
                agent.reject(call_id, "The user said no to this call.")
        await agent.resume()


def _held_fields(held: Any) -> tuple[str, str, Any]:
    if isinstance(held, dict):
        return (
            str(held.get("id") or held.get("tool_call_id")),
            str(held.get("tool_name") or held.get("name")),
            held.get("args", held.get("arguments", {})),
        )
    call_id = getattr(held, "id", None) or getattr(held, "tool_call_id", "")
    name = getattr(held, "tool_name", None) or getattr(held, "name", "")
    args = getattr(held, "args", None)
    if args is None:
        args = getattr(held, "arguments", {})
    return str(call_id), str(name), args
