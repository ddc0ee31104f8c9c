"""The worker's durable state: one SQLite file per wallet and chain.

What must survive a crash is written here, and committed with a full fsync (WAL journal,
`synchronous=FULL`), before the transaction that depends on it is sent:

- the block up to which the chain's events were read (`last_block`), in the same database
  transaction as the seats found in those blocks, so a restart neither misses nor repeats a seat;
- each seat's verdict, salt and commitment before `commitVotes` is sent (DESIGN.md: "nothing is
  lost"), so a worker killed between commit and reveal reveals after a restart;
- every step's result (transaction hashes, outcome, reward), and a log of what happened, which
  `trust worker status` reads while the daemon runs (WAL lets a reader in beside the writer); the
  log is committed without an fsync (it survives the worker's crash, not the machine's);
- whether the worker took itself out of the draw and why (`availability`), so that a restart knows
  an out-of-draw state is its own to undo; the capacity estimate (the durations of recent audits,
  `audit_seconds`) and the last capacity figures (`capacity`) too, without an fsync, so that a
  restart starts informed; all as JSON in the `meta` table;
- a seat's audit report: the verdict's details and evaluation times when it is audited, the
  provider's reply key from its grant, the report's CID once uploaded (before `publishReports` is
  sent, so a restart checks the chain for it instead of publishing twice) and `reported_at` once
  the chain has it.

Schema versions: 1 (the seats), 2 (the report columns, added to a version-1 file in place when it
is opened for writing: only nullable or defaulted columns, so no row needs rewriting).

The salt can also be rebuilt from the wallet alone (`trust.services.worker.keys.vote_salt`); the store is
the fast path and the record, not the only copy.

A state file belongs to one (chain id, audit contract, auditor address): opening it for another is
refused, so two wallets or two chains never mix their seats. A new file is written whole, schema
and identity, under a temporary name beside it and then linked into place, so a reader
(`trust worker status`, while the worker starts) never finds a state file without its identity.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

from trust.errors import ConfigError

__all__ = [
    "AUDIT_SECONDS_KEY",
    "AVAILABILITY_KEY",
    "CAPACITY_KEY",
    "LogEntry",
    "SeatKey",
    "SeatRecord",
    "SeatState",
    "WorkerStore",
]

SCHEMA_VERSION = 2

AUDIT_SECONDS_KEY = "audit_seconds"
"""Meta key of the recent audit durations (JSON list of seconds, oldest first)."""
AVAILABILITY_KEY = "availability"
"""Meta key of who took the auditor out of the draw and why (JSON object: `by_worker`, `reason`,
`since`, and how many times the worker went out and came back, `outs` and `ins`)."""
CAPACITY_KEY = "capacity"
"""Meta key of the worker's last forecast and draw state, for `trust worker status` (JSON object)."""


class SeatState(StrEnum):
    """Where a seat stands. The happy path: drawn -> voted -> committing -> committed -> revealed ->
    finalized -> claimed."""

    DRAWN = "drawn"  # seated; the envelope, the segment and the verdict are still to come
    VOTED = "voted"  # audited: the verdict is stored, nothing sent yet
    COMMITTING = "committing"  # salt and commitment stored; the commit transaction may be in flight
    COMMITTED = "committed"
    REVEALED = "revealed"
    ABSTAINED = "abstained"  # no vote: the auditor could not decide, or no key envelope came
    REJECTED = "rejected"  # earlier versions: the segment failed verification (now such a seat votes fail)
    MISSED = "missed"  # a window closed before the step it needed could be done
    FAILED = "failed"  # a step kept failing; reported, not retried
    FINALIZED = "finalized"  # the round is settled on chain; `outcome` says how (a seat that ended
    # abstained, rejected, missed or failed keeps that state and gets an `outcome` too)
    CLAIMED = "claimed"  # the seat's reward is paid out

    @property
    def open(self) -> bool:
        """Whether the worker still has something to do for this seat in its round."""
        return self in _OPEN


