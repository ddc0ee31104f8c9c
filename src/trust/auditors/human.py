"""Tier 3, the human expert (paper 3.1.1): a queue of seats waiting for the expert's vote.

A tier-3 auditor is a person: a physician, a mathematician, a senior engineer. The worker seats
them like any other auditor, but the verdict comes from a review page (`trust.auditors.review`)
minutes to hours later. `HumanAuditor.audit` therefore puts a `ReviewTask` into a `ReviewQueue`
and waits: for the expert's decision (the verdict exactly as they entered it), or for the seat's
deadline (`AuditRequest.deadline`, unix seconds, set by the worker a margin before the commit
window closes). A seat whose deadline passes gets a NOT_APPLICABLE verdict saying the expert did
not vote in time; the worker does not commit a vote it does not have.

Every task ends in the history (newest first on the page) as a `PastVote`: the verdict and the
statuses the worker records as the seat goes on ("committed", "revealed", "finalized: passed",
"reward 0.01 ETH"). A task whose waiters are all cancelled (the worker shutting down) leaves the
queue without a trace: the worker submits its pending seats again when it restarts.

`audit` is idempotent per seat label: a second call for a seat that is still pending waits on the
same task, and a call for a seat the expert already decided returns that decision rather than
asking twice.

Concurrency: the queue lives in one asyncio loop (the worker's, which also runs the review page's
uvicorn server as a task). Its state sits behind a lock that is never held across an `await`, so
the page's handlers may also call it from a worker thread; the waiting futures are woken through
their own loop (`call_soon_threadsafe`). The queue keeps nothing on disk.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from trust.auditors.base import AuditRequest, Outcome, Verdict
from trust.core.graphs.hdag import Tier
from trust.core.times import utc_text
from trust.errors import TrustError

__all__ = [
    "DEFAULT_HISTORY_LIMIT",
    "MISSED_DEADLINE",
    "VOTED",
    "HumanAuditor",
    "PastVote",
    "RefusalReason",
    "ReviewQueue",
    "ReviewRefused",
    "ReviewTask",
    "StatusUpdate",
]

DEFAULT_HISTORY_LIMIT = 1_000
"""Past votes kept in memory (the oldest are dropped first): months of an expert's work, bounded."""

VOTED = "voted"
"""The first status of a task the expert decided; the worker's `record` calls follow it."""

MISSED_DEADLINE = "missed deadline"
"""The status of a task whose deadline passed without a decision."""

_TASK_ID_BYTES = 8
"""Random bytes of a task id (16 hex characters): unguessable, short enough for a URL."""


class RefusalReason(StrEnum):
    """Why the queue refused a decision or a status."""

    UNKNOWN_TASK = "unknown task"
    DEADLINE_PASSED = "deadline passed"
    ALREADY_CLOSED = "already closed"
    STILL_PENDING = "still pending"


