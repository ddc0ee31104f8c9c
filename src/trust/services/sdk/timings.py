"""The Table-3 breakdown of one audit (paper 3.6) from what the provider observed and what the
auditors reported: pure arithmetic on wall-clock intervals (see `PhaseTimings` for each figure)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from trust.services.sdk.result import PHASES, PhaseTimings

__all__ = ["Evaluation", "RoundTrack", "covered_seconds", "phase_timings"]


class Evaluation(Protocol):
    """An auditor's reported evaluation interval (an `AuditReport` is one)."""

    @property
    def tier(self) -> int: ...
    @property
    def started_at(self) -> float: ...
    @property
    def finished_at(self) -> float: ...


@dataclass
class RoundTrack:
    """What the provider saw of one round of one segment, with the wall-clock time of each step."""

    segment: int
    round: int
    tier: int
    members: tuple[str, ...]
    opened_at: float
    """When the round began waiting for its draw: the session's creation, or the escalation."""
    drawn_at: float
    delivered_at: float | None = None
    revealed_at: float | None = None
    final_at: float | None = None


def _union(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted((a, b) for a, b in intervals if b > a):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def covered_seconds(intervals: Iterable[tuple[float, float]]) -> float:
    """The wall time `intervals` (start, end) cover, overlaps counted once."""
    return sum(end - start for start, end in _union(intervals))


def _clip(intervals: Iterable[tuple[float, float]], low: float, high: float) -> list[tuple[float, float]]:
    return [(max(a, low), min(b, high)) for a, b in intervals if min(b, high) > max(a, low)]


def _minus(spans: list[tuple[float, float]], holes: list[tuple[float, float]]) -> float:
    """The length of `spans` not covered by `holes` (both unions)."""
    covered = sum(covered_seconds(_clip(holes, a, b)) for a, b in spans)
    return max(0.0, covered_seconds(spans) - covered)


def phase_timings(marks: dict[str, float], rounds: Iterable[RoundTrack], reports: Iterable[Evaluation]) -> PhaseTimings:
    """The Table-3 breakdown of one audit (see `PhaseTimings` for what each figure measures)."""
    start, verdict = marks["start"], marks.get("verdict", time.time())
    tracks = list(rounds)
    evaluation = {
        tier: _clip(((r.started_at, r.finished_at) for r in reports if r.tier == tier), start, verdict)
        for tier in (1, 2, 3)
    }
    inference = _union(span for spans in evaluation.values() for span in spans)
    draws = [(t.opened_at, t.drawn_at) for t in tracks]
    deliveries = [(t.drawn_at, t.delivered_at) for t in tracks if t.delivered_at is not None]
    votes = _union((t.delivered_at, t.revealed_at) for t in tracks if t.delivered_at and t.revealed_at)
    last_reveal = max((t.revealed_at for t in tracks if t.revealed_at is not None), default=verdict)
    seconds: dict[str, float | None] = {
        "decomposition": marks.get("decomposed", start) - start,
        "assignment": covered_seconds(draws),
        "distribution": (marks.get("uploaded", start) - marks.get("decomposed", start)) + covered_seconds(deliveries),
        "vote_aggregation": _minus(votes, inference),
        "finalization": max(0.0, verdict - last_reveal),
    }
    for tier in (1, 2, 3):
        seconds[f"tier{tier}_verification"] = covered_seconds(evaluation[tier]) if evaluation[tier] else None
    total = verdict - start
    overhead = max(0.0, total - covered_seconds(inference))
    return PhaseTimings({key: seconds.get(key) for key, _, _ in PHASES}, total, overhead)
