"""pass@k and pass^k (DESIGN §19): the unbiased estimators agree with counting every way
to draw k of the n runs, and behave as estimates of a chance should."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

import pytest
from hypothesis import given, strategies as st

from yiemagent.evals import pass_all_k, pass_at_k


@st.composite
def counts(draw: st.DrawFn) -> tuple[int, int, int]:
    n = draw(st.integers(1, 9))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


def _by_enumeration(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    runs = [True] * c + [False] * (n - c)
    draws = list(combinations(runs, k))
    any_pass = sum(any(d) for d in draws)
    all_pass = sum(all(d) for d in draws)
    return Fraction(any_pass, len(draws)), Fraction(all_pass, len(draws))


@given(counts())
def test_the_estimators_equal_the_share_of_k_draws_that_pass(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    any_pass, all_pass = _by_enumeration(n, c, k)
    assert pass_at_k(n, c, k) == pytest.approx(float(any_pass), abs=1e-12)
    assert pass_all_k(n, c, k) == pytest.approx(float(all_pass), abs=1e-12)


@given(counts())
def test_k_1_is_the_pass_rate_and_pass_all_never_exceeds_pass_at(
    nck: tuple[int, int, int],
) -> None:
    n, c, k = nck
    assert pass_at_k(n, c, 1) == pytest.approx(c / n)
    assert pass_all_k(n, c, 1) == pytest.approx(c / n)
    assert 0.0 <= pass_all_k(n, c, k) <= pass_at_k(n, c, k) <= 1.0
    if k < n:
        assert pass_at_k(n, c, k + 1) >= pass_at_k(n, c, k) - 1e-12
        assert pass_all_k(n, c, k + 1) <= pass_all_k(n, c, k) + 1e-12


def test_known_values() -> None:
    assert pass_at_k(3, 1, 3) == 1.0
    assert pass_at_k(3, 0, 3) == 0.0
    assert pass_at_k(3, 1, 2) == pytest.approx(2 / 3)
    assert pass_all_k(3, 2, 2) == pytest.approx(1 / 3)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)])
def test_impossible_counts_raise(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="need 0 <= c <= n"):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_all_k(n, c, k)
