"""The tier-3 queue and auditor: decisions, deadlines, idempotent seats, cancellation, statuses."""

from __future__ import annotations

import asyncio
import time

import pytest

from trust.auditors.base import Auditor, AuditRequest, Outcome, Verdict
from trust.auditors.human import (
    MISSED_DEADLINE,
    VOTED,
    HumanAuditor,
    RefusalReason,
    ReviewQueue,
    ReviewRefused,
    ReviewTask,
)
from trust.core.graphs.hdag import HdagNode, Level, Tier
from trust.core.graphs.refinement import ErrorType

GOAL = HdagNode("g", Level.GOAL, "Decide whether the patient needs anticoagulation.", domain="medical")
STRATEGY = HdagNode("s", Level.STRATEGY, "Score stroke risk with CHA2DS2-VASc.", domain="medical", stakes="high")
STEP = HdagNode("t", Level.STEP, "Age 72 gives 2 points.", domain="medical")

FAIL = Verdict(Outcome.FAIL, 0.1, "Age 65-74 scores 1 point, not 2.", ErrorType.FACTUAL)
PASS = Verdict(Outcome.PASS, 1.0, "The approach is the guideline's.")

# Deadlines far enough ahead that no test run reaches them, and short ones for the missed cases.
FAR_SECONDS = 600.0
SHORT_SECONDS = 0.2


def request(
    node: HdagNode = STRATEGY, seat: str = "round 1 / node s / seat 0", in_seconds: float | None = FAR_SECONDS
) -> AuditRequest:
    deadline = None if in_seconds is None else time.time() + in_seconds
    return AuditRequest(node, (GOAL,), deadline=deadline, seat=seat)


async def queued(queue: ReviewQueue, count: int = 1) -> list[ReviewTask]:
    """The pending tasks once `count` are queued (the audit tasks start on the next loop turns)."""
    for _ in range(100):
        tasks = queue.pending()
        if len(tasks) >= count:
            return tasks
        await asyncio.sleep(0)
    raise AssertionError(f"expected {count} pending tasks, found {len(queue.pending())}")


def test_the_human_auditor_is_a_tier_3_auditor() -> None:
    auditor = HumanAuditor(ReviewQueue())
    assert isinstance(auditor, Auditor)
    assert auditor.tier is Tier.HUMAN
    assert auditor.name == "human expert"


async def test_audit_returns_the_experts_decision_and_moves_the_task_to_history() -> None:
    queue = ReviewQueue()
    audit = asyncio.create_task(HumanAuditor(queue).audit(request()))
    [task] = await queued(queue)
    assert task.request.node is STRATEGY and task.request.parents == (GOAL,)
    assert task.seat == "round 1 / node s / seat 0"

    past = queue.decide(task.id, FAIL)

    assert await audit == FAIL
    assert queue.pending() == []
    assert queue.history() == [past]
    assert past.status == VOTED and not past.missed
    assert queue.pending_task(task.id) is None and queue.past_vote(task.id) == past


async def test_a_missed_deadline_gives_not_applicable_and_refuses_a_late_vote() -> None:
    queue = ReviewQueue()
    audit = asyncio.create_task(HumanAuditor(queue).audit(request(in_seconds=SHORT_SECONDS)))
    [task] = await queued(queue)

    verdict = await audit

    assert verdict.vote is Outcome.NOT_APPLICABLE and verdict.score is None
    assert "did not vote" in verdict.critique and task.seat in verdict.critique
    [past] = queue.history()
    assert past.missed and past.status == MISSED_DEADLINE
    with pytest.raises(ReviewRefused, match="deadline .* passed") as refused:
        queue.decide(task.id, PASS)
    assert refused.value.reason is RefusalReason.DEADLINE_PASSED


async def test_a_deadline_already_past_closes_at_once() -> None:
    queue = ReviewQueue()
    verdict = await HumanAuditor(queue).audit(request(in_seconds=-1.0))
    assert verdict.vote is Outcome.NOT_APPLICABLE
    assert queue.pending() == []
    assert [p.status for p in queue.history()] == [MISSED_DEADLINE]


async def test_a_vote_after_the_deadline_is_refused_even_before_the_waiter_wakes() -> None:
    # The queue's clock passes the deadline while the auditor's timer still sleeps: the decision is
    # refused, the task closes as missed and the waiter is woken with NOT_APPLICABLE.
    shift = [0.0]
    queue = ReviewQueue(clock=lambda: time.time() + shift[0])
    audit = asyncio.create_task(HumanAuditor(queue).audit(request()))
    [task] = await queued(queue)
    shift[0] = 2 * FAR_SECONDS

    with pytest.raises(ReviewRefused) as refused:
        queue.decide(task.id, FAIL)

    assert refused.value.reason is RefusalReason.DEADLINE_PASSED
    assert (await audit).vote is Outcome.NOT_APPLICABLE
    assert [p.status for p in queue.history()] == [MISSED_DEADLINE]


