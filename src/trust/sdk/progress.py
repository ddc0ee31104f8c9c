"""Progress of an audit, as events a caller can show (the CLI draws them as rich progress bars)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["STAGES", "ProgressCallback", "ProgressEvent"]

STAGES: tuple[tuple[str, str], ...] = (
    ("decompose", "decomposing"),
    ("upload", "sealing and uploading segments"),
    ("session", "opening the session"),
    ("draw", "drawing committees"),
    ("keys", "delivering keys"),
    ("votes", "segments revealed"),
    ("final", "segments final"),
    ("reports", "reading critiques"),
)
"""(stage, label) in the order an audit goes through them (the six phases of paper 1.10)."""


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """`done` of `total` units of `stage` are complete; `message` says what just happened, if anything."""

    stage: str
    done: int
    total: int
    message: str = ""


ProgressCallback = Callable[[ProgressEvent], None]
