"""The capacity model of the worker without a chain: the estimate of seconds per audit, the forecast
of when a seat drawn now would be ready, the in/out decision with its hysteresis, the draws in
progress followed from the audit contract's events, and the earliest-deadline-first slots."""

from __future__ import annotations

import asyncio

import pytest

from trust.adapters.chain.protocol import DrawEvent, DrawEventKind
from trust.services.worker.capacity import (
    AuditTimes,
    DrawPipeline,
    EdfSlots,
    cap_by_free_units,
    expected_units,
    forecast,
    free_units,
    seat_probability,
    steer,
)


def test_the_estimate_is_a_high_quantile_of_recent_audits_and_the_prior_before_any() -> None:
    times = AuditTimes((), prior_seconds=30.0, quantile=0.9, keep=5)
    assert times.estimate_seconds == 30.0 and not times.measured
    for seconds in (4.0, 5.0, 6.0, 30.0, 5.0):
        times = times.with_sample(seconds)
    assert times.measured and times.samples == (4.0, 5.0, 6.0, 30.0, 5.0)
    assert times.estimate_seconds == 30.0  # 0.9 of five: the largest
    times = times.with_sample(5.0).with_sample(5.0)  # the oldest drop out beyond `keep`
    assert times.samples == (6.0, 30.0, 5.0, 5.0, 5.0)
    assert AuditTimes(times.samples, 30.0, quantile=0.5, keep=5).estimate_seconds == 5.0
    # An audit running longer than the estimate says the model has slowed down.
    assert times.seconds([12.0, 45.0]) == 45.0 and times.seconds([1.0]) == 30.0


def test_the_estimate_is_read_back_from_the_state_and_a_damaged_record_falls_back_to_the_prior() -> None:
    times = AuditTimes((), 30.0).with_sample(7.25).with_sample(8.5)
    again = AuditTimes.from_json(times.to_json(), prior_seconds=30.0, quantile=0.9, keep=20)
    assert again.samples == (7.25, 8.5) and again.estimate_seconds == 8.5
    for damaged in (None, "7", [1.0, "x"], [-1.0], {"a": 1}):
        assert AuditTimes.from_json(damaged, prior_seconds=30.0, quantile=0.9, keep=20).samples == ()


def test_a_forecast_schedules_the_seats_held_earliest_deadline_first_then_the_new_seat() -> None:
    times = AuditTimes((10.0,), prior_seconds=30.0)
    # One slot: a running audit 4 s in (6 s left), two queued seats, then the new seat: 6 + 10 + 10 + 10.
    outlook = forecast(
        now=1000.0,
        deadlines=[1100.0, 1020.0],
        running_ages=[4.0],
        times=times,
        parallel=1,
        window_seconds=60.0,
    )
    assert outlook.backlog_seconds == 36.0 and outlook.queued == 2 and outlook.running == 1
    assert outlook.late == 0  # the seat due at 1020 goes first: ready at 1016
    assert outlook.load == pytest.approx(36.0 / 60.0)


def test_a_seat_whose_deadline_comes_before_its_turn_is_counted_late() -> None:
    times = AuditTimes((10.0,), prior_seconds=30.0)
    outlook = forecast(
        now=1000.0, deadlines=[1015.0, 1012.0], running_ages=[4.0], times=times, parallel=1, window_seconds=60.0
    )
    # The running audit frees the slot at +6; the seat due at 1012 is ready at 1016, the next at 1026.
    assert outlook.late == 2
    two_slots = forecast(
        now=1000.0, deadlines=[1015.0, 1012.0], running_ages=[4.0], times=times, parallel=2, window_seconds=60.0
    )
    # The seat due at 1012 starts at once on the free slot (ready at 1010), the other at +6 (1016).
    assert two_slots.late == 1


def test_expected_seats_are_spread_over_the_slots_before_the_new_seat() -> None:
    times = AuditTimes((10.0,), prior_seconds=30.0)
    outlook = forecast(
        now=0.0,
        deadlines=[],
        running_ages=[5.0],
        times=times,
        parallel=2,
        window_seconds=100.0,
        expected_seats=1.5,
        upcoming_seats=0.5,
    )
    # Slots free at 5 and 0; 2 expected seats are 20 s of work: levelled at 12.5, then 10 for the new seat.
    assert outlook.backlog_seconds == pytest.approx(22.5)
    assert outlook.expected_seats + outlook.upcoming_seats == 2.0


