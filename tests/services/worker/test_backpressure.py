"""Capacity and backpressure of the worker on Anvil and the local IPFS node, driven by `tick()`.

A slow auditor is a real tier-1 auditor over a check that takes wall time (`SlowArithmetic`); an
auditor that cannot work is a real auditor whose `unavailable()` says so (`PausableAuditor`). The
test plays the provider and, where it says so, the auditor's operator (the same wallet, sending
`setAvailable` itself).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.types import SegmentStatus
from trust.adapters.chain.wallets import load_keystore
from trust.adapters.storage.kubo import KuboClient
from trust.auditors.base import Auditor, AuditRequest, CheckResult, Verdict
from trust.auditors.checks import ArithmeticCheck
from trust.auditors.computational import ComputationalAuditor
from trust.core.graphs.hdag import Tier
from trust.errors import ConfigError
from trust.services.delivery import deliver_keys, store_trace
from trust.services.worker.daemon import Worker, taken_out_by_worker
from trust.services.worker.identity import ensure_registered
from trust.services.worker.status import status_report
from trust.services.worker.store import SeatState, WorkerStore

from .conftest import (
    PASSWORD,
    PROTOCOL,
    WORKER_SETTINGS,
    Network,
    deployed_network,
    leave_alone,
    make_worker,
    products,
    submit,
    tier1_profiles,
)

pytestmark = [pytest.mark.chain, pytest.mark.slow]

AUDIT_SECONDS = 2.0
"""How long the slow auditor takes per seat: seven seats at one at a time (14 s) do not fit the
test protocol's 14-s commit window less the 3-s margin."""
SETTINGS = WORKER_SETTINGS.model_copy(
    update={"audits_in_parallel": 1, "audit_seconds_tier1": AUDIT_SECONDS, "health_check_seconds": 0.5}
)


class SlowArithmetic:
    """A tier-1 check that takes `seconds` of wall time before exact arithmetic answers: an
    auditor as slow as a model under load. Counts the checks it started and finished."""

    name = "slow arithmetic"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = 0
        self.finished = 0
        self._exact = ArithmeticCheck()

    async def check(self, request: AuditRequest) -> CheckResult:
        self.started += 1
        await asyncio.sleep(self.seconds)
        self.finished += 1
        return await self._exact.check(request)


class PausableAuditor:
    """A tier-1 auditor whose `unavailable()` gives a reason while `paused` is set, as a tier-2
    auditor reports a model server that is down."""

    def __init__(self) -> None:
        self.paused: str | None = None
        self._auditor = ComputationalAuditor([ArithmeticCheck()])

    @property
    def tier(self) -> Tier:
        return Tier.COMPUTATIONAL

    @property
    def name(self) -> str:
        return "pausable"

    async def audit(self, request: AuditRequest) -> Verdict:
        return await self._auditor.audit(request)

    async def unavailable(self) -> str | None:
        return self.paused


def worker_of(network: Network, kubo: KuboClient, state_dir: Path, auditor: Auditor) -> Worker:
    """The in-process worker of auditor 0 with `auditor` and the backpressure test's settings. The
    tests that need it on every segment of a session take the others out of the draw (`alone`)."""
    made = make_worker(network, kubo, 0, state_dir)
    made.store.close()
    return reopened(network, kubo, made, auditor)


def slow_worker(network: Network, kubo: KuboClient, state_dir: Path, seconds: float = AUDIT_SECONDS) -> Worker:
    return worker_of(network, kubo, state_dir, ComputationalAuditor([SlowArithmetic(seconds)]))


def reopened(network: Network, kubo: KuboClient, worker: Worker, auditor: Auditor | None = None) -> Worker:
    """A new worker on the same wallet and state file (a restart), with the test's settings."""
    path = worker.store.path
    worker.store.close()
    store = WorkerStore(
        path,
        chain_id=network.protocol.chain.chain_id,
        audit_contract=network.protocol.audit.address,
        auditor=worker.identity.address,
    )
    return Worker(
        network.protocol, kubo, worker.identity, auditor or worker.auditor, store, SETTINGS, logger=worker.log
    )


async def on_chain(network: Network, worker: Worker) -> bool:
    return (await network.protocol.registry.auditor(worker.identity.address)).available


