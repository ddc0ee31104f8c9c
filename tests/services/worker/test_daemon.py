"""The worker daemon in-process, three tier-1 auditors on Anvil and the local IPFS node.

Each worker runs its own `Worker.run` with its own wallet and state file; the test plays the
provider. Every vote goes through the real chain and every segment through IPFS and AES-GCM.
Committees are three draws with replacement, so each segment seats one to three of the workers;
each test reads who sits where from the draw (`seats_of`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account import Account

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.types import SegmentStatus, SessionStatus
from trust.adapters.chain.wallets import load_keystore
from trust.adapters.storage.kubo import KuboClient
from trust.core.graphs.hdag import Tier
from trust.core.graphs.units import UnitKind
from trust.core.privacy.envelopes import public_key_bytes
from trust.core.privacy.reports import MAX_REPORT_BYTES, open_report
from trust.errors import ConfigError
from trust.services.delivery import units_of
from trust.services.worker.adversary import Adversary, ensure_local_chain
from trust.services.worker.daemon import Worker
from trust.services.worker.identity import AuditorIdentity, ensure_registered
from trust.services.worker.keys import load_encryption_key, vote_salt
from trust.services.worker.store import SeatState

from .conftest import (
    PASSWORD,
    WORKER_SETTINGS,
    Network,
    make_worker,
    products,
    products_log,
    seats_of,
    submit,
    tier1_log_profiles,
)

pytestmark = [pytest.mark.chain, pytest.mark.slow]

# products(): g0, s1, s1.op1, s2, s2.op1, s3, s3.op1; the step s2 and its operation state 17 * 23 = 409.
SEGMENTS = 7
WRONG = (3, 4)
VOTES = [i not in WRONG for i in range(SEGMENTS)]


@pytest.fixture
async def workers(network: Network, kubo: KuboClient, tmp_path: Path) -> AsyncIterator[list[Worker]]:
    made = [make_worker(network, kubo, i, tmp_path, auto_claim=True) for i in range(3)]
    yield made
    for worker in made:
        worker.store.close()


async def _run_until(workers: list[Worker], done: asyncio.Future[None] | None, condition, timeout: float) -> None:  # type: ignore[no-untyped-def]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(w.run(stop)) for w in workers]
    try:
        async with asyncio.timeout(timeout):
            while not await condition():
                await asyncio.sleep(0.5)
    finally:
        stop.set()
        await asyncio.gather(*tasks)


async def test_three_workers_vote_a_session_end_to_end(
    network: Network, kubo: KuboClient, workers: list[Worker]
) -> None:
    session_id, stored, committees = await submit(network, kubo, products())
    audit = network.protocol.audit
    seats_in_all = sum(len(c.members) for c in committees)

    async def settled() -> bool:
        states = [s.state for w in workers for s in w.store.seats()]
        return len(states) == seats_in_all and all(state is SeatState.CLAIMED for state in states)

    await _run_until(workers, None, settled, timeout=120)

    statuses = [(await audit.segment(session_id, i)).status for i in range(SEGMENTS)]
    assert statuses == [SegmentStatus.FAILED if i in WRONG else SegmentStatus.PASSED for i in range(SEGMENTS)]
    session = await audit.session(session_id)
    # Every vote aligned: all three units (draws) of every segment.
    assert session.status is SessionStatus.DISTRIBUTED and session.aligned_seats == 3 * SEGMENTS
    # Every seat revealed, so every round was finalized early: the workers settled the session then,
    # not after the reveal windows (chain time of the distribution against the rounds' deadlines).
    (distributed,) = await audit.contract.events.RewardsDistributed().get_logs(
        from_block=0, argument_filters={"sessionId": session_id}
    )
    distributed_at = (await network.protocol.chain.w3.eth.get_block(distributed["blockNumber"]))["timestamp"]
    reveal_deadlines = [(await audit.segment(session_id, i)).reveal_deadline for i in range(SEGMENTS)]
    assert distributed_at < max(reveal_deadlines), (distributed_at, reveal_deadlines)
    wrong_seen = 0
    for worker in workers:
        seats = worker.store.seats()
        assert [s.segment_id for s in seats] == seats_of(committees, worker.identity.address)
        assert [s.vote for s in seats] == [VOTES[s.segment_id] for s in seats]
        assert all(s.reward_wei and s.reward_wei > 0 for s in seats)
        held = [s for s in seats if s.segment_id == WRONG[0]]
        if not held:
            continue
        (wrong,) = held
        wrong_seen += 1
        assert wrong.error_type == "factual" and "391" in (wrong.critique or "")
        # The salt on disk is the one the wallet derives: the reveal never depended on the disk alone.
        assert wrong.salt == vote_salt(
            worker.identity.account,
            chain_id=network.protocol.chain.chain_id,
            audit_contract=audit.address,
            session_id=session_id,
            segment_id=WRONG[0],
            round_id=0,
        )
        events = [e.event for e in worker.store.recent(200) if e.seat == wrong.key]
        # Every seat committed: each worker saw the window close early and revealed at once.
        assert events == ["drawn", "fetched", "voted", "committed", "closed", "revealed", "finalized"]
    assert wrong_seen == len(next(c for c in committees if c.segment_id == WRONG[0]).members)


async def test_a_multi_agent_log_is_voted_with_its_user_and_tool_turns_as_context(
    network: Network, kubo: KuboClient, workers: list[Worker]
) -> None:
    graph = products_log()
    session_id, stored, committees = await submit(network, kubo, graph, profiles=tier1_log_profiles(graph))
    audited = [key.node_id for key in stored.segments]
    edges = [unit.id for unit in units_of(graph) if unit.kind is UnitKind.EDGE]
    assert audited == ["t1", "t2", "t4"] and [key.node_id for key in stored.context] == ["u0", "x3", *edges]
    assert sorted(c.segment_id for c in committees) == [0, 1, 2]  # no committee on a context-only turn
    audit = network.protocol.audit

    seats_in_all = sum(len(c.members) for c in committees)

    async def settled() -> bool:
        states = [s.state for w in workers for s in w.store.seats()]
        return len(states) == seats_in_all and all(state is SeatState.CLAIMED for state in states)

    await _run_until(workers, None, settled, timeout=120)

    statuses = [(await audit.segment(session_id, i)).status for i in range(len(audited))]
    assert statuses == [SegmentStatus.PASSED, SegmentStatus.FAILED, SegmentStatus.PASSED]
    assert (await audit.session(session_id)).status is SessionStatus.DISTRIBUTED
    votes = [True, False, True]
    fetches = [
        "node 't1' and 1 parent (2 segments verified)",
        "node 't2' and 2 parents (3 segments verified)",
        "node 't4' and 1 parent (2 segments verified)",
    ]
    for worker in workers:
        seats = worker.store.seats()
        held = seats_of(committees, worker.identity.address)
        assert [s.segment_id for s in seats] == held
        assert [s.node_id for s in seats] == [audited[g] for g in held]
        assert [s.vote for s in seats] == [votes[g] for g in held]
        # Each seat fetched and verified its context parents: the task for t1 (and t2, with t1), the
        # calculator's output for t4, each checked against the trace root by its inclusion proof.
        fetched = [e.detail for e in worker.store.recent(200) if e.event == "fetched"]
        assert sorted(fetched) == sorted(fetches[g] for g in held)


async def test_a_tampered_segment_is_voted_failed_by_every_seat_and_burns_no_stake(
    network: Network, kubo: KuboClient, workers: list[Worker]
) -> None:
    # The provider registers a segment whose blob is not the one it committed to (issue M3, corrupt
    # delivery). Every seat on it votes fail, saying why, instead of staying silent: the segment fails
    # at once, nobody forfeits, and the other seats are served as usual. The envelope opened, so
    # each of those seats reports its reason to the provider.
    registry = network.protocol.registry
    before = {w.identity.address: (await registry.auditor(w.identity.address)).stake for w in workers}
    leaf = SEGMENTS - 1  # s3.op1: no other seat reads it as a parent
    reply = X25519PrivateKey.generate()
    session_id, stored, committees = await submit(
        network, kubo, products(), tamper=[leaf], reply_key=public_key_bytes(reply)
    )
    seats_in_all = sum(len(c.members) for c in committees)

    async def settled() -> bool:
        seats = [s for w in workers for s in w.store.seats()]
        done = all(s.outcome is not None and (s.segment_id != leaf or s.reported_at) for s in seats)
        return len(seats) == seats_in_all and done

    await _run_until(workers, None, settled, timeout=120)
    for worker in workers:
        seats = worker.store.seats()
        assert [s.segment_id for s in seats] == seats_of(committees, worker.identity.address)
        for seat in seats:
            assert seat.state in (SeatState.FINALIZED, SeatState.CLAIMED)
            if seat.segment_id == leaf:
                assert seat.vote is False and (seat.outcome or "").startswith("aligned")
                assert "not the committed segment" in (seat.critique or "")
        unreadable = [e for e in worker.store.recent(200) if e.event == "unreadable"]
        assert len(unreadable) == (leaf in seats_of(committees, worker.identity.address))
    segment = await network.protocol.audit.segment(session_id, leaf)
    assert segment.status is SegmentStatus.FAILED and segment.round == 0, "decided at once, not escalated"
    published = [r for r in await network.protocol.segment_keys.reports_for(session_id) if r.segment_id == leaf]
    assert len(published) == segment.seat_count
    for item in published:
        blob = await kubo.cat(item.cid, max_bytes=MAX_REPORT_BYTES)
        report = open_report(
            blob, private_key=reply, trace_root=stored.root, session_id=session_id, segment_index=leaf,
            round=0, seat_index=item.seat_index, auditor=item.auditor,
        )  # fmt: skip
        assert report.vote == "fail" and "not the committed segment" in report.critique
    for address, stake in before.items():
        assert (await registry.auditor(address)).stake == stake, "nobody forfeited"


async def test_a_segment_nobody_serves_is_voted_failed_at_the_seats_last_try(
    network: Network, kubo: KuboClient, workers: list[Worker]
) -> None:
    # The provider announces a segment under a CID no node holds: the envelopes open, the content
    # never comes (issue M3: withholding after delivery). Each seat retries, and at its last try votes
    # fail instead of missing its window and forfeiting.
    registry = network.protocol.registry
    before = {w.identity.address: (await registry.auditor(w.identity.address)).stake for w in workers}
    leaf = SEGMENTS - 1
    session_id, _, committees = await submit(network, kubo, products(), unavailable=[leaf])
    seated = [w for w in workers if leaf in seats_of(committees, w.identity.address)]

    async def voted() -> bool:
        seats = [s for w in seated for s in w.store.seats() if s.segment_id == leaf]
        return len(seats) == len(seated) and all(s.outcome is not None for s in seats)

    await _run_until(workers, None, voted, timeout=120)
    for worker in seated:
        (seat,) = [s for s in worker.store.seats() if s.segment_id == leaf]
        assert seat.vote is False and (seat.outcome or "").startswith("aligned")
        assert "could not provide it by this seat's last try" in (seat.critique or "")
    segment = await network.protocol.audit.segment(session_id, leaf)
    assert segment.status is SegmentStatus.FAILED and segment.round == 0
    for address, stake in before.items():
        assert (await registry.auditor(address)).stake == stake, "nobody forfeited"


async def test_withheld_envelopes_are_claimed_undelivered_and_burn_no_stake(
    network: Network, kubo: KuboClient, workers: list[Worker]
) -> None:
    # The provider opens the session and publishes no key envelope (issue M3). Past each round's
    # delivery deadline every worker claims its seats: released at once, R credited from the fee.
    audit = network.protocol.audit
    registry = network.protocol.registry
    addresses = [w.identity.address for w in workers]
    before = {a: (await registry.auditor(a)).stake for a in addresses}
    session_id, _, committees = await submit(network, kubo, products(), deliver=False)
    seats_in_all = sum(len(c.members) for c in committees)

    async def claimed() -> bool:
        states = [s.state for w in workers for s in w.store.seats()]
        return len(states) == seats_in_all and all(state is SeatState.ABSTAINED for state in states)

    await _run_until(workers, None, claimed, timeout=120)
    params = await audit.session_params(session_id)
    units: dict[str, int] = {}
    for worker in workers:
        address = worker.identity.address
        for seat in worker.store.seats():
            info = await audit.seat(seat.session_id, seat.segment_id, seat.round, seat.seat_index)
            assert info.undelivered and not info.committed
            units[address] = units.get(address, 0) + info.weight
        held = len(seats_of(committees, address))
        assert [e.event for e in worker.store.recent(200)].count("undelivered") == held
    for address in addresses:
        account = await registry.auditor(address)
        assert account.locked == 0 and account.stake == before[address], "released, nothing forfeited"
        # R per unit of each released seat, out of the provider's fee.
        assert await audit.claimable(address) == units.get(address, 0) * params["rewardPerSeatWei"]


async def test_a_vote_is_rebuilt_from_the_wallet_when_the_state_is_lost(
    network: Network, kubo: KuboClient, tmp_path: Path
) -> None:
    # Silent: they commit their honest votes and stop there, as if killed before revealing (the
    # window closes as soon as all three committed, so honest workers would reveal at once).
    first = [make_worker(network, kubo, i, tmp_path / "before", adversary=Adversary.SILENT) for i in range(3)]
    session_id, _, committees = await submit(network, kubo, products())

    held = [seats_of(committees, w.identity.address) for w in first]

    async def committed() -> bool:
        return all(len(w.store.seats([SeatState.COMMITTED])) == len(h) for w, h in zip(first, held, strict=True))

    await _run_until(first, None, committed, timeout=60)
    for worker in first:
        worker.store.close()
    # The chain's deadline, not the draw's: every seat committed, so the window closed early.
    deadline = max([(await network.protocol.audit.segment(session_id, i)).commit_deadline for i in range(SEGMENTS)])
    assert deadline < committees[0].commit_deadline
    # The disks are gone: fresh state files, scanning from before the draw.
    fresh_settings = WORKER_SETTINGS.model_copy(update={"start_block": committees[0].block_number})
    again = [make_worker(network, kubo, i, tmp_path / "after") for i in range(3)]
    for worker in again:
        worker.settings = fresh_settings
    while (await network.protocol.chain.w3.eth.get_block("latest"))["timestamp"] <= deadline:
        await asyncio.sleep(0.5)

    async def revealed() -> bool:
        return all(
            len(w.store.seats([SeatState.REVEALED, SeatState.FINALIZED])) == len(h)
            for w, h in zip(again, held, strict=True)
        )

    await _run_until(again, None, revealed, timeout=60)
    for worker, segments in zip(again, held, strict=True):
        assert [s.vote for s in worker.store.seats()] == [VOTES[g] for g in segments]
        assert any(e.event == "recovered" for e in worker.store.recent(100)) == bool(segments)
        worker.store.close()
    assert (await network.protocol.audit.session(session_id)).segment_count == SEGMENTS


async def test_adversarial_modes_run_only_on_a_local_chain(network: Network) -> None:
    ensure_local_chain(31337, "http://127.0.0.1:8545")
    with pytest.raises(ConfigError, match="local chain only"):
        ensure_local_chain(1, "http://127.0.0.1:8545")
    with pytest.raises(ConfigError, match="local chain only"):
        ensure_local_chain(31337, "https://rpc.example.org")
    assert Adversary("silent") is Adversary.SILENT


async def test_registration_problems_are_clear_errors(network: Network, tmp_path: Path) -> None:
    protocol = network.protocol
    auditor = network.auditors[0]
    account = load_keystore(Path(auditor.keystore), PASSWORD)
    key = load_encryption_key(Path(auditor.encryption_key_file), PASSWORD)
    identity = AuditorIdentity(account, key, "test")
    info = await ensure_registered(protocol, identity, Tier.COMPUTATIONAL)
    assert info.registered and info.tier == 1
    with pytest.raises(ConfigError, match="registered as a tier-1 auditor, not tier 2"):
        await ensure_registered(protocol, identity, Tier.LLM)
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from trust.errors import WalletError

    with pytest.raises(WalletError, match="registered the encryption key"):
        await ensure_registered(
            protocol, AuditorIdentity(account, X25519PrivateKey.generate(), "other"), Tier.COMPUTATIONAL
        )
    stranger = Account.create()
    with pytest.raises(ConfigError, match="no ETH"):
        await ensure_registered(protocol, AuditorIdentity(stranger, key, "test"), Tier.COMPUTATIONAL)


async def test_an_ipfs_outage_is_retried_and_a_seat_that_keeps_failing_is_reported(
    network: Network, kubo: KuboClient, tmp_path: Path
) -> None:
    """Worker 0 never reaches IPFS and gives up after two tries per seat; worker 1 loses IPFS until
    its first failure is on record, then gets it back and votes; worker 2 is healthy."""
    dead = KuboClient("http://127.0.0.1:9", max_retries=0, connect_timeout_seconds=0.5)
    await dead.__aenter__()
    try:
        workers = [make_worker(network, kubo, i, tmp_path) for i in range(3)]
        workers[0].kubo = dead
        workers[0].settings = WORKER_SETTINGS.model_copy(update={"max_attempts": 2})
        workers[1].kubo = dead
        workers[1].settings = WORKER_SETTINGS.model_copy(update={"max_attempts": 50})
        _, _, committees = await submit(network, kubo, products())
        held = [len(seats_of(committees, w.identity.address)) for w in workers]

        async def outage_seen() -> bool:
            return any(s.attempts >= 1 and "IpfsError" in (s.last_error or "") for s in workers[1].store.seats())

        async def done() -> bool:
            if await outage_seen():
                workers[1].kubo = kubo  # the node is back
            failed = workers[0].store.seats([SeatState.FAILED])
            voted = workers[1].store.seats([SeatState.COMMITTED, SeatState.REVEALED, SeatState.FINALIZED])
            return len(failed) == held[0] and len(voted) == held[1]

        await _run_until(workers, None, done, timeout=90)
        for seat in workers[0].store.seats():
            assert "after 2 attempts" in (seat.last_error or "") and "127.0.0.1:9" in (seat.last_error or "")
        assert any(e.event == "failed" for e in workers[0].store.recent(50)) == bool(held[0])
        for worker in workers:
            worker.store.close()
    finally:
        await dead.aclose()


async def test_the_start_up_line_says_where_the_scan_starts(
    network: Network, kubo: KuboClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stopped = asyncio.Event()
    stopped.set()  # run() logs its start, then returns at once
    fresh = make_worker(network, kubo, 0, tmp_path / "fresh")
    from_start = make_worker(network, kubo, 1, tmp_path / "start")
    from_start.settings = WORKER_SETTINGS.model_copy(update={"start_block": 7})
    with caplog.at_level(logging.INFO):
        for worker in (fresh, from_start):
            await worker.run(stopped)
    lines = [r.getMessage() for r in caplog.records if ") following " in r.getMessage()]
    assert len(lines) == 2 and not any("None" in line for line in lines), lines
    head = WORKER_SETTINGS.log_blocks
    assert f" - log_blocks {head}, a new state file)" in lines[0] and "from block 0 (head " in lines[0]
    assert "from the start block 7;" in lines[1]
    # Once the state file has read some blocks, it goes on after them.
    await fresh.tick()
    last = fresh.store.last_block()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        await fresh.run(stopped)
    (line,) = [r.getMessage() for r in caplog.records if ") following " in r.getMessage()]
    assert f"from block {(last or 0) + 1} (the state file read through block {last})" in line
    for worker in (fresh, from_start):
        worker.store.close()


async def test_a_model_that_never_answers_a_judgment_makes_the_seat_abstain_at_once(
    network: Network, kubo: KuboClient, tmp_path: Path
) -> None:
    """A tier-2 model answering garbage (`JudgmentError` after the auditor's own attempts) is not an
    outage: the seat abstains with the reason at once instead of spending the worker's retries (and
    the shared model's time) on the same answers, nothing is committed for it, and the abstention
    is recorded on chain (`abstain`)."""
    from tests.openai_stub import openai_stub
    from trust.adapters.llm.client import LlmClient
    from trust.auditors.llm import LlmAuditor
    from trust.settings import AuditSettings, LlmSettings

    with openai_stub() as stub:
        for _ in range(200):
            stub.reply('{"score": 1.0, "critique": "1.0, 2.5} { 3.0 }"}')
        client = LlmClient(LlmSettings(base_url=stub.base_url, model="judge-model", max_retries=0))
        worker = make_worker(network, kubo, 0, tmp_path)
        worker.auditor = LlmAuditor(client, AuditSettings(), concurrency=1)
        submitted_at = time.time()
        session_id, _, committees = await submit(network, kubo, products())
        held = len(seats_of(committees, worker.identity.address))
        try:
            async with asyncio.timeout(90):
                while len(worker.store.seats()) < held or any(s.state.open for s in worker.store.seats()):
                    await worker.tick()
                    await worker.wait_idle()
                    await asyncio.sleep(0.3)
        finally:
            await client.aclose()
    seats = worker.store.seats()
    reasons = [e.detail for e in worker.store.recent(200) if e.event == "abstained"]
    worker.store.close()
    assert len(seats) == held > 0
    assert {s.state for s in seats} == {SeatState.ABSTAINED}
    assert all(s.attempts == 0 and s.commitment is None for s in seats)
    # The model's time is recorded though no report will carry it (`trust bench e2e` counts it as evaluation).
    for seat in seats:
        assert seat.audit_started_at is not None and seat.audit_finished_at is not None
        assert submitted_at < seat.audit_started_at <= seat.audit_finished_at <= time.time()
    assert len(reasons) == held and all(r.startswith("no judgment: tier-2 judge") for r in reasons), reasons
    assert all("not recorded on chain" not in r for r in reasons), reasons
    # Said on chain (`abstain`), so the other seats need not wait out the windows for this one.
    for seat in seats:
        info = await network.protocol.audit.seat(seat.session_id, seat.segment_id, seat.round, seat.seat_index)
        assert info.abstained and not info.committed


async def test_with_block_poll_a_new_block_ends_the_pause_at_once(
    network: Network, workers: list[Worker], chain: ChainClient
) -> None:
    """`block_poll_seconds`: between two reads the worker looks for a new block and reads at once
    when one came, instead of sleeping out `poll_seconds`; without it, only an audit's end or the stop
    cut the pause short."""
    worker = workers[0]
    worker.settings = WORKER_SETTINGS.model_copy(update={"poll_seconds": 30.0, "block_poll_seconds": 0.05})
    await worker.tick()
    stop = asyncio.Event()
    pause = asyncio.create_task(worker._pause(stop, 30.0))
    await asyncio.sleep(0.3)
    assert not pause.done()  # Anvil mines only on a transaction here: no block yet
    started = time.monotonic()
    await chain.rpc("evm_mine", [])
    await asyncio.wait_for(pause, timeout=5)
    assert time.monotonic() - started < 1.0
    # Without it, a new block does not end the pause.
    worker.settings = WORKER_SETTINGS.model_copy(update={"poll_seconds": 30.0})
    await worker.tick()
    pause = asyncio.create_task(worker._pause(stop, 30.0))
    await chain.rpc("evm_mine", [])
    await asyncio.sleep(0.3)
    assert not pause.done()
    stop.set()
    await asyncio.wait_for(pause, timeout=5)
