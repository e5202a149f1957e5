"""Where the CLI keeps stored sessions: the default SQLite file in the user data folder,
the store a `--sessions` option names (a file or a `postgresql://` URL), and that
option as said in a message (without its password). `yiem serve` and `yiem trace` share
these, so a session one writes the other reads.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from yiemagent.cli.options import CliError, check_output_path
from yiemagent.errors import ConfigError

if TYPE_CHECKING:
    from yiemagent.sessions import SessionStore

__all__ = ["default_session_db", "open_store", "without_password"]


def default_session_db() -> Path:
    """Where stored sessions live unless `--sessions` says otherwise."""
    explicit = os.environ.get("YIEM_DATA_DIR")
    if explicit:
        return Path(explicit) / "sessions.db"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "yiemagent" / "sessions.db"


def open_store(where: str | None, flag: str = "--sessions") -> SessionStore:
    """The session store `--sessions` (or `flag`) names: a `postgresql://` URL, a SQLite
    file, or (None) the user data folder's `sessions.db`. A file named in it must be in a
    folder that exists, as every output file of the CLI (`check_output_path`): a typo in
    the path is an error, not a new folder; only the user data folder is made when missing.

    Raises:
        CliError: the file's folder does not exist or cannot be made, or the store does not
            open.
    """
    try:
        if where and where.startswith(("postgresql://", "postgres://")):
            from yiemagent.sessions import PostgresSessionStore

            return PostgresSessionStore(where)
        from yiemagent.sessions import SqliteSessionStore

        if where:
            path = Path(where)
            check_output_path(path, flag)
        else:
            path = default_session_db()
            _make_data_folder(path.parent)
        return SqliteSessionStore(path)
    except (ConfigError, OSError) as exc:
        if not where:  # the user data folder's database: the error names it
            raise CliError(str(exc)) from exc
        raise CliError(f"{flag} {without_password(where)}: {exc}") from exc


def _make_data_folder(folder: Path) -> None:
    """Make the user data folder (and its parents) unless it exists.

    Raises:
        CliError: it cannot be made (a file in the way, no permission, a read-only disk);
            the line names it and says how to choose another.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        in_the_way = isinstance(exc, FileExistsError | NotADirectoryError)
        reason = "a file is in the way, not a folder" if in_the_way else exc.strerror or exc
        raise CliError(
            f"cannot make the user data folder {folder} for the session database: {reason}; "
            "set YIEM_DATA_DIR to a folder that can be written, or give --sessions"
        ) from exc


_SECRET_PARAMETER = re.compile(
    r"(?i)(^|&)((?:password|passwd|pwd|[\w.-]*key|[\w.-]*token|secret|sig|signature)=)[^&]*"
)
"""A query parameter whose value is a secret: a password, a key, a token, a signature."""


def without_password(where: str) -> str:
    """A URL as said in a message (`--sessions`, the base URL `yiem
    chat`'s `/model` talks to): its password (`user:PASSWORD@`, or a `password=`
    parameter) and any key or token in its query (`api-key=`, `key=`, `token=`, …)
    replaced by `***`, as the store's own messages hide the password."""
    if "://" not in where:
        return where
    try:
        parts = urlsplit(where)
    except ValueError:  # not a URL after all (an unclosed [IPv6]): show none of it
        return where.split("://", 1)[0] + "://…"
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    query = _SECRET_PARAMETER.sub(r"\1\2***", parts.query)
    return urlunsplit(parts._replace(netloc=netloc, query=query))