async def tick_until(worker: Worker, condition: Callable[[], Awaitable[bool]], timeout: float) -> None:
    """Ticks `worker` (its audits run in the background meanwhile) until `condition` holds."""
    async with asyncio.timeout(timeout):
        while True:
            await worker.tick()
            if await condition():
                return
            await asyncio.sleep(0.3)


def draw_log(worker: Worker) -> list[str]:
    return [e.event for e in worker.store.recent(500) if e.seat is None]


@pytest.fixture
async def alone(network: Network) -> None:
    """Auditor 0 alone in tier 1: it wins every draw, one seat (of three units) on every segment."""
    await leave_alone(network, 0)


@pytest.fixture
async def closing() -> AsyncIterator[list[Worker]]:
    """Workers to close at the end: their audits cancelled, their state files closed."""
    made: list[Worker] = []
    yield made
    for worker in made:
        await worker.cancel_audits()
        worker.store.close()


async def test_a_slow_worker_leaves_the_draw_while_its_backlog_would_miss_the_window_and_returns_after(
    network: Network, kubo: KuboClient, tmp_path: Path, closing: list[Worker], alone: None
) -> None:
    worker = slow_worker(network, kubo, tmp_path)
    closing.append(worker)
    await worker.tick()
    assert worker.in_draw is True and await on_chain(network, worker)
    await submit(network, kubo, products())  # seven seats, drawn before the worker looked

    async def out() -> bool:
        return not await on_chain(network, worker)

    await tick_until(worker, out, timeout=30)
    outlook = worker.outlook
    assert outlook is not None and outlook.load > SETTINGS.backpressure_out_load
    (left,) = [e for e in worker.store.recent(500) if e.event == "out of the draw"]
    assert "a seat drawn now would be ready in" in left.detail and "setAvailable(false)" in left.detail
    report = status_report(worker.store.path)
    assert report["draw"]["in_draw"] is False and report["draw"]["out_by"] == "worker"
    assert report["capacity"]["queued"] + report["capacity"]["running"] >= 1

    async def back() -> bool:
        return await on_chain(network, worker)

    # Every seat is audited or its window closes; the empty queue brings it back.
    await tick_until(worker, back, timeout=60)
    assert draw_log(worker) == ["out of the draw", "back in the draw"]
    assert worker.audit_times.measured and worker.audit_times.estimate_seconds >= AUDIT_SECONDS
    report = status_report(worker.store.path)
    assert report["draw"] == report["draw"] | {"in_draw": True, "out_by": None, "times_out": 1, "times_in": 1}

    async def settled() -> bool:
        return not worker.store.seats([SeatState.DRAWN, SeatState.VOTED])

    # Seven 2-s audits one at a time cannot all fit the 14 s from the draw: the last is missed, and
    # the status says why.
    await tick_until(worker, settled, timeout=30)
    missed = [p for p in status_report(worker.store.path)["problems"] if p["state"] == "missed"]
    assert missed and all("commit window closed" in (p["reason"] or "") for p in missed), missed
    assert report["capacity"]["measured"] and report["capacity"]["samples"] == len(worker.audit_times.samples)


async def test_the_estimate_survives_a_restart(network: Network, kubo: KuboClient, tmp_path: Path, alone: None) -> None:
    worker = slow_worker(network, kubo, tmp_path, seconds=0.5)
    await submit(network, kubo, products())

    async def voted() -> bool:
        return len(worker.audit_times.samples) == 7

    await tick_until(worker, voted, timeout=60)
    await worker.wait_idle()
    before = worker.audit_times
    again = reopened(network, kubo, worker)
    try:
        assert again.audit_times.samples == pytest.approx(before.samples, abs=1e-3)
        assert again.audit_times.estimate_seconds == pytest.approx(before.estimate_seconds, abs=1e-3)
        assert again.audit_times.estimate_seconds != SETTINGS.audit_seconds_tier1
    finally:
        again.store.close()


