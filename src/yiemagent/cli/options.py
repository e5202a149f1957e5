"""What the `yiem` commands share: the default model and tools folder, the options they
declare alike (typer `Annotated` types), how `--model` and `--base-url` name a model, the
exit statuses, SIGTERM handled as Ctrl-C, and the one-line error every command ends with
(DESIGN §8)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias, TypeVar, cast

import typer

from yiemagent.ai.models import DEFAULT_MODEL, ToolCallMode, get_model
from yiemagent.errors import BatchError, ProviderError, SessionBusyError, YiemAgentError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from yiemagent.tools import ToolStore
    from yiemagent.types import AgentTool, Model, ThinkingLevel

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_SYSTEM",
    "DEFAULT_TOOLS_DIR",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OUTPUT_CLOSED",
    "EXIT_TERMINATED",
    "BaseUrlOption",
    "CliError",
    "MaxTokensOption",
    "MaxTurnsOption",
    "McpMaxMessageBytesOption",
    "McpOption",
    "McpTimeoutOption",
    "McpUrlOption",
    "OutputClosed",
    "ReasoningOption",
    "TemperatureOption",
    "Terminated",
    "ToolCallsOption",
    "ToolsOption",
    "VisionOption",
    "check_output_path",
    "error_line",
    "example_tools",
    "interruptible",
    "keep_stdout_for_output",
    "load_tool_folder",
    "no_tool_files_note",
    "reasoning_ignored",
    "reasoning_level",
    "refuse_standard_stream",
    "resolve_model",
    "results_file_option",
    "run_signals",
    "same_file",
    "sigterm_as_ctrl_c",
    "sigterm_raises",
    "silence_closed_output",
    "unwritable_output",
]

DEFAULT_SYSTEM = "You are a helpful assistant."
"""The system prompt of `yiem run` and `yiem chat` when `--system` is not given."""
T = TypeVar("T")
DEFAULT_TOOLS_DIR = Path(__file__).resolve().parent / "default_tools"
"""The example tools `yiem` loads when `--tools` is not given."""
EXIT_ERROR = 1
EXIT_OUTPUT_CLOSED = 141
"""The reader of stdout went away (`yiem run --json ... | head -1`): 128 + SIGPIPE (13),
what the shell reports for `cat`, `grep` or `git log` in its place."""
EXIT_INTERRUPTED = 130
"""128 + SIGINT: a command Ctrl-C stopped, after its work wound down."""
EXIT_TERMINATED = 143
"""128 + SIGTERM, as for a process that SIGTERM ends."""

ToolsOption: TypeAlias = Annotated[
    Path | None,
    typer.Option("--tools", help="Folder of tool files (default: the example tools)."),
]
McpOption: TypeAlias = Annotated[
    list[str] | None,
    typer.Option("--mcp", help='An MCP server to start, e.g. "python server.py" (repeatable).'),
]
McpUrlOption: TypeAlias = Annotated[
    list[str] | None,
    typer.Option("--mcp-url", help="A streamable-HTTP MCP server's URL (repeatable)."),
]
McpTimeoutOption: TypeAlias = Annotated[
    float | None,
    typer.Option(
        "--mcp-timeout",
        min=0.001,
        help="Seconds an --mcp or --mcp-url server may stay silent about a call (default 30).",
    ),
]
McpMaxMessageBytesOption: TypeAlias = Annotated[
    int | None,
    typer.Option(
        "--mcp-max-message-bytes",
        min=1,
        help="Largest message (bytes) an --mcp or --mcp-url server may send (default 64 MiB).",
    ),
]
BaseUrlOption: TypeAlias = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible server URL.")
]
ToolCallsOption: TypeAlias = Annotated[
    str | None,
    typer.Option(
        "--tool-calls",
        help="How a local server's model calls tools: native, text (calls written as "
        "text are read too), schema (the embedded model's reply schema).",
    ),
]
MaxTurnsOption: TypeAlias = Annotated[
    int, typer.Option("--max-turns", min=1, help="Most model calls.")
]
ReasoningOption: TypeAlias = Annotated[
    str | None,
    typer.Option(
        "--reasoning",
        metavar="LEVEL",
        help=(
            "How hard a reasoning model thinks: minimal, low, medium, high, xhigh, or off "
            "(a local server's model is then taken to think)."
        ),
    ),
]
VisionOption: TypeAlias = Annotated[
    bool | None,
    typer.Option(
        "--vision/--no-vision",
        help="The local server's model reads images (e.g. ollama/llava), or not (e.g. an "
        "azure/ deployment of a text-only model). Default: no, for azure/ what its name says.",
    ),
]
TemperatureOption: TypeAlias = Annotated[
    float | None,
    typer.Option("--temperature", min=0, help="Sampling temperature (default: the provider's)."),
]
MaxTokensOption: TypeAlias = Annotated[
    int | None,
    typer.Option(
        "--max-tokens", min=1, help="Most output tokens of each model call (default: the model's)."
    ),
]


def reasoning_level(value: str | None) -> ThinkingLevel | None:
    """`--reasoning LEVEL` as an `Agent`'s reasoning level (None when not given or "off").

    Raises:
        CliError: not a level.
    """
    from yiemagent.types import THINKING_LEVELS

    if value is None or value == "off":
        return None
    if value not in THINKING_LEVELS:
        raise CliError(f"--reasoning must be {', '.join(THINKING_LEVELS)} or off, not {value!r}")
    return value


def reasoning_ignored(model: Model | None, level: ThinkingLevel | None) -> str | None:
    """The one-line warning when `--reasoning` asks `model` (None: the embedded one), which
    cannot think, for a level (the level is then ignored), else None; the library's own
    warning of it is silenced, so the user reads it once, in the CLI's words."""
    import warnings

    if level is None or (model is not None and model.reasoning):
        return None
    warnings.filterwarnings("ignore", "reasoning is ignored", UserWarning)
    name = DEFAULT_MODEL if model is None else f"{model.provider}/{model.id}"
    return f"--reasoning is ignored: {name} is not a reasoning model"


