"""`yiem`: run an agent from the command line, offline on the embedded model by default.

    yiem run "What is 17 * 23? Use the calculator."
    yiem run "What time is it in Tokyo?" --json
    yiem run "Summarise README.md" --tools ./my_tools --model openai/gpt-4o-mini
    yiem models
    yiem models install local/qwen2.5-coder-1.5b
    yiem chat                 (interactive; see yiemagent/cli/chat/)
    yiem run "..." --mcp "python server.py"     # plus an MCP server's tools
    yiem mcp serve --tools ./my_tools           # tool files as an MCP server
    yiem serve                                  # the chat page and API on 127.0.0.1:8000

Default tools are the example tool files shipped inside the package
(`yiemagent/cli/default_tools/`: `get_time`, `calculator`, `read_file`; `examples/tools` in
the repository points there). Every error prints one line to stderr and exits non-zero, and
so does a run that reaches `--max-turns` before the model answers (exit 1); Ctrl-C aborts
the run cleanly and exits 130 (DESIGN §8).
"""

from __future__ import annotations

# isort: off
from yiemagent.cli._starting import started  # first: Ctrl-C while the rest loads is quiet

# isort: on
import asyncio
import contextlib
import dataclasses
import errno
import inspect
import json
import os
import re
import shlex
import signal as os_signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from yiemagent.cli.approvals import NOT_ASKED_ERROR, UNAPPROVED
from yiemagent.cli.batch import batch as batch_command, expand_ray_flag
from yiemagent.cli.chat import chat as chat_command
from yiemagent.cli.eval_cmd import eval_command
from yiemagent.cli.mcp_cmd import mcp_app
from yiemagent.cli.models_cmd import models_app
from yiemagent.cli.options import (
    DEFAULT_MODEL,
    DEFAULT_SYSTEM,
    DEFAULT_TOOLS_DIR,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OUTPUT_CLOSED,
    EXIT_TERMINATED,
    BaseUrlOption,
    CliError,
    MaxTokensOption,
    MaxTurnsOption,
    McpMaxMessageBytesOption,
    McpOption,
    McpTimeoutOption,
    McpUrlOption,
    OutputClosed,
    ReasoningOption,
    TemperatureOption,
    ToolCallsOption,
    ToolsOption,
    VisionOption,
    error_line,
    interruptible,
    keep_stdout_for_output,
    load_tool_folder,
    no_tool_files_note,
    reasoning_ignored,
    reasoning_level,
    resolve_model,
    run_signals,
    sigterm_raises,
    silence_closed_output,
    unwritable_output,
)
from yiemagent.cli.serve import serve as serve_command
from yiemagent.cli.sessions_cmd import sessions_app
from yiemagent.cli.teams import AgentOption, refuse_sampling_with_agent, run_agent_file
from yiemagent.cli.trace import start_tracing, stop_tracing, trace as trace_command
from yiemagent.errors import ConfigError, ProviderError, ToolLoadError, YiemAgentError
from yiemagent.types import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    DocumentContent,
    ImageContent,
    Model,
    TextContent,
    UsageLimits,
    UserMessage,
)

__all__ = ["app", "main"]

EXIT_USAGE = 2
"""A usage error, such as an empty prompt: the status click gives its own (a bad option)."""

if TYPE_CHECKING:
    from typer._click import Context  # typer's own copy of click

    from yiemagent.cli.render import EventPrinter, JsonPrinter


class _Commands(typer.core.TyperGroup):
    """The `yiem` commands, whose output's reader may go away (`yiem models | head -1`):
    typer met the BrokenPipeError with a bare exit 1; it is `OutputClosed` instead. (What
    a rich `Console` prints, such as the help, ends so in rich itself: quietly, exit 1.)"""

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise OutputClosed from None


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="yiemagent: run an LLM agent that calls tools (offline on the embedded model).",
)


def _print_version(asked: bool) -> None:
    if asked:
        from yiemagent import __version__

        print(f"yiem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed yiemagent's version and exit.",
        ),
    ] = False,
) -> None:
    """yiemagent: run an LLM agent that calls tools (offline on the embedded model)."""


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, ToolLoadError):
        failures = "; ".join(f"{path}: {reason}" for path, reason in exc.failures)
        return f"tool files failed to load: {failures}"
    return error_line(exc)