async def test_seats_are_audited_earliest_commit_deadline_first(
    network: Network, kubo: KuboClient, tmp_path: Path, closing: list[Worker], alone: None
) -> None:
    """Three segments drawn one after the other, the last segment first: store order (by segment)
    is the reverse of the deadlines."""
    audit, chain = network.protocol.audit, network.protocol.chain
    graph = products()
    stored = await store_trace(kubo, graph, profiles=tier1_profiles(graph))
    session_id, _ = await audit.create_session(network.provider, stored.root, stored.specs())
    while await chain.block_number() <= (await audit.session(session_id)).randomness_block:
        await chain.rpc("evm_mine", [])
    committees = []
    for segment in (2, 1, 0):
        drawn = await audit.assign_auditors(network.provider, session_id, [segment])
        committees += audit.committees_in(drawn)
        await asyncio.sleep(1.1)  # a later block second: a later commit deadline
    deadlines = [c.commit_deadline for c in committees]
    assert deadlines == sorted(deadlines) and len(set(deadlines)) == 3
    await deliver_keys(network.protocol, kubo, network.provider, session_id, graph, stored, committees)
    worker = slow_worker(network, kubo, tmp_path, seconds=0.5)
    closing.append(worker)

    async def voted() -> bool:
        return len(worker.store.seats([SeatState.VOTED, SeatState.COMMITTED, SeatState.REVEALED])) == 3

    await tick_until(worker, voted, timeout=30)
    order = [e.seat.segment_id for e in worker.store.recent(500) if e.event == "voted" and e.seat is not None]
    assert order == [2, 1, 0]


async def test_an_auditor_that_cannot_work_takes_the_worker_out_of_the_draw_until_it_can(
    network: Network, kubo: KuboClient, tmp_path: Path, closing: list[Worker], caplog: pytest.LogCaptureFixture
) -> None:
    auditor = PausableAuditor()
    worker = worker_of(network, kubo, tmp_path, auditor)
    closing.append(worker)
    await worker.tick()
    assert await on_chain(network, worker)

    auditor.paused = "its model server at http://127.0.0.1:9 does not answer"

    async def out() -> bool:
        return not await on_chain(network, worker)

    with caplog.at_level(logging.WARNING, logger=worker.log.name):
        await tick_until(worker, out, timeout=20)
        for _ in range(5):  # a few more health checks: still out, said once
            await worker.tick()
            await asyncio.sleep(SETTINGS.health_check_seconds)
    said = [r.getMessage() for r in caplog.records if "cannot take seats" in r.getMessage()]
    assert said == [f"the auditor cannot take seats: {auditor.paused}; no new audits until it can"]
    assert not await on_chain(network, worker)
    (left,) = [e for e in worker.store.recent(500) if e.event == "out of the draw"]
    assert auditor.paused in left.detail
    report = status_report(worker.store.path)
    assert report["draw"]["auditor_unavailable"] == auditor.paused and report["draw"]["out_by"] == "worker"

    # Stopped while out: the state says the worker did it, so a new run may start and put it back.
    assert taken_out_by_worker(worker.store)
    with pytest.raises(ConfigError, match="marked unavailable"):
        await ensure_registered(network.protocol, worker.identity, Tier.COMPUTATIONAL)
    await ensure_registered(network.protocol, worker.identity, Tier.COMPUTATIONAL, unavailable_ok=True)
    again = reopened(network, kubo, worker)
    closing.remove(worker)
    closing.append(again)
    auditor.paused = None

    async def back() -> bool:
        return await on_chain(network, again)

    await tick_until(again, back, timeout=20)
    assert draw_log(again)[-3:] == ["auditor unavailable", "out of the draw", "back in the draw"]
    assert not taken_out_by_worker(again.store)


async def test_an_operator_who_took_the_auditor_out_is_respected(
    network: Network, kubo: KuboClient, tmp_path: Path, closing: list[Worker]
) -> None:
    worker = worker_of(network, kubo, tmp_path, ComputationalAuditor([ArithmeticCheck()]))
    closing.append(worker)
    account = load_keystore(Path(network.auditors[0].keystore), PASSWORD)
    await network.protocol.registry.set_available(account, False)  # the operator, not the worker
    # A worker started on it refuses, as before: the auditor is out on purpose.
    with pytest.raises(ConfigError, match="marked unavailable"):
        await ensure_registered(network.protocol, worker.identity, Tier.COMPUTATIONAL)
    assert not taken_out_by_worker(worker.store)
    for _ in range(6):  # idle, with every reason to be in the draw: it leaves the operator's choice alone
        await worker.tick()
        await asyncio.sleep(SETTINGS.health_check_seconds)
    assert not await on_chain(network, worker)
    report = status_report(worker.store.path)
    assert report["draw"]["in_draw"] is False and report["draw"]["out_by"] == "operator"
    assert draw_log(worker) == ["out of the draw"]  # noted once
    await network.protocol.registry.set_available(account, True)

    async def seen_in() -> bool:
        return worker.in_draw is True

    await tick_until(worker, seen_in, timeout=10)
    assert status_report(worker.store.path)["draw"]["out_by"] is None


