"""vcrpy's cassette cases (its tests/unit/test_cassettes.py, test_persist.py,
test_serialize.py and tests/integration/test_record_mode.py, test_requests.py) on
`record` / `replay` (DESIGN §19): a cassette that cannot be read, replays that never
write and start from the first recording, an error answer kept as it came, and any text
surviving the file."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from yiemagent import ConfigError
from yiemagent.ai import Context, complete
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.testing import record, replay
from yiemagent.types import AssistantMessage, Model, UserMessage


async def ask(model: Model, prompt: str) -> AssistantMessage:
    return await complete(model, Context("Be brief.", [UserMessage(prompt)], None))


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "cannot read it: No such file or directory"),
        (b'\xff\xfe{"request": {}}\n', "cannot read it: 'utf-8' codec can't decode byte 0xff"),
        (b"interactions:\n- request: {}\n", "line 1 is not JSON"),
    ],
)
def test_a_cassette_that_cannot_be_read_is_refused_naming_it(
    tmp_path: Path, content: bytes | None, why: str
) -> None:
    # test_cassette_load_nonexistent, test_cassette_load_invalid_encoding,
    # test_load_cassette_with_invalid_cassettes: a clear error before any call
    cassette = tmp_path / "tape.jsonl"
    if content is not None:
        cassette.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        replay(cassette)
    assert str(caught.value).startswith(f"cassette {cassette}: ")
    assert why in str(caught.value)


async def test_replays_never_write_and_each_starts_from_the_first_recording(
    tmp_path: Path,
) -> None:
    # test_once_mode_three_times, test_cassette_rewound and test_cassette_not_all_played:
    # a cassette replayed again plays from its start; leaving recordings unused is no error
    cassette = tmp_path / "tape.jsonl"
    fm = FauxModel(["one", "two"])
    recording = record(fm.model, cassette)
    assert [(await ask(recording, p)).text for p in ("a", "b")] == ["one", "two"]
    written, stamp = cassette.read_bytes(), os.stat(cassette).st_mtime_ns

    assert (await ask(replay(cassette), "a")).text == "one"  # "b" is never asked
    again = replay(cassette)
    assert [(await ask(again, p)).text for p in ("a", "b")] == ["one", "two"]
    assert cassette.read_bytes() == written and os.stat(cassette).st_mtime_ns == stamp
    assert fm.call_count == 2


async def test_an_error_answer_is_recorded_and_replayed_as_it_came(tmp_path: Path) -> None:
    # test_status_code: what the server answered, an error too, is what replays (the
    # pytest fixture keeps a recording only when its test passed)
    cassette = tmp_path / "tape.jsonl"
    fm = FauxModel([])  # held: the registry keeps no faux model alive by itself
    live = await ask(record(fm.model, cassette), "a")
    assert live.stop_reason == "error" and live.error_message == "No more faux responses queued"
    again = await ask(replay(cassette), "a")
    assert (again.stop_reason, again.error_message) == ("error", live.error_message)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=st.text(min_size=1), answer=st.text(min_size=1))
def test_any_text_is_replayed_exactly_as_recorded(
    tmp_path_factory: pytest.TempPathFactory, prompt: str, answer: str
) -> None:
    # test_serialize.py: what is recorded reads back the same, whatever its characters
    cassette = tmp_path_factory.mktemp("tape") / "tape.jsonl"

    async def scenario() -> None:
        fm = FauxModel([answer])
        live = await ask(record(fm.model, cassette), prompt)
        replayed = await ask(replay(cassette), prompt)
        assert replayed.text == live.text == answer

    asyncio.run(scenario())
