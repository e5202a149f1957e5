"""`yiem trace SESSION_OR_JSONL [--html out.html]`: a run's timeline as one HTML page, and the
`yiem run` options that watch and bound a run (`--otel`, `--max-cost`) (DESIGN §13).

Without `--html` the page goes beside the log (`run.jsonl` gives `run.html`), or for a
session id into `SESSION_ID.html` in the current folder; a file already there that is not
a page `yiem trace` wrote is refused, not replaced.

The source is a `yiem run --json` event log (a file of JSON lines) or the id of a stored
session in a session database (`--sessions`, as `yiem serve` and `yiem sessions` name it;
`--db`, its earlier name, is accepted too, not shown by `--help`; default `sessions.db` in
the user data folder: `$YIEM_DATA_DIR`, else `$XDG_DATA_HOME/yiemagent`, else
`~/.local/share/yiemagent`, the folder `yiem chat` keeps its sessions in). Every problem
is one line.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from yiemagent.cli.options import refuse_standard_stream, unwritable_output
from yiemagent.cli.stores import default_session_db
from yiemagent.errors import ConfigError
from yiemagent.files import write_atomically

__all__ = ["start_tracing", "stop_tracing", "trace"]

_SQLITE_MAGIC = b"SQLite format 3\x00"


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == _SQLITE_MAGIC
    except OSError:
        return False


def _looks_like_a_file(source: str) -> bool:
    """A path, not a session id: it names a folder or ends in a file suffix (.jsonl)."""
    return (
        os.sep in source
        or "/" in source
        or Path(source).suffix.lower()
        in (
            ".jsonl",
            ".json",
            ".log",
            ".txt",
            ".ndjson",
        )
    )


def _session_timeline(session_id: str, db: str) -> Any:
    """The timeline of a stored session in `db`: a SQLite file, or a `postgresql://` URL
    (the store `yiem serve --sessions` shares between replicas)."""
    from yiemagent.telemetry import build_timeline

    if db.startswith(("postgresql://", "postgres://")):
        from yiemagent.cli.stores import open_store, without_password

        store: Any = open_store(db, "--sessions")
        shown = without_password(db)
    else:
        from yiemagent.sessions import SqliteSessionStore

        if not Path(db).is_file():
            raise ConfigError(
                f"{session_id!r} is not a file, and there is no session database at {db} "
                "(give a yiem run --json log, or --sessions FILE or postgresql:// URL)"
            )
        store, shown = SqliteSessionStore(db), db
    with store:
        try:
            messages = store.load(session_id)
            known = [] if messages else store.list_sessions()
        except sqlite3.DatabaseError as exc:  # a damaged file: say which, and which session
            raise ConfigError(f"cannot read session {session_id!r} from {shown}: {exc}") from None
        if not messages:
            listed = ", ".join(known[:10]) + (", …" if len(known) > 10 else "")
            raise ConfigError(
                f"no session {session_id!r} in {shown}"
                + (f"; stored sessions: {listed}" if known else " (it holds no sessions)")
            )
    return build_timeline(messages, title=f"session {session_id}")


_PAGE_TITLE = b"<title>yiem trace: "
"""How a page `timeline_html` wrote begins its title, within its first few hundred bytes."""
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
"""A session id that names the page as it is (`SESSION_ID.html`)."""
_GIVE = "give --html FILE for the page, or --html - for standard output"


def _default_page(source: str, session: bool) -> Path:
    """Where the page goes without `--html`: beside the log `source` with its suffix
    replaced by `.html`, or for a `session` id `SOURCE.html` in the current folder.

    Raises:
        ConfigError: a session id that is no plain file name; a file already there that
            is not a `yiem trace` page (the page would replace it).
    """
    if session:
        if not _SAFE_NAME.fullmatch(source):
            raise ConfigError(f"session {source!r} is no plain file name for the page: {_GIVE}")
        page = Path(f"{source}.html")
    else:
        log = Path(source)
        page = log.with_name(f"{log.name}.html" if log.suffix == ".html" else f"{log.stem}.html")
    try:
        with page.open("rb") as held:
            head = held.read(1024)
    except FileNotFoundError:
        return page
    except OSError as exc:
        raise ConfigError(f"cannot write {page}: {exc.strerror or exc} ({_GIVE})") from None
    if _PAGE_TITLE not in head:
        raise ConfigError(f"{page} exists and is no yiem trace page, so it is kept: {_GIVE}")
    return page


def _not_over(html_out: Path, source: Path, what: str) -> None:
    """Refuse a `--html` that is the file the timeline is read from: the page would
    replace it."""
    from yiemagent.cli.options import same_file

    if same_file(html_out, source):
        raise ConfigError(f"cannot write {html_out} (--html): it is {what}, which it would replace")


def trace(
    source: Annotated[
        str,
        typer.Argument(
            help="A `yiem run --json` event log file (- for stdin), or a stored session id."
        ),
    ],
    html_out: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Where to write the timeline page (HTML); - for stdout. Default: beside the "
            "log as NAME.html, or SESSION_ID.html here.",
        ),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--sessions",
            help="Session database: a SQLite file (default: the user data folder's) or a "
            "postgresql:// URL.",
        ),
    ] = None,
    db_by_earlier_name: Annotated[
        str | None, typer.Option("--db", hidden=True, help="--sessions, by its earlier name.")
    ] = None,
) -> None:
    """Write a run's timeline as one self-contained HTML page: turns down the page, model and
    tool calls as bars on a time axis; click a bar for its arguments, result and tokens."""
    if db is not None and db_by_earlier_name is not None:
        raise ConfigError("--db is --sessions by its earlier name; give one of them")
    db = db if db is not None else db_by_earlier_name
    from yiemagent.cli.batch import library_warnings_shown
    from yiemagent.cli.render import counted
    from yiemagent.telemetry import load_timeline, timeline_html

    path = Path(source)
    if html_out is None and source == "-":  # refused before the piped log is read
        raise ConfigError(f"the log is on standard input, so the page has no default name: {_GIVE}")
    to_stdout = str(html_out) == "-"  # `--html -`: the page on standard output
    if not to_stdout and html_out is not None:
        refuse_standard_stream(html_out, "--html")
    if source == "-":  # `yiem run --json ... | yiem trace - --html page.html`
        from yiemagent.telemetry import timeline_from_event_lines

        with library_warnings_shown():  # a line cut off: one `yiem: warning:` line
            timeline = timeline_from_event_lines(
                sys.stdin, title="standard input", source="standard input"
            )
    elif path.is_file() and not _is_sqlite(path):
        if not to_stdout and html_out is not None:
            _not_over(html_out, path, "the run's log")
        with library_warnings_shown():
            timeline = load_timeline(source)
    elif path.is_file():
        raise ConfigError(
            f"{source} is a session database: give the session id and --sessions {source}"
        )
    elif _looks_like_a_file(source):
        what = "is a folder, not a file" if path.is_dir() else "the file does not exist"
        raise ConfigError(
            f"{source}: {what} (give a yiem run --json log, or a stored session's id)"
        )
    else:
        where = db or str(default_session_db())
        if not to_stdout and html_out is not None and "://" not in where:
            _not_over(html_out, Path(where), "the session database")
        timeline = _session_timeline(source, where)
    if html_out is None:  # the source was read: a log file or a stored session
        html_out = _default_page(source, session=not path.is_file())
        refuse_standard_stream(html_out, "--html")
    page = timeline_html(timeline)
    if to_stdout:
        try:
            sys.stdout.write(page)
            sys.stdout.flush()
        except BrokenPipeError:  # its reader went away: the command ends quietly
            raise
        except OSError as exc:
            raise unwritable_output(exc) from None
        where = "the page to standard output"
    else:
        try:
            write_atomically(html_out, page.encode("utf-8"))  # the old page or the new
        except OSError as exc:
            raise ConfigError(f"cannot write {html_out}: {exc.strerror or exc}") from exc
        where = str(html_out)
    turns = len(timeline.turns)
    bars = sum(len(turn.bars) for turn in timeline.turns)
    print(f"wrote {where} ({counted(turns, 'turn')}, {counted(bars, 'call')})", file=sys.stderr)


def start_tracing() -> Any:
    """`yiem run --otel`: the tracer provider the run's spans go to (see
    `yiemagent.telemetry.cli_tracer_provider`)."""
    from yiemagent.telemetry import cli_tracer_provider

    return cli_tracer_provider()


def stop_tracing(provider: Any) -> None:
    """Flush and close what `start_tracing` opened (no-op for None)."""
    if provider is not None:
        provider.shutdown()