class ReviewRefused(TrustError):
    """The queue refused a decision or a status update; `reason` says why, the message what to do."""

    def __init__(self, message: str, reason: RefusalReason, task_id: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.task_id = task_id


@dataclass(frozen=True, slots=True)
class ReviewTask:
    """One seat waiting for the expert: the request they review and when it was queued (unix seconds)."""

    id: str
    request: AuditRequest
    created_at: float

    @property
    def seat(self) -> str:
        """The worker's label of the seat, or the node id when the request came without one."""
        return self.request.seat or f"node {self.request.node_id}"

    @property
    def deadline(self) -> float | None:
        """When the vote must be in (unix seconds); None when the seat has no deadline."""
        return self.request.deadline

    def seconds_left(self, now: float) -> float | None:
        """Seconds until the deadline at unix time `now` (negative once it passed); None without one."""
        return None if self.request.deadline is None else self.request.deadline - now


@dataclass(frozen=True, slots=True)
class StatusUpdate:
    """One step of a closed task as the worker reported it, at unix time `at`."""

    at: float
    status: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class PastVote:
    """A closed task: the verdict it ended with (NOT_APPLICABLE when the deadline passed), when it
    closed (unix seconds) and the statuses recorded since, oldest first (never empty)."""

    task: ReviewTask
    verdict: Verdict
    closed_at: float
    updates: tuple[StatusUpdate, ...]

    @property
    def missed(self) -> bool:
        return self.verdict.vote is Outcome.NOT_APPLICABLE

    @property
    def status(self) -> str:
        """The latest status ("committed", "finalized: passed", "missed deadline")."""
        return self.updates[-1].status


@dataclass(slots=True)
class _Pending:
    """A task in the queue, with the future its waiters sleep on (woken when it closes), how many
    `audit` calls wait on it (the task leaves the queue when the last one is cancelled), and the
    verdict it closed with."""

    task: ReviewTask
    wake: asyncio.Future[None]
    waiters: int = 0
    verdict: Verdict | None = None  # set when the task closes (the history may drop it before a waiter reads it)


def _missed_verdict(task: ReviewTask) -> Verdict:
    deadline = "its deadline" if task.deadline is None else utc_text(task.deadline)
    return Verdict(
        Outcome.NOT_APPLICABLE,
        None,
        f"the human expert did not vote on seat {task.seat!r} before {deadline}; no vote is committed for it",
    )


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class ReviewQueue:
    """The seats waiting for the expert and the history of past votes; see the module docstring.

    `clock` gives unix seconds (time.time); deadlines and the times on the page are read from it.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time, history_limit: int = DEFAULT_HISTORY_LIMIT) -> None:
        if history_limit < 1:
            raise ValueError(f"history_limit must be at least 1, got {history_limit}")
        self.clock = clock
        self._history_limit = history_limit
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._pending_by_seat: dict[str, str] = {}
        self._history: OrderedDict[str, PastVote] = OrderedDict()
        self._closed_by_seat: dict[str, str] = {}

    # ------------------------------------------------------------------------------------ reading

    def pending(self) -> list[ReviewTask]:
        """The tasks waiting for a vote, the nearest deadline first (tasks without one last)."""
        with self._lock:
            tasks = [p.task for p in self._pending.values()]
        return sorted(tasks, key=lambda t: (t.deadline is None, t.deadline or 0.0, t.created_at))

    def history(self) -> list[PastVote]:
        """The closed tasks, the most recently closed first."""
        with self._lock:
            return list(reversed(self._history.values()))

    def pending_task(self, task_id: str) -> ReviewTask | None:
        with self._lock:
            entry = self._pending.get(task_id)
            return None if entry is None else entry.task

    def past_vote(self, task_id: str) -> PastVote | None:
        with self._lock:
            return self._history.get(task_id)

    def task_id_for(self, seat: str) -> str | None:
        """The id of the seat's pending task, else of its latest closed one; None when unknown."""
        with self._lock:
            return self._pending_by_seat.get(seat) or self._closed_by_seat.get(seat)

    # ------------------------------------------------------------------------------------ writing

    async def review(self, request: AuditRequest) -> Verdict:
        """Queues `request` (or joins the seat's pending task) and waits for its verdict: the expert's
        decision, or NOT_APPLICABLE once the deadline passes. Cancelling the last waiter removes the
        task from the queue."""
        loop = asyncio.get_running_loop()
        with self._lock:
            earlier = self._closed_for(request)
            if earlier is not None:
                return earlier.verdict
            entry = self._entry_for(request, loop)
            if entry.task.deadline is not None and entry.task.deadline <= self.clock():
                return self._close_missed(entry).verdict
            entry.waiters += 1
        try:
            timeout = None if entry.task.deadline is None else max(0.0, entry.task.deadline - self.clock())
            try:
                await asyncio.wait_for(asyncio.shield(entry.wake), timeout)
            except TimeoutError:
                pass
        except asyncio.CancelledError:
            with self._lock:
                entry.waiters -= 1
                if entry.waiters == 0 and self._pending.get(entry.task.id) is entry:
                    self._remove_pending(entry)
                    entry.wake.cancel()
            raise
        with self._lock:
            entry.waiters -= 1
            if entry.verdict is None:
                return self._close_missed(entry).verdict
            return entry.verdict

    def decide(self, task_id: str, verdict: Verdict) -> PastVote:
        """Records the expert's decision on a pending task and wakes its waiters.

        Raises `ReviewRefused` when the task is unknown, already closed, or its deadline has passed
        (then the task closes as missed, if its waiter has not closed it yet).
        """
        with self._lock:
            entry = self._pending.get(task_id)
            if entry is None:
                raise self._refusal(task_id)
            if entry.task.deadline is not None and self.clock() > entry.task.deadline:
                self._close_missed(entry)
                raise ReviewRefused(
                    f"the deadline of seat {entry.task.seat!r} passed at {utc_text(entry.task.deadline)}; "
                    "the vote came too late and is not counted",
                    RefusalReason.DEADLINE_PASSED,
                    task_id,
                )
            past = self._close(entry, verdict, VOTED, f"{verdict.vote.value}, score {verdict.score}")
        entry.wake.get_loop().call_soon_threadsafe(_wake, entry.wake)
        return past

    def record(self, task_id: str, status: str, detail: str = "") -> PastVote:
        """Adds the worker's status ("committed", "revealed", "finalized: passed", "reward 0.01 ETH")
        to a closed task; it shows on the history page. `ReviewRefused` for a pending or unknown task."""
        if not status.strip():
            raise ValueError(f"task {task_id!r}: a status must say something, got {status!r}")
        with self._lock:
            past = self._history.get(task_id)
            if past is None:
                if task_id in self._pending:
                    raise ReviewRefused(
                        f"task {task_id!r} still waits for the expert's vote; record its status once it is decided",
                        RefusalReason.STILL_PENDING,
                        task_id,
                    )
                raise ReviewRefused(
                    f"no task {task_id!r} in the review queue or its history (history keeps the last "
                    f"{self._history_limit})",
                    RefusalReason.UNKNOWN_TASK,
                    task_id,
                )
            past = replace(past, updates=(*past.updates, StatusUpdate(self.clock(), status, detail)))
            self._history[task_id] = past
            return past

    def refusal(self, task_id: str) -> ReviewRefused:
        """Why a vote on a task that is not pending would be refused (unknown, too late, already
        decided), for a page that cannot even read the vote."""
        with self._lock:
            if task_id in self._pending:
                raise ValueError(f"task {task_id!r} is pending; a vote on it is not refused")
            return self._refusal(task_id)

    def record_seat(self, seat: str, status: str, detail: str = "") -> PastVote:
        """`record` for the seat's latest closed task, for a worker that knows its seats by label."""
        with self._lock:
            task_id = self._closed_by_seat.get(seat)
        if task_id is None:
            raise ReviewRefused(
                f"seat {seat!r} has no closed review task; record a status after the expert decided it",
                RefusalReason.UNKNOWN_TASK,
                "",
            )
        return self.record(task_id, status, detail)

    # ------------------------------------------------------------------ internals (lock held)

    def _closed_for(self, request: AuditRequest) -> PastVote | None:
        """The seat's earlier outcome that answers this request: a decision, or a miss when the new
        request's deadline has passed as well (so a late re-submission adds no second entry)."""
        if not request.seat:
            return None
        past = self._history.get(self._closed_by_seat.get(request.seat, ""))
        if past is None or request.seat in self._pending_by_seat:
            return None
        if not past.missed:
            return past
        if request.deadline is not None and request.deadline <= self.clock():
            return past
        return None

    def _entry_for(self, request: AuditRequest, loop: asyncio.AbstractEventLoop) -> _Pending:
        if request.seat and request.seat in self._pending_by_seat:
            entry = self._pending[self._pending_by_seat[request.seat]]
            if entry.task.request.node_id != request.node_id:
                raise ValueError(
                    f"seat {request.seat!r} already waits for a vote on node {entry.task.request.node_id!r}; "
                    f"it cannot also audit node {request.node_id!r}. Give each seat its own label."
                )
            return entry
        task_id = secrets.token_hex(_TASK_ID_BYTES)
        entry = _Pending(ReviewTask(task_id, request, self.clock()), loop.create_future())
        self._pending[task_id] = entry
        if request.seat:
            self._pending_by_seat[request.seat] = task_id
        return entry

    def _remove_pending(self, entry: _Pending) -> None:
        del self._pending[entry.task.id]
        if self._pending_by_seat.get(entry.task.request.seat) == entry.task.id:
            del self._pending_by_seat[entry.task.request.seat]

    def _close(self, entry: _Pending, verdict: Verdict, status: str, detail: str) -> PastVote:
        self._remove_pending(entry)
        entry.verdict = verdict
        now = self.clock()
        past = PastVote(entry.task, verdict, now, (StatusUpdate(now, status, detail),))
        self._history[entry.task.id] = past
        if entry.task.request.seat:
            self._closed_by_seat[entry.task.request.seat] = entry.task.id
        while len(self._history) > self._history_limit:
            dropped_id, dropped = self._history.popitem(last=False)
            if self._closed_by_seat.get(dropped.task.request.seat) == dropped_id:
                del self._closed_by_seat[dropped.task.request.seat]
        return past

    def _close_missed(self, entry: _Pending) -> PastVote:
        deadline = "" if entry.task.deadline is None else f"deadline {utc_text(entry.task.deadline)}"
        past = self._close(entry, _missed_verdict(entry.task), MISSED_DEADLINE, deadline)
        entry.wake.get_loop().call_soon_threadsafe(_wake, entry.wake)
        return past

    def _refusal(self, task_id: str) -> ReviewRefused:
        past = self._history.get(task_id)
        if past is None:
            return ReviewRefused(
                f"no pending review task {task_id!r}; it may have been withdrawn when the worker stopped",
                RefusalReason.UNKNOWN_TASK,
                task_id,
            )
        if past.missed:
            deadline = "its deadline" if past.task.deadline is None else utc_text(past.task.deadline)
            return ReviewRefused(
                f"the deadline of seat {past.task.seat!r} passed at {deadline}; the vote came too late and is "
                "not counted",
                RefusalReason.DEADLINE_PASSED,
                task_id,
            )
        return ReviewRefused(
            f"seat {past.task.seat!r} was already decided ({past.verdict.vote.value}) at {utc_text(past.closed_at)}; "
            "a vote cannot be changed once given",
            RefusalReason.ALREADY_CLOSED,
            task_id,
        )


@dataclass(frozen=True, slots=True)
class HumanAuditor:
    """The tier-3 auditor: a person voting on the review page. `audit` waits for them (see the
    module docstring); it never raises for a bad node, the expert judges it."""

    queue: ReviewQueue
    name: str = field(default="human expert")

    @property
    def tier(self) -> Tier:
        return Tier.HUMAN

    async def unavailable(self) -> str | None:
        return None

    async def audit(self, request: AuditRequest) -> Verdict:
        return await self.queue.review(request)
