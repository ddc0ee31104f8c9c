"""The worker's state file: a version-1 file (before audit reports) gains the report columns in place,
its seats intact; a file of a newer schema is refused; a new file appears whole or not at all; the
report bookkeeping reads back as written."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from trust.errors import ConfigError
from trust.services.worker.status import status_report
from trust.services.worker.store import SCHEMA_VERSION, SeatKey, SeatRecord, SeatState, WorkerStore

CHAIN_ID = 31337
AUDIT = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
AUDITOR = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"

# The schema-1 layout, as released before reports (the `seats` table without the report columns).
VERSION_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE seats (
    session_id INTEGER NOT NULL, segment_id INTEGER NOT NULL, round INTEGER NOT NULL,
    seat_index INTEGER NOT NULL, tier INTEGER NOT NULL, commit_deadline INTEGER NOT NULL,
    reveal_deadline INTEGER NOT NULL, drawn_block INTEGER NOT NULL, drawn_at REAL NOT NULL,
    state TEXT NOT NULL, envelope_cid TEXT, node_id TEXT, vote INTEGER, score REAL, critique TEXT,
    error_type TEXT, salt BLOB, commitment BLOB, voted_at REAL, commit_tx TEXT, committed_at REAL,
    reveal_tx TEXT, outcome TEXT, reward_wei TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    next_try REAL NOT NULL DEFAULT 0, last_error TEXT, updated_at REAL NOT NULL,
    PRIMARY KEY (session_id, segment_id, round)
);
CREATE INDEX seats_by_state ON seats (state);
CREATE TABLE log (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, session_id INTEGER, segment_id INTEGER,
    round INTEGER, event TEXT NOT NULL, detail TEXT NOT NULL
);
"""


def _version_1_file(path: Path, schema: str = "1") -> None:
    db = sqlite3.connect(path)
    db.executescript(VERSION_1)
    meta = {"schema": schema, "chain_id": str(CHAIN_ID), "audit_contract": AUDIT.lower(), "auditor": AUDITOR.lower()}
    db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
    db.execute(
        "INSERT INTO seats (session_id, segment_id, round, seat_index, tier, commit_deadline, reveal_deadline, "
        "drawn_block, drawn_at, state, vote, score, critique, salt, updated_at) "
        "VALUES (1, 3, 0, 2, 1, 100, 116, 7, 1.5, 'revealed', 0, 0.0, 'wrong product', ?, 2.0)",
        (b"\x05" * 32,),
    )
    db.commit()
    db.close()


def _open(path: Path) -> WorkerStore:
    return WorkerStore(path, chain_id=CHAIN_ID, audit_contract=AUDIT, auditor=AUDITOR)


def test_a_version_1_file_is_upgraded_in_place_and_keeps_its_seats(tmp_path: Path) -> None:
    path = tmp_path / "chain-31337.sqlite3"
    _version_1_file(path)
    # Read-only (`trust worker status` beside an old daemon): readable as it is, not upgraded.
    with WorkerStore.open_existing(path) as old:
        (seat,) = old.seats()
        assert seat.critique == "wrong product" and seat.reply_key is None and seat.report_attempts == 0
        assert old.meta("schema") == "1"

    with _open(path) as store:
        assert store.meta("schema") == str(SCHEMA_VERSION) == "2"
        (seat,) = store.seats()
        assert seat.key == SeatKey(1, 3, 0) and seat.state is SeatState.REVEALED and seat.salt == b"\x05" * 32
        assert (seat.reply_key, seat.report_cid, seat.reported_at, seat.report_next_try) == (None, None, None, 0.0)
        assert not seat.wants_report  # the old grant carried no reply key
        updated = store.update(seat.key, reply_key=b"\x09" * 32, expected="391", audit_started_at=1.0)
        assert updated.wants_report and updated.expected == "391" and updated.reply_key == b"\x09" * 32
    # Opening again changes nothing.
    with _open(path) as store:
        assert store.seat(SeatKey(1, 3, 0)).reply_key == b"\x09" * 32


def test_a_file_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "chain-31337.sqlite3"
    _version_1_file(path, schema="3")
    with pytest.raises(ConfigError, match="has schema version 3, this trust reads up to 2: upgrade trust"):
        _open(path)


def test_report_bookkeeping_and_status(tmp_path: Path) -> None:
    path = tmp_path / "chain-31337.sqlite3"
    with _open(path) as store:
        seats = [
            SeatRecord(1, i, 0, 0, 1, 100, 116, 7, 1.0, SeatState.FINALIZED, reply_key=b"\x01" * 32) for i in range(3)
        ]
        store.add_seats([*seats, SeatRecord(1, 9, 0, 0, 1, 100, 116, 7, 1.0, SeatState.FINALIZED)], through_block=8)
        store.update(SeatKey(1, 0, 0), report_cid="bafkrei-report", reported_at=5.0, report_tx="0xab")
        store.update(SeatKey(1, 1, 0), report_attempts=2, report_next_try=9.0, report_error="IpfsError: down")
        store.update(SeatKey(1, 2, 0), report_attempts=6, report_next_try=0.0, report_error="not usable")
        given_up = store.seat(SeatKey(1, 2, 0))
        assert given_up.report_given_up and given_up.wants_report
        retrying = store.seat(SeatKey(1, 1, 0))
        assert retrying.wants_report and not retrying.report_given_up
        assert not store.seat(SeatKey(1, 0, 0)).wants_report
    assert status_report(path)["reports"] == {"published": 1, "pending": 1, "given_up": 1}


