"""A request no route takes (a path the API has not, a method its path has not) is answered
as every other error of `yiem serve` (DESIGN §8): JSON with `error` (on the OpenAI routes,
OpenAI's error object, whose message the official SDK shows), never Starlette's bare
"Not Found" text. Through a real Uvicorn server on 127.0.0.1, and the `openai` SDK."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2 as httpx
import openai
import pytest

from tests.serve._kit import error_of, faux_server
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with faux_server(InMemorySessionStore()) as (address, _):
        yield address


@pytest.mark.parametrize(
    ("method", "path", "status", "said"),
    [
        ("GET", "/v2/sessions", 404, "no route /v2/sessions"),
        ("POST", "/v1/runs", 404, "no route /v1/runs"),
        ("PUT", "/v1/sessions/s", 405, "/v1/sessions/s does not take PUT; send "),
        ("DELETE", "/healthz", 405, "/healthz does not take DELETE; send GET, HEAD"),
        ("GET", "/v1/chat/completions", 405, "/v1/chat/completions does not take GET; send "),
        ("GET", "/ag-ui", 405, "/ag-ui does not take GET; send POST"),
        ("GET", "/v1/runs/r/abort", 405, "/v1/runs/r/abort does not take GET; send POST"),
    ],
)
def test_an_unrouted_request_is_a_json_error_saying_what_to_send(
    url: str, method: str, path: str, status: int, said: str
) -> None:
    response = httpx.request(method, url + path)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert error_of(response).startswith(said), error_of(response)
    if status == 405:
        assert response.headers["allow"]


def test_the_openai_sdk_shows_the_message_of_a_path_the_server_has_not(url: str) -> None:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError) as raised:
        client.completions.create(model="agent", prompt="hi")
    assert raised.value.body is not None
    assert "no route /v1/completions" in str(raised.value)
