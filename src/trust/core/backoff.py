"""Exponential backoff: the one schedule by which the project waits before trying again (the LLM and
IPFS clients after a failed request, the worker after a failed step or an unreachable chain, the SDK
through an outage). Pure: callers sleep.
"""

from __future__ import annotations

__all__ = ["backoff_delay"]

_MAX_DOUBLINGS = 64
"""2**64 times any positive first delay is past every cap in use; more would only risk a float overflow."""


def backoff_delay(first_seconds: float, doublings: int, max_seconds: float) -> float:
    """Seconds to wait: `first_seconds` doubled `doublings` times (0: the first delay), at most
    `max_seconds`. `doublings` counts the failed tries before this wait, less one."""
    if doublings < 0:
        raise ValueError(f"doublings must be >= 0, got {doublings}")
    return float(min(first_seconds * 2 ** min(doublings, _MAX_DOUBLINGS), max_seconds))
