"""Audit reports end to end: three tier-1 workers on Anvil and the local IPFS node, the test as the
provider with a reply key in every key grant.

The workers reveal as soon as every seat has committed (the commit window closes early), then seal
each seat's report to the reply key, store it on IPFS and announce it on chain; the provider reads
every report of its session back by event and opens it. A worker stopped between its reveal and
its report publishes after a restart, and exactly once; a provider's unusable reply key costs the
reports, never the votes.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from trust.adapters.chain.types import CommitteeDrawn, SegmentStatus
from trust.adapters.storage.kubo import KuboClient
from trust.core.privacy.envelopes import public_key_bytes
from trust.core.privacy.reports import MAX_REPORT_BYTES, AuditReport, open_report
from trust.services.worker.daemon import Worker
from trust.services.worker.status import status_report
from trust.services.worker.store import SeatKey, SeatState

from .conftest import WORKER_SETTINGS, Network, make_worker, products, seats_of, submit

pytestmark = [pytest.mark.chain, pytest.mark.slow]

# products(): g0, s1, s1.op1, s2, s2.op1, s3, s3.op1; the step s2 and its operation state 17 * 23 = 409.
SEGMENTS = 7
WRONG = (3, 4)


class Crash(Exception):
    """Stands for the worker process dying at a chosen point (raised from its event hook)."""


async def _run_until(workers: list[Worker], condition: Callable[[], Awaitable[bool]], timeout: float) -> list[object]:
    """Runs the workers until `condition` holds; returns what each `run` returned or raised."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(w.run(stop)) for w in workers]
    try:
        async with asyncio.timeout(timeout):
            while not await condition():
                await asyncio.sleep(0.5)
    finally:
        stop.set()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    return list(outcomes)


def _held(workers: list[Worker], committees: Sequence[CommitteeDrawn]) -> int:
    """The seats the workers hold between them (committees are drawn with replacement: three draws
    seat one to three of the three auditors)."""
    return sum(len(seats_of(committees, w.identity.address)) for w in workers)