def _load_local(model: Model, err: Console) -> None:
    """Assemble (first time) and load the embedded model, showing progress on stderr.

    The assembly is Python and runs here, so Ctrl-C during it removes its temporary file;
    only llama.cpp's load, which cannot be interrupted, runs on a worker thread."""
    from rich.progress import BarColumn, DownloadColumn, Progress, Task, TextColumn
    from rich.text import Text

    from yiemagent.ai.providers.local.runtime import load_runtime, loaded_runtime
    from yiemagent.ai.providers.local.weights import ensure_model_file, local_spec

    class AssembledBytes(DownloadColumn):
        """The bytes of the model file assembled so far; nothing while there is no count."""

        def render(self, task: Task) -> Text:
            return Text("") if task.total is None else super().render(task)

    spec = local_spec(model.id)
    if loaded_runtime(spec) is not None:
        return
    if not err.is_terminal:  # a bar in a log or a pipe is only a stray blank line
        ensure_model_file(spec)
        runtime = interruptible(lambda: load_runtime(spec))
    else:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            AssembledBytes(),
            console=err,
            transient=True,
        ) as progress:
            task = progress.add_task(f"Preparing {spec.name}", total=None)

            def on_bytes(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            ensure_model_file(spec, progress=on_bytes)
            # llama.cpp's load has no bytes to count: a pulsing bar, no "0/? bytes"
            progress.update(task, description=f"Loading {spec.name}", total=None, completed=0)
            # os._exit on Ctrl-C skips the `with`: stop the bar first, or it is drawn again
            # after "yiem: interrupted" and the shell's cursor stays hidden
            runtime = interruptible(lambda: load_runtime(spec), progress.stop)
    err.print(f"[dim]{escape(spec.name)} loaded in {runtime.load_s:.1f} s[/]")


def _load_attachments(
    paths: list[Path], model: Model, err: Console
) -> list[ImageContent | DocumentContent]:
    """The `--attach` files as content blocks, checked before anything is sent; a model that
    cannot read them gets a one-line warning on stderr (and a text stand-in for each).

    Raises:
        CliError: a file is missing, too large, or neither an image nor a PDF.
    """
    from yiemagent.ai.attachments import AttachmentError, attachment_warning, load_attachments

    try:
        blocks = load_attachments(paths)
    except AttachmentError as exc:
        raise CliError(f"--attach {exc}") from None
    warning = attachment_warning(model, blocks)
    if warning:
        err.print(f"[yellow]yiem: warning:[/] {escape(warning)}")
    return blocks


def _load_tools(directory: Path | None, model: Model, err: Console) -> AgentContext:
    from yiemagent.tools import ToolStore, offers_list_tools
    from yiemagent.tools.builtin import LIST_TOOLS_NAME

    store = ToolStore("cli")

    def warn(text: str) -> None:
        err.print(f"[yellow]yiem: warning:[/] {escape(text)}")

    load_tool_folder(store, directory or DEFAULT_TOOLS_DIR, warn)
    note = no_tool_files_note(directory) if directory is not None else None
    if note:
        warn(note)
    if not offers_list_tools(model):
        store.unregister(LIST_TOOLS_NAME)
    return AgentContext(tools=list(store.tools.values()))


async def _run_loop(
    prompt: UserMessage,
    context: AgentContext,
    config: AgentLoopConfig,
    printer: EventPrinter | JsonPrinter,
    yes: bool = False,
) -> tuple[str, Any]:
    """Run one prompt, asking for each held tool call; returns the run's end
    reason and its output (with an output type). When the printer's output is closed, the
    run is aborted (its tools stop) and the reason is "output_closed"; a run that ended
    well after a held call went unrun for want of a terminal ends `UNAPPROVED`."""
    from yiemagent.cli.approvals import (
        QuestionStopped,
        ask_approvals,
        ask_on_this_thread,
        rejected_held_calls,
    )
    from yiemagent.loop import agent_loop, agent_loop_continue

    abort = AbortSignal()
    loop = asyncio.get_running_loop()
    not_asked = False
    printer.on_closed = lambda: abort.abort("output closed")

    def on_signal(why: str) -> None:
        if abort.aborted:  # a second signal: do not wait for the run to wind down
            sys.stderr.write(f"yiem: {why}\n")
            os._exit(EXIT_INTERRUPTED if why == "interrupted" else EXIT_TERMINATED)
        abort.abort(why)

    # SIGTERM (a supervisor, `timeout`, `kill`) winds the run down as Ctrl-C does: the
    # answer's line is ended and the reason said, instead of a cut line and silence.
    with contextlib.suppress(NotImplementedError, RuntimeError):
        for signum, why in run_signals():
            loop.add_signal_handler(signum, on_signal, why)
    try:
        stream = agent_loop([prompt], context, config, abort)
        while True:
            reason, output = "stop", None
            async for event in stream:
                printer(event)
                if event.type == "agent_end":
                    reason, output = event.reason, event.output
            await stream.result()
            if reason != "awaiting_approval" or abort.aborted:
                break
            try:
                decisions = ask_on_this_thread(lambda: ask_approvals(context, yes=yes))
            except QuestionStopped as stop:  # the run ends as on any other abort: its
                abort.abort(stop.reason)  # held calls answered, its usage shown
                decisions = rejected_held_calls(context, stop.decided)
            not_asked = not_asked or any(not d.by_user for d in decisions.values())
            approved = dataclasses.replace(config, approvals=decisions)
            stream = agent_loop_continue(context, approved, abort)
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(os_signal.SIGINT)
            loop.remove_signal_handler(os_signal.SIGTERM)
    if printer.closed:
        return "output_closed", None
    if abort.aborted:
        reason = "terminated" if abort.reason == "terminated" else "aborted"
    return (UNAPPROVED if not_asked and reason == "stop" else reason), output


def _prompt_from_stdin() -> str:
    """The prompt `yiem run -` reads: all of standard input, as UTF-8. An argument cannot
    hold a long prompt (a pasted file): Linux refuses one over 128 KiB before yiem starts.

    Raises:
        CliError: standard input is closed, or not UTF-8 text.
    """
    if sys.stdin is None:
        raise CliError("the prompt is - but standard input is closed")
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(
            f"the prompt on standard input is not UTF-8 text (byte {data[exc.start]:#04x} at "
            f"offset {exc.start})"
        ) from None


def _priced(model: Model) -> bool:
    """Whether `model` has a price, or needs none (it runs here)."""
    return model.api in ("local", "faux") or bool(model.cost.input or model.cost.output)


@app.command()
def run(
    prompt: Annotated[
        str, typer.Argument(help="What to ask the agent; - reads it from standard input.")
    ],
    tools: ToolsOption = None,
    model: Annotated[
        str, typer.Option("--model", help="Model as provider/id (see `yiem models`).")
    ] = DEFAULT_MODEL,
    base_url: BaseUrlOption = None,
    tool_calls: ToolCallsOption = None,
    vision: VisionOption = None,
    reasoning: ReasoningOption = None,
    attach: Annotated[
        list[Path] | None,
        typer.Option(
            "--attach",
            help="An image (PNG, JPEG, GIF, WebP; up to 20 MB) or PDF (up to 32 MB) to give "
            "the model with the prompt (repeatable).",
        ),
    ] = None,
    system: Annotated[str, typer.Option("--system", help="System prompt.")] = DEFAULT_SYSTEM,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print every event as a JSON line.")
    ] = False,
    max_turns: MaxTurnsOption = 8,
    max_tokens: MaxTokensOption = None,
    temperature: TemperatureOption = None,
    mcp: McpOption = None,
    mcp_url: McpUrlOption = None,
    mcp_timeout: McpTimeoutOption = None,
    mcp_max_message_bytes: McpMaxMessageBytesOption = None,
    max_cost: Annotated[
        float | None, typer.Option("--max-cost", min=0, help="Stop the run at this cost (USD).")
    ] = None,
    otel: Annotated[
        bool, typer.Option("--otel", help="OpenTelemetry spans: OTLP or JSON on stderr.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="Approve every tool call held for approval.")
    ] = False,
    output_schema: Annotated[
        Path | None,
        typer.Option("--output-schema", help="JSON Schema file; print the validated JSON."),
    ] = None,
    agent: AgentOption = None,
) -> None:
    """Run one prompt: stream the answer, show each tool call, print the usage."""
    from yiemagent.cli.mcp_options import refuse_lone_bounds
    from yiemagent.cli.render import EventPrinter, JsonPrinter, PipeConsole

    if prompt == "-":
        prompt = _prompt_from_stdin()
    if not prompt.strip():
        raise CliError(
            'the prompt is empty: say what to ask, e.g. yiem run "What time is it in Tokyo?"',
            EXIT_USAGE,
        )
    if sys.stdout is None:  # started with >&-: nowhere to put the answer, so do not ask
        raise CliError("standard output is closed: there is nowhere to write the answer")
    refuse_lone_bounds(mcp, mcp_url, timeout_s=mcp_timeout, max_message_bytes=mcp_max_message_bytes)
    level = reasoning_level(reasoning)
    err = PipeConsole(stderr=True, highlight=False, soft_wrap=True, emoji=False)
    # stdout: the event log with --json (its agent_end holds the value), else with
    # --output-schema the JSON value only
    out = sys.stdout if output_schema is None or json_output else sys.stderr
    printer = (
        JsonPrinter(out) if json_output else EventPrinter(out=out, err=err, max_tokens=max_tokens)
    )
    if agent is not None:  # an agent file: cli/teams.py runs it
        flags = {"--tools": tools, "--mcp": mcp or mcp_url, "--max-cost": max_cost,
                 "--output-schema": output_schema, "--otel": otel, "--attach": attach,
                 "--system": system != DEFAULT_SYSTEM}  # fmt: skip
        refuse_sampling_with_agent(agent, temperature, max_tokens)
        with contextlib.redirect_stdout(sys.stderr), sigterm_raises():
            resolved = resolve_model(model, base_url, tool_calls, vision, level is not None)
            reason, answer = run_agent_file(
                agent, prompt, resolved, printer, yes=yes, max_turns=max_turns, flags=flags,
                load_model=lambda m: _load_local(m, err), reasoning=level,
                warn=lambda text: err.print(f"[yellow]yiem: warning:[/] {escape(text)}"),
            )  # fmt: skip
        _finish(reason, None, printer, max_turns, None)
        if answer is not None:
            print(answer, flush=True)
        return
    # stdout is the answer (or the JSON lines): whatever tool files print goes to stderr.
    # SIGTERM before the run (MCP servers starting) or after it ends the command through
    # its `finally`, so the servers it started stop; during the run, the run winds down.
    with contextlib.redirect_stdout(sys.stderr), sigterm_raises():
        resolved = resolve_model(model, base_url, tool_calls, vision, level is not None)
        if ignored := reasoning_ignored(resolved, level):
            err.print(f"[yellow]yiem: warning:[/] {escape(ignored)}")
        attachments = _load_attachments(attach or [], resolved, err)
        context = _load_tools(tools, resolved, err)
        context.system_prompt = system
        limits = None if max_cost is None else UsageLimits(max_cost_usd=max_cost)
        if limits is not None and not _priced(resolved):
            err.print(
                f"yiem: warning: no price is known for {resolved.provider}/{resolved.id}, so "
                "--max-cost counts its calls as free (prices come from genai-prices: "
                f"{Path(sys.executable).parent / 'pip'} install genai-prices)"
            )
        tracing = start_tracing() if otel else None
        config = AgentLoopConfig(
            model=resolved,
            max_turns=max_turns,
            usage_limits=limits,
            tracer_provider=tracing,
            reasoning=level,
            max_tokens=max_tokens,
            temperature=temperature,
        )
        if output_schema is not None:
            from yiemagent.cli.approvals import load_output_schema

            config.output_type = load_output_schema(output_schema)
            if isinstance(printer, EventPrinter):
                printer.output_tool = config.output_type.name
        close_mcp = None
        if mcp or mcp_url:
            from yiemagent.cli.mcp_options import attach_servers

            close_mcp = attach_servers(
                context, mcp or [], mcp_url or [], mcp_timeout, mcp_max_message_bytes
            )
        try:
            if resolved.api == "local":
                _load_local(resolved, err)
            reason, output = asyncio.run(
                _run_loop(
                    UserMessage([TextContent(prompt), *attachments]), context, config, printer, yes
                )
            )
        finally:
            if close_mcp is not None:
                close_mcp()
            stop_tracing(tracing)
    _finish(reason, output, printer, max_turns, None if json_output else output_schema)


def _finish(
    reason: str, output: Any, printer: Any, max_turns: int, output_schema: Path | None
) -> None:
    """How `yiem run` ends: the JSON output, or one error line and a non-zero exit."""
    if reason == "output_closed":
        raise OutputClosed
    if reason == "aborted":
        raise CliError("interrupted", EXIT_INTERRUPTED)
    if reason == "terminated":
        raise CliError("terminated", EXIT_TERMINATED)
    if reason == "max_turns":  # the loop ends so only while tool calls are still pending
        calls = "1 model call" if max_turns == 1 else f"{max_turns} model calls"
        raise CliError(
            f"the turn limit was reached after {calls} without an answer; "
            f"raise it with --max-turns, e.g. --max-turns {max_turns * 2}"
        )
    final = printer.final
    if reason == "usage_limit":
        detail = final.error_message if final is not None else "usage limit reached"
        raise CliError(f"the run was stopped: {detail}; raise it with --max-cost")
    if reason == "guardrail":
        detail = final.error_message if final is not None else "a guardrail tripped"
        raise CliError(f"the run was stopped: {detail}")
    if reason == "error" or (final is not None and final.stop_reason == "error"):
        detail = final.error_message if final is not None else None
        raise CliError(f"the run failed: {detail or 'unknown error'}")
    if reason == UNAPPROVED:
        raise CliError(NOT_ASKED_ERROR)
    if output_schema is not None:
        print(json.dumps(output, ensure_ascii=False), flush=True)


app.command("chat")(chat_command)  # `yiem chat`: yiemagent/cli/chat/
app.command("batch")(batch_command)  # `yiem batch`: yiemagent/cli/batch.py
app.add_typer(mcp_app, name="mcp")  # `yiem mcp list|serve`: yiemagent/cli/mcp_cmd.py
app.add_typer(models_app, name="models")  # `yiem models [install]`: yiemagent/cli/models_cmd.py
app.add_typer(sessions_app, name="sessions")  # `yiem sessions [release]`: cli/sessions_cmd.py
app.command("trace")(trace_command)  # `yiem trace`: yiemagent/cli/trace.py
app.command("eval")(eval_command)  # `yiem eval`: yiemagent/cli/eval_cmd.py
app.command("serve")(serve_command)  # `yiem serve`: yiemagent/cli/serve.py


_PROGRAMMERS_SECTION = re.compile(r"^(Args|Arguments|Returns|Yields|Raises):$", re.MULTILINE)


def _unwrapped(doc: str) -> str:
    """A docstring as help text: the lines of each paragraph joined, so the terminal wraps
    them where it needs to instead of at the source's line breaks. It ends before the first
    section written for programmers (`Raises:` naming `CliError`, `Args:`), which a user
    reading `--help` has no use for."""
    text = inspect.cleandoc(doc)
    section = _PROGRAMMERS_SECTION.search(text)
    if section is not None:
        text = text[: section.start()]
    return "\n\n".join(" ".join(p.split()) for p in text.strip().split("\n\n"))


def _help_from_docstrings(typer_app: typer.Typer) -> None:
    for info in typer_app.registered_commands:
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = _unwrapped(info.callback.__doc__)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _help_from_docstrings(group.typer_instance)


def _no_type_for_flags() -> None:
    """Show a flag as `--json`, not `--json <bool>`: typer's rich help gives every option
    its type, a flag's too, though a flag takes no value."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_yiem_flags", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich._yiem_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_help_from_docstrings(app)
_no_type_for_flags()


def _escape_what_the_locale_cannot_encode() -> None:
    """Write what stdout cannot encode as backslash escapes, as Python does for stderr,
    instead of failing the run: under a non-UTF-8 locale (LC_ALL=C) most of Unicode, and
    under UTF-8 a lone surrogate (a tool's output of bytes that were not UTF-8). In a
    `--json` line the escape is JSON's own (`\\udcff`), so the line stays valid."""
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]


# The commands whose one argument is a text of several words, by that argument's name.
_ONE_TEXT_ARGUMENT = {
    "yiem run": ("prompt", "the prompt"),
    "yiem mcp list": ("command", "the server's command line"),
}


def _quote_them(ctx: Any, message: str) -> str:
    """' (the prompt is one argument: put it in quotes, yiem run "What time is it")' for the
    click context of an "unexpected extra argument" error of `yiem run` or `yiem mcp list`,
    whose text left unquoted arrives as several arguments; "" for other commands. `message`
    is click's, ending with the extra words in parentheses."""
    path = getattr(ctx, "command_path", None)
    if path not in _ONE_TEXT_ARGUMENT:
        return ""
    name, what = _ONE_TEXT_ARGUMENT[path]
    first = getattr(ctx, "params", {}).get(name)
    extra = re.search(r"\(([^()]*)\)$", message)
    if not isinstance(first, str) or extra is None:
        return ""
    words = f"{first} {extra[1]}"
    # double quotes, as a person writes them, unless the shell would expand what they hold
    quoted = shlex.quote(words) if set('"$`\\!') & set(words) else f'"{words}"'
    dashes = "-- " if words.startswith("-") else ""  # else it is taken for an option
    return f" ({what} is one argument: put it in quotes, {path} {dashes}{quoted})"


def _commands_of(ctx: Any) -> str:
    """' (the commands of yiem models: install; yiem models alone lists the models)' for
    the click context of a "No such command" error (`yiem models list` said only that);
    "" when the context is no group's. Typer's click is its own (`typer._click`), so the
    context is read by its attributes."""
    group: Any = getattr(ctx, "command", None)
    if not callable(getattr(group, "list_commands", None)):
        return ""
    names = [
        name
        for name in group.list_commands(ctx)
        if (found := group.get_command(ctx, name)) is not None and not found.hidden
    ]
    path = ctx.command_path
    alone = f"; {path} alone lists the models" if group.name == "models" else ""
    return f" (the commands of {path}: {', '.join(names)}{alone})"


def _say(err: Console, line: str) -> None:
    """Print `line` (Rich markup) on stderr, unwrapped. A stderr that is gone (a terminal
    that hung up: EIO; a pipe whose reader died: EPIPE; closed) takes nothing: it is pointed
    at /dev/null, so what Python still holds for it is not written again at exit, and the
    exit status alone says how the command ended."""
    try:
        err.print(line, soft_wrap=True)
    except (OSError, ValueError, SystemExit):  # Rich exits with 1 at a broken pipe
        with contextlib.suppress(AttributeError, OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, sys.stderr.fileno())
            finally:
                os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    """The `yiem` console script; returns (and exits with) the exit status."""
    err = Console(stderr=True, highlight=False, emoji=False)
    _escape_what_the_locale_cannot_encode()
    restore_stdout = keep_stdout_for_output()
    code = 0
    try:
        args = expand_ray_flag(sys.argv[1:] if argv is None else argv)
        result = app(args=args, prog_name="yiem", standalone_mode=False)
        # Not standalone, click returns the status of a Ctrl-C (130) or `Exit` instead of
        # raising; our commands return None.
        if isinstance(result, int) and not isinstance(result, bool) and result:
            code = result
            if code == EXIT_INTERRUPTED:
                _say(err, "yiem: interrupted")
    except OutputClosed as exc:  # quietly, as a tool that SIGPIPE ends
        code = exc.code
        silence_closed_output()
    except CliError as exc:
        code = exc.code
        prefix = "" if code in (EXIT_INTERRUPTED, EXIT_TERMINATED) else "error: "
        _say(err, f"yiem: {prefix}{escape(_one_line(exc))}")
    except (ProviderError, ToolLoadError, ConfigError, YiemAgentError, OSError) as exc:
        code = EXIT_ERROR
        _say(err, f"yiem: error: {escape(_one_line(exc))}")
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
        _say(err, "yiem: interrupted")
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.Abort:
        code = EXIT_INTERRUPTED
        _say(err, "yiem: interrupted")
    except Exception as exc:  # click usage errors and anything unexpected: still one line
        code = getattr(exc, "exit_code", EXIT_ERROR)
        show = getattr(exc, "format_message", None)
        text = " ".join(str(show() if callable(show) else _one_line(exc)).split())
        if type(exc).__name__ == "NoSuchOption" and "run" in (argv or sys.argv[1:]):
            text += ' (a prompt that starts with "-" goes after --: yiem run -- "-5 + 3?")'
        if text.startswith("Got unexpected extra argument"):
            text += _quote_them(getattr(exc, "ctx", None), text)
        if text.startswith("No such command") and "Did you mean" not in text:
            text += _commands_of(getattr(exc, "ctx", None))  # which there are
        if text:  # `yiem` alone has printed the help and raises with no message
            _say(err, f"yiem: error: {escape(text)}")
    try:  # what is still buffered: its reader may have gone after the last write
        sys.stdout.flush()
    except BrokenPipeError:
        code = code or EXIT_OUTPUT_CLOSED
        silence_closed_output()
    except OSError as exc:
        # not a closed stdout (>&-) but a full disk, say; one line, so only when no other
        # error (an earlier write's, to the same full disk) was said
        if exc.errno != errno.EBADF and not code:
            code = EXIT_ERROR
            _say(err, f"yiem: error: {escape(str(unwritable_output(exc)))}")
    except (AttributeError, ValueError):  # no stdout (>&-), or closed
        pass
    restore_stdout()
    if argv is None:
        sys.exit(code)
    return code


started()  # loaded: `main` and the commands handle the signals from here

if __name__ == "__main__":
    main()
