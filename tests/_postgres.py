"""A throwaway PostgreSQL server for the tests, from Debian's `postgresql` package.

`start_postgres()` runs `initdb` in a new temporary folder and `pg_ctl start` with the server
listening on 127.0.0.1 on a free port (no Unix socket outside that folder), and returns a
`PostgresServer` whose `dsn` a `PostgresSessionStore` connects to and whose `stop()` stops
the server and deletes the folder. PostgreSQL refuses to run as root: as root, the folder is
given to the `postgres` system user the Debian package creates and the server runs as that
user (`subprocess` with `user=`). `scripts/setup.sh test` installs the package.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PostgresServer", "start_postgres"]

DB_USER = "yiem"


@dataclass
class PostgresServer:
    """A running server: `dsn` to connect, `stop()` when done."""

    folder: Path
    port: int
    bin_dir: Path
    run_as: str | None

    @property
    def dsn(self) -> str:
        """A libpq connection URI for the `postgres` database (trust authentication)."""
        return f"postgresql://{DB_USER}@127.0.0.1:{self.port}/postgres"

    def create_database(self, name: str) -> str:
        """A new empty database on this server; returns its DSN."""
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://{DB_USER}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its folder."""
        _run(
            [str(self.bin_dir / "pg_ctl"), "stop", "-D", str(self.folder / "data"), "-m", "fast"],
            self.run_as,
            check=False,
        )
        shutil.rmtree(self.folder, ignore_errors=True)


def _bin_dir() -> Path:
    """Where Debian puts the server programs (`/usr/lib/postgresql/<version>/bin`), the newest
    version first; else the directory of an `initdb` on PATH."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError(
            "PostgreSQL's initdb is not installed: run scripts/setup.sh test "
            "(apt-get install postgresql)"
        )
    return Path(initdb).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(args: list[str], run_as: str | None, *, check: bool = True) -> None:
    result = subprocess.run(args, user=run_as, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {result.stdout}{result.stderr}")


def start_postgres() -> PostgresServer:
    """Initialise and start a server in a new temporary folder (see the module docstring).

    Raises:
        RuntimeError: PostgreSQL is not installed, or initdb / pg_ctl failed (their output
            is in the message).
    """
    bin_dir = _bin_dir()
    run_as = None
    folder = Path(tempfile.mkdtemp(prefix="yiem-pg-"))
    if os.geteuid() == 0:
        run_as = "postgres"
        user = pwd.getpwnam(run_as)
        os.chown(folder, user.pw_uid, user.pw_gid)
    data = folder / "data"
    try:
        _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                DB_USER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ],
            run_as,
        )
        for _ in range(5):  # another process may take the free port before the server does
            port = _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -c port={port} "
                f"-c unix_socket_directories={folder} -c fsync=off -c max_connections=60"
            )
            result = subprocess.run(
                [
                    str(bin_dir / "pg_ctl"),
                    "start",
                    "-D",
                    str(data),
                    "-w",
                    "-t",
                    "60",
                    "-l",
                    str(folder / "server.log"),
                    "-o",
                    options,
                ],
                user=run_as,
                capture_output=True,
                text=True,
                timeout=120,
            )
            if result.returncode == 0:
                return PostgresServer(folder, port, bin_dir, run_as)
        log = (folder / "server.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"pg_ctl start failed: {result.stdout}{result.stderr}\n{log}")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
