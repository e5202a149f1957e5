"""Settings for the whole suite: hypothesis runs each example without a deadline and does not
fail a test for generating slowly, since on a loaded 2-core machine one example may take
longer than hypothesis's 200 ms default. Time budgets are `bench/`'s business (DESIGN §9);
a test's own `@settings` still sets its example count. `HYPOTHESIS_PROFILE=default` restores
hypothesis's defaults; `HYPOTHESIS_PROFILE=ci` (what `.ci/run` sets) also derandomizes, so
a landing is judged on the same examples every time, while a local run keeps exploring
new ones. The `postgres_server` / `postgres_dsn` fixtures give a real PostgreSQL
server (started once per run) and a fresh database per test.

A suite started with SIGINT ignored (`.ci/run &` from a script: a shell without job control
ignores it for a background command) gets Python's own handler back, as a terminal gives
it: every `yiem` a test starts would otherwise inherit the ignored SIGINT and keep ignoring
it (as it should), and the tests of Ctrl-C would test nothing. The tests of an ignored
SIGINT set it themselves in the child."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests._postgres import PostgresServer, start_postgres

settings.register_profile(
    "loaded-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", settings.get_profile("loaded-machine"), derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "loaded-machine"))

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server from Debian's package on 127.0.0.1 for the whole run
    (tests/_postgres.py), stopped and deleted at the end."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """The DSN of a new, empty database on the test server, one per test."""
    return postgres_server.create_database(f"t_{uuid.uuid4().hex[:16]}")
