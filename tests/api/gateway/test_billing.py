"""The pro rata split of a batch's fee (pure): exact to the wei, proportional, never above a trace's
own minimum fee; and the reservation ids, which never show an audit's id."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.api.gateway.billing import pro_rata, reservation_id

R_OVER_SHARE = st.integers(min_value=1, max_value=10**18)


def _ceil_div(numerator: int, denominator: int) -> int:
    """What the contract's `Math.mulDiv(..., Rounding.Ceil)` computes, in integers."""
    return -(-numerator // denominator)


@given(st.integers(min_value=0, max_value=10**24), st.lists(st.integers(min_value=1, max_value=10**20), min_size=1))
def test_the_shares_add_up_to_the_fee_and_are_within_one_wei_of_exact(total: int, weights: list[int]) -> None:
    shares = pro_rata(total, weights)
    assert sum(shares) == total
    whole = sum(weights)
    for share, weight in zip(shares, weights, strict=True):
        exact_floor = total * weight // whole
        assert exact_floor <= share <= exact_floor + 1


@given(R_OVER_SHARE, st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=16))
def test_a_share_never_exceeds_the_traces_own_minimum_fee(rate: int, seats: list[int]) -> None:
    """Each trace's estimate is the ceiling of its seats' fee; the batch's fee is the ceiling of the
    sum, at most the sum of the ceilings: so no share is above the reservation it is charged from."""
    estimates = [_ceil_div(rate * s, 7) for s in seats]
    fee = _ceil_div(rate * sum(seats), 7)
    assert fee <= sum(estimates)
    for share, estimate in zip(pro_rata(fee, estimates), estimates, strict=True):
        assert share <= estimate


def test_equal_weights_split_evenly_and_the_leftover_goes_first_come() -> None:
    assert pro_rata(10, [1, 1, 1]) == [4, 3, 3]
    assert pro_rata(9, [1, 2]) == [3, 6]
    with pytest.raises(ValueError, match="cannot split"):
        pro_rata(5, [0, 0])


def test_a_reservation_id_is_per_audit_and_hides_the_id() -> None:
    first, second = reservation_id("k3Jd0fS2-9QwXcTz1b7mVg"), reservation_id("another")
    assert len(first) == 32 and first != second and b"k3Jd0fS2" not in first
