"""Fixtures of the session store contract suite: `backend` (memory, SQLite, PostgreSQL),
`shared_backend` (the two whose data several stores and processes share) and `store`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sessions._backends import Backend, make_backend
from yiemagent.sessions import SessionStore


def _backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    dsn = request.getfixturevalue("postgres_dsn") if request.param == "postgres" else None
    return make_backend(request.param, tmp_path, dsn)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return _backend(request, tmp_path)


@pytest.fixture(params=["sqlite", "postgres"])
def shared_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return _backend(request, tmp_path)


@pytest.fixture
def store(backend: Backend) -> Iterator[SessionStore]:
    s = backend.open()
    yield s
    s.close()