_OPEN = frozenset({SeatState.DRAWN, SeatState.VOTED, SeatState.COMMITTING, SeatState.COMMITTED, SeatState.REVEALED})


@dataclass(frozen=True, slots=True, order=True)
class SeatKey:
    """A seat of this auditor: one per (session, segment, round)."""

    session_id: int
    segment_id: int
    round: int

    def __str__(self) -> str:
        return f"s{self.session_id}/g{self.segment_id}/r{self.round}"


@dataclass(frozen=True, slots=True)
class SeatRecord:
    """One row of the `seats` table."""

    session_id: int
    segment_id: int
    round: int
    seat_index: int
    tier: int
    commit_deadline: int
    reveal_deadline: int
    drawn_block: int
    drawn_at: float
    state: SeatState
    envelope_cid: str | None = None
    node_id: str | None = None
    vote: bool | None = None
    score: float | None = None
    critique: str | None = None
    error_type: str | None = None
    salt: bytes | None = None
    commitment: bytes | None = None
    voted_at: float | None = None
    commit_tx: str | None = None
    committed_at: float | None = None
    reveal_tx: str | None = None
    outcome: str | None = None
    reward_wei: int | None = None
    attempts: int = 0
    next_try: float = 0.0
    last_error: str | None = None
    updated_at: float = 0.0
    # The audit report (schema 2). `expected` completes the verdict; `audit_started_at` and
    # `audit_finished_at` bound the auditor's evaluation (unix seconds; on an abstained seat, the
    # evaluation that ended without a judgment, which no report carries); `reply_key` is the
    # provider's X25519 key from the grant (None: no report wanted). `report_cid` is set once the
    # sealed report is stored on IPFS, `reported_at` once `publishReports` is mined (`report_tx`).
    # Reporting has its own retries, so that it never touches the vote's.
    expected: str | None = None
    audit_started_at: float | None = None
    audit_finished_at: float | None = None
    reply_key: bytes | None = None
    report_cid: str | None = None
    reported_at: float | None = None
    report_tx: str | None = None
    report_attempts: int = 0
    report_next_try: float = 0.0
    report_error: str | None = None

    @property
    def key(self) -> SeatKey:
        return SeatKey(self.session_id, self.segment_id, self.round)

    @property
    def wants_report(self) -> bool:
        """Whether the provider asked for this seat's report and it is not on chain yet."""
        return self.reply_key is not None and self.reported_at is None

    @property
    def report_given_up(self) -> bool:
        """Whether the worker stopped trying to report this seat: the last failure is recorded and
        no retry is scheduled (a retry always sets `report_next_try`)."""
        return self.wants_report and self.report_error is not None and self.report_next_try == 0


@dataclass(frozen=True, slots=True)
class LogEntry:
    at: float
    seat: SeatKey | None
    event: str
    detail: str


