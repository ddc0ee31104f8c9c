"""The auditor worker: a daemon with its own wallet that audits its seats and votes in time.

- `trust.services.worker.daemon`: the `Worker` loop (scan, audit, commit, reveal, finalize, claim)
- `trust.services.worker.store`: the durable SQLite state (`WorkerStore`, `SeatState`)
- `trust.services.worker.capacity`: seconds per audit, the forecast of the backlog, and when to leave the draw
- `trust.services.worker.keys`: the vote salt and the X25519 key, derived from the wallet
- `trust.services.worker.identity`: the wallet, its encryption key and its registration, checked at start
- `trust.services.worker.adversary`: adversarial behaviours for stress tests on a local chain
"""

from trust.services.worker.adversary import Adversary
from trust.services.worker.daemon import Worker
from trust.services.worker.identity import AuditorIdentity, ensure_registered
from trust.services.worker.store import SeatKey, SeatRecord, SeatState, WorkerStore

__all__ = [
    "Adversary",
    "AuditorIdentity",
    "SeatKey",
    "SeatRecord",
    "SeatState",
    "Worker",
    "WorkerStore",
    "ensure_registered",
]
