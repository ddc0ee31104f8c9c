"""`--limit`: a subset of an evaluation set that keeps its spread.

The first N items of a file are not a fair subset when the file is sorted (ProcessBench's GSM8K file
lists its erroneous solutions before its correct ones, so its first 20 items hold no correct one
and the F1 of any method on them is 0). `evenly_spaced` takes N items spread over the whole order
instead: the first one, then about every len/N-th, always the same ones for the same N.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from trust.errors import ConfigError

__all__ = ["evenly_spaced"]

T = TypeVar("T")


def evenly_spaced(items: Sequence[T], limit: int | None) -> list[T]:
    """`limit` items at positions floor(i * len / limit), i = 0..limit-1 (all of them when `limit`
    is None or not below the length), in their order."""
    if limit is None or limit >= len(items):
        return list(items)
    if isinstance(limit, bool) or limit < 1:
        raise ConfigError(f"--limit {limit!r}: expected a positive number of items")
    return [items[index * len(items) // limit] for index in range(limit)]