_COLUMNS = tuple(f.name for f in fields(SeatRecord))

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS seats (
    session_id INTEGER NOT NULL,
    segment_id INTEGER NOT NULL,
    round INTEGER NOT NULL,
    seat_index INTEGER NOT NULL,
    tier INTEGER NOT NULL,
    commit_deadline INTEGER NOT NULL,
    reveal_deadline INTEGER NOT NULL,
    drawn_block INTEGER NOT NULL,
    drawn_at REAL NOT NULL,
    state TEXT NOT NULL,
    envelope_cid TEXT,
    node_id TEXT,
    vote INTEGER,
    score REAL,
    critique TEXT,
    error_type TEXT,
    salt BLOB,
    commitment BLOB,
    voted_at REAL,
    commit_tx TEXT,
    committed_at REAL,
    reveal_tx TEXT,
    outcome TEXT,
    reward_wei TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_try REAL NOT NULL DEFAULT 0,
    last_error TEXT,
    updated_at REAL NOT NULL,
    expected TEXT,
    audit_started_at REAL,
    audit_finished_at REAL,
    reply_key BLOB,
    report_cid TEXT,
    reported_at REAL,
    report_tx TEXT,
    report_attempts INTEGER NOT NULL DEFAULT 0,
    report_next_try REAL NOT NULL DEFAULT 0,
    report_error TEXT,
    PRIMARY KEY (session_id, segment_id, round)
);
CREATE INDEX IF NOT EXISTS seats_by_state ON seats (state);
CREATE TABLE IF NOT EXISTS log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    session_id INTEGER,
    segment_id INTEGER,
    round INTEGER,
    event TEXT NOT NULL,
    detail TEXT NOT NULL
);
"""


_ADDED_IN_2 = (
    ("expected", "TEXT"),
    ("audit_started_at", "REAL"),
    ("audit_finished_at", "REAL"),
    ("reply_key", "BLOB"),
    ("report_cid", "TEXT"),
    ("reported_at", "REAL"),
    ("report_tx", "TEXT"),
    ("report_attempts", "INTEGER NOT NULL DEFAULT 0"),
    ("report_next_try", "REAL NOT NULL DEFAULT 0"),
    ("report_error", "TEXT"),
)
"""The seat columns schema 2 added, as `ALTER TABLE ... ADD COLUMN` takes them."""


def _create(path: Path, meta: dict[str, str]) -> None:
    """Writes a new state file, schema and `meta`, under a temporary name in the same folder and
    links it into place: the file appears complete or not at all. If another process linked its
    own first, that one stands (and the caller's identity check judges it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    # From a creation of this pid that was killed midway (a journal left beside the new file would
    # be rolled back into it).
    for leftover in (partial, *(partial.with_name(partial.name + s) for s in ("-journal", "-wal", "-shm"))):
        leftover.unlink(missing_ok=True)
    db = sqlite3.connect(partial)
    try:
        # Written with a rollback journal, so the commit lands in the file itself and the one file
        # linked below holds everything. Then WAL, which the file records in its header: switched
        # here, where no reader can hold a lock that would keep it from switching.
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(_SCHEMA)
        db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
        db.commit()
        db.execute("PRAGMA journal_mode=WAL")
    finally:
        db.close()
    try:
        os.link(partial, path)
    except FileExistsError:
        pass
    finally:
        partial.unlink()
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)  # the new name reaches the disk with the file
    finally:
        os.close(folder)


def _to_row(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, SeatState):
        return value.value
    if isinstance(value, int) and abs(value) >= 2**63:
        return str(value)
    return value


def _record(row: sqlite3.Row) -> SeatRecord:
    data = dict(row)
    data["state"] = SeatState(data["state"])
    data["vote"] = None if data["vote"] is None else bool(data["vote"])
    data["reward_wei"] = None if data["reward_wei"] is None else int(data["reward_wei"])
    for name in ("salt", "commitment", "reply_key"):
        # A version-1 file read without upgrading lacks the schema-2 columns: they keep their defaults.
        if name in data:
            data[name] = None if data[name] is None else bytes(data[name])
    return SeatRecord(**data)


