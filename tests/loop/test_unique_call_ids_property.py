"""Tool-call ids across a transcript (R-4.1): each model answer's calls get ids no other
call of the transcript has, whatever ids the model gives (empty, repeated within the
answer, or repeating an earlier answer's, as models that number their calls `call_0` in
every reply do), and an id that is already its own is left alone."""

from __future__ import annotations

from hypothesis import given, strategies as st

from tests.loop._kit import call, message
from yiemagent.types import ensure_unique_tool_call_ids

IDS = st.sampled_from(["", "call_0", "call_1", "call_0_2", "call_2", "x"])


@given(st.lists(st.lists(IDS, min_size=1, max_size=4), min_size=1, max_size=5))
def test_each_call_of_a_transcript_gets_an_id_of_its_own(answers: list[list[str]]) -> None:
    earlier: list[str] = []
    for ids in answers:
        answer = message(*(call("t", id=i) for i in ids))
        ensure_unique_tool_call_ids(answer, earlier)
        given_ids = [c.id for c in answer.tool_calls]
        assert all(given_ids) and len(set(given_ids)) == len(given_ids)
        assert not set(given_ids) & set(earlier)
        for original, now in zip(ids, given_ids, strict=True):  # a fresh id stays as it was
            if original and original not in earlier and ids.count(original) == 1:
                assert now == original
        again = message(*(call("t", id=i) for i in ids))
        ensure_unique_tool_call_ids(again, earlier)  # deterministic
        assert [c.id for c in again.tool_calls] == given_ids
        earlier += given_ids