def _all_reported(workers: list[Worker], committees: Sequence[CommitteeDrawn]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        seats = [s for w in workers for s in w.store.seats()]
        return len(seats) == _held(workers, committees) and all(s.reported_at is not None for s in seats)

    return check


async def _open_all(network: Network, kubo: KuboClient, session_id: int, root: bytes, reply: X25519PrivateKey):  # type: ignore[no-untyped-def]
    """The provider's side: every report of the session, read by event, fetched and opened."""
    published = await network.protocol.segment_keys.reports_for(session_id)
    reports: dict[tuple[int, int, int], AuditReport] = {}
    for item in published:
        blob = await kubo.cat(item.cid, max_bytes=MAX_REPORT_BYTES)
        reports[(item.segment_id, item.round, item.seat_index)] = open_report(
            blob,
            private_key=reply,
            trace_root=root,
            session_id=session_id,
            segment_index=item.segment_id,
            round=item.round,
            seat_index=item.seat_index,
            auditor=item.auditor,
        )
    return published, reports


async def _publications(network: Network, session_id: int) -> Counter[tuple[int, int, int, str]]:
    """How many `ReportPublished` events each (segment, round, seat, auditor) has, all of them."""
    event = network.protocol.segment_keys.contract.events.ReportPublished()
    logs = await event.get_logs(from_block=0, to_block="latest", argument_filters={"sessionId": session_id})
    return Counter(
        (
            int(log["args"]["segmentId"]),
            int(log["args"]["round"]),
            int(log["args"]["seatIndex"]),
            log["args"]["auditor"],
        )
        for log in logs
    )


async def test_the_provider_reads_and_opens_every_report_of_its_session(
    network: Network, kubo: KuboClient, tmp_path: Path
) -> None:
    workers = [make_worker(network, kubo, i, tmp_path) for i in range(3)]
    reply = X25519PrivateKey.generate()
    session_id, stored, committees = await submit(network, kubo, products(), reply_key=public_key_bytes(reply))
    audit, chain = network.protocol.audit, network.protocol.chain

    await _run_until(workers, _all_reported(workers, committees), timeout=120)

    published, reports = await _open_all(network, kubo, session_id, stored.root, reply)
    assert len(published) == len(reports) == sum(len(c.members) for c in committees)
    for (segment, round_id, seat_index), report in reports.items():
        on_chain = await audit.seat(session_id, segment, round_id, seat_index)
        assert on_chain.revealed and report.auditor == on_chain.auditor
        assert report.vote == ("pass" if on_chain.vote else "fail") == ("fail" if segment in WRONG else "pass")
        assert report.tier == 1 and 0.0 <= report.score <= 1.0
        assert 0 < report.started_at <= report.finished_at
    # The critique of the wrong product says why it fails.
    for seat_index in range(len(committees[4].members)):
        wrong = reports[(4, 0, seat_index)]  # s2.op1: "17 * 23 = 409"
        assert wrong.vote == "fail" and wrong.error_type == "factual" and wrong.score == 0.0
        assert "17 * 23 = 409" in wrong.critique and "391" in wrong.critique

    # Every seat committed at once, so each worker revealed before the deadline the draw had set,
    # and each seat reported once, after its reveal.
    counts = await _publications(network, session_id)
    assert set(counts.values()) == {1}
    for worker in workers:
        for seat in worker.store.seats():
            drawn = committees[seat.segment_id]
            assert seat.reveal_tx is not None and seat.report_tx is not None
            revealed = await chain.w3.eth.get_transaction_receipt(seat.reveal_tx)
            reported = await chain.w3.eth.get_transaction_receipt(seat.report_tx)
            revealed_at = (await chain.w3.eth.get_block(revealed["blockNumber"]))["timestamp"]
            assert revealed_at <= drawn.commit_deadline, "revealed only after the draw's commit deadline"
            assert seat.commit_deadline < drawn.commit_deadline  # the worker saw the window close
            assert reported["blockNumber"] >= revealed["blockNumber"]
        held = seats_of(committees, worker.identity.address)
        for segment in held[:1]:
            events = [e.event for e in worker.store.recent(300) if e.seat == SeatKey(session_id, segment, 0)]
            assert events[:7] == ["drawn", "fetched", "voted", "committed", "closed", "revealed", "reported"]
        path = worker.store.path
        worker.store.close()
        assert status_report(path)["reports"] == {"published": len(held), "pending": 0, "given_up": 0}
    statuses = [(await audit.segment(session_id, i)).status for i in range(SEGMENTS)]
    assert statuses == [SegmentStatus.FAILED if i in WRONG else SegmentStatus.PASSED for i in range(SEGMENTS)]


async def test_a_restart_between_reveal_and_report_publishes_exactly_once(
    network: Network, kubo: KuboClient, tmp_path: Path
) -> None:
    def crash_after_reveal(key: SeatKey, event: str, detail: str) -> None:
        if event == "revealed":
            raise Crash(f"{key}: the process dies right after recording its reveal")

    reply = X25519PrivateKey.generate()
    victim = make_worker(network, kubo, 0, tmp_path, on_event=crash_after_reveal)
    others = [make_worker(network, kubo, i, tmp_path) for i in (1, 2)]
    session_id, stored, committees = await submit(network, kubo, products(), reply_key=public_key_bytes(reply))
    others_done = asyncio.create_task(_run_until(others, _all_reported(others, committees), timeout=120))

    with pytest.raises(Crash):
        async with asyncio.timeout(90):
            await victim.run(asyncio.Event())
    victim_seats = victim.store.seats()
    assert all(s.reported_at is None and s.report_cid is None for s in victim_seats)
    assert any(s.state is SeatState.REVEALED for s in victim_seats)
    victim.store.close()

    # Restarted on the same state file: the seats the crash left unrecorded are found revealed on
    # chain, and every report is published, once.
    restarted = make_worker(network, kubo, 0, tmp_path)
    assert await _run_until([restarted], _all_reported([restarted], committees), timeout=60) == [None]
    await others_done
    address = restarted.identity.account.address
    counts = await _publications(network, session_id)
    mine = {seat: n for seat, n in counts.items() if seat[3] == address}
    seats_in_all = sum(len(c.members) for c in committees)
    assert len(mine) == len(seats_of(committees, address))
    assert set(counts.values()) == {1} and len(counts) == seats_in_all
    _, reports = await _open_all(network, kubo, session_id, stored.root, reply)
    assert {r.auditor for r in reports.values()} == {m for c in committees for m in c.members}

    # A crash after the transaction but before the store recorded it: the chain is asked first.
    seat = restarted.store.seats()[-1]
    restarted.store.update(seat.key, reported_at=None, report_tx=None)
    await restarted.tick()
    again = restarted.store.seat(seat.key)
    assert again.reported_at is not None and again.report_tx is None
    assert (await _publications(network, session_id))[(seat.segment_id, 0, seat.seat_index, address)] == 1
    assert any("found on chain" in e.detail for e in restarted.store.recent(20) if e.event == "reported")
    restarted.store.close()
    for worker in others:
        worker.store.close()


async def test_an_unusable_reply_key_costs_the_reports_never_the_votes(
    network: Network, kubo: KuboClient, tmp_path: Path
) -> None:
    workers = [make_worker(network, kubo, i, tmp_path) for i in range(3)]
    # A low-order point: the grant takes it (it is not zero), but no report can be sealed to it.
    session_id, _, committees = await submit(network, kubo, products(), reply_key=b"\x01" + bytes(31))

    async def settled() -> bool:
        seats = [s for w in workers for s in w.store.seats()]
        return len(seats) == _held(workers, committees) and all(s.outcome is not None and s.report_error for s in seats)

    await _run_until(workers, settled, timeout=120)
    for worker in workers:
        for seat in worker.store.seats():
            assert seat.state is SeatState.FINALIZED and seat.outcome is not None
            assert seat.reported_at is None and seat.report_attempts == WORKER_SETTINGS.max_attempts
            assert "is not a usable X25519 key" in (seat.report_error or "")
        held = len(seats_of(committees, worker.identity.address))
        assert any(e.event == "report failed" for e in worker.store.recent(100)) == bool(held)
        path = worker.store.path
        worker.store.close()
        assert status_report(path)["reports"] == {"published": 0, "pending": 0, "given_up": held}
    assert await network.protocol.segment_keys.reports_for(session_id) == []
    statuses = [(await network.protocol.audit.segment(session_id, i)).status for i in range(SEGMENTS)]
    assert statuses == [SegmentStatus.FAILED if i in WRONG else SegmentStatus.PASSED for i in range(SEGMENTS)]
