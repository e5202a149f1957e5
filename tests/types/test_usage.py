"""`Usage.add`: the one way usages are summed; `transcript_usage`, the one total of a
transcript (chat /usage, the CLI total, a batch task's tally)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from yiemagent.types import AssistantMessage, Cost, Usage

_tokens = st.integers(min_value=0, max_value=10**9)
_usd = st.floats(min_value=0, max_value=1e3, allow_nan=False)
_usages = st.builds(
    Usage,
    input=_tokens,
    output=_tokens,
    cache_read=_tokens,
    cache_write=_tokens,
    total_tokens=_tokens,
    cost=st.builds(Cost, input=_usd, output=_usd, cache_read=_usd, cache_write=_usd, total=_usd),
)


@given(st.lists(_usages, max_size=12))
def test_add_sums_every_count_and_every_cost_field(usages: list[Usage]) -> None:
    total = Usage()
    for usage in usages:
        total.add(usage)
    for name in ("input", "output", "cache_read", "cache_write", "total_tokens"):
        assert getattr(total, name) == sum(getattr(u, name) for u in usages)
    for name in ("input", "output", "cache_read", "cache_write", "total"):
        expected = sum(getattr(u.cost, name) for u in usages)
        assert abs(getattr(total.cost, name) - expected) <= 1e-9 * max(1.0, expected)


@given(_usages)
def test_add_leaves_the_added_usage_alone(usage: Usage) -> None:
    before = (usage.input, usage.output, usage.cost.total, usage.cost.input)
    Usage(input=1).add(usage)
    assert (usage.input, usage.output, usage.cost.total, usage.cost.input) == before


def test_the_transcript_total_counts_input_and_output_cost() -> None:
    from yiemagent.types import transcript_usage

    a = AssistantMessage(
        usage=Usage(input=10, output=2, cost=Cost(input=0.1, output=0.2, total=0.3))
    )
    b = AssistantMessage(
        usage=Usage(input=5, output=1, cost=Cost(input=0.05, output=0.1, total=0.15))
    )
    total = transcript_usage([a, b])
    assert (total.input, total.output) == (15, 3)
    assert round(total.cost.input, 6) == 0.15  # was 0: only the total cost was summed
    assert round(total.cost.total, 6) == 0.45
