"""`yiem eval`: run an agent over an eval dataset and print a table (DESIGN §19).

    yiem eval evals/local_agent.yaml [--model M] [--tools DIR] [--repeat K]
        [--baseline OLD.json] [--json OUT] [--html OUT] [--ray [ADDRESS]]
        [--agent FILE[:NAME] | FILE.py:FUNCTION | MODULE:FUNCTION] [--concurrency N]
        [--timeout S]
        [--results RUNS.jsonl]

Each case runs on a fresh Agent (the `yiem run` agent: the example tools or `--tools`, on
`--model`; or the `--agent` file's, `yiemagent.load_agent`; or a `FILE.py:FUNCTION` or
`MODULE:FUNCTION` factory's), through the batch engine, with a progress bar on a terminal
(else a line on stderr now and then); then a table gives each case's verdict, the first
failing check and its reason, tokens, cost and seconds (with `--repeat`: pass@1, pass@k and
pass^k). `--results` keeps the runs (the batch's results file): the same command again runs
only what is missing, and checks every run again (a changed dataset or `--baseline` needs no
rerun). A dataset's `workdir:` is where the example `read_file` tool reads. Exit status: 0
every case passed and nothing regressed against `--baseline`; 1 a case failed or regressed,
or a bad input (one line on stderr); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM). See
`docs/evals.md`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from yiemagent.ai.providers import missing_api_key, missing_sdk
from yiemagent.cli.batch import (
    LOCAL_RAY,
    CliAgentFactory,
    check_tool_folder,
    import_factory,
    library_warnings_shown,
)
from yiemagent.cli.default_tools.read_file import ROOT_ENV as READ_FILE_ROOT
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
    reasoning_ignored,
    reasoning_level,
    resolve_model,
    results_file_option,
    sigterm_as_ctrl_c,
)
from yiemagent.errors import install_hint
from yiemagent.files import write_atomically

if TYPE_CHECKING:
    from collections.abc import Callable

    from yiemagent.agent import Agent
    from yiemagent.batch import BatchTask
    from yiemagent.evals import CaseReport, Comparison, EvalReport
    from yiemagent.types import ThinkingLevel

__all__ = ["AgentFileFactory", "EvalAgentFactory", "eval_command"]


@dataclass(frozen=True, slots=True)
class EvalAgentFactory:
    """`make_agent` of `yiem eval`: the `yiem batch` agent, its example `read_file` rooted
    in the dataset's `workdir` when it has one (picklable, for worker processes and Ray)."""

    agent: CliAgentFactory
    workdir: str | None = None

    def __call__(self, task: BatchTask) -> Agent:
        if self.workdir is not None:
            os.environ[READ_FILE_ROOT] = self.workdir
        return self.agent(task)


@dataclass(frozen=True, slots=True)
class AgentFileFactory:
    """`make_agent` of `yiem eval --agent FILE[:NAME]`: the file's agent, built afresh for
    each run (`file_agent`: agents the file gives no model get `model`, "provider/id")."""

    spec: str
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    workdir: str | None = None
    max_turns: int = 8
    """The turn limit of an entry agent whose table sets none (`--max-turns`)."""
    vision: bool | None = None
    reasoning: ThinkingLevel | None = None

    def __call__(self, task: BatchTask) -> Agent:
        from yiemagent.cli.teams import file_agent

        if self.workdir is not None:
            os.environ[READ_FILE_ROOT] = self.workdir
        made: Agent = file_agent(self.spec, self.model, self.base_url, self.vision, self.reasoning)
        made.max_turns = made.max_turns or self.max_turns
        return made


def _agent_factory(factory: AgentFileFactory) -> Any:
    """`--agent`: an agent file (`FILE[:NAME]`, checked now by building its agent once with
    `factory`, which then builds each run's; a level its entry agent's model cannot think
    at is one warning line) or a `FILE.py:FUNCTION` or `MODULE:FUNCTION` factory."""
    from yiemagent.batch import BatchTask
    from yiemagent.cli.teams import split_agent_option

    path, _ = split_agent_option(factory.spec)
    if path.suffix == ".py" or (not path.is_file() and path.suffix != ".toml"):
        # FILE.py:FUNCTION or MODULE:FUNCTION (a missing .toml: the agent file's error)
        return import_factory(factory.spec)
    agent = factory(BatchTask("check", "check"))  # a bad model or file: one line, nothing run
    asyncio.run(agent.close())
    if ignored := reasoning_ignored(agent.state.model, factory.reasoning):
        print(f"yiem: warning: {ignored}", file=sys.stderr, flush=True)
    return factory


