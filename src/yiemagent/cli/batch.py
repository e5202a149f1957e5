"""`yiem batch`: run an agent over a JSONL task list, locally or on a Ray cluster (DESIGN §16).

    yiem batch tasks.jsonl --results results.jsonl [--model …] [--tools DIR] [--concurrency N]
        [--ray [ADDRESS]] [--retries N] [--timeout S]
        [--agent FILE.toml[:NAME] | FILE.py:FUNCTION | MODULE:FUNCTION]
        [--workers auto|tasks|pool] [--num-cpus N] [--rerun-failed] [--yes]
    yiem batch --summary results.jsonl

Exit status: 0 every task is done and ok; 1 some task failed (its line says why), was held
for approval (`--yes` approves held tool calls), or a bad input (one line on stderr); 130
interrupted (Ctrl-C: running tasks are recorded "interrupted" and run again by the same
command); 143 the same for SIGTERM. See `docs/batch.md`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from yiemagent.cli.options import (
    DEFAULT_MODEL,
    DEFAULT_SYSTEM,
    DEFAULT_TOOLS_DIR,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    BaseUrlOption,
    CliError,
    MaxTokensOption,
    MaxTurnsOption,
    ReasoningOption,
    TemperatureOption,
    ToolsOption,
    VisionOption,
    check_output_path,
    load_tool_folder,
    no_tool_files_note,
    reasoning_ignored,
    reasoning_level,
    resolve_model,
    results_file_option,
    sigterm_as_ctrl_c,
)
from yiemagent.cli.teams import (
    AgentFileFactory,
    refuse_agent_flags,
    refuse_sampling_with_agent,
    split_agent_option,
)
from yiemagent.errors import YiemAgentError
from yiemagent.files import import_function

if TYPE_CHECKING:
    from yiemagent.agent import Agent
    from yiemagent.batch import BatchTask
    from yiemagent.types import AgentTool, ThinkingLevel

__all__ = [
    "CliAgentFactory",
    "batch",
    "check_tool_folder",
    "expand_ray_flag",
    "import_factory",
    "library_warnings_shown",
]

LOCAL_RAY = "local"
"""`--ray` without an address: a Ray cluster started on this machine for the batch."""


def _cli_error(message: str, code: int = 1) -> YiemAgentError:
    """The CLI's one-line error (`CliError`)."""
    return CliError(message, code)


def expand_ray_flag(argv: Sequence[str]) -> list[str]:
    """Give a bare `--ray` of `yiem batch` or `yiem eval` its default value ("local"), so
    `--ray [ADDRESS]` takes an optional address: the next word is the address only when it
    looks like one ("auto", "local", "ray://…", or host:port)."""
    args = list(argv)
    if not args or args[0] not in ("batch", "eval"):
        return args
    out: list[str] = []
    for index, arg in enumerate(args):
        out.append(arg)
        if arg != "--ray":
            continue
        following = args[index + 1] if index + 1 < len(args) else None
        if following is None or not _looks_like_address(following):
            out.append(LOCAL_RAY)
    return out


def _looks_like_address(word: str) -> bool:
    return (
        word in ("auto", LOCAL_RAY)
        or word.startswith("ray://")
        or (":" in word and not word.endswith(".jsonl") and not word.startswith("-"))
    )


def _warn(text: str) -> None:
    print(f"yiem: warning: {text}", file=sys.stderr, flush=True)


def check_tool_folder(folder: Path) -> str:
    """Load the `--tools` folder of `yiem batch` or `yiem eval` once in the command's own
    process and warn of what is wrong with it (no tool file, files that fail), each line
    once with the command's `yiem: warning:` prefix; returns its absolute path for
    `CliAgentFactory`, whose agents (in worker processes too) load it again without a word.

    Raises:
        CliError: `folder` is not a folder, or it has tool files and none of them loads.
    """
    from yiemagent.tools import ToolStore

    if not folder.is_dir():
        raise _cli_error(f"--tools {folder}: not a folder")
    note = no_tool_files_note(folder)
    if note:
        _warn(note)
    load_tool_folder(ToolStore("batch"), folder, _warn)
    return str(folder.resolve())


