"""Incremental refresh: the index reads only blocks it has not read, in bounded ranges, picks up new
sessions (also through a running explorer), equals an index built in one go, and rebuilds itself
when the chain it read is replaced (a reorganization, here an Anvil snapshot reverted). And a seat
that won several of its committee's draws shows, locks, earns and is claimed as that many votes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from eth_account.signers.local import LocalAccount

from tests.api.story import PASSWORD, PROTOCOL, serve, warp
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.deployment import deploy_protocol
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import SegmentSpec
from trust.adapters.chain.wallets import dev_account, load_keystore
from trust.adapters.local.anvil import AnvilNode
from trust.api.explorer.pages import create_explorer_app
from trust.api.index import ChainIndex, SeatOutcome, SegmentState, SessionState
from trust.lab.devnet import provision_auditors
from trust.settings import GovernanceSettings

pytestmark = [pytest.mark.chain, pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

BLOCK_RANGE = 4


@dataclass
class Net:
    chain: ChainClient
    protocol: Protocol
    provider: LocalAccount
    auditors: dict[str, LocalAccount]
    deployer: LocalAccount


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def net(
    anvil: AnvilNode, artifacts: dict[str, Artifact], mnemonic: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Net]:
    async with ChainClient(anvil.rpc_url, artifacts) as chain:
        await chain.rpc("evm_setAutomine", [True])
        deployer = dev_account(mnemonic, 0)
        deployment = await deploy_protocol(chain, deployer, PROTOCOL, GovernanceSettings())
        protocol = Protocol.bind(chain, deployment)
        keystores: Path = tmp_path_factory.mktemp("keystores")
        provisioned = await provision_auditors(protocol, deployer, [1, 1, 1], keystores, PASSWORD, scrypt_n=2**10)
        wallets = {a.address: load_keystore(Path(a.keystore), PASSWORD) for a in provisioned}
        yield Net(chain, protocol, dev_account(mnemonic, 3), wallets, deployer)


async def open_session(net: Net, root: bytes, segments: int = 2, tier: int = 1) -> int:
    specs = [SegmentSpec(tier=tier, weight=1, content_digest=bytes([i + 1]) * 32) for i in range(segments)]
    session_id, _ = await net.protocol.audit.create_session(net.provider, root, specs)
    return session_id


async def draw_first(net: Net, session_id: int) -> None:
    """Mines past the session's randomness block and draws segment 0's committee."""
    randomness = (await net.protocol.audit.session(session_id)).randomness_block
    while await net.chain.block_number() <= randomness:
        await net.chain.rpc("evm_mine", [])
    await net.protocol.audit.assign_auditors(net.provider, session_id, [0])


async def assert_replayed(net: Net, auditor: str) -> None:
    """The auditor's history, replayed by a fresh index, ends in a forfeit at the registry's stake and
    unbonding tokens."""
    info = await net.protocol.registry.auditor(auditor)
    index = ChainIndex(net.protocol)
    await index.refresh()
    last = (await index.auditor(auditor)).history[-1]
    assert last.event == "forfeit"
    assert (last.stake_units, last.unbonding_units) == (info.stake, info.unbonding)


async def test_refresh_reads_only_new_blocks_in_bounded_ranges(net: Net) -> None:
    index = ChainIndex(net.protocol, block_range=BLOCK_RANGE)
    first = await index.refresh()
    head = await net.chain.block_number()
    assert (first.from_block, first.to_block) == (net.protocol.deployment.block_number, head)
    assert first.log_requests == -(-(head - first.from_block + 1) // BLOCK_RANGE)
    assert first.logs > 0 and not first.rebuilt
    assert index.auditor_count == 3 and index.session_count == 0

    idle = await index.refresh()
    assert (idle.from_block, idle.to_block, idle.log_requests, idle.logs) == (head + 1, head, 0, 0)

    session_id = await open_session(net, b"\x01" * 32)
    created = await index.refresh()
    assert (created.from_block, created.to_block, created.log_requests) == (head + 1, head + 1, 1)
    assert created.logs == 4  # SessionCreated, SessionOpened and two SegmentRegistered
    assert index.session_count == 1
    detail = await index.session(session_id)
    assert detail.session.state is SessionState.OPEN and detail.session.trace_root == b"\x01" * 32
    assert [g.state for g in detail.segments] == [SegmentState.AWAITING_DRAW] * 2

    # The draw reaches the index at the next refresh; the summary's pending count follows.
    randomness = (await net.protocol.audit.session(session_id)).randomness_block
    while await net.chain.block_number() <= randomness:
        await net.chain.rpc("evm_mine", [])
    await net.protocol.audit.assign_auditors(net.provider, session_id, [0, 1])
    await index.refresh()
    segment = await index.segment(session_id, 0)
    # Three draws with replacement: one seat per member drawn, the seats' votes adding up to three.
    seats = segment.rounds[0].seats
    assert segment.segment.state is SegmentState.VOTING and sum(s.votes for s in seats) == 3
    assert [s.auditor for s in seats] == await net.protocol.audit.committee(session_id, 0)

    # Built in one go, with one request, the index says the same.
    whole = ChainIndex(net.protocol, block_range=10_000)
    report = await whole.refresh()
    assert report.log_requests == 1 and report.to_block == index.head_block
    assert await whole.session(session_id) == await index.session(session_id)
    assert await whole.segment(session_id, 0) == await index.segment(session_id, 0)
    assert await whole.auditors() == await index.auditors()


async def test_a_running_explorer_shows_new_sessions(
    net: Net, anvil: AnvilNode, artifacts: dict[str, Artifact]
) -> None:
    app = create_explorer_app(anvil.rpc_url, net.protocol.deployment, artifacts=artifacts, block_range=BLOCK_RANGE)
    older_id = await open_session(net, b"\x12" * 32)
    async with serve(app) as url, httpx.AsyncClient(base_url=url) as client:
        before = (await client.get("/explorer/api/sessions")).json()
        assert before["items"][0]["session_id"] == older_id
        newer = await open_session(net, b"\x02" * 32)
        after = (await client.get("/explorer/api/sessions", params={"per_page": 1})).json()
        assert after["total"] == before["total"] + 1
        assert [s["session_id"] for s in after["items"]] == [newer]  # newest first
        older = (await client.get("/explorer/api/sessions", params={"per_page": 1, "page": 2})).json()
        assert [s["session_id"] for s in older["items"]] == [older_id]
        page = await client.get(f"/explorer/sessions/{newer}")
        assert page.status_code == 200 and ("0x" + "02" * 32) in page.text


async def test_cancelled_sessions_and_fees_topped_up_after_creation(net: Net) -> None:
    audit = net.protocol.audit
    index = ChainIndex(net.protocol)
    await index.refresh()
    # Created empty, then cancelled before its segments were registered: the fee goes back.
    create = audit.contract.functions.createSession(b"\x03" * 32, 2)
    await net.chain.transact(create, net.provider, value=10**15)
    cancelled = await audit.contract.functions.sessionCount().call()
    await net.chain.transact(audit.contract.functions.cancelSession(cancelled), net.provider)
    # Created empty, then registered with a payment that tops the fee up to the minimum.
    spec = SegmentSpec(tier=1, weight=3, content_digest=b"\x07" * 32, critical=True)
    minimum = await audit.minimum_fee([spec])
    await net.chain.transact(audit.contract.functions.createSession(b"\x04" * 32, 1), net.provider, value=1)
    topped = await audit.contract.functions.sessionCount().call()
    register = audit.contract.functions.registerSegments(topped, [spec.as_tuple()])
    await net.chain.transact(register, net.provider, value=minimum - 1)
    await index.refresh()

    refunded = await index.session(cancelled)
    assert refunded.session.state is SessionState.CANCELLED and refunded.refund_wei == 10**15
    assert refunded.session.fee_wei == 0 and refunded.session.registered_count == 0

    opened = await index.session(topped)
    assert opened.session.state is SessionState.OPEN and opened.session.fee_wei == minimum
    assert [(g.weight, g.critical) for g in opened.segments] == [(3, True)]


async def test_a_replaced_chain_is_read_again_from_the_start(net: Net) -> None:
    index = ChainIndex(net.protocol, block_range=BLOCK_RANGE)
    await index.refresh()
    snapshot = await net.chain.rpc("evm_snapshot", [])
    doomed = await open_session(net, b"\x05" * 32)
    await index.refresh()
    assert (await index.session(doomed)).session.trace_root == b"\x05" * 32

    await net.chain.rpc("evm_revert", [snapshot])  # the blocks the index read are gone
    replacement = await open_session(net, b"\x06" * 32)
    assert replacement == doomed
    for _ in range(3):
        await net.chain.rpc("evm_mine", [])
    report = await index.refresh()
    assert report.rebuilt and report.from_block == net.protocol.deployment.block_number
    assert (await index.session(replacement)).session.trace_root == b"\x06" * 32
    assert index.session_count == (await net.protocol.audit.contract.functions.sessionCount().call())


async def test_seats_released_for_want_of_a_key_envelope_show_as_undelivered(net: Net) -> None:
    """The provider publishes no key envelope; past the delivery deadline each seat claims its release
    (issue M3). The index shows the seats undelivered, not silent, and nothing forfeited."""
    audit = net.protocol.audit
    session_id = await open_session(net, b"\x05" * 32, segments=1)
    await draw_first(net, session_id)
    segment = await audit.segment(session_id, 0)
    assert not segment.delivered and segment.delivery_deadline < segment.commit_deadline
    await net.chain.rpc("evm_setNextBlockTimestamp", [segment.delivery_deadline + 1])
    await net.chain.rpc("evm_mine", [])
    members = await audit.committee(session_id, 0)
    for seat_index, member in enumerate(members):
        await audit.claim_undelivered(net.auditors[member], session_id, 0, seat_index)
    index = ChainIndex(net.protocol)
    await index.refresh()
    seats = (await index.segment(session_id, 0)).rounds[0].seats
    assert [s.outcome for s in seats] == [SeatOutcome.UNDELIVERED] * len(members)
    assert all(s.forfeited_units == 0 for s in seats)


async def test_a_governance_slash_after_an_undelivered_release_takes_the_released_stake_first(
    net: Net, tmp_path: Path
) -> None:
    """A seat released by `claimUndelivered` returns its lock at the claim, long before its round
    closes. A governance slash after the claim takes the free stake first, and the released lock is
    free: the replayed history must not count it as locked (it did, and moved the slash onto the
    unbonding tokens)."""
    audit, registry = net.protocol.audit, net.protocol.registry
    penalty = PROTOCOL.to_params()["penaltyPerSeat"]
    # The only tier-2 auditor of the module: it wins all three draws of a tier-2 committee (3P).
    (account,) = await provision_auditors(
        net.protocol, net.deployer, [2], tmp_path, PASSWORD, first_index=11, stake_for=lambda _i, _t: 5 * penalty,
        scrypt_n=2**10,
    )  # fmt: skip
    auditor, wallet = account.address, load_keystore(Path(account.keystore), PASSWORD)
    session_id = await open_session(net, b"\x0a" * 32, segments=1, tier=2)
    await draw_first(net, session_id)
    assert await audit.committee(session_id, 0) == [auditor]
    segment = await audit.segment(session_id, 0)
    await net.chain.rpc("evm_setNextBlockTimestamp", [segment.delivery_deadline + 1])
    await net.chain.rpc("evm_mine", [])
    await audit.claim_undelivered(wallet, session_id, 0, 0)  # the round stays open: nothing else closes it
    await registry.request_unstake(wallet, penalty)
    slash_amount = 100 * 10**18  # under the free 240 tokens: the unbonding 60 stay whole
    await net.chain.transact(audit.contract.functions.slashAuditor(auditor, slash_amount, "late"), net.deployer)
    info = await registry.auditor(auditor)
    assert (info.stake, info.locked, info.unbonding) == (4 * penalty - slash_amount, 0, penalty)

    await assert_replayed(net, auditor)


async def test_a_governance_slash_while_an_escalated_rounds_revealed_seat_waits_for_the_verdict(
    net: Net, tmp_path: Path
) -> None:
    """A revealed seat of a round that escalated stays locked until a later round decides the segment
    (issue M1): its round has closed, its stake has not come back. A governance slash in between
    takes the free stake first, then the unbonding tokens; the replay counted the seat as released
    when its round closed and took the slash from the stake alone."""
    audit, registry = net.protocol.audit, net.protocol.registry
    penalty = PROTOCOL.to_params()["penaltyPerSeat"]
    minimum, unbond = PROTOCOL.min_stake(3), 19 * 10**18
    # The module's only tier-3 auditors, each backing one draw (unit): the committee seats all three.
    provisioned = await provision_auditors(
        net.protocol, net.deployer, [3, 3, 3], tmp_path, PASSWORD, first_index=12,
        stake_for=lambda _i, _t: minimum + unbond, scrypt_n=2**10,
    )  # fmt: skip
    wallets = {a.address: load_keystore(Path(a.keystore), PASSWORD) for a in provisioned}
    for wallet in wallets.values():  # unbonding asked before the draw: the draw counts what stays
        await registry.request_unstake(wallet, unbond)
    session_id = await open_session(net, b"\x0c" * 32, segments=1, tier=3)
    await draw_first(net, session_id)
    voter = (await audit.committee(session_id, 0))[0]
    salt = audit.new_salt()
    await audit.commit_vote(wallets[voter], session_id, 0, audit.commitment(session_id, 0, 0, voter, True, salt))
    segment = await audit.segment(session_id, 0)
    await net.chain.rpc("evm_setNextBlockTimestamp", [segment.commit_deadline + 1])
    await audit.reveal_vote(wallets[voter], session_id, 0, True, salt)
    await net.chain.rpc("evm_setNextBlockTimestamp", [segment.reveal_deadline + 1])
    # One pass of three votes decides nothing: the round escalates, the voter's seat stays locked.
    await audit.finalize_segments(net.provider, session_id, [0])
    assert (await audit.segment(session_id, 0)).round == 1
    slash_amount = 50 * 10**18  # over the free 40 tokens: 10 come from the unbonding ones
    await net.chain.transact(audit.contract.functions.slashAuditor(voter, slash_amount, "late"), net.deployer)
    info = await registry.auditor(voter)
    assert (info.stake, info.locked, info.unbonding) == (penalty, penalty, unbond - (slash_amount - 40 * 10**18))

    await assert_replayed(net, voter)


async def test_a_seat_that_won_several_draws_votes_locks_earns_and_is_claimed_as_that_many(
    net: Net, tmp_path: Path
) -> None:
    """Committees are drawn with replacement (issue L2). With the other tier-1 auditors out of the
    draw, the one left wins all three draws of a committee: one seat of three votes, locking 3P. A
    governance slash while the seat is open takes the free stake first (stake less 3P), then the
    unbonding tokens, and the auditor's replayed history must follow it; the aligned seat counts three
    aligned votes in the session and earns, and is claimed as, three times the per-seat reward."""
    audit, registry = net.protocol.audit, net.protocol.registry
    penalty = PROTOCOL.to_params()["penaltyPerSeat"]
    # A fresh auditor (the module's others hold seats of sessions left open): 300 tokens.
    stake = 5 * penalty
    (account,) = await provision_auditors(
        net.protocol, net.deployer, [1], tmp_path, PASSWORD, first_index=10, stake_for=lambda _i, _t: stake,
        scrypt_n=2**10,
    )  # fmt: skip
    whale = account.address
    wallet = load_keystore(Path(account.keystore), PASSWORD)
    others = list(net.auditors)
    # Unbonding requested before the draw's snapshot: the draw counts what stays (240 tokens, four
    # draws of P = 60) and does not pass it over; the unbonding tokens stay slashable.
    await registry.request_unstake(wallet, penalty)
    for address in others:
        await registry.set_available(net.auditors[address], False)
    try:
        session_id = await open_session(net, b"\x09" * 32, segments=1)
        randomness = (await audit.session(session_id)).randomness_block
        while await net.chain.block_number() <= randomness:
            await net.chain.rpc("evm_mine", [])
        await audit.assign_auditors(net.provider, session_id, [0])
    finally:
        for address in others:
            await registry.set_available(net.auditors[address], True)
    segment = await audit.segment(session_id, 0)
    assert (segment.committee_size, segment.seat_count) == (3, 1)
    assert await audit.committee(session_id, 0) == [whale]
    info = await registry.auditor(whale)
    assert (info.stake, info.locked, info.unbonding) == (stake - penalty, 3 * penalty, penalty)

    # Free stake is 240 - 180 = 60: a slash of 100 takes it and 40 of the unbonding tokens.
    slash_amount = 100 * 10**18
    slash = audit.contract.functions.slashAuditor(whale, slash_amount, "stake at risk")
    await net.chain.transact(slash, net.deployer)
    info = await registry.auditor(whale)
    assert (info.stake, info.unbonding) == (3 * penalty, penalty - (slash_amount - penalty))

    salt = audit.new_salt()
    await audit.commit_vote(wallet, session_id, 0, audit.commitment(session_id, 0, 0, whale, True, salt))
    await warp(net.chain, 1)  # every seat committed: the commit window closed in that block
    await audit.reveal_vote(wallet, session_id, 0, True, salt)
    await audit.finalize_segments(net.provider, session_id, [0])  # every seat revealed: final at once
    await audit.finalize_trace(net.provider, session_id)
    await audit.distribute_rewards(net.provider, session_id)

    index = ChainIndex(net.protocol)
    await index.refresh()
    r = (await index.segment(session_id, 0)).rounds[0]
    assert [(s.auditor, s.votes, s.vote, s.outcome) for s in r.seats] == [(whale, 3, True, SeatOutcome.ALIGNED)]
    assert (r.committee_size, r.pass_votes, r.fail_votes, r.total_votes) == (3, 3, 0, 3)
    detail = await index.session(session_id)
    assert detail.aligned_seats == (await audit.session(session_id)).aligned_seats == 3
    assert detail.fee_split is not None
    per_seat = detail.fee_split.per_seat_wei
    before = await index.auditor(whale)
    assert before.auditor.rewards_claimable_wei == 3 * per_seat
    # The replay takes the slash from the free stake as the registry did: stake less 3P, not less P.
    assert (before.history[-1].stake_units, before.history[-1].unbonding_units) == (info.stake, info.unbonding)
    assert before.history[-1].seat_rewards_wei == 3 * per_seat

    sent = await audit.claim_rewards(wallet, session_id, [(0, 0)])
    assert (audit.units_claimed_in(sent), audit.rewards_claimed_in(sent)) == (3, 3 * per_seat)
    await index.refresh()
    after = await index.auditor(whale)
    assert [(c.units, c.amount_wei) for c in after.claims if c.session_id == session_id] == [(3, 3 * per_seat)]
    assert after.auditor.rewards_claimable_wei == 0


async def test_a_deserters_charge_comes_out_of_its_unbonding_tokens_in_the_explorers_history(
    net: Net, anvil: AnvilNode, artifacts: dict[str, Artifact], tmp_path: Path
) -> None:
    """An auditor counted in a draw's snapshot that unstakes part of its stake before the draw is a
    deserter (issue M2): the draw passes it over and charges P from its unbonding tokens, its stake
    untouched. The explorer's history must show that split (stake 100, unbonding 40 of 100); the
    replay took the charge for a governance slash and the free stake first (40 and 100).

    A deployment of its own on the module's chain: with this auditor alone in the pool the draw
    lands on it whatever the seed (the module's deployment holds auditors of every tier)."""
    deployment = await deploy_protocol(net.chain, net.deployer, PROTOCOL, GovernanceSettings())
    protocol = Protocol.bind(net.chain, deployment)
    params = PROTOCOL.to_params()
    penalty, minimum = params["penaltyPerSeat"], PROTOCOL.min_stake(1)
    stake, unbond = 2 * minimum, minimum  # 200 tokens, 100 of them unstaked after the snapshot
    (account,) = await provision_auditors(
        protocol, net.deployer, [1], tmp_path, PASSWORD, first_index=20, stake_for=lambda _i, _t: stake,
        scrypt_n=2**10,
    )  # fmt: skip
    deserter, wallet = account.address, load_keystore(Path(account.keystore), PASSWORD)
    specs = [SegmentSpec(tier=1, weight=1, content_digest=b"\x0d" * 32)]
    session_id, _ = await protocol.audit.create_session(net.provider, b"\x0d" * 32, specs)
    snapshot = (await protocol.audit.session(session_id)).randomness_block
    while await net.chain.block_number() <= snapshot:
        await net.chain.rpc("evm_mine", [])
    await protocol.registry.request_unstake(wallet, unbond)  # after the snapshot that counts 200
    await protocol.audit.assign_auditors(net.provider, session_id, [0])
    info = await protocol.registry.auditor(deserter)
    assert (info.stake, info.locked, info.unbonding) == (stake - unbond, 0, unbond - penalty)
    assert await protocol.audit.committee(session_id, 0) == []  # passed over: nobody else to draw

    app = create_explorer_app(anvil.rpc_url, deployment, artifacts=artifacts)
    async with serve(app) as url, httpx.AsyncClient(base_url=url) as client:
        page = (await client.get(f"/explorer/api/auditors/{deserter}")).json()
    split = [(p["event"], int(p["stake_units"]), int(p["unbonding_units"])) for p in page["history"]]
    assert split[-2:] == [
        ("unstake requested", stake - unbond, unbond),
        ("forfeit", stake - unbond, unbond - penalty),  # 100 and 40, as the registry says
    ]
    assert [(f["amount_units"], f["reason"]) for f in page["forfeits"]] == [
        (str(penalty), "unbonded after the draw's snapshot")
    ]
