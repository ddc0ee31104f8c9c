"""Cutting a list of work into transactions of bounded size.

A transaction that draws, finalizes or registers many segments at once pays for each, and a block
holds a bounded amount of gas: a 1,000-node trace drawn in one `assignAuditorsBatch` would need
about 100 million gas, more than any block holds. Callers cut their lists with `bounded_runs`,
keeping the order, so that each transaction stays well inside a block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["bounded_runs"]

_T = TypeVar("_T")


def bounded_runs(items: Sequence[_T], most: int, size: Callable[[_T], int] = lambda _item: 1) -> list[list[_T]]:
    """`items` in order, cut into runs whose `size`s sum to at most `most`. An item larger than
    `most` alone goes in a run of its own (it cannot be cut); no run is empty."""
    if most < 1:
        raise ValueError(f"a run holds at least 1, got most = {most}")
    runs: list[list[_T]] = []
    total = 0
    for item in items:
        weight = size(item)
        if not runs or total + weight > most:
            runs.append([])
            total = 0
        runs[-1].append(item)
        total += weight
    return runs
