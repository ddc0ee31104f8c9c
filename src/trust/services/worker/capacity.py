"""A worker's capacity: how long its audits take, when a seat drawn now would be ready, and whether
the worker should be in the committee draw (backpressure). Pure: no I/O and no clock; the daemon
(`trust.services.worker.daemon`) passes the times, the seats and the chain's figures in.

Why. A worker cannot refuse a seat: once drawn, a seat that misses its commit window is silent and
forfeits its locked stake. The only lever a worker has is `setAvailable(false)`, which keeps it out
of every draw whose randomness block comes after the transaction. So the worker has to know, before
it is drawn, whether it could still audit another seat in time:

- `AuditTimes`: the seconds one audit takes, as the `quantile` of the last `keep` measured
  durations (a high quantile: a seat late by one slow audit is lost, a seat early costs nothing),
  or the tier's prior before the first measurement. An audit running longer than the estimate
  raises it at once (`seconds(running)`): the current audit is the freshest evidence that the model
  has slowed down, for example because the workers sharing one model server all got seats.
- `DrawPipeline`: the segments of the worker's tier still waiting for a committee, followed from the
  audit contract's events (`trust.adapters.chain.protocol.DrawEvent`). Draws read the weights as of their
  randomness block, so a segment whose randomness block is already mined will draw this worker
  (with a probability set by its weight then) whatever it does now; one whose block is still ahead
  draws it only if it is still in the draw at that block.
- `forecast`: the seats held are scheduled earliest deadline first on `parallel` slots; the seats
  expected from fixed draws and from the next draw still ahead follow (they come with the latest
  deadlines); `backlog_seconds` is when one more seat drawn now would be ready, and `load` that
  time as a share of its usable window (the commit window less the commit margin). A load above 1
  means a seat drawn now would miss its commit window.
- `steer`: leave the draw above `out_load`, come back at or below `in_load` (hysteresis: every
  switch is a transaction of 50k to 200k gas), and stay out while the auditor cannot work.

Committees are drawn with replacement: each of a committee's `k` draws lands on a member with
probability `w / W` (its stake at the randomness block over the tier's), whatever it won before; a
member that wins several draws holds one seat weighing that many units, and each unit locks the
penalty P until the seat settles. So a draw gives this worker one audit with probability
`seat_probability` = 1 - (1 - w/W)^k and locks `expected_units` = k * w / W units of P on average.
The registry passes a member over (it is not seated, at no cost) when its unlocked stake cannot back
one more unit, so the worker can win at most `free_units` more draws, and sit on at most that many
more committees, before its open seats settle: `cap_by_free_units` bounds the seats expected by that
(a seat takes at least one unit).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from trust.adapters.chain.protocol import DrawEvent, DrawEventKind

__all__ = [
    "UNMEASURED_WINDOW_SHARE",
    "AuditTimes",
    "DrawPipeline",
    "EdfSlots",
    "Forecast",
    "PendingDraw",
    "Steer",
    "cap_by_free_units",
    "expected_units",
    "forecast",
    "free_units",
    "seat_probability",
    "steer",
]


_SOME_SEAT = 0.05
"""Expected seats below this are nothing (a draw of a large pool that hardly ever picks this worker)."""
UNMEASURED_WINDOW_SHARE = 0.25
"""Until it has measured an audit, a worker assumes one takes at most this share of the usable
commit window, whatever the tier's default says: with a default longer than the window, a worker
would leave every draw and never measure the audit that would prove it wrong."""


@dataclass(frozen=True, slots=True)
class AuditTimes:
    """Recent audit durations in seconds (oldest first) and the estimate they give."""

    samples: tuple[float, ...]
    prior_seconds: float
    quantile: float = 0.9
    keep: int = 20

    def with_sample(self, seconds: float) -> AuditTimes:
        """The times with one more measured duration, the oldest dropped beyond `keep`."""
        return replace(self, samples=(*self.samples, max(0.0, float(seconds)))[-self.keep :])

    @property
    def measured(self) -> bool:
        return bool(self.samples)

    @property
    def estimate_seconds(self) -> float:
        """The `quantile` of the samples (nearest rank), or the prior before the first sample."""
        if not self.samples:
            return self.prior_seconds
        ordered = sorted(self.samples)
        rank = max(1, math.ceil(self.quantile * len(ordered)))
        return ordered[rank - 1]

    def seconds(self, running: Iterable[float] = ()) -> float:
        """The estimate, raised to the age of the oldest audit still running: it has taken that
        long already, so the next one may too."""
        return max(self.estimate_seconds, max(running, default=0.0))

    def to_json(self) -> list[float]:
        return [round(s, 3) for s in self.samples]

    @classmethod
    def from_json(cls, data: Any, *, prior_seconds: float, quantile: float, keep: int) -> AuditTimes:
        """The times stored by `to_json`; anything else (a missing or damaged record) starts from the prior."""
        samples: tuple[float, ...] = ()
        if isinstance(data, list) and all(isinstance(x, int | float) and x >= 0 for x in data):
            samples = tuple(float(x) for x in data)[-keep:]
        return cls(samples, prior_seconds, quantile, keep)


def seat_probability(committee_size: int, weight: int, eligible: int) -> float:
    """The chance that a committee of `committee_size` draws seats a member of `weight` out of the
    tier's `eligible` weight (both at the randomness block): 1 - (1 - w/W)^k.

    Exact while nobody drawn is passed over: the draws are independent, each landing on the member
    with probability w/W (with replacement, issue L2). A member passed over (it deserted, or its
    unlocked stake backs no further unit) leaves the rest of the draw and its draws fall on the
    others, so in a tier whose members back few units each the chance is higher, up to sampling
    without replacement when every member backs one unit. The workers' tiers stake many units of
    P per member (`trust.lab.localnet.LocalNetwork.seat_capacity`), where that is rare."""
    if weight <= 0 or eligible <= 0 or committee_size <= 0:
        return 0.0
    share = min(1.0, weight / eligible)
    return 1.0 - (1.0 - share) ** committee_size


def expected_units(committee_size: int, weight: int, eligible: int) -> float:
    """The units a member of `weight` out of `eligible` expects to win in a committee of
    `committee_size` draws: k * w / W (each unit locks P, votes one, earns R and forfeits P). The
    same stake split over several accounts expects the same units in all: splitting wins nothing."""
    if weight <= 0 or eligible <= 0 or committee_size <= 0:
        return 0.0
    return committee_size * min(1.0, weight / eligible)


def free_units(stake: int, locked: int, penalty: int) -> int:
    """The units of P that `stake` (token base units) backs beyond what open seats have `locked`:
    how many more committee draws the member can win before its seats settle (the registry passes
    it over once its unlocked stake cannot back one more unit)."""
    if penalty <= 0:
        raise ValueError(f"the penalty per unit must be positive, not {penalty}")
    return max(stake - locked, 0) // penalty


def cap_by_free_units(expected_seats: float, upcoming_seats: float, free: int) -> tuple[float, float]:
    """Seats expected from fixed draws and from the next draw ahead, bounded by the `free` units the
    member's unlocked stake backs: each seat takes at least one unit, and a member that cannot back
    one is passed over, not seated. Fixed draws come first (their randomness block is mined)."""
    expected = min(expected_seats, float(free))
    return expected, min(upcoming_seats, float(free) - expected)


@dataclass(frozen=True, slots=True)
class PendingDraw:
    """A segment's round of the worker's tier waiting for its committee. `committee_size` is None
    until the session's parameters are read (round 0), `randomness_block` until the session's
    `SessionOpened` is seen."""

    session_id: int
    segment_id: int
    round: int
    committee_size: int | None
    randomness_block: int | None


@dataclass
class DrawPipeline:
    """The segments of `tier` waiting for a committee (see the module docstring), kept in memory.

    Fed in chain order with `DrawEvent`s and the `CommitteeDrawn` events of the same blocks. A
    segment leaves the pipeline when its committee is drawn, when it escalates to another tier, or
    when a draw fails without a new randomness block (its last attempt: it ends undetermined).
    """

    tier: int
    _pending: dict[tuple[int, int], PendingDraw] = field(default_factory=dict)
    _session_blocks: dict[int, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self._pending)

    def apply(self, events: Sequence[DrawEvent], drawn: Iterable[tuple[int, int, int]] = ()) -> None:
        """Takes the draw events of a range of blocks (in chain order) and the (session, segment,
        round) of the committees drawn in the same blocks."""
        failed: dict[tuple[int, int], PendingDraw] = {}
        for event in events:
            key = (event.session_id, event.segment_id if event.segment_id is not None else -1)
            if event.kind is DrawEventKind.OPENED:
                assert event.randomness_block is not None
                self._session_blocks[event.session_id] = event.randomness_block
                for pending_key, pending in list(self._pending.items()):
                    if pending_key[0] == event.session_id and pending.randomness_block is None:
                        self._pending[pending_key] = replace(pending, randomness_block=event.randomness_block)
            elif event.kind is DrawEventKind.REGISTERED:
                if event.tier == self.tier:
                    block = self._session_blocks.get(event.session_id)
                    self._pending[key] = PendingDraw(key[0], key[1], 0, None, block)
            elif event.kind is DrawEventKind.ESCALATED:
                if event.tier == self.tier:
                    self._pending[key] = PendingDraw(
                        key[0], key[1], event.round, event.committee_size, event.randomness_block
                    )
                else:
                    self._pending.pop(key, None)
            elif event.kind is DrawEventKind.UNAVAILABLE:
                # Followed by RandomnessRefreshed in the same transaction unless it was the last attempt.
                if key in self._pending:
                    failed[key] = self._pending.pop(key)
            elif event.kind is DrawEventKind.REFRESHED:
                revived: PendingDraw | None = self._pending.get(key)
                if revived is None:
                    revived = failed.pop(key, None)
                if revived is not None:
                    self._pending[key] = replace(revived, randomness_block=event.randomness_block)
        for session_id, segment_id, round_id in drawn:
            waiting = self._pending.get((session_id, segment_id))
            if waiting is not None and waiting.round <= round_id:
                del self._pending[(session_id, segment_id)]
        # A registration whose session opened before what this pipeline remembers: its randomness
        # block is long past.
        self._pending = {
            key: p
            for key, p in self._pending.items()
            if p.randomness_block is not None or p.session_id in self._session_blocks
        }

    def prune(self, oldest_block: int) -> None:
        """Forgets segments and sessions whose randomness block is older than `oldest_block`: they
        no longer count, and the worker runs for days."""
        self._pending = {
            key: p
            for key, p in self._pending.items()
            if p.randomness_block is None or p.randomness_block >= oldest_block
        }
        self._session_blocks = {s: b for s, b in self._session_blocks.items() if b >= oldest_block}

    def sessions(self) -> set[int]:
        """The sessions with a segment in the pipeline."""
        return {p.session_id for p in self._pending.values()}

    def sessions_without_size(self) -> set[int]:
        """Sessions with a round-0 segment whose committee size is not known yet."""
        return {p.session_id for p in self._pending.values() if p.committee_size is None}

    def set_sizes(self, sizes: Mapping[int, int]) -> None:
        """The tier's committee size in each session (read from the session's parameters)."""
        for key, pending in list(self._pending.items()):
            if pending.committee_size is None and pending.session_id in sizes:
                self._pending[key] = replace(pending, committee_size=sizes[pending.session_id])

    def fixed(self, head: int, horizon_blocks: int) -> list[PendingDraw]:
        """Segments whose randomness block is mined (at most `horizon_blocks` ago): their draw
        weights are fixed. Older ones are left out: nobody is drawing them."""
        return [
            p
            for p in self._pending.values()
            if p.committee_size is not None
            and p.randomness_block is not None
            and head - horizon_blocks <= p.randomness_block <= head
        ]

    def next_ahead(self, head: int) -> list[PendingDraw]:
        """Segments drawn from the next randomness block still ahead: the draw this worker can
        still join or avoid."""
        ahead = [
            p
            for p in self._pending.values()
            if p.committee_size is not None and p.randomness_block is not None and p.randomness_block > head
        ]
        if not ahead:
            return []
        first = min(p.randomness_block or 0 for p in ahead)
        return [p for p in ahead if p.randomness_block == first]


@dataclass(frozen=True, slots=True)
class Forecast:
    """What the worker expects of its next minutes (seconds; see `forecast`)."""

    audit_seconds: float
    basis: str  # where `audit_seconds` comes from: "measured", "default" (the tier's) or "running"
    queued: int  # seats held that wait for a slot or for their key envelope
    running: int  # audits in flight
    expected_seats: float  # seats expected from draws whose randomness block is mined
    upcoming_seats: float  # seats expected from the next draw still ahead, if in the draw then
    backlog_seconds: float  # until one more seat drawn now would be ready
    window_seconds: float  # the commit window less the commit margin
    late: int  # seats held that are predicted to be ready after their deadline
    expected_units: float = 0.0  # units of P those expected seats lock (k * w / W a draw)
    free_units: int | None = None  # units of P the unlocked stake backs now (None: not read yet)

    @property
    def measured(self) -> bool:
        """Whether the estimate rests on measured audits (or a running one), not on the default."""
        return self.basis != "default"

    @property
    def busy(self) -> bool:
        """Whether anything is queued, running or expected: an idle worker has no backlog to shed."""
        return self.queued + self.running > 0 or self.expected_seats + self.upcoming_seats >= _SOME_SEAT

    @property
    def load(self) -> float:
        """`backlog_seconds` as a share of `window_seconds`: above 1, a seat drawn now would miss."""
        return self.backlog_seconds / self.window_seconds if self.window_seconds > 0 else math.inf

    def to_json(self) -> dict[str, Any]:
        return {
            "audit_seconds": round(self.audit_seconds, 2),
            "measured": self.measured,
            "basis": self.basis,
            "queued": self.queued,
            "running": self.running,
            "expected_seats": round(self.expected_seats, 2),
            "upcoming_seats": round(self.upcoming_seats, 2),
            "backlog_seconds": round(self.backlog_seconds, 1),
            "window_seconds": round(self.window_seconds, 1),
            "load": round(self.load, 3) if math.isfinite(self.load) else None,
            "late": self.late,
            "expected_units": round(self.expected_units, 2),
            "free_units": self.free_units,
        }


def _level(free: list[float], work: float) -> float:
    """Water-filling: the time at which the earliest slot is free once `work` seconds are spread
    over slots that free up at `free` (seconds from now)."""
    free = sorted(free)
    total = 0.0
    for count, at in enumerate(free, start=1):
        total += at
        level = (work + total) / count
        if count == len(free) or level <= free[count]:
            return level
    return free[0]  # unreachable: the last slot always returns


def forecast(
    *,
    now: float,
    deadlines: Sequence[float],
    running_ages: Sequence[float],
    times: AuditTimes,
    parallel: int,
    window_seconds: float,
    expected_seats: float = 0.0,
    upcoming_seats: float = 0.0,
    expected_units: float = 0.0,
    free_units: int | None = None,
) -> Forecast:
    """When the seats held, the seats expected and one more seat drawn now would be audited.

    `deadlines`: the chain times by which each queued seat's verdict must be ready (its commit
    deadline less the commit margin); `running_ages`: seconds each audit in flight has run;
    `window_seconds`: the commit window less the margin, which a seat drawn now gets. Queued seats
    go earliest deadline first to the first free of `parallel` slots; expected seats (fractional)
    are spread over the slots after them; the new seat takes the first slot free after that
    (`expected_units` and `free_units` are carried along for the status: a seat is one audit however
    many units it weighs, so they do not change the timing). Before
    any audit is measured the tier's default counts for at most `UNMEASURED_WINDOW_SHARE` of the
    window.
    """
    estimate = times.estimate_seconds
    if not times.measured:
        # A default that no audit has confirmed must not keep a worker out of every draw (it would
        # never measure one): until the first measurement, at most a share of the window.
        estimate = min(estimate, window_seconds * UNMEASURED_WINDOW_SHARE)
    oldest = max(running_ages, default=0.0)
    seconds = max(estimate, oldest)
    basis = "running" if oldest > estimate else "measured" if times.measured else "default"
    slots = [max(seconds - age, 0.0) for age in running_ages][:parallel]
    slots += [0.0] * (parallel - len(slots))
    heapq.heapify(slots)
    late = 0
    for deadline in sorted(deadlines):
        start = heapq.heappop(slots)
        ready = start + seconds
        if now + ready > deadline:
            late += 1
        heapq.heappush(slots, ready)
    backlog = _level(list(slots), (expected_seats + upcoming_seats) * seconds) + seconds
    return Forecast(
        audit_seconds=seconds,
        basis=basis,
        queued=len(deadlines),
        running=len(running_ages),
        expected_seats=expected_seats,
        upcoming_seats=upcoming_seats,
        backlog_seconds=backlog,
        window_seconds=window_seconds,
        late=late,
        expected_units=expected_units,
        free_units=free_units,
    )


@dataclass(frozen=True, slots=True)
class Steer:
    """What the worker should do about the draw: be in it or not, and why not."""

    in_draw: bool
    reason: str | None = None


def steer(*, in_draw: bool, outlook: Forecast, out_load: float, in_load: float, unavailable: str | None) -> Steer:
    """Out while the auditor cannot work (`unavailable` says why) or while a seat drawn now would
    be ready after `out_load` of its window; back in once that share is at most `in_load`, or once
    nothing is queued, running or expected (an idle worker learns its speed only by auditing; one
    whose single audit outlasts the window shows its late seats in the status instead). Between the
    two loads the worker stays where it is."""
    if unavailable is not None:
        return Steer(False, f"the auditor cannot take seats: {unavailable}")
    load = outlook.load
    if not outlook.busy:
        return Steer(True)
    if in_draw and load > out_load:
        return Steer(False, _backlog_reason(outlook))
    if not in_draw and load > in_load:
        return Steer(False, _backlog_reason(outlook))
    return Steer(True)


def _backlog_reason(outlook: Forecast) -> str:
    held = f"{outlook.queued} queued and {outlook.running} running"
    coming = outlook.expected_seats + outlook.upcoming_seats
    expected = f", {coming:.1f} more expected from draws in progress" if coming >= _SOME_SEAT else ""
    source = {
        "measured": "",
        "default": " (none measured yet: the tier's default)",
        "running": " (as long as the running audit has taken so far)",
    }[outlook.basis]
    return (
        f"backlog: a seat drawn now would be ready in {outlook.backlog_seconds:.0f} s of the "
        f"{outlook.window_seconds:.0f} s its commit window leaves ({held}{expected}, "
        f"{outlook.audit_seconds:.1f} s per audit{source})"
    )


class EdfSlots:
    """`parallel` audit slots handed out earliest deadline first: a semaphore whose waiters are
    served by priority (smallest first) instead of by arrival, so a seat drawn later with an earlier
    commit deadline overtakes the ones waiting. Bound to the event loop it is first used in."""

    def __init__(self, parallel: int) -> None:
        if parallel < 1:
            raise ValueError(f"at least one slot, got {parallel}")
        self._free = parallel
        self._waiting: list[tuple[Any, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @property
    def waiting(self) -> int:
        return sum(1 for _, _, future in self._waiting if not future.done())

    @asynccontextmanager
    async def slot(self, priority: Any) -> AsyncIterator[None]:
        if self._free > 0 and self.waiting == 0:
            self._free -= 1
        else:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting, (priority, next(self._order), future))
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._release()  # granted just before the cancellation: hand it on
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)
                return
        self._free += 1
