"""Times and durations as people read them: one format for the explorer, the review page and the
worker's command line."""

from __future__ import annotations

import pytest

from trust.api.explorer.formatting import duration_text as offset_text
from trust.auditors.review import duration_text as time_left_text
from trust.core.times import duration_text, utc_text


def test_a_duration_has_two_units_at_most_the_smaller_padded() -> None:
    cases = {0: "0 s", 59: "59 s", 60: "1 min 00 s", 249: "4 min 09 s", 3_599: "59 min 59 s", 7_500: "2 h 05 min"}
    assert {s: duration_text(s) for s in cases} == cases
    assert duration_text(90_061) == "25 h 01 min", "no days: the hours keep counting"
    with pytest.raises(ValueError, match="-1 s: format the sign"):
        duration_text(-1)


def test_the_explorer_signs_it_and_the_review_page_rounds_time_left_up() -> None:
    assert [offset_text(s) for s in (-249, 0, 7_500)] == ["-4 min 09 s", "+0 s", "+2 h 05 min"]
    assert [time_left_text(s) for s in (-3.0, 0, 0.2, 248.1)] == ["passed", "passed", "1 s", "4 min 09 s"]


def test_utc_text_is_utc_to_the_second() -> None:
    assert utc_text(0) == "1970-01-01 00:00:00 UTC"
    assert utc_text(1_748_786_602.9) == "2025-06-01 14:03:22 UTC"
