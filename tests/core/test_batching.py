"""`bounded_runs`: lists of work cut into transactions of bounded size, in order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.core.batching import bounded_runs


def test_runs_keep_the_order_and_stay_within_the_bound() -> None:
    assert bounded_runs(list(range(10)), 4) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert bounded_runs([], 4) == []
    # Sized: three committees of three fit a bound of ten draws, the fourth starts the next run.
    assert bounded_runs([3, 3, 3, 3, 1], 10, size=lambda draws: draws) == [[3, 3, 3], [3, 1]]


def test_an_item_larger_than_the_bound_goes_alone() -> None:
    assert bounded_runs([1, 50, 1, 1], 4, size=lambda n: n) == [[1], [50], [1, 1]]
    with pytest.raises(ValueError, match="at least 1"):
        bounded_runs([1], 0)


@given(st.lists(st.integers(min_value=1, max_value=20), max_size=60), st.integers(min_value=1, max_value=40))
def test_every_item_once_no_empty_run_and_no_run_over_the_bound_unless_alone(sizes: list[int], most: int) -> None:
    runs = bounded_runs(sizes, most, size=lambda n: n)
    assert [item for run in runs for item in run] == sizes
    assert all(run for run in runs)
    assert all(sum(run) <= most or len(run) == 1 for run in runs)
    # Greedy: a run is cut only when the next item would not fit.
    assert all(sum(a) + b[0] > most for a, b in zip(runs, runs[1:], strict=False))