REASON_CHARS = 90
"""What the table shows of a failing check's name and reason, at most: the start of a
reason says what went wrong (a `CassetteMismatch` leads with what changed)."""

_RUNS_FAILED = re.compile(r"failed \d+/\d+ runs: ")
"""How a case run more than once (`--repeat`) starts a check's reason: on top of
`REASON_CHARS`, so the count does not push what went wrong out of the cell."""


def _reason(case: CaseReport) -> str:
    """The case's first failing check as `name: reason` for the table's last column ("" when
    all passed): the check's name and its reason cut to `REASON_CHARS`, with `failed k/n
    runs: ` kept whole between them."""
    failing = next((c for c in case.checks if not c.passed), None)
    if failing is None:
        return ""
    if not failing.reason:
        return failing.name
    counted = _RUNS_FAILED.match(failing.reason)
    count = counted.group() if counted else ""
    said = failing.reason[len(count) :]
    room = max(REASON_CHARS - len(failing.name) - 2, 20)
    return f"{failing.name}: {count}{said if len(said) <= room else said[: room - 1] + '…'}"


LONG_TABLE = 100
"""Cases past which the table holds only the failing ones, at most this many: rich takes
seconds per thousand rows to lay a table out, and no one reads such a table on a terminal."""


def _shown(report: EvalReport, full: str) -> tuple[list[CaseReport], str]:
    """The cases the table shows, and a line saying which are left out and where `full`
    (the reports written, or how to write one) has every case; "" when all are shown."""
    if len(report.cases) <= LONG_TABLE:
        return report.cases, ""
    failing = [case for case in report.cases if not case.passed]
    shown = failing[:LONG_TABLE]
    what = f"{report.passed} passing" + (
        f" and {len(failing) - len(shown)} failing" if len(shown) < len(failing) else ""
    )
    left = len(report.cases) - len(shown)
    return shown, f"{left} of {len(report.cases)} cases not shown ({what}); {full}"


