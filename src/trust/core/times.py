"""Times and durations as people read them: "2025-06-01 14:03:22 UTC", "2 h 05 min", "4 min 09 s".

One format everywhere (the explorer, the human-review page, the worker's command line), so a time
copied from one can be searched in another. A duration has two units at most, the larger first and
the smaller zero-padded, so a column of them lines up; callers add their sign (the explorer's
offsets within a session) or their "passed" (the review page's time left). Pure: the caller reads
the clock.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["duration_text", "utc_text"]


def utc_text(unix_seconds: float) -> str:
    """A unix time in UTC to the second: "2025-06-01 14:03:22 UTC"."""
    return datetime.fromtimestamp(unix_seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration_text(seconds: int) -> str:
    """`seconds` (not negative) in hours and minutes, minutes and seconds, or seconds alone."""
    if seconds < 0:
        raise ValueError(f"a duration is not negative, got {seconds} s: format the sign before calling")
    hours, rest = divmod(seconds, 3_600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"