def example_tools(*names: str) -> list[AgentTool]:
    """The example tools of `DEFAULT_TOOLS_DIR` named `names`, in that order, loaded into a
    fresh `ToolStore` as `yiem run` loads them (for the benches and tests that drive the
    loop with them).

    Raises:
        KeyError: a name that is not one of the example tools (the text lists them).
    """
    from yiemagent.tools import ToolStore

    tools = ToolStore("examples").load_dir(DEFAULT_TOOLS_DIR)
    missing = [name for name in names if name not in tools]
    if missing:
        raise KeyError(f"no example tool {missing}; there are {sorted(tools)}")
    return [tools[name] for name in names]


def load_tool_folder(store: ToolStore, folder: Path, warn: Callable[[str], None]) -> None:
    """Load the tool files of `folder` into `store` as the commands do: the good ones load,
    each broken one is a warning (with how to keep a helper module out of the tools).

    Raises:
        CliError: `folder` is not a folder, or it has tool files and none of them loaded.
    """
    from yiemagent.errors import ToolLoadError
    from yiemagent.tools.builtin import LIST_TOOLS_NAME

    if not folder.is_dir():
        raise CliError(f"--tools {folder}: not a folder")
    try:
        store.load_dir(folder)
    except ToolLoadError as exc:
        if not [name for name in store.tools if name != LIST_TOOLS_NAME]:
            failures = "; ".join(f"{path}: {reason}" for path, reason in exc.failures)
            raise CliError(f"no tool file of {folder} loaded: {failures}") from None
        for path, reason in exc.failures:
            warn(f"tool file {path} not loaded: {reason}")
        if any(_helper_taken_for_a_tool(folder, reason) for _, reason in exc.failures):
            warn(
                "the other tools are loaded; a helper module with a name starting with _ "
                "(e.g. _helpers.py, imported as `from _helpers import ...`) is not taken for "
                "a tool"
            )


def _helper_taken_for_a_tool(folder: Path, reason: str) -> bool:
    """Whether a tool file's failure `reason` (from `ToolLoadError.failures`) is a helper
    module's: a file that defines no tool at all, or a tool file that imports a module
    beside it by its plain name. Only then does the hint on naming helpers `_x.py` help; a
    missing package or a syntax error is said by the failure's own line."""
    if reason == "defines no get_tool() function":  # no @tool in it either: a helper
        return True
    missing = re.search(r"No module named '([^'.]+)", reason)
    return missing is not None and (
        (folder / f"{missing[1]}.py").is_file() or (folder / missing[1]).is_dir()
    )


def no_tool_files_note(folder: Path) -> str | None:
    """The warning for a `--tools` folder that holds no tool file, or None when it has one.

    A folder without a `*.py` that `load_dir` takes (an empty one, one of other files, or the
    parent of the tools' folder: it does not look into subfolders) loads nothing and fails
    nothing; without this line the agent would run without the tools the user meant.
    """
    from yiemagent.tools.store import is_tool_file

    try:
        if any(is_tool_file(path) for path in folder.iterdir()):
            return None
    except OSError:  # an unreadable folder: load_dir says why
        return None
    return (
        f"--tools {folder}: no tool file there (a *.py defining get_tool(); subfolders are "
        "not read), so none is loaded"
    )