def test_a_state_file_an_older_trust_left_half_made_is_a_clear_error_and_a_worker_finishes_it(
    tmp_path: Path,
) -> None:
    """An older trust wrote the schema first and the identity after it: `trust worker status` right
    as such a worker started (or after it was killed then) found no identity."""
    from trust.services.worker.store import _SCHEMA

    path = tmp_path / "chain-31337.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA)
    db.close()
    with pytest.raises(ConfigError, match="has no identity yet: its worker may be starting"):
        WorkerStore.open_existing(path)
    _open(path).close()
    with WorkerStore.open_existing(path) as store:
        assert store.identity["auditor"] == AUDITOR.lower()


def test_a_reader_never_finds_a_new_state_file_without_its_identity(tmp_path: Path) -> None:
    """`trust worker status` (or a test) polling while a worker creates its state file: the file is
    absent or complete, never a schema without its identity nor an empty database."""
    paths = [tmp_path / f"w{i}" / "chain-31337.sqlite3" for i in range(40)]
    seen: list[str] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            for path in paths:
                try:
                    WorkerStore.open_existing(path).close()
                except ConfigError as exc:
                    if "no worker state at" not in str(exc):
                        seen.append(str(exc))

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for path in paths:
            _open(path).close()
    finally:
        done.set()
        reader.join()
    assert seen == []
    for path in paths:
        assert not [p for p in path.parent.iterdir() if "partial" in p.name]
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        db.close()


def test_a_creation_cut_off_leaves_nothing_behind_and_the_next_start_makes_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trust.services.worker.store as store_module

    path = tmp_path / "chain-31337.sqlite3"

    def cut_off(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(store_module.os, "link", cut_off)
    with pytest.raises(KeyboardInterrupt):
        _open(path)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    with _open(path) as store:
        assert store.identity["auditor"] == AUDITOR.lower() and store.identity["schema"] == str(SCHEMA_VERSION)


def test_log_lines_skip_the_fsync_and_every_other_write_keeps_it(tmp_path: Path) -> None:
    """A log line or the speed estimate is committed with `synchronous=NORMAL` (it survives the
    worker's crash, not the machine's); the connection is back at FULL after each, and after a
    failed one, so a seat's verdict and commitment are still fsynced before anything is sent."""
    store = WorkerStore(tmp_path / "w.sqlite3", chain_id=CHAIN_ID, audit_contract=AUDIT, auditor=AUDITOR)
    full, normal = 2, 1

    def level() -> int:
        return int(store._db.execute("PRAGMA synchronous").fetchone()[0])

    assert level() == full
    store.log(None, "started", "a line")
    store.set_meta_json("audit_seconds", {"samples": [1.0]}, durable=False)
    assert level() == full
    with pytest.raises(RuntimeError), store.transaction(durable=False):
        assert level() == normal
        raise RuntimeError("cut off")
    assert level() == full
    assert [entry.event for entry in store.recent()] == ["started"]
    assert store.meta_json("audit_seconds") == {"samples": [1.0]}
    store.close()
    # Written, not lost: a new connection reads both.
    again = WorkerStore(tmp_path / "w.sqlite3", chain_id=CHAIN_ID, audit_contract=AUDIT, auditor=AUDITOR)
    assert [entry.event for entry in again.recent()] == ["started"]
    again.close()


def test_changes_inside_a_transaction_reach_the_disk_together_or_not_at_all(tmp_path: Path) -> None:
    """A worker marks every seat of one commit transaction in one store transaction (one fsync):
    the updates inside it are part of it, durable when it commits, and all undone when it fails,
    log lines included; the connection stays at FULL throughout."""
    store = WorkerStore(tmp_path / "w.sqlite3", chain_id=CHAIN_ID, audit_contract=AUDIT, auditor=AUDITOR)
    seats = [SeatRecord(1, g, 0, 0, 1, 100, 116, 7, 1.0, SeatState.VOTED) for g in range(3)]
    store.add_seats(seats, through_block=8)
    with pytest.raises(RuntimeError), store.transaction():
        for seat in seats:
            store.update(seat.key, state=SeatState.COMMITTING, salt=b"\x01" * 32)
            store.log(seat.key, "committing", "about to send")
        assert {s.state for s in store.seats()} == {SeatState.COMMITTING}  # seen inside it
        raise RuntimeError("cut off before the commit")
    assert {s.state for s in store.seats()} == {SeatState.VOTED}
    assert store.recent() == []
    with store.transaction():
        for seat in seats:
            store.update(seat.key, state=SeatState.COMMITTING, salt=b"\x02" * 32)
            store.log(seat.key, "committing", "about to send")
        assert int(store._db.execute("PRAGMA synchronous").fetchone()[0]) == 2
    store.close()
    again = WorkerStore(tmp_path / "w.sqlite3", chain_id=CHAIN_ID, audit_contract=AUDIT, auditor=AUDITOR)
    assert [s.salt for s in again.seats()] == [b"\x02" * 32] * 3
    assert len(again.recent()) == 3
    again.close()