def test_steering_leaves_above_the_out_load_returns_at_the_in_load_and_holds_in_between() -> None:
    def outlook(backlog: float, *, queued: int = 1):  # type: ignore[no-untyped-def]
        """`queued` seats far from their deadline, each taking the share of `backlog` the new seat leaves."""
        return forecast(
            now=0.0,
            deadlines=[10_000.0] * queued,
            running_ages=[],
            times=AuditTimes((backlog / (queued + 1),), prior_seconds=1.0),
            parallel=1,
            window_seconds=100.0,
        )

    high, middle, low = outlook(95.0), outlook(70.0), outlook(40.0)
    assert not steer(in_draw=True, outlook=high, out_load=0.9, in_load=0.5, unavailable=None).in_draw
    assert "a seat drawn now would be ready in 95 s of the 100 s its commit window leaves (1 queued" in (
        steer(in_draw=True, outlook=high, out_load=0.9, in_load=0.5, unavailable=None).reason or ""
    )
    assert steer(in_draw=True, outlook=middle, out_load=0.9, in_load=0.5, unavailable=None).in_draw
    assert not steer(in_draw=False, outlook=middle, out_load=0.9, in_load=0.5, unavailable=None).in_draw
    assert steer(in_draw=False, outlook=low, out_load=0.9, in_load=0.5, unavailable=None).in_draw
    down = steer(in_draw=True, outlook=low, out_load=0.9, in_load=0.5, unavailable="the model server is down")
    assert not down.in_draw and down.reason == "the auditor cannot take seats: the model server is down"
    # Idle (nothing queued, running or expected): in, however long one audit takes; it learns by auditing.
    idle = outlook(150.0, queued=0)
    assert not idle.busy and idle.load == 1.5
    assert steer(in_draw=False, outlook=idle, out_load=0.9, in_load=0.5, unavailable=None).in_draw


def test_an_unmeasured_default_counts_for_at_most_a_quarter_of_the_window() -> None:
    outlook = forecast(
        now=0.0,
        deadlines=[],
        running_ages=[],
        times=AuditTimes((), prior_seconds=300.0),
        parallel=1,
        window_seconds=40.0,
        upcoming_seats=2.0,
    )
    assert outlook.audit_seconds == 10.0 and outlook.backlog_seconds == 30.0
    assert not outlook.measured and outlook.basis == "default"
    # A running audit older than that still raises it: it has taken that long.
    running = forecast(
        now=0.0, deadlines=[], running_ages=[25.0], times=AuditTimes((), 300.0), parallel=1, window_seconds=40.0
    )
    assert running.audit_seconds == 25.0 and running.basis == "running"


def test_a_seat_comes_with_the_chance_of_winning_one_of_k_draws_with_replacement() -> None:
    # Each of three draws lands on a member of 200 out of 1000 with probability 0.2, whatever it won before.
    assert seat_probability(3, 200, 1000) == pytest.approx(1 - 0.8**3)
    assert seat_probability(1, 200, 1000) == pytest.approx(0.2)
    # Three members for three draws no longer seat everyone: a light one is often left out.
    assert seat_probability(3, 1, 3) == pytest.approx(1 - (2 / 3) ** 3)
    assert seat_probability(3, 1000, 1000) == 1.0
    assert seat_probability(3, 0, 1000) == 0.0 and seat_probability(3, 100, 0) == 0.0


def test_expected_units_are_the_share_of_the_draws_and_splitting_the_stake_wins_none_more() -> None:
    assert expected_units(3, 200, 1000) == pytest.approx(0.6)
    assert expected_units(5, 1000, 1000) == 5.0  # the whole tier wins every draw
    # The same stake in one account or in four expects the same units (issue L2).
    assert sum(expected_units(7, 50, 1000) for _ in range(4)) == pytest.approx(expected_units(7, 200, 1000))
    # One audit per seat: at most one seat per draw, fewer seats than units when draws repeat.
    assert seat_probability(7, 200, 1000) < expected_units(7, 200, 1000)


def test_the_free_units_bound_the_seats_still_to_come() -> None:
    token = 10**18
    assert free_units(100 * token, 16 * token, 8 * token) == 10
    assert free_units(100 * token, 100 * token, 8 * token) == 0
    assert free_units(7 * token, 0, 8 * token) == 0  # cannot back one unit: passed over by every draw
    with pytest.raises(ValueError, match="positive"):
        free_units(100, 0, 0)
    assert cap_by_free_units(0.4, 0.3, 5) == (0.4, 0.3)  # room for everything
    assert cap_by_free_units(2.5, 1.0, 2) == (2.0, 0.0)  # the fixed draws first
    assert cap_by_free_units(1.5, 1.0, 2) == (1.5, 0.5)
    assert cap_by_free_units(1.0, 1.0, 0) == (0.0, 0.0)


def _event(kind: DrawEventKind, block: int, index: int, session: int, segment: int | None = None, **fields: int):  # type: ignore[no-untyped-def]
    return DrawEvent(
        kind=kind,
        session_id=session,
        segment_id=segment,
        round=fields.get("round", 0),
        tier=fields.get("tier"),
        committee_size=fields.get("committee_size"),
        randomness_block=fields.get("randomness_block"),
        attempt=fields.get("attempt", 0),
        block_number=block,
        log_index=index,
    )