async def test_audit_is_idempotent_per_seat() -> None:
    queue = ReviewQueue()
    auditor = HumanAuditor(queue)
    first = asyncio.create_task(auditor.audit(request()))
    second = asyncio.create_task(auditor.audit(request()))
    await asyncio.sleep(0)
    [task] = await queued(queue)
    assert len(queue.pending()) == 1

    queue.decide(task.id, FAIL)

    assert await first == FAIL and await second == FAIL
    # Asked again once decided, the seat answers with the expert's vote instead of a new task.
    assert await auditor.audit(request()) == FAIL
    assert queue.pending() == [] and len(queue.history()) == 1
    assert queue.task_id_for("round 1 / node s / seat 0") == task.id


async def test_a_seat_label_cannot_be_reused_for_another_node() -> None:
    queue = ReviewQueue()
    auditor = HumanAuditor(queue)
    audit = asyncio.create_task(auditor.audit(request()))
    await queued(queue)
    with pytest.raises(ValueError, match="seat 'round 1 / node s / seat 0' already waits for a vote on node 's'"):
        await auditor.audit(request(node=STEP))
    audit.cancel()
    with pytest.raises(asyncio.CancelledError):
        await audit


async def test_seats_without_a_label_are_separate_tasks() -> None:
    queue = ReviewQueue()
    auditor = HumanAuditor(queue)
    audits = [asyncio.create_task(auditor.audit(request(seat=""))) for _ in range(2)]
    tasks = await queued(queue, 2)
    assert {t.seat for t in tasks} == {"node s"}
    for task in tasks:
        queue.decide(task.id, PASS)
    assert await asyncio.gather(*audits) == [PASS, PASS]


async def test_cancelling_the_last_waiter_removes_the_task() -> None:
    queue = ReviewQueue()
    auditor = HumanAuditor(queue)
    first = asyncio.create_task(auditor.audit(request()))
    second = asyncio.create_task(auditor.audit(request()))
    [task] = await queued(queue)
    await asyncio.sleep(0)

    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert queue.pending() == [task], "another waiter still waits on the seat"

    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    assert queue.pending() == [] and queue.history() == []
    with pytest.raises(ReviewRefused, match="withdrawn") as refused:
        queue.decide(task.id, PASS)
    assert refused.value.reason is RefusalReason.UNKNOWN_TASK


async def test_a_decision_cannot_be_changed() -> None:
    queue = ReviewQueue()
    audit = asyncio.create_task(HumanAuditor(queue).audit(request()))
    [task] = await queued(queue)
    queue.decide(task.id, PASS)
    with pytest.raises(ReviewRefused, match="already decided") as refused:
        queue.decide(task.id, FAIL)
    assert refused.value.reason is RefusalReason.ALREADY_CLOSED
    assert await audit == PASS


async def test_a_decision_from_another_thread_wakes_the_auditor() -> None:
    queue = ReviewQueue()
    audit = asyncio.create_task(HumanAuditor(queue).audit(request()))
    [task] = await queued(queue)
    await asyncio.to_thread(queue.decide, task.id, FAIL)
    assert await audit == FAIL


async def test_the_worker_records_statuses_on_past_votes() -> None:
    queue = ReviewQueue()
    audit = asyncio.create_task(HumanAuditor(queue).audit(request()))
    [task] = await queued(queue)
    with pytest.raises(ReviewRefused, match="still waits") as refused:
        queue.record(task.id, "committed")
    assert refused.value.reason is RefusalReason.STILL_PENDING
    queue.decide(task.id, FAIL)
    await audit

    queue.record(task.id, "committed", "tx 0xab")
    past = queue.record_seat(task.seat, "finalized: failed")

    assert past.status == "finalized: failed"
    assert [(u.status, u.detail) for u in past.updates] == [
        (VOTED, "fail, score 0.1"),
        ("committed", "tx 0xab"),
        ("finalized: failed", ""),
    ]
    assert queue.history() == [past]
    with pytest.raises(ReviewRefused, match="no task 'nope'") as refused:
        queue.record("nope", "committed")
    assert refused.value.reason is RefusalReason.UNKNOWN_TASK
    with pytest.raises(ReviewRefused, match="seat 'other' has no closed review task"):
        queue.record_seat("other", "committed")
    with pytest.raises(ValueError, match="a status must say something"):
        queue.record(task.id, "  ")


async def test_pending_is_sorted_by_deadline_and_history_newest_first() -> None:
    queue = ReviewQueue(history_limit=2)
    auditor = HumanAuditor(queue)
    audits = [
        asyncio.create_task(auditor.audit(request(seat="late", in_seconds=3 * FAR_SECONDS))),
        asyncio.create_task(auditor.audit(request(seat="none", in_seconds=None))),
        asyncio.create_task(auditor.audit(request(seat="soon", in_seconds=FAR_SECONDS))),
    ]
    tasks = await queued(queue, 3)
    assert [t.seat for t in tasks] == ["soon", "late", "none"]

    for task in tasks:
        queue.decide(task.id, PASS)
    await asyncio.gather(*audits)

    # Newest first; the limit of 2 dropped the oldest ("soon").
    assert [p.task.seat for p in queue.history()] == ["none", "late"]
    assert queue.task_id_for("soon") is None


def test_a_history_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="history_limit must be at least 1, got 0"):
        ReviewQueue(history_limit=0)
