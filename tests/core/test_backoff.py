"""The one backoff schedule (`trust.core.backoff`)."""

from __future__ import annotations

import pytest

from trust.core.backoff import backoff_delay


def test_the_delay_doubles_from_the_first_up_to_the_cap() -> None:
    assert [backoff_delay(0.5, n, 5.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_a_zero_first_delay_never_waits() -> None:
    assert backoff_delay(0.0, 10, 30.0) == 0.0


def test_any_number_of_doublings_stays_at_the_cap_without_overflowing() -> None:
    # 0.2 * 2**5000 does not fit a float: the schedule stops doubling long before.
    assert backoff_delay(0.2, 5_000, 30.0) == 30.0


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="doublings must be >= 0, got -1"):
        backoff_delay(1.0, -1, 10.0)