def _said_by_the_command(text: str) -> None:
    """Drop a tool-folder warning: `check_tool_folder` said it, once for all workers."""


@functools.cache
def _tools_from(folder: str, drop_list_tools: bool) -> tuple[AgentTool, ...]:
    """The tools of `folder`, loaded once per process (every task's Agent gets a copy);
    `drop_list_tools`: without `listTools` (`offers_list_tools`)."""
    from yiemagent.tools import ToolStore
    from yiemagent.tools.builtin import LIST_TOOLS_NAME

    store = ToolStore("batch")
    load_tool_folder(store, Path(folder), _said_by_the_command)
    if drop_list_tools:
        store.unregister(LIST_TOOLS_NAME)
    return tuple(store.tools.values())


@dataclass(frozen=True, slots=True)
class CliAgentFactory:
    """`make_agent` of `yiem batch`: an Agent on `model` (`--vision`: a local server's model
    reads images) with the tools of `tools`, thinking at `reasoning`, sampling at
    `temperature` with at most `max_tokens` a call (picklable, so worker processes and Ray
    workers build their own)."""

    model: str = DEFAULT_MODEL
    base_url: str | None = None
    tools: str = str(DEFAULT_TOOLS_DIR)
    system: str = "You are a helpful assistant."
    max_turns: int = 8
    vision: bool | None = None
    reasoning: ThinkingLevel | None = None
    temperature: float | None = None
    max_tokens: int | None = None

    def __call__(self, task: BatchTask) -> Agent:
        from yiemagent.agent import Agent
        from yiemagent.tools import offers_list_tools

        model = resolve_model(self.model, self.base_url, None, self.vision, bool(self.reasoning))
        tools = _tools_from(self.tools, not offers_list_tools(model))
        return Agent(
            self.system,
            model=model,
            tools=tools,
            max_turns=self.max_turns,
            session_id=task.session,
            reasoning=self.reasoning,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )


def import_factory(spec: str) -> Any:
    """The function `--agent FILE.py:FUNCTION` or `--agent MODULE:FUNCTION` names (`yiem
    batch`, `yiem eval`). The file is a path from the folder the command runs in, imported
    as the module its name gives from its own folder (so worker processes and Ray, which
    get that folder, import it too); the module is imported as `python -m` would, from
    the folder the command runs in.

    Raises:
        CliError: not MODULE:FUNCTION, no such file, the module does not import, or has no
            such function; or it names a class (a pydantic model, say) other than an
            `Agent` subclass: a class is callable, so it would be taken for a factory and
            every task would fail on what its constructor makes of the task.
    """
    if "" not in sys.path and os.getcwd() not in sys.path:  # as `python -m`: the module
        sys.path.insert(0, os.getcwd())  # of the folder the command runs in
    if ":" not in spec:  # a file's name mistyped, more likely than a module's alone
        raise _cli_error(f"--agent {spec}: no agent file {spec} (nor a MODULE:FUNCTION)")
    module = spec.rpartition(":")[0]
    if module.endswith(".py") and not Path(module).is_file():
        raise _cli_error(f"--agent {spec}: no file {module}")
    try:
        found = import_function(spec, _import_module_or_file)
    except ImportError as exc:
        raise _cli_error(f"--agent {spec}: {exc}") from None
    from yiemagent.agent import Agent

    if isinstance(found, type) and not issubclass(found, Agent):
        raise _cli_error(
            f"--agent {spec}: {found.__name__} is a class; the factory must be a function "
            "(or async function) returning an Agent"
        )
    return found