class CliError(YiemAgentError):
    """A problem to report on one line; `code` is the exit status."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


class OutputClosed(CliError):
    """The reader of the output went away; the command stops without a word (its reader is
    gone, and a message on stderr is noise in the pipeline)."""

    def __init__(self) -> None:
        super().__init__("the output was closed", EXIT_OUTPUT_CLOSED)


class Terminated(CliError):
    """SIGTERM stopped the command (a supervisor, `timeout`, `kill`); said as "yiem:
    terminated", status 143."""

    def __init__(self) -> None:
        super().__init__("terminated", EXIT_TERMINATED)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within: SIGTERM raises `Terminated` on the main thread, as Ctrl-C raises
    KeyboardInterrupt, so the command's `finally` blocks run (its store closed, its MCP
    servers stopped) and it ends with one line instead of dying where it stands. A library
    that takes SIGTERM over meanwhile (Uvicorn) and raises it again once it has shut down
    ends up here too. Elsewhere than on the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_signals() -> list[tuple[signal.Signals, str]]:
    """The signals a run winds down on, each with what the command then says: SIGINT
    ("interrupted") unless this process started with it ignored, and SIGTERM ("terminated").

    A shell without job control starts `yiem run ... &` with SIGINT ignored, so that a
    Ctrl-C meant for the script's foreground command leaves it running (POSIX); Python
    leaves such a SIGINT ignored, and so does a run."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    wanted = [] if ignored else [(signal.SIGINT, "interrupted")]
    return [*wanted, (signal.SIGTERM, "terminated")]


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[list[bool]]:
    """Within: SIGTERM (a supervisor, `timeout`, a scheduler's cancel) does what Ctrl-C
    does, through whatever SIGINT handler is installed when it comes, called with SIGTERM's
    number (`run_batch`'s and `asyncio.run`'s wind the work down: running tasks aborted,
    nothing new started); a
    second one, or one while Python's default handler is in place, raises `Terminated`.
    Yields a list that holds True once SIGTERM came, so the command can say "terminated"
    and exit 143 where Ctrl-C says "interrupted"."""
    came: list[bool] = []

    def on_sigterm(signum: int, frame: Any) -> None:
        handler = signal.getsignal(signal.SIGINT)
        first = not came
        came.append(True)
        if not first or not callable(handler) or handler is signal.default_int_handler:
            raise Terminated
        try:
            handler(signal.SIGTERM, frame)  # its number: the handler may say which came
        except KeyboardInterrupt:
            raise Terminated from None

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, previous)


def error_line(exc: BaseException) -> str:
    """What a command says of `exc`, on one line. A session another program holds is said
    in the command line's terms (close it there, or use another session), not with the
    Python API's remedy (`await agent.close()`, another `session_id`)."""
    if isinstance(exc, SessionBusyError) and exc.holder is not None:
        return (
            f"session {exc.session_id!r} is open in {exc.holder} (a yiem chat, a yiem serve "
            "run or another program using the same session store); close it there, or use "
            "another session"
        )
    return " ".join(str(exc).split()) or type(exc).__name__


def keep_stdout_for_output() -> Callable[[], None]:
    """Keep standard output for the command's own output (the answer, `--json` lines, a
    report): descriptor 1 becomes a copy of stderr, which child processes (a tool that
    shells out without capturing) and C libraries inherit or write to, and `sys.stdout`
    writes to a private copy of the real standard output. Does nothing when `sys.stdout`
    is not the process's own descriptor 1 (a test's capture, `>&-`).

    Returns:
        A function that puts descriptor 1 and `sys.stdout` back (flushing first).
    """
    stream = sys.__stdout__
    if stream is None or sys.stdout is not stream:
        return lambda: None
    try:
        if stream.fileno() != 1:
            return lambda: None
        stream.flush()
        saved = os.dup(1)  # not inherited by child processes
    except (AttributeError, OSError, ValueError):
        return lambda: None
    output = open(  # noqa: SIM115 - closed by the function returned
        saved,
        "w",
        encoding=stream.encoding,
        errors=stream.errors,
        closefd=True,
    )
    output.reconfigure(line_buffering=stream.line_buffering, write_through=stream.write_through)
    os.dup2(2, 1)
    sys.stdout = output

    def restore() -> None:
        with contextlib.suppress(OSError, ValueError):
            output.flush()
        os.dup2(saved, 1)
        sys.stdout = stream
        with contextlib.suppress(OSError, ValueError):
            output.close()

    return restore


def unwritable_output(exc: OSError) -> CliError:
    """The error a command ends with when its standard output cannot take what it writes
    (a full disk, a quota, a file size limit, an I/O error), `exc` that write's error; a
    reader that went away is `OutputClosed` instead."""
    return CliError(f"cannot write the standard output: {exc.strerror or exc}")


def silence_closed_output() -> None:
    """Point stdout and stderr, where their reader has gone, at /dev/null: what is still
    buffered or written while winding down then goes nowhere, instead of failing again or
    making Python print "Exception ignored ... BrokenPipeError" at exit."""
    import select

    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            fd = stream.fileno()  # type: ignore[union-attr]
            poller = select.poll()
            poller.register(fd, 0)  # POLLERR comes by itself: a pipe with no reader
            if not any(flags & select.POLLERR for _, flags in poller.poll(0)):
                continue
            devnull = os.open(os.devnull, os.O_WRONLY)
        except (AttributeError, OSError, ValueError):  # no descriptor (a test's capture)
            continue
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)


