"""What the official `openai` client does with its default retries against
`/v1/chat/completions` (DESIGN §18): a run that failed has already run (its tools too), so
the client must not send it again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from openai import APIError, OpenAI

from tests.serve._kit import serving
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)


async def test_a_failed_run_is_not_run_again_by_the_clients_retries() -> None:
    store = InMemorySessionStore()
    failed = faux_message(faux_text(""), stop_reason="error", error_message="provider said no")
    fm = FauxModel([failed] * 10)

    def make_agent(session_id: str) -> Agent[Any]:
        return Agent(
            model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id=session_id
        )

    def drive(url: str) -> tuple[int | None, str]:
        client = OpenAI(base_url=f"{url}/v1", api_key="none")  # the default: 2 retries
        with pytest.raises(APIError) as caught:
            client.chat.completions.with_raw_response.create(
                model="m",
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={"X-Session-Id": "once"},
            )
        return getattr(caught.value, "status_code", None), caught.value.message

    with serving(create_app(make_agent, session_store=store)) as url:
        status, message = await asyncio.to_thread(drive, url)

    assert status == 500 and "provider said no" in message
    assert fm.call_count == 1  # one run, not three
    assert [m.role for m in store.load("once")] == ["user", "assistant"]  # prompt stored once