class WorkerStore:
    """The SQLite state of one worker (see the module docstring). Use as a context manager."""

    def __init__(self, path: Path, *, chain_id: int, audit_contract: str, auditor: str, readonly: bool = False) -> None:
        self.path = path
        self._depth = 0  # transactions open (`transaction`); never held across an await
        if readonly:
            if not path.is_file():
                raise ConfigError(f"no worker state at {path}: has `trust worker run` been started with this wallet?")
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, timeout=10)
        else:
            if not path.exists():
                _create(path, {"schema": str(SCHEMA_VERSION), **self._identity(chain_id, audit_contract, auditor)})
            self._db = sqlite3.connect(path, isolation_level=None, timeout=10)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # fsync the WAL at every commit
            self._db.executescript(_SCHEMA)
        self._db.row_factory = sqlite3.Row
        identity = self._identity(chain_id, audit_contract, auditor)
        stored = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if not readonly and not stored:  # a file that an older trust began and never finished
            with self.transaction():
                self._db.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)", {"schema": str(SCHEMA_VERSION), **identity}.items()
                )
            stored = {"schema": str(SCHEMA_VERSION), **identity}
        self._check_schema(int(stored.get("schema", "1")), readonly)
        mismatched = {k: (stored.get(k), v) for k, v in identity.items() if stored.get(k) != v}
        if mismatched:
            self.close()
            described = ", ".join(f"{k} {old!r} here, {new!r} asked" for k, (old, new) in mismatched.items())
            raise ConfigError(
                f"the worker state {path} belongs to another wallet or chain ({described}); "
                "give each wallet and chain its own --data-dir"
            )

    @staticmethod
    def _identity(chain_id: int, audit_contract: str, auditor: str) -> dict[str, str]:
        return {"chain_id": str(chain_id), "audit_contract": audit_contract.lower(), "auditor": auditor.lower()}

    def _check_schema(self, version: int, readonly: bool) -> None:
        """Refuses a file of a newer schema; brings a version-1 file to version 2 when writable."""
        if version > SCHEMA_VERSION:
            self.close()
            raise ConfigError(
                f"the worker state {self.path} has schema version {version}, this trust reads up to "
                f"{SCHEMA_VERSION}: upgrade trust, or give this worker another --data-dir"
            )
        if version == SCHEMA_VERSION or readonly:
            return
        present = {str(row[1]) for row in self._db.execute("PRAGMA table_info(seats)").fetchall()}
        with self.transaction() as db:
            for name, declaration in _ADDED_IN_2:
                if name not in present:
                    db.execute(f"ALTER TABLE seats ADD COLUMN {name} {declaration}")
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))

    @classmethod
    def open_existing(cls, path: Path) -> WorkerStore:
        """Opens a state file read-only, whatever wallet and chain it belongs to (`trust worker status`)."""
        if not path.is_file():
            raise ConfigError(f"no worker state at {path}: has `trust worker run` been started with this wallet?")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"{path} is not a worker state file ({exc})") from exc
        finally:
            db.close()
        if not {"chain_id", "audit_contract", "auditor"} <= meta.keys():
            # This trust writes a new file whole (`_create`); an older one wrote the identity after
            # the schema, so its worker may be starting right now, or was killed while it did.
            raise ConfigError(
                f"the worker state at {path} has no identity yet: its worker may be starting (try again), "
                "or was stopped while it created the file (`trust worker run` finishes it)"
            )
        return cls(
            path,
            chain_id=int(meta["chain_id"]),
            audit_contract=meta["audit_contract"],
            auditor=meta["auditor"],
            readonly=True,
        )

    def __enter__(self) -> WorkerStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction: all of it or none of it reaches the disk. `durable=False` commits
        without waiting for the disk (WAL, `synchronous=NORMAL`): the write survives the worker's
        crash but not the machine's, and the next durable commit takes it to the disk too. For
        what costs nothing to lose (a log line, the speed estimate); an fsync per log line under
        load was a third of a worker's time per seat.

        Inside another transaction, this one is part of it: it reaches the disk when the outer one
        commits (as durably as that one does), or not at all. A worker changing many seats at once
        (the seats of one commit transaction) does it in one transaction, one fsync, instead of one
        per seat."""
        if self._depth:
            self._depth += 1
            try:
                yield self._db
            finally:
                self._depth -= 1
            return
        if not durable:
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._depth = 1
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        finally:
            self._depth = 0
            if not durable:
                self._db.execute("PRAGMA synchronous=FULL")

    # ------------------------------------------------------------------------------------ meta

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def meta_json(self, key: str) -> Any:
        """A JSON value stored with `set_meta_json` (None when absent)."""
        value = self.meta(key)
        return None if value is None else json.loads(value)

    def set_meta_json(self, key: str, value: Any, *, durable: bool = True) -> None:
        """Stores a JSON value under `key` (the capacity estimate, the availability record);
        `durable=False` for a value a machine crash may lose (`transaction`)."""
        with self.transaction(durable=durable) as db:
            db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, json.dumps(value, sort_keys=True)),
            )

    @property
    def identity(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self._db.execute("SELECT key, value FROM meta").fetchall()}

    def last_block(self) -> int | None:
        value = self.meta("last_block")
        return None if value is None else int(value)

    # ------------------------------------------------------------------------------------ seats

    def add_seats(self, seats: Sequence[SeatRecord], *, through_block: int) -> list[SeatRecord]:
        """Records newly drawn seats and the block the event scan reached, in one transaction.
        Returns the seats that were new (a seat seen before is kept as it is)."""
        added: list[SeatRecord] = []
        with self.transaction() as db:
            for seat in seats:
                row = [_to_row(getattr(seat, c)) for c in _COLUMNS]
                cursor = db.execute(
                    f"INSERT OR IGNORE INTO seats ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                    row,
                )
                if cursor.rowcount:
                    added.append(seat)
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('last_block', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(through_block),),
            )
        return added

    def update(self, key: SeatKey, **changes: Any) -> SeatRecord:
        """Changes a seat's columns durably and returns the new row."""
        unknown = set(changes) - set(_COLUMNS)
        if unknown:
            raise ValueError(f"unknown seat columns {sorted(unknown)}")
        changes["updated_at"] = time.time()
        assignments = ", ".join(f"{name} = ?" for name in changes)
        with self.transaction() as db:
            cursor = db.execute(
                f"UPDATE seats SET {assignments} WHERE session_id = ? AND segment_id = ? AND round = ?",
                [*(_to_row(v) for v in changes.values()), key.session_id, key.segment_id, key.round],
            )
            if cursor.rowcount != 1:
                raise KeyError(f"no seat {key}")
        return self.seat(key)

    def seat(self, key: SeatKey) -> SeatRecord:
        row = self._db.execute(
            "SELECT * FROM seats WHERE session_id = ? AND segment_id = ? AND round = ?",
            (key.session_id, key.segment_id, key.round),
        ).fetchone()
        if row is None:
            raise KeyError(f"no seat {key}")
        return _record(row)

    def seats(self, states: Iterable[SeatState] | None = None) -> list[SeatRecord]:
        """Seats in the given states (all when None), by session, segment and round."""
        if states is None:
            rows = self._db.execute("SELECT * FROM seats ORDER BY session_id, segment_id, round").fetchall()
        else:
            wanted = [s.value for s in states]
            rows = self._db.execute(
                f"SELECT * FROM seats WHERE state IN ({', '.join('?' * len(wanted))}) "
                "ORDER BY session_id, segment_id, round",
                wanted,
            ).fetchall()
        return [_record(r) for r in rows]

    def counts(self) -> dict[SeatState, int]:
        rows = self._db.execute("SELECT state, COUNT(*) FROM seats GROUP BY state").fetchall()
        return {SeatState(state): int(count) for state, count in rows}

    # ------------------------------------------------------------------------------------ log

    def log(self, seat: SeatKey | None, event: str, detail: str = "") -> None:
        """Appends a line to the worker's log (not durable: `transaction(durable=False)`)."""
        with self.transaction(durable=False) as db:
            db.execute(
                "INSERT INTO log (at, session_id, segment_id, round, event, detail) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    time.time(),
                    None if seat is None else seat.session_id,
                    None if seat is None else seat.segment_id,
                    None if seat is None else seat.round,
                    event,
                    detail,
                ),
            )

    def recent(self, limit: int = 20) -> list[LogEntry]:
        rows = self._db.execute(
            "SELECT at, session_id, segment_id, round, event, detail FROM log ORDER BY id DESC LIMIT ?", (limit,)
        ).fetchall()
        return [
            LogEntry(
                at=float(r["at"]),
                seat=None if r["session_id"] is None else SeatKey(r["session_id"], r["segment_id"], r["round"]),
                event=str(r["event"]),
                detail=str(r["detail"]),
            )
            for r in reversed(rows)
        ]
