from __future__ import annotations

import itertools
import math

import pytest

from cgraph.simulate.metrics import pass_at, pass_hat, percentile, wilson


def test_wilson_interval_matches_the_textbook_values() -> None:
    # Wilson (1927) score interval, z = 1.96: 8 of 10 → 0.490–0.943; 0 of 20 → 0–0.161.
    assert wilson(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson(0, 20) == pytest.approx((0.0, 0.1611), abs=1e-4)
    assert wilson(20, 20)[1] == 1.0
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("c", "n", "k"), [(3, 5, 2), (5, 5, 3), (0, 4, 1), (2, 6, 3)])
def test_pass_hat_and_pass_at_are_the_chances_over_every_draw_of_k_runs(
    c: int, n: int, k: int
) -> None:
    runs = [True] * c + [False] * (n - c)
    draws = list(itertools.combinations(runs, k))
    assert pass_hat(c, n, k) == pytest.approx(sum(all(d) for d in draws) / len(draws))
    assert pass_at(c, n, k) == pytest.approx(sum(any(d) for d in draws) / len(draws))


def test_pass_k_needs_k_runs() -> None:
    assert pass_hat(2, 2, 3) is None and pass_at(2, 2, 3) is None


def test_percentile_is_a_nearest_rank_count() -> None:
    assert percentile([5, 1, 3, 2, 4], 0.5) == 3
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9) == 9
    assert percentile([], 0.5) is None
    assert not math.isnan(percentile([7], 0.9) or math.nan)
