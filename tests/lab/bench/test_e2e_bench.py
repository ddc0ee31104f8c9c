"""`trust bench e2e`'s count of the evaluation no report states: the time only abstained seats were
evaluating, read from the workers' own state files."""

from __future__ import annotations

from pathlib import Path

import pytest

from trust.lab.bench.e2e import unreported_evaluation
from trust.services.worker.store import SeatRecord, SeatState, WorkerStore

AUDIT = "0x" + "ab" * 20


def _store(path: Path, auditor: str, seats: list[tuple[int, int, SeatState, tuple[float, float] | None]]) -> Path:
    """A worker state at `path` holding (session, segment, state, evaluation span) seats."""
    with WorkerStore(path, chain_id=31337, audit_contract=AUDIT, auditor=auditor) as store:
        records = [SeatRecord(session, g, 0, 0, 2, 100, 116, 7, 1.0, state) for session, g, state, _ in seats]
        store.add_seats(records, through_block=8)
        for record, (_, _, _, span) in zip(records, seats, strict=True):
            if span is not None:
                store.update(record.key, audit_started_at=span[0], audit_finished_at=span[1])
    return path


def test_only_the_time_no_reporting_seat_covered_counts(tmp_path: Path) -> None:
    first = _store(
        tmp_path / "a.sqlite3",
        "0x" + "01" * 20,
        [
            (1, 0, SeatState.REVEALED, (10.0, 20.0)),
            (1, 1, SeatState.ABSTAINED, (15.0, 30.0)),  # 20-30 is its own
            (2, 0, SeatState.ABSTAINED, (0.0, 100.0)),  # another session
        ],
    )
    second = _store(
        tmp_path / "b.sqlite3",
        "0x" + "02" * 20,
        [
            (1, 2, SeatState.ABSTAINED, (40.0, 45.0)),  # all its own
            (1, 3, SeatState.FINALIZED, (42.0, 50.0)),  # reported: 42-45 is not the abstainer's alone
            (1, 4, SeatState.ABSTAINED, None),  # abstained before evaluating (no key, say): no time
        ],
    )
    assert unreported_evaluation([first, second], 1) == pytest.approx(10.0 + 2.0)
    assert unreported_evaluation([first, second], 2) == pytest.approx(100.0)
    assert unreported_evaluation([first, second], 3) == 0.0