def _import_module_or_file(name: str) -> ModuleType:
    """The module `name` names: a `.py` file's path (imported from its folder as the module
    of its file name), or a module's name.

    Raises:
        ImportError: a module of that file name is imported from elsewhere already (it
            would be used instead of the file).
    """
    if not name.endswith(".py"):
        return importlib.import_module(name)
    file = Path(name)
    folder = str(file.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = importlib.import_module(file.stem)
    where = getattr(module, "__file__", None)
    if where is None or Path(where).resolve() != file.resolve():
        raise ImportError(f"a module {file.stem} is imported from {where} already; rename {name}")
    return module


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send whatever is written to stdout to stderr instead, at the descriptor level, so
    that Ray's notices and warnings (some with colour codes), and those of the processes
    it starts (which inherit the descriptor), stay out of `yiem batch`'s output."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)


class _CommandWarnings(logging.Handler):
    """The library's warnings during a batch (a task's make_agent failed, a worker killed, a
    task submitted again) as the command's own lines, `yiem: warning: …`, not as Python's
    bare last-resort lines; a handler the user configured still gets them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            _warn(" ".join(record.getMessage().split()))


@contextlib.contextmanager
def library_warnings_shown() -> Iterator[None]:
    """Show the `yiemagent` loggers' warnings as `_CommandWarnings` (`yiem batch`, its
    `--summary`, `yiem eval`)."""
    handler = _CommandWarnings()
    library = logging.getLogger("yiemagent")
    library.addHandler(handler)
    try:
        yield
    finally:
        library.removeHandler(handler)


def _print_summary(path: Path) -> None:
    from yiemagent.batch import summarize_results

    for line in summarize_results(path).lines():
        print(line)


def batch(
    tasks: Annotated[Path | None, typer.Argument(help="Tasks, one JSON object a line.")] = None,
    results: Annotated[
        Path | None,
        typer.Option("--results", help="Results JSONL (appended; reruns resume)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", hidden=True, help="--results, by its former name.")
    ] = None,
    summary: Annotated[
        Path | None, typer.Option("--summary", help="Summarise a results file and exit.")
    ] = None,
    model: Annotated[str, typer.Option("--model", help="Model as provider/id.")] = DEFAULT_MODEL,
    base_url: BaseUrlOption = None,
    vision: VisionOption = None,
    reasoning: ReasoningOption = None,
    temperature: TemperatureOption = None,
    max_tokens: MaxTokensOption = None,
    tools: ToolsOption = None,
    system: Annotated[str, typer.Option("--system", help="System prompt.")] = DEFAULT_SYSTEM,
    max_turns: MaxTurnsOption = 8,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="An agent file FILE.toml[:NAME] (docs/teams.md), or FILE.py:FUNCTION or "
            "MODULE:FUNCTION building each task's Agent.",
        ),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            min=1,
            help="Tasks at once (for a worker pool, at most --processes of them).",
        ),
    ] = 4,
    processes: Annotated[
        int | None,
        typer.Option(
            "--processes",
            min=1,
            help="Worker processes of the local pool (the embedded model; default: one per "
            "two cores).",
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option("--ray", help="Run on Ray: 'auto', an ADDRESS, or bare for a local one."),
    ] = None,
    workers: Annotated[
        str,
        typer.Option("--workers", help="auto, tasks, or pool (a model per process or actor)."),
    ] = "auto",
    num_cpus: Annotated[
        float, typer.Option("--num-cpus", min=0.01, help="CPUs per Ray task or actor.")
    ] = 1.0,
    retries: Annotated[int, typer.Option("--retries", min=0, help="Retries per task.")] = 1,
    rerun_failed: Annotated[
        bool, typer.Option("--rerun-failed", help="Run failed and timed-out tasks again.")
    ] = False,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.001, help="Seconds per attempt.")
    ] = None,
    yes: Annotated[
        bool,
        typer.Option("--yes", help="Approve tool calls held for approval (else: 'held')."),
    ] = False,
) -> None:
    """Run an agent over a task list; each finished task is one line of --results."""
    # `--out` is `--results` by the name it had (the name `yiem eval` gives the same file);
    # messages name the option as given
    option = "--out" if out is not None else "--results"
    if out is not None and results is not None:
        raise _cli_error("--out is --results by its former name; give one of them", 2)
    out = out if out is not None else results
    if summary is not None:
        if tasks is not None or out is not None:
            raise _cli_error("--summary reads a results file; give it alone", 2)
        with results_file_option(summary, "--summary"), library_warnings_shown():
            _print_summary(summary)
        return
    if tasks is None or out is None:
        raise _cli_error(
            "give the tasks file and --results: yiem batch tasks.jsonl --results r.jsonl", 2
        )
    check_output_path(out, option, why="results are appended to it and a rerun resumes")
    from yiemagent.batch import run_batch

    if workers not in ("auto", "tasks", "pool"):
        raise _cli_error(f"--workers must be auto, tasks or pool, not {workers!r}", 2)
    if processes is not None and (ray is not None or workers == "tasks"):
        where = "--ray (its actors are --concurrency)" if ray is not None else "--workers tasks"
        raise _cli_error(f"--processes is the local pool's size; it does not go with {where}", 2)

    level = reasoning_level(reasoning)
    agent_file = agent is not None and split_agent_option(agent)[0].suffix == ".toml"
    if agent is not None:
        flags: dict[str, Any] = {"--tools": tools, "--system": system != DEFAULT_SYSTEM}
        if not agent_file:  # the function builds the model too
            seen = "--no-vision" if vision is False else "--vision"
            flags |= {seen: vision is not None, "--reasoning": reasoning}
        refuse_agent_flags(agent, flags)
        refuse_sampling_with_agent(agent, temperature, max_tokens)
    make_agent: Any
    if agent is not None and agent_file:
        import asyncio

        from yiemagent.teams import load_agent

        path, name = split_agent_option(agent)
        resolved = resolve_model(model, base_url, None, vision, level is not None)
        checked = load_agent(path, name, model=resolved)  # fails now
        asyncio.run(checked.close())  # its MCP servers: each task's agent starts its own
        if ignored := reasoning_ignored(checked.state.model, level):
            _warn(ignored)
        make_agent = AgentFileFactory(agent, model, base_url, max_turns, vision, level)
    elif agent is not None:
        make_agent = import_factory(agent)
    else:
        folder = check_tool_folder(tools or DEFAULT_TOOLS_DIR)
        # a bad model fails now, before any task runs
        resolved = resolve_model(model, base_url, None, vision, level is not None)
        if ignored := reasoning_ignored(resolved, level):
            _warn(ignored)
        make_agent = CliAgentFactory(
            model, base_url, folder, system, max_turns, vision, level, temperature, max_tokens
        )
    with (
        _stdout_to_stderr() if ray is not None else contextlib.nullcontext(),
        results_file_option(out, option),
        library_warnings_shown(),
        sigterm_as_ctrl_c() as terminated,
    ):
        report = run_batch(
            tasks,
            make_agent,
            results=out,
            backend="local" if ray is None else "ray",
            address=None if ray in (None, LOCAL_RAY) else ray,
            concurrency=concurrency,
            processes=processes,
            timeout_s=timeout,
            retries=retries,
            workers=workers,  # type: ignore[arg-type]
            rerun_failed=rerun_failed,
            num_cpus=num_cpus,
            approve=yes,
            progress=True if sys.stderr.isatty() else "lines",
        )
    from yiemagent.cli.render import counted

    print(
        f"{counted(report.total, 'task')}: {report.skipped + report.ok + report.failed} done "
        f"({report.skipped} before this run, {report.ok} ok, {report.failed} failed of which "
        f"{report.timed_out} timed out), {report.held} held for approval, "
        f"{report.interrupted} interrupted, "
        f"{report.not_started} not started; ${report.cost_usd:.4f}; results in {out}"
    )
    if report.interrupted or report.not_started:
        if terminated:
            raise _cli_error("terminated; run the same command again to finish", EXIT_TERMINATED)
        raise _cli_error("interrupted; run the same command again to finish", EXIT_INTERRUPTED)
    failed = report.failed + report.skipped_failed
    if failed:
        raise _cli_error(f"{failed} task(s) failed; see yiem batch --summary {out}")
    if report.held:
        raise _cli_error(
            f"{report.held} task(s) held for approval, their tool calls not run; run the "
            "same command with --yes to approve them"
        )
