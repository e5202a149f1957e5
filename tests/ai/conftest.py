"""Fixtures shared by the provider tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.ai.servers import ReplayServer


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    """A replay HTTP server on 127.0.0.1 for one test (scripted SSE streams and errors)."""
    with ReplayServer() as replay:
        yield replay
