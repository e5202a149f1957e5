"""The options a cassette's request holds (DESIGN §19): every call option that changes what
a provider is sent is in the recorded request, so a changed one is a `CassetteMismatch`,
not the old answer replayed. `cache_retention`, `thinking_budgets` and `metadata` were left
out: a test that turned caching off, gave the model another thinking budget or another
user id still replayed the answer to the old request. Options that are sent nowhere, or
are secrets (the key, the headers), or are random per session (`session_id`, a prompt-cache
key) stay out. A cassette recorded before these options were held still replays."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from yiemagent import ConfigError
from yiemagent.ai import Context, StreamOptions, complete
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.testing import CassetteMismatch, record, replay
from yiemagent.types import UserMessage

CONTEXT = Context("Answer briefly.", [UserMessage("Capital of France?")], None)
BASE: dict[str, Any] = {"temperature": 0.0, "reasoning": "high"}

# (recorded value, a value that sends another request)
SENT: dict[str, tuple[Any, Any]] = {
    "temperature": (0.0, 0.7),
    "max_tokens": (64, 128),
    "reasoning": ("high", "low"),
    "thinking_budgets": ({"high": 2048}, {"high": 4096}),
    "cache_retention": ("long", "none"),
    "metadata": ({"user_id": "u1"}, {"user_id": "u2"}),
    "output_schema": ({"type": "object"}, {"type": "array"}),
}
# (recorded value, another value that sends the same request)
UNSENT: dict[str, tuple[Any, Any]] = {
    "api_key": ("key-one-1234", "key-two-5678"),  # a secret
    "headers": ({"x-a": "1"}, {"x-a": "2"}),  # secrets live there
    "session_id": ("s-1", "s-2"),  # a prompt-cache key, a random id per session
    "max_retry_delay_ms": (1000, 0),  # how long to wait, not what to ask
    "transport": ("sse", "websocket"),  # read by no provider
    "on_payload": (None, lambda body: body),  # code: what it does to a body is not data
    "on_response": (None, lambda response: None),
    "signal": (None, None),
    "idle_timeout_s": (30.0, 60.0),
    "reasoning_timeout_s": (30.0, 60.0),
    "keep_alive": (None, lambda: None),
}
SAME_REQUEST: list[tuple[str, Any, Any]] = [
    ("cache_retention", None, "short"),  # "short" is the providers' default
    ("thinking_budgets", None, {"low": 100}),  # a budget for a level not asked for
]

# A line `record` wrote before the cache retention, the thinking budget and the metadata
# were recorded, from a call with cache_retention="long", thinking_budgets={"high": 2048}
# and metadata={"user_id": "u1"}.
OLD_LINE = (
    '{"request": {"model": "faux/faux", "system_prompt": "Answer briefly.", "messages": '
    '[{"content": [{"text": "Capital of France?", "type": "text"}], "role": "user"}], '
    '"tools": [], "options": {"temperature": 0.0, "reasoning": "high"}}, "events": '
    '[{"type": "start"}, {"type": "text_start", "content_index": 0}, {"type": "text_delta", '
    '"content_index": 0, "delta": "Paris."}, {"type": "text_end", "content": {"text": '
    '"Paris.", "type": "text"}}, {"type": "done", "reason": "stop"}], "message": {"content": '
    '[{"text": "Paris.", "type": "text"}], "api": "faux", "provider": "faux", "model": '
    '"faux", "usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, '
    '"total_tokens": 0, "cost": {"input": 0.0, "output": 0.0, "cache_read": 0.0, '
    '"cache_write": 0.0, "total": 0.0}}, "stop_reason": "stop", "error_message": null, '
    '"timestamp": 1796634439177, "role": "assistant", "duration_ms": null, "agent": null, '
    '"details": {}, "compaction_usage": null}}\n'
)


async def recorded(tmp_path: Path, **options: Any) -> Path:
    cassette = tmp_path / "c.jsonl"
    fm = FauxModel(["Paris."])
    reply = await complete(record(fm.model, cassette), CONTEXT, StreamOptions(**options))
    assert reply.text == "Paris."
    return cassette


async def answer(cassette: Path, **options: Any) -> str:
    return (await complete(replay(cassette), CONTEXT, StreamOptions(**options))).text


def test_every_call_option_is_recorded_or_left_out_for_a_reason() -> None:
    fields = {f.name for f in dataclasses.fields(StreamOptions)}
    assert set(SENT) | set(UNSENT) == fields and not set(SENT) & set(UNSENT)


@pytest.mark.parametrize("option", sorted(SENT))
async def test_an_option_that_changes_the_request_is_recorded(tmp_path: Path, option: str) -> None:
    before, after = SENT[option]
    cassette = await recorded(tmp_path, **{**BASE, option: before})
    assert await answer(cassette, **{**BASE, option: before}) == "Paris."
    with pytest.raises(CassetteMismatch) as caught:
        await answer(cassette, **{**BASE, option: after})
    assert str(caught.value).startswith("request 1 differs: ")


@pytest.mark.parametrize(
    ("option", "before", "after"),
    [(name, *values) for name, values in sorted(UNSENT.items())] + SAME_REQUEST,
)
async def test_an_option_that_sends_the_same_request_still_replays(
    tmp_path: Path, option: str, before: Any, after: Any
) -> None:
    cassette = await recorded(tmp_path, **{**BASE, option: before})
    assert await answer(cassette, **{**BASE, option: after}) == "Paris."


async def test_a_cassette_recorded_before_these_options_were_held_still_replays(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "old.jsonl"
    cassette.write_text(OLD_LINE, encoding="utf-8")
    options = {"thinking_budgets": {"high": 2048}, "metadata": {"user_id": "u1"}}
    assert await answer(cassette, **BASE, cache_retention="long", **options) == "Paris."
    with pytest.raises(CassetteMismatch, match=r'"temperature": 0\.7'):
        await answer(cassette, **{**BASE, "temperature": 0.7})


async def test_recordings_that_differ_in_an_option_answer_their_own_requests(
    tmp_path: Path,
) -> None:
    cassette = await recorded(tmp_path, **BASE, cache_retention="long")
    await recorded(tmp_path, **BASE, cache_retention="none")
    model = replay(cassette)
    context = StreamOptions(**BASE, cache_retention="none")
    assert (await complete(model, CONTEXT, context)).text == "Paris."
    with pytest.raises(CassetteMismatch, match="already answered an earlier request"):
        await complete(model, CONTEXT, context)  # the "long" recording is not its answer


@pytest.mark.parametrize("version", [99, 0])
async def test_a_line_of_a_format_this_build_does_not_read_is_refused(
    tmp_path: Path, version: int
) -> None:
    """A line of a format this build does not know (one a newer yiemagent wrote) is one
    clear error naming the file, the line and the formats read, not replayed as if it were
    an old one."""
    cassette = await recorded(tmp_path)
    first = cassette.read_text(encoding="utf-8")
    assert '"format": 2' in first
    cassette.write_text(first + first.replace('"format": 2', f'"format": {version}'), "utf-8")
    with pytest.raises(ConfigError) as caught:
        replay(cassette)
    assert str(caught.value) == (
        f"cassette {cassette}: line 2 has format {version}; this build of yiemagent reads "
        "formats 1 to 2 (a newer version may have recorded it)"
    )
