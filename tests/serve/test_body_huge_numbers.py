"""A request body holding a number too large for a float (`1e400`) is refused as one holding
`Infinity` is (DESIGN §8): pydantic-core's `from_json` reads it as infinity even with
`allow_inf_nan=False`, and a chat completion then ran with `temperature` infinite. Through a
real Uvicorn server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from tests.serve._kit import error_of, faux_server
from yiemagent.sessions import SqliteSessionStore

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    path: Path = tmp_path_factory.mktemp("huge") / "s.db"
    with (
        SqliteSessionStore(path) as store,
        faux_server(store) as (url, _),
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        yield http


def refusal(client: httpx.Client, route: str, body: str) -> tuple[int, str]:
    answer = client.post(route, content=body, headers={"content-type": "application/json"})
    return answer.status_code, error_of(answer) if answer.status_code >= 400 else answer.text


@pytest.mark.parametrize("number", ["1e400", "-1.5E+999", "1.8e308"])
def test_a_huge_number_is_refused_as_infinity_is(client: httpx.Client, number: str) -> None:
    completion = '{"messages": [{"role": "user", "content": "hi"}], "temperature": %s}'
    status, said = refusal(client, "/v1/chat/completions", completion % number)
    padded = "Infinity".ljust(len(number))  # the same column: the message names it
    assert (status, said) == refusal(client, "/v1/chat/completions", completion % padded)
    assert status == 400 and said.endswith("expected value at line 1 column 66"), said


def test_a_large_finite_number_is_read(client: httpx.Client) -> None:
    completion = '{"messages": [{"role": "user", "content": "1e400"}], "temperature": 1e-400}'
    status, _ = refusal(client, "/v1/chat/completions", completion)
    assert status == 200