def test_the_pipeline_follows_registrations_redraws_escalations_and_draws_of_its_tier() -> None:
    pipeline = DrawPipeline(tier=2)
    pipeline.apply(
        [
            _event(DrawEventKind.OPENED, 10, 0, 1, randomness_block=12),
            _event(DrawEventKind.REGISTERED, 10, 1, 1, 0, tier=2),
            _event(DrawEventKind.REGISTERED, 10, 2, 1, 1, tier=2),
            _event(DrawEventKind.REGISTERED, 10, 3, 1, 2, tier=1),
        ]
    )
    assert len(pipeline) == 2 and pipeline.sessions_without_size() == {1}
    assert pipeline.fixed(11, 64) == [] and pipeline.next_ahead(11) == []  # no size yet: not counted
    pipeline.set_sizes({1: 3})
    assert [p.segment_id for p in pipeline.next_ahead(11)] == [0, 1]
    # Block 13: segment 0 drawn, segment 1's draw found too few members and got a new block.
    pipeline.apply(
        [
            _event(DrawEventKind.UNAVAILABLE, 13, 0, 1, 1, attempt=1),
            _event(DrawEventKind.REFRESHED, 13, 1, 1, 1, randomness_block=15),
        ],
        drawn=[(1, 0, 0)],
    )
    (waiting,) = pipeline.next_ahead(13)
    assert (waiting.segment_id, waiting.randomness_block) == (1, 15)
    assert pipeline.fixed(15, 64) == [waiting.__class__(1, 1, 0, 3, 15)]
    assert pipeline.fixed(100, 64) == []  # nobody drew it for 85 blocks: left out
    assert pipeline.sessions() == {1}
    # Its last attempt fails: no new block, it is gone (undetermined).
    pipeline.apply([_event(DrawEventKind.UNAVAILABLE, 16, 0, 1, 1, attempt=3)])
    assert len(pipeline) == 0
    # A tier-1 segment escalated into this tier comes in with its own size and block; one escalated
    # away leaves.
    pipeline.apply(
        [
            _event(DrawEventKind.ESCALATED, 20, 0, 1, 2, round=1, tier=2, committee_size=7, randomness_block=22),
            _event(DrawEventKind.ESCALATED, 20, 1, 1, 0, round=1, tier=3, committee_size=5, randomness_block=22),
        ]
    )
    assert [(p.segment_id, p.round, p.committee_size) for p in pipeline.next_ahead(20)] == [(2, 1, 7)]
    pipeline.apply([], drawn=[(1, 2, 0)])  # an earlier round's committee does not take it out
    assert len(pipeline) == 1
    pipeline.apply([], drawn=[(1, 2, 1)])
    assert len(pipeline) == 0


def test_the_pipeline_forgets_draws_older_than_a_block() -> None:
    pipeline = DrawPipeline(tier=1)
    pipeline.apply(
        [
            _event(DrawEventKind.OPENED, 5, 0, 1, randomness_block=7),
            _event(DrawEventKind.REGISTERED, 5, 1, 1, 0, tier=1),
            _event(DrawEventKind.OPENED, 50, 0, 2, randomness_block=52),
            _event(DrawEventKind.REGISTERED, 50, 1, 2, 0, tier=1),
        ]
    )
    pipeline.prune(30)
    assert pipeline.sessions() == {2}
    # A late registration of the forgotten session finds no block: not kept.
    pipeline.apply([_event(DrawEventKind.REGISTERED, 60, 0, 1, 1, tier=1)])
    assert pipeline.sessions() == {2}


def test_a_segment_registered_before_its_session_event_gets_the_block_when_it_comes() -> None:
    pipeline = DrawPipeline(tier=1)
    pipeline.apply(
        [
            _event(DrawEventKind.REGISTERED, 5, 0, 7, 0, tier=1),
            _event(DrawEventKind.OPENED, 5, 1, 7, randomness_block=7),
        ]
    )
    pipeline.set_sizes({7: 3})
    assert [p.randomness_block for p in pipeline.next_ahead(5)] == [7]


async def test_slots_go_to_the_earliest_deadline_not_to_the_first_waiter() -> None:
    slots = EdfSlots(1)
    order: list[str] = []
    release = asyncio.Event()

    async def audit(name: str, deadline: int) -> None:
        async with slots.slot(deadline):
            order.append(name)
            await release.wait()

    first = asyncio.create_task(audit("running", 50))
    await asyncio.sleep(0)
    waiters = [asyncio.create_task(audit(name, deadline)) for name, deadline in (("late", 30), ("soon", 10))]
    cancelled = asyncio.create_task(audit("cancelled", 5))
    await asyncio.sleep(0)
    assert slots.waiting == 3
    cancelled.cancel()
    release.set()
    await asyncio.gather(first, *waiters)
    assert order == ["running", "soon", "late"]
    with pytest.raises(ValueError, match="at least one slot"):
        EdfSlots(0)
