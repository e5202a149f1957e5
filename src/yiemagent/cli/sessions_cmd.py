"""`yiem sessions`: stored sessions, and freeing one whose writer is gone.

    yiem sessions                       # the stored sessions, one id a line
    yiem sessions release ID [--yes]    # remove the session's writer lease, whoever holds it

A lease held on another host cannot be checked from here (no pid to look at; a recreated
container has a new host name), so SQLite respects it until it is removed; `release` is
the store's `force_release` behind one confirmation line. A holder that is in fact still
running loses the session: its next write is refused, nothing it wrote is lost.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from yiemagent.cli.options import CliError
from yiemagent.cli.stores import default_session_db, open_store, without_password
from yiemagent.errors import ConfigError
from yiemagent.sessions import (
    PostgresSessionStore,
    SessionStore,
    SqliteSessionStore,
    check_session_id,
)
from yiemagent.sessions.lease import LeaseHolder

__all__ = ["sessions_app"]

sessions_app = typer.Typer(
    invoke_without_command=True,
    help="List the stored sessions, or free one whose writer is gone (`yiem sessions release ID`).",
)

SessionsOption = Annotated[
    str | None,
    typer.Option(
        "--sessions",
        help="SQLite file (in a folder that exists) or postgresql:// URL (default: the "
        "user data one).",
    ),
]


@sessions_app.callback()
def sessions_list(ctx: typer.Context, sessions: SessionsOption = None) -> None:
    """The stored sessions' ids, one a line."""
    if ctx.invoked_subcommand is not None:
        return
    store = _open_existing(sessions)
    try:
        ids = store.list_sessions()
    finally:
        store.close()
    for session_id in ids:
        print(session_id)
    if not ids:  # nothing on stdout would read as a command that did not work
        where = without_password(sessions) if sessions else str(default_session_db())
        print(f"yiem: no stored sessions in {where}", file=sys.stderr)


@sessions_app.command("release")
def sessions_release(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="The session to free.")],
    sessions: SessionsOption = None,
    yes: Annotated[bool, typer.Option("--yes", help="Release without asking.")] = False,
) -> None:
    """Remove a session's writer lease whoever holds it: for a writer known to be gone
    that cannot be checked from here (another host, a recreated container).

    Raises:
        CliError: a bad id, a session the store holds neither a lease nor a message of
            (said before any question), not confirmed (nothing changed), or the store does
            not open.
    """
    try:
        check_session_id(session_id)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    store = _open_existing(sessions)
    try:
        if not isinstance(store, SqliteSessionStore | PostgresSessionStore):
            raise CliError(f"session {session_id!r}: this store has no leases to release")
        holder = store.lease_holder(session_id)  # what there is, said before asking
        if holder is not None and not yes:
            _confirm(session_id, holder)
        if holder is not None and store.force_release(session_id):
            print(f"session {session_id!r}: writer lease released")
        elif session_id in store.list_sessions():
            print(f"session {session_id!r}: no writer lease held, nothing to release")
        else:
            raise CliError(
                f"session {session_id!r}: no such session, nothing released "
                "(`yiem sessions` lists them)"
            )
    finally:
        store.close()


def _open_existing(where: str | None) -> SessionStore:
    """The store `--sessions` names, as `open_store` opens it, except that a SQLite file
    it names must exist: these commands only read or free what is stored, so a mistyped
    path is an error rather than a new, empty database under that name.

    Raises:
        CliError: the file is not there, or the store does not open.
    """
    a_url = where is not None and where.startswith(("postgresql://", "postgres://"))
    if where and not a_url and not Path(where).exists():
        raise CliError(
            f"--sessions {where}: no session database there (leave --sessions out for "
            "the default one, where yiem chat and yiem serve keep theirs)"
        )
    return open_store(where)


def _confirm(session_id: str, holder: LeaseHolder) -> None:
    """Ask whether to take the lease from `holder`.

    Raises:
        CliError: not confirmed, or no terminal to ask on.
    """
    if not sys.stdin.isatty():
        raise CliError(f"session {session_id!r}: not released; confirm with --yes")
    answer = input(
        f"Release the writer lease of session {session_id!r}, held by {holder.describe()}? "
        "A writer still running loses it. [y/N] "
    )
    if answer.strip().lower() not in ("y", "yes"):
        raise CliError(f"session {session_id!r}: not released")
