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
    ("connection", "connection lost (s)"),
)
"""(stage, label) in the order an audit goes through them (the six phases of paper 1.10); the last,
`connection`, only while the RPC or the IPFS node is away: seconds of the outage budget used
(`trust.services.sdk.outage`)."""


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """`done` of `total` units of `stage` are complete (never more than `total`); `message` says what
    just happened, if anything. Totals may grow: escalated rounds add committees to draw."""

    stage: str
    done: int
    total: int
    message: str = ""


ProgressCallback = Callable[[ProgressEvent], None]