@pytest.fixture
async def delayed_network(chain: ChainClient, mnemonic: str, keystore_dir: Path) -> AsyncIterator[Network]:
    """The test protocol with the randomness block of a draw five blocks after the session opens."""
    async with deployed_network(
        chain, mnemonic, keystore_dir, PROTOCOL.model_copy(update={"randomness_delay_blocks": 5})
    ) as made:
        yield made


async def test_a_worker_leaves_before_the_draw_of_a_session_it_could_not_audit_in_time(
    delayed_network: Network, kubo: KuboClient, tmp_path: Path, closing: list[Worker]
) -> None:
    network = delayed_network
    await leave_alone(network, 0)  # nobody else to seat the committees once the worker leaves
    worker = slow_worker(network, kubo, tmp_path)
    closing.append(worker)
    await worker.tick()
    assert worker.in_draw is True
    audit, chain = network.protocol.audit, network.protocol.chain
    graph = products()
    stored = await store_trace(kubo, graph, profiles=tier1_profiles(graph))
    session_id, _ = await audit.create_session(network.provider, stored.root, stored.specs())
    randomness_block = (await audit.session(session_id)).randomness_block
    await worker.tick()  # sees seven segments of its tier coming: 16 s of audits in an 11-s window
    assert worker.outlook is not None and worker.outlook.upcoming_seats == pytest.approx(7)
    assert not await on_chain(network, worker)
    (left,) = [e for e in worker.store.recent(50) if e.event == "out of the draw"]
    assert "7.0 more expected from draws in progress" in left.detail
    while await chain.block_number() <= randomness_block:
        await chain.rpc("evm_mine", [])
    drawn = audit.committees_in(await audit.assign_auditors(network.provider, session_id, range(7)))
    assert drawn == []  # the others are out of the draw: nobody backs a committee
    # Each failed draw fixes a new randomness block. The worker stays out through the redraws (back
    # in at one of those blocks, it would be drawn for all seven): ticked while the new block is
    # mined and the draw not yet made, and while the next one is ahead.
    for _attempt in (2, 3):
        block = (await audit.segment(session_id, 0)).randomness_block
        for _ in range(3):
            await worker.tick()
            await asyncio.sleep(SETTINGS.health_check_seconds)
        while await chain.block_number() <= block:
            await chain.rpc("evm_mine", [])
        for _ in range(3):
            await worker.tick()
            await asyncio.sleep(SETTINGS.health_check_seconds)
        assert not await on_chain(network, worker)
        assert audit.committees_in(await audit.assign_auditors(network.provider, session_id, range(7))) == []
    # The third failure leaves every segment undetermined: nothing is coming, and the worker is back.
    statuses = {(await audit.segment(session_id, i)).status for i in range(7)}
    assert statuses == {SegmentStatus.UNDETERMINED}

    async def back() -> bool:
        return await on_chain(network, worker)

    await tick_until(worker, back, timeout=20)
    assert draw_log(worker) == ["out of the draw", "back in the draw"]
    assert worker.store.seats() == []  # never drawn: no seat to miss


async def test_an_audit_stops_at_its_commit_deadline_and_a_seat_past_it_is_not_audited(
    network: Network,
    kubo: KuboClient,
    tmp_path: Path,
    closing: list[Worker],
    caplog: pytest.LogCaptureFixture,
    alone: None,
) -> None:
    """A check slower than the whole commit window: the first audit is cut when its window closes,
    and the six seats that waited behind it (their windows closed too) are recorded as missed
    without being audited."""
    slow = SlowArithmetic(seconds=60.0)
    worker = worker_of(network, kubo, tmp_path, ComputationalAuditor([slow]))
    closing.append(worker)
    await submit(network, kubo, products())

    async def all_missed() -> bool:
        return len(worker.store.seats([SeatState.MISSED])) == 7

    with caplog.at_level(logging.WARNING, logger=worker.log.name):
        await tick_until(worker, all_missed, timeout=40)
        await worker.wait_idle()
    assert (slow.started, slow.finished) == (1, 0)
    assert not [e for e in worker.store.recent(500) if e.event == "voted"]
    stopped = [r.getMessage() for r in caplog.records if "audit failed" in r.getMessage()]
    assert stopped and "no verdict before the commit window closed" in stopped[0], stopped
