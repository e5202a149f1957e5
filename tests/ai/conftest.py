"""Fixtures shared by the provider tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.ai._local_kit import FakeRuntime
from tests.ai.servers import ReplayServer
from yiemagent.ai.providers.local import provider


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    """A replay HTTP server on 127.0.0.1 for one test (scripted SSE streams and errors)."""
    with ReplayServer() as replay:
        yield replay


@pytest.fixture(scope="module")
def stream_server() -> Iterator[ReplayServer]:
    """One replay server for every example of a module's property tests
    (`tests/ai/_stream_kit.py`): starting one per hypothesis example would cost more than
    the example."""
    with ReplayServer() as replay:
        yield replay


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeRuntime]:
    def install(replies: list[str], **kwargs: Any) -> FakeRuntime:
        runtime = FakeRuntime(replies, **kwargs)

        async def get_runtime(spec: Any) -> FakeRuntime:
            return runtime

        monkeypatch.setattr(provider, "get_runtime", get_runtime)
        return runtime

    return install