def interruptible(load: Callable[[], T], before_exit: Callable[[], None] | None = None) -> T:
    """Run `load` (the embedded model's load, seconds inside llama.cpp) on a worker thread so
    that Ctrl-C ends the command at once with 130 instead of after the load (SIGTERM, under
    `sigterm_raises`, with 143); `before_exit` (stopping a progress bar: it shows the cursor
    again) runs before that exit."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = load()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=work, name="yiem-load-model", daemon=True)
    try:
        thread.start()  # inside: Ctrl-C can land while start() waits for the thread
        while thread.is_alive():
            thread.join(0.1)
    except (KeyboardInterrupt, Terminated) as stop:
        # llama.cpp cannot be stopped mid-load and a normal exit would wait for it;
        # nothing has been answered yet, so nothing is lost.
        with contextlib.suppress(Exception):
            if before_exit is not None:
                before_exit()
            sys.stdout.flush()
        terminated = isinstance(stop, Terminated)
        sys.stderr.write(f"yiem: {'terminated' if terminated else 'interrupted'}\n")
        sys.stderr.flush()
        os._exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)
    if "error" in box:
        raise box["error"]
    return cast(T, box["value"])


def check_output_path(
    path: Path, flag: str, keep: Sequence[tuple[Path, str]] = (), *, why: str = ""
) -> None:
    """Refuse an output file the command could not write, before any work starts (a
    command that ran every case first would lose the runs to a typo in the path).

    Args:
        path: The file an option names (created or replaced when the work is done).
        flag: The option, e.g. "--json", for the message.
        keep: Files the command reads or writes otherwise, each with what it is ("the
            dataset"), that `path` must not be: writing it would replace them.

    Raises:
        CliError: `path` is `-` (a command that writes to standard output handles `-`
            before calling this), a folder, one of `keep`, or its folder does not exist or
            is not writable.
    """
    import os

    if str(path) == "-":  # as `yiem trace --html -`: "-" is standard output, never a file
        reason = f" ({why})" if why else ""
        raise CliError(f"{flag} -: standard output is not accepted here{reason}; give a file")
    folder = path.parent
    if path.is_dir():
        raise CliError(f"cannot write {path} ({flag}): it is a folder")
    for other, what in keep:
        if same_file(path, other):
            raise CliError(f"cannot write {path} ({flag}): it is {what}, which it would replace")
    refuse_standard_stream(path, flag)
    if not folder.is_dir():
        raise CliError(f"cannot write {path} ({flag}): folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CliError(f"cannot write {path} ({flag}): folder {folder} is not writable")


_STREAM_NAMES = {
    **dict.fromkeys(("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"), "standard output"),
    **dict.fromkeys(("/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"), "standard error"),
}


def refuse_standard_stream(path: Path, flag: str) -> None:
    """Refuse an output file that is the command's standard output or error: a name such
    as /dev/stdout, or the file one of them is redirected to (`--json log 2>log`). While a
    command runs, descriptor 1 is a copy of stderr (`keep_stdout_for_output`), so
    /dev/stdout would reach stderr, and a file is replaced whole: the stream's earlier
    lines, and those after, would be lost.

    Raises:
        CliError: naming the stream; standard output is `-` where the option takes it.
    """
    name = _STREAM_NAMES.get(os.path.normpath(str(path)))
    if name is None:
        try:
            target = os.stat(path)
        except (OSError, ValueError):
            return
        if not stat.S_ISREG(target.st_mode):
            return  # a terminal or a pipe is written into (`write_atomically`), not replaced
        for stream, what in ((sys.stdout, "standard output"), (sys.stderr, "standard error")):
            try:
                held = os.fstat(stream.fileno())
            except (AttributeError, OSError, ValueError):  # no descriptor (a test's capture)
                continue
            if (held.st_dev, held.st_ino) == (target.st_dev, target.st_ino):
                name = what
                break
    if name is not None:
        hint = "; give - for standard output where the option takes it" if "output" in name else ""
        raise CliError(f"cannot write {path} ({flag}): it is this command's {name}{hint}")


def same_file(a: Path, b: Path) -> bool:
    """Whether `a` and `b` name one file (through links, or as two spellings of a path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare the paths
        return a.resolve() == b.resolve()


@contextlib.contextmanager
def results_file_option(path: Path | None, flag: str) -> Iterator[None]:
    """Within it, a `BatchError` about the results file at `path` names the option that
    gave it ("--summary: ..."): the batch engine knows a results file, not which option
    of which command named it.

    Args:
        path: The results file the option names (None: the option was not given).
        flag: The option, e.g. "--out".

    Raises:
        CliError: a `BatchError` whose `results_file` is `path`; other errors pass as they are.
    """
    try:
        yield
    except BatchError as exc:
        if path is None or exc.results_file != str(path):
            raise
        raise CliError(f"{flag}: {exc}") from None


def resolve_model(
    spec: str,
    base_url: str | None,
    tool_calls: str | None = None,
    vision: bool | None = None,
    reasoning: bool = False,
) -> Model:
    """The model `--model spec` names (with `--base-url`, a server's), checked before any
    work starts: an embedded model must have its chunk packages installed. `vision` is
    `--vision` (True), `--no-vision` (False) or neither (None: the model's default). `reasoning`
    (`--reasoning` gave a level) marks a local server's model as thinking, so the level
    is sent: the user asked for it, and nothing else says whether such a model thinks.

    Raises:
        CliError: `--base-url` given for an embedded (`local/...`) model, missing for an
            `openai-compatible/...` one, or not an http(s) URL; a bad `--tool-calls`;
            `--vision` or `--no-vision` for a model that is not a local server's (its
            modalities are known; the option would go unused).
        ProviderError: an unknown model or a bad URL (`get_model`), or an embedded model
            whose packages are missing (the text gives the install command).
    """
    provider, _, model_id = spec.partition("/")
    if base_url is not None and provider == "local":
        raise CliError(
            f"--base-url is for a server; {spec} runs in-process. "
            "Use --model openai-compatible/<model id> with --base-url"
        )
    # get_model's messages name its Python argument; a CLI user gives an option.
    if provider == "openai-compatible" and model_id and base_url is None:
        raise CliError(
            f"{spec} needs --base-url, the server's OpenAI API root "
            "(e.g. --base-url http://127.0.0.1:8080/v1)"
        )
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise CliError(
            f"--base-url {base_url!r} is not an http:// or https:// URL "
            "(e.g. --base-url http://127.0.0.1:8080/v1)"
        )
    flag = {True: "--vision", False: "--no-vision", None: ""}[vision]
    if vision is False and provider not in ("openai-compatible", "ollama", "azure"):
        raise CliError(
            f"{flag} is for local servers (openai-compatible/..., ollama/...), not {spec!r}"
        )
    # get_model checks the value and says which ones there are, naming its argument
    try:
        model = get_model(
            spec,
            base_url=base_url,
            tool_calls=cast("ToolCallMode | None", tool_calls),
            vision=vision,
            reasoning=reasoning and provider in ("openai-compatible", "ollama", "azure"),
        )
    except ProviderError as exc:
        text = str(exc)
        if tool_calls is not None and text.startswith("tool_calls "):
            raise CliError("--tool-calls " + text.removeprefix("tool_calls ")) from None
        if vision is not None and text.startswith("vision "):
            raise CliError(f"{flag} " + text.removeprefix("vision ")) from None
        raise
    if model.api == "local":
        from yiemagent.ai.providers.local.weights import chunk_files, local_spec

        chunk_files(local_spec(model.id))  # fails early, with the install command
    return model