def _table(report: EvalReport, cases: list[CaseReport], comparison: Comparison | None) -> Any:
    from rich.table import Table

    k = report.repeat
    table = Table(title=None, show_lines=False, pad_edge=False)
    table.add_column("case", overflow="fold")
    table.add_column("result")
    table.add_column("checks", justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("cost $", justify="right")
    table.add_column("s", justify="right")
    if k > 1:
        table.add_column("pass@1", justify="right")
        table.add_column(f"pass@{k}", justify="right")
        table.add_column(f"pass^{k}", justify="right")
    table.add_column("why (the first failing check)", overflow="fold", min_width=30)
    regressed = set(comparison.regressions) if comparison else set()
    fixed = set(comparison.fixes) if comparison else set()
    for case in cases:
        result = "[green]PASS[/]" if case.passed else "[red]FAIL[/]"
        if case.name in regressed:
            result += " [red]regressed[/]"
        elif case.name in fixed:
            result += " [green]fixed[/]"
        passed = sum(c.passed for c in case.checks)
        row = [
            case.name,
            result,
            f"{passed}/{len(case.checks)}",
            str(case.tokens),
            f"{case.cost_usd:.4f}",
            f"{case.seconds:.1f}",
        ]
        if k > 1:
            row += [
                f"{case.pass_at_k[1]:.2f}",
                f"{case.pass_at_k[k]:.2f}",
                f"{case.pass_all_k[k]:.2f}",
            ]
        table.add_row(*row, _escape(_reason(case)))
    return table


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _summary(report: EvalReport, comparison: Comparison | None, baseline: Path | None) -> str:
    k = report.repeat
    line = (
        f"{report.passed}/{len(report.cases)} cases passed, {report.failed} failed; "
        f"{report.tokens} tokens, ${report.cost_usd:.4f}, "
        f"{sum(c.seconds for c in report.cases):.1f} s of runs"
    )
    if report.judge_tokens or report.judge_cost_usd:  # the grading, apart from the runs
        line += f"; judge: {report.judge_tokens} tokens, ${report.judge_cost_usd:.4f}"
    if k > 1:
        line += (
            f"; mean pass@1 {report.mean_pass_at_k(1):.2f}, pass@{k} "
            f"{report.mean_pass_at_k(k):.2f}, pass^{k} {report.mean_pass_all_k(k):.2f}"
        )
    if comparison is not None:
        regressions = ", ".join(comparison.regressions) or "none"
        fixes = ", ".join(comparison.fixes) or "none"
        line += f"\nagainst {baseline}: regressions: {regressions}; fixes: {fixes}"
        # a case the dataset no longer has is no regression, but should not pass unseen
        if comparison.new:
            line += f"; new: {', '.join(comparison.new)}"
        if comparison.missing:
            line += f"; not in this run: {', '.join(comparison.missing)}"
    return line


def _write(path: Path, write: Callable[[], object]) -> None:
    """Run `write`, a report's writer; a disk that fails it (full, turned read-only since
    `check_output_path`) is one line naming `path`, not the writer's temporary file.

    Raises:
        CliError: `write` raised an `OSError`.
    """
    try:
        write()
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None


def _check_judges_keys(data: Any) -> None:
    """Refuse a dataset whose judge names a model (`judge: {rubric, model:
    openai/gpt-4o-mini}`) whose API needs an SDK that is not installed or a key the
    environment lacks: every case ran, its agent's tokens spent, and each verdict was "the
    judge failed: no API key". The SDK is said first: a key alone would not help.

    Raises:
        CliError: the first such judge, naming its case and the extra to install or the
            variable to set.
    """
    from yiemagent.ai import get_model

    for case in data.cases:
        for check in case.checks:
            named = getattr(check, "model", None)
            if not (hasattr(check, "rubric") and isinstance(named, str)):
                continue  # not a judge, or one given a Model (which may carry its own key)
            judge_model = get_model(named)
            if (extra := missing_sdk(judge_model)) is not None:
                raise CliError(
                    f"case {case.name!r}: the judge's model {named} needs the {extra} SDK, "
                    f"which is not installed: {install_hint(extra)} (nothing was run)"
                )
            variable = missing_api_key(judge_model)
            if variable is not None:
                raise CliError(
                    f"case {case.name!r}: the judge's model {named} needs an API key: set "
                    f"{variable} in the environment (nothing was run)"
                )


def eval_command(
    dataset: Annotated[Path, typer.Argument(help="The dataset: YAML or JSONL cases.")],
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="An agent file (FILE[:NAME]), or a FILE.py:FUNCTION or MODULE:FUNCTION "
            "building agents.",
        ),
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
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Runs per case (k).")] = 1,
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="An earlier --json report to compare.")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the report as JSON here; - for stdout.")
    ] = None,
    html_out: Annotated[
        Path | None, typer.Option("--html", help="Write the report as an HTML page here.")
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option("--ray", help="Run on Ray: 'auto', an ADDRESS, or bare for a local one."),
    ] = None,
    address: Annotated[
        str | None, typer.Option("--address", hidden=True, help="--ray's ADDRESS, apart.")
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Runs at once.")] = 4,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.001, help="Seconds per run.")
    ] = None,
    results: Annotated[
        Path | None,
        typer.Option("--results", help="Keep the runs here; the same command again resumes."),
    ] = None,
    yes: Annotated[
        bool,
        typer.Option("--yes", help="Approve tool calls held for approval (else the run fails)."),
    ] = False,
) -> None:
    """Run an agent over an eval dataset; exit 1 when a case fails or regresses."""
    from rich.console import Console

    from yiemagent.evals import Dataset, EvalReport, run_eval

    data = Dataset.load(dataset)  # a bad dataset: one DatasetError line, nothing run
    _check_judges_keys(data)
    old = EvalReport.load(baseline) if baseline is not None else None
    if address is not None and ray is None:
        raise CliError("--address names a Ray cluster; give it as --ray ADDRESS", 2)
    if address is None and ray not in (None, LOCAL_RAY):
        address = ray
    written: list[tuple[Path, str]] = [(dataset, "the dataset")]
    json_to_stdout = json_out is not None and str(json_out) == "-"  # as yiem trace --html -
    files = (
        (None if json_to_stdout else json_out, "--json", ""),
        (html_out, "--html", "each run's timeline is written in a folder beside it"),
        (results, "--results", "the runs are kept in it and the same command resumes"),
    )
    for path, flag, why in files:
        if path is not None:
            check_output_path(path, flag, written, why=why)  # now, not after every case ran
            written.append((path, f"the {flag} file"))
    if html_out is not None:  # the timelines' folder beside the page (`EvalReport.to_html`)
        runs = html_out.with_name(html_out.stem + ".runs")
        if runs.exists() and not runs.is_dir():
            raise CliError(
                f"cannot write {html_out} (--html): {runs}, the folder for each run's "
                "timeline, is a file"
            )
    root = str(data.workdir) if data.workdir is not None else None
    level = reasoning_level(reasoning)
    if agent is not None:
        from yiemagent.cli.teams import (
            refuse_agent_flags,
            refuse_sampling_with_agent,
            split_agent_option,
        )

        flags: dict[str, Any] = {"--tools": tools, "--system": system != DEFAULT_SYSTEM}
        named = split_agent_option(agent)[0]
        if named.suffix == ".py" or not named.is_file():  # the function builds the model too
            seen = "--no-vision" if vision is False else "--vision"
            flags |= {seen: vision is not None, "--reasoning": reasoning}
        refuse_agent_flags(agent, flags)
        refuse_sampling_with_agent(agent, temperature, max_tokens)
        factory = AgentFileFactory(agent, model, base_url, root, max_turns, vision, level)
        make_agent: Any = _agent_factory(factory)
    else:
        folder = check_tool_folder(tools or DEFAULT_TOOLS_DIR)
        # a bad model fails now, before any case runs
        resolved = resolve_model(model, base_url, None, vision, level is not None)
        if ignored := reasoning_ignored(resolved, level):
            print(f"yiem: warning: {ignored}", file=sys.stderr, flush=True)
        base = CliAgentFactory(
            model, base_url, folder, system, max_turns, vision, level, temperature, max_tokens
        )
        make_agent = EvalAgentFactory(base, root)
    terminated: list[bool] = []
    try:
        with (
            results_file_option(results, "--results"),
            library_warnings_shown(),
            sigterm_as_ctrl_c() as terminated,
        ):
            report = asyncio.run(
                run_eval(
                    data,
                    make_agent,
                    repeat=repeat,
                    concurrency=concurrency,
                    backend="local" if ray is None else "ray",
                    address=address,
                    timeout_s=timeout,
                    results=results,
                    progress=True if sys.stderr.isatty() else "lines",
                    approve=yes,
                )
            )
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: say how to go on, as yiem batch does
        hint = (
            f"run the same command again to finish (the runs done are kept in {results})"
            if results is not None
            else "with --results RUNS.jsonl the runs done are kept and the same command resumes"
        )
        if terminated:
            raise CliError(f"terminated; {hint}", EXIT_TERMINATED) from None
        raise CliError(f"interrupted; {hint}", EXIT_INTERRUPTED) from None
    comparison = report.compare(old) if old is not None else None
    # With `--json -` the report alone is standard output; the table goes to stderr.
    shown = sys.stderr if json_to_stdout else sys.stdout
    console = Console(
        file=shown, highlight=False, emoji=False, width=None if shown.isatty() else 160
    )
    places = [str(html_out)] if html_out is not None else []
    if json_out is not None:
        places.insert(0, "the JSON on standard output" if json_to_stdout else str(json_out))
    full = (
        f"every case is in {' and '.join(places)}"
        if places
        else "--json FILE or --html FILE writes every case"
    )
    cases, left_out = _shown(report, full)
    console.print(_table(report, cases, comparison))
    if left_out:
        console.print(left_out, soft_wrap=True)
    console.print(_summary(report, comparison, baseline), soft_wrap=True)
    if json_out is not None:
        text = json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"
        if json_to_stdout:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            _write(json_out, lambda: write_atomically(json_out, text.encode("utf-8")))
            console.print(f"wrote {json_out}")
    if html_out is not None:
        _write(html_out, lambda: report.to_html(html_out))
        console.print(f"wrote {html_out} (each run's timeline in {html_out.stem}.runs/)")
    regressions = len(comparison.regressions) if comparison is not None else 0
    if report.failed or regressions:
        raise CliError(
            f"{report.failed} of {len(report.cases)} cases failed"
            + (f", {regressions} regressed against {baseline}" if regressions else "")
        )
