"""A full audit session through web3.py on a real Anvil, with ten auditor wallets.

Two tier-2 segments with three seats each. Segment 0 passes 2-1 (one minority voter). Segment 1
does not decide (one Pass, one Fail, one seat commits but never reveals), so it escalates to a
committee of 2k+1 = 7 tier-3 auditors, which fails it 6-1 (another minority voter). The test then
checks every balance, lock, forfeit and reputation against the paper's formulas.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from eth_account.signers.local import LocalAccount
from web3.exceptions import ContractLogicError

from tests.adapters.chain.shapes import shape
from tests.one_unit import ONE_UNIT_STAKES
from trust.adapters.chain.client import ChainClient, SentTransaction
from trust.adapters.chain.deployment import deploy_protocol
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import Phase, SegmentSpec, SegmentStatus, SessionStatus
from trust.adapters.chain.wallets import dev_account, load_keystore
from trust.errors import ContractReverted
from trust.lab.devnet import provision_auditors
from trust.settings import GovernanceSettings, ProtocolSettings

pytestmark = [pytest.mark.chain]

WAD = 10**18
PASSWORD = "e2e-test-only"
SETTINGS = ProtocolSettings(
    committee_size_tier1=1,
    committee_size_tier2=3,
    committee_size_tier3=3,
    max_rounds=3,
    commit_window_seconds=300,
    reveal_window_seconds=300,
    # One unit per auditor (tests/one_unit.py): three distinct tier-2 seats of one vote on each
    # segment, seven tier-3 seats for the escalated round.
    **ONE_UNIT_STAKES,
)
STAKE_UNITS = SETTINGS.min_stake(2)


def ema(reputation: int, correct: bool, gamma: int = SETTINGS.to_params()["gammaWad"]) -> int:
    """Eq. 3.8 in WAD fixed point, rounding down like the contract."""
    return reputation * (WAD - gamma) // WAD + (gamma if correct else 0)


@dataclass
class World:
    chain: ChainClient
    protocol: Protocol
    deployer: LocalAccount
    provider: LocalAccount
    treasury: LocalAccount
    insurance: LocalAccount
    wallets: dict[str, LocalAccount]
    llm: list[str]
    human: list[str]


@pytest.fixture
async def world(chain: ChainClient, mnemonic: str, keystore_dir: Path) -> World:
    deployer, treasury, insurance, provider = (dev_account(mnemonic, i) for i in range(4))
    deployment = await deploy_protocol(
        chain,
        deployer,
        SETTINGS,
        GovernanceSettings(timelock_min_delay_seconds=60),
        treasury=treasury.address,
        insurance_fund=insurance.address,
    )
    protocol = Protocol.bind(chain, deployment)
    # One unit per auditor (see SETTINGS): every seat votes one, the threshold reads as a head count.
    accounts = await provision_auditors(
        protocol,
        deployer,
        [2] * 6 + [3] * 7,
        keystore_dir,
        PASSWORD,
        stake_for=lambda _index, _tier: STAKE_UNITS,
        scrypt_n=2**10,
    )
    wallets = {a.address: load_keystore(Path(a.keystore), PASSWORD) for a in accounts}
    return World(
        chain=chain,
        protocol=protocol,
        deployer=deployer,
        provider=provider,
        treasury=treasury,
        insurance=insurance,
        wallets=wallets,
        llm=[a.address for a in accounts if a.tier == 2],
        human=[a.address for a in accounts if a.tier == 3],
    )


async def _mine_past(chain: ChainClient, block: int) -> None:
    while await chain.block_number() <= block:
        await chain.rpc("evm_mine", [])


async def _warp(chain: ChainClient, seconds: int) -> None:
    await chain.rpc("evm_increaseTime", [seconds])
    await chain.rpc("evm_mine", [])


async def _cost(chain: ChainClient, sent: SentTransaction) -> int:
    return sent.gas_used * int(sent.receipt["effectiveGasPrice"])


async def test_full_session_with_minority_silence_and_escalation(world: World) -> None:
    audit, registry, chain = world.protocol.audit, world.protocol.registry, world.chain
    params = SETTINGS.to_params()
    penalty = params["penaltyPerSeat"]
    specs = [
        SegmentSpec(tier=2, weight=3, content_digest=b"\x11" * 32, critical=True),
        SegmentSpec(tier=2, weight=2, content_digest=b"\x22" * 32, critical=True),
    ]
    fee = await audit.minimum_fee(specs)
    assert fee == -(-params["rewardPerSeatWei"] * 6 * 10_000 // params["auditorShareBps"])
    session_id, _ = await world.protocol.audit.create_session(world.provider, b"\xaa" * 32, specs, fee_wei=fee)
    session = await audit.session(session_id)
    assert session.status is SessionStatus.OPEN and session.fee_wei == fee

    # Randomness is fixed to a future block: drawing before it is mined is refused.
    with pytest.raises(ContractReverted) as refused:
        await audit.assign_auditors(world.deployer, session_id, [0, 1])
    assert refused.value.error_name == "AuditRandomnessPending"
    await _mine_past(chain, session.randomness_block)
    drawn = audit.committees_in(await audit.assign_auditors(world.deployer, session_id, [0, 1]))
    assert [c.segment_id for c in drawn] == [0, 1]
    # Each committee: three draws, three distinct members of one unit; the first segment's members
    # have no stake left to back a unit of the second, so the two committees share nobody.
    assert sorted(drawn[0].members + drawn[1].members) == sorted(world.llm)
    for committee in drawn:
        assert len(committee.members) == 3
        assert [(await audit.seat(session_id, committee.segment_id, 0, i)).weight for i in range(3)] == [1, 1, 1]
        assert (await audit.segment(session_id, committee.segment_id)).seat_count == 3
    for address in world.llm:
        assert (await registry.auditor(address)).locked == penalty  # one seat of one unit

    seg0, seg1 = drawn
    minority0 = seg0.members[2]
    votes0 = {m: m != minority0 for m in seg0.members}  # Pass, Pass, Fail
    silent = seg1.members[2]
    votes1 = {seg1.members[0]: True, seg1.members[1]: False, silent: True}  # Pass, Fail, (Pass unrevealed)
    salts: dict[tuple[int, str], bytes] = {}

    async def commit(segment_id: int, member: str, vote: bool) -> None:
        salts[(segment_id, member)] = salt = audit.new_salt()
        commitment = await audit.commitment_of(session_id, segment_id, 0, member, vote, salt)
        await audit.commit_vote(world.wallets[member], session_id, segment_id, commitment)

    for member in seg0.members[:2]:
        await commit(0, member, votes0[member])
    # Revealing inside the commit window is refused while a seat has not committed.
    with pytest.raises(ContractReverted) as early:
        await audit.reveal_vote(world.wallets[seg0.members[0]], session_id, 0, True, salts[(0, seg0.members[0])])
    assert early.value.error_name == "AuditOutsideRevealWindow"
    assert await audit.phase(session_id, 0) is Phase.COMMIT
    # The last seat's commit closes the window at once: the reveal window opens in that block.
    await commit(0, minority0, votes0[minority0])
    closed = await audit.segment(session_id, 0)
    assert closed.commit_deadline < seg0.commit_deadline and await audit.phase(session_id, 0) is Phase.REVEAL
    assert closed.reveal_deadline == closed.commit_deadline + SETTINGS.reveal_window_seconds
    for member in seg1.members:
        await commit(1, member, votes1[member])
    # A wrong salt is refused.
    with pytest.raises(ContractReverted) as wrong:
        await audit.reveal_vote(world.wallets[minority0], session_id, 0, False, b"\x00" * 31 + b"\x01")
    assert wrong.value.error_name == "AuditCommitmentMismatch"

    for member in seg0.members:
        await audit.reveal_vote(world.wallets[member], session_id, 0, votes0[member], salts[(0, member)])
    for member in seg1.members[:2]:
        await audit.reveal_vote(world.wallets[member], session_id, 1, votes1[member], salts[(1, member)])
    with pytest.raises(ContractReverted) as again:
        await audit.reveal_vote(world.wallets[minority0], session_id, 0, False, salts[(0, minority0)])
    assert again.value.error_name == "AuditAlreadyRevealed"

    with pytest.raises(ContractReverted) as not_over:
        await audit.finalize_segments(world.deployer, session_id, [1])
    assert not_over.value.error_name == "AuditVotingNotOver"
    await _warp(chain, SETTINGS.reveal_window_seconds + 1)

    reputations = {a: (await registry.auditor(a)).reputation_wad for a in world.llm + world.human}
    stakes = {a: (await registry.auditor(a)).stake for a in world.llm + world.human}
    assert set(reputations.values()) == {params["initialReputationWad"]}
    finalized = await audit.finalize_segments(world.deployer, session_id, [0, 1])
    assert audit.escalations_in(finalized) == [1]
    slashed = audit.slashed_in(finalized)
    slashed_auditors = [auditor for auditor, _ in slashed]
    assert silent in slashed_auditors  # a silent seat always forfeits its lock
    assert all(amount == penalty for _, amount in slashed)
    assert set(slashed_auditors) <= {silent, minority0}

    # Reputation, eq. 3.8, seat by seat in settlement order (segment 0, then segment 1's round).
    expected = dict(reputations)
    for member in seg0.members:
        expected[member] = ema(expected[member], votes0[member])
    expected[silent] = ema(expected[silent], False)  # silent; the two revealers of the undecided round are unchanged
    revealers1 = seg1.members[:2]
    for address in world.llm:
        info = await registry.auditor(address)
        assert info.reputation_wad == expected[address], address
        # The undecided round's revealed seats stay locked until a later round decides (issue M1).
        assert info.locked == (penalty if address in revealers1 else 0), address
        lost = penalty * slashed_auditors.count(address)
        assert info.stake == stakes[address] - lost
    assert await registry.claimable_tokens(world.insurance.address) == penalty * len(slashed)

    s0, s1 = await audit.segment(session_id, 0), await audit.segment(session_id, 1)
    assert s0.status is SegmentStatus.PASSED
    assert s1.status is SegmentStatus.AWAITING_DRAW and s1.round == 1 and s1.tier == 3 and s1.committee_size == 7

    # Round 2: seven tier-3 auditors, from fresh randomness.
    await _mine_past(chain, s1.randomness_block)
    (escalated,) = audit.committees_in(await audit.assign_auditors(world.deployer, session_id, [1]))
    assert escalated.round == 1 and sorted(escalated.members) == sorted(world.human)
    minority1 = escalated.members[0]
    votes2 = {m: m == minority1 for m in escalated.members}  # one Pass, six Fail
    for member in escalated.members:
        salts[(2, member)] = salt = audit.new_salt()
        commitment = await audit.commitment_of(session_id, 1, 1, member, votes2[member], salt)
        await audit.commit_vote(world.wallets[member], session_id, 1, commitment)
    assert await audit.phase(session_id, 1) is Phase.REVEAL  # all seven committed: the window closed
    for member in escalated.members:
        await audit.reveal_vote(world.wallets[member], session_id, 1, votes2[member], salts[(2, member)])
    # Every seat revealed: finalization need not wait for the reveal deadline.
    second = await audit.finalize_segments(world.deployer, session_id, [1])
    slashed2 = [auditor for auditor, _ in audit.slashed_in(second)]
    # The verdict (Fail) also settles the first round's revealed seats: its Pass seat voted against
    # it and may be slashed, its Fail seat is aligned.
    assert set(slashed2) <= {minority1, revealers1[0]}
    for member in escalated.members:
        info = await registry.auditor(member)
        assert info.reputation_wad == ema(reputations[member], votes2[member] is False)
        assert info.stake == stakes[member] - penalty * slashed2.count(member)
        assert info.locked == 0
    for member in revealers1:
        info = await registry.auditor(member)
        assert info.reputation_wad == ema(expected[member], votes1[member] is False), member
        assert info.locked == 0
        assert info.stake == stakes[member] - penalty * (slashed_auditors.count(member) + slashed2.count(member))
    assert (await audit.segment(session_id, 1)).status is SegmentStatus.FAILED

    valid, _ = await audit.finalize_trace(world.deployer, session_id)
    assert valid is False  # a critical segment failed (and W = 3/5 < beta = 0.65)
    session = await audit.session(session_id)
    assert session.status is SessionStatus.FINALIZED
    assert (session.pass_weight, session.total_weight, session.critical_failed) == (3, 5, 1)
    assert session.aligned_seats == 2 + 6

    # The fee split: 70% to aligned seats, 15% treasury, 10% stakers, 5% insurance.
    registry_eth_before = await chain.balance(registry.address)
    distributed = await audit.distribute_rewards(world.deployer, session_id)
    auditors_wei = fee * 7_000 // 10_000
    per_seat = auditors_wei // 8
    treasury_wei = fee * 1_500 // 10_000 + (auditors_wei - per_seat * 8)
    stakers_wei = fee * 1_000 // 10_000
    insurance_wei = fee - fee * 7_000 // 10_000 - fee * 1_500 // 10_000 - stakers_wei
    assert await audit.claimable(world.treasury.address) == treasury_wei
    assert await audit.claimable(world.insurance.address) == insurance_wei
    assert await chain.balance(registry.address) - registry_eth_before == stakers_wei

    # Pull payments: each aligned seat claims exactly its share, once; nobody else can.
    aligned_seats = [(0, i, m) for i, m in enumerate(seg0.members) if votes0[m]]
    aligned_seats += [(1, i, m) for i, m in enumerate(escalated.members) if not votes2[m]]
    assert len(aligned_seats) == 8
    for segment_id, index, member in aligned_seats:
        before = await chain.balance(member)
        paid = await audit.claim_rewards(world.wallets[member], session_id, [(segment_id, index)])
        assert await chain.balance(member) == before + per_seat - await _cost(chain, paid)
        assert (await audit.seat(session_id, segment_id, 1 if segment_id == 1 else 0, index)).claimed
    with pytest.raises(ContractReverted) as twice:
        await audit.claim_rewards(world.wallets[aligned_seats[0][2]], session_id, [aligned_seats[0][:2]])
    assert twice.value.error_name == "AuditSeatNotRewarded"
    minority_index = seg0.members.index(minority0)
    with pytest.raises(ContractReverted) as misaligned:
        await audit.claim_rewards(world.wallets[minority0], session_id, [(0, minority_index)])
    assert misaligned.value.error_name == "AuditSeatNotRewarded"
    before = await chain.balance(world.treasury.address)
    paid = await audit.withdraw(world.treasury)
    assert await chain.balance(world.treasury.address) == before + treasury_wei - await _cost(chain, paid)
    with pytest.raises(ContractReverted) as nothing:
        await audit.withdraw(world.treasury)
    assert nothing.value.error_name == "AuditNothingToWithdraw"
    # Everything the provider paid is accounted for: claimed, withdrawn, with the registry, or owed.
    assert await chain.balance(audit.address) == insurance_wei

    # Stakers' share: streamed over the reward period (a week) from the distribution, pro rata to
    # stake and to the time it is staked; no stake changed since, so once the period is over each
    # staker has its pro-rata share of the whole amount.
    stream = await registry.staker_reward_stream()
    distributed_at = int((await chain.w3.eth.get_block(distributed.block_number))["timestamp"])
    assert stream.period_finish == distributed_at + 7 * 24 * 3600
    assert stream.rate_wad == stakers_wei * WAD // (7 * 24 * 3600)
    now = int((await chain.w3.eth.get_block("latest"))["timestamp"])
    await chain.rpc("evm_increaseTime", [stream.period_finish - now])
    await chain.rpc("evm_mine", [])
    total_stake = sum([(await registry.auditor(a)).stake for a in world.llm + world.human])
    for address in world.llm + world.human:
        stake = (await registry.auditor(address)).stake
        pending = await registry.pending_staker_reward(address)
        assert pending == stake * (stakers_wei * WAD // total_stake) // WAD

    # Token conservation: the registry holds every stake plus the forfeits owed to the insurance fund.
    held = await world.protocol.token.balance_of(registry.address)
    owed = await registry.claimable_tokens(world.insurance.address)
    assert held == sum([(await registry.auditor(a)).stake for a in world.llm + world.human]) + owed
    assert owed == penalty * (len(slashed) + len(slashed2))

    # Final verdicts never change.
    with pytest.raises(ContractReverted) as final:
        await audit.finalize_segments(world.deployer, session_id, [0])
    assert final.value.error_name == "AuditSessionNotOpen"

    await _views_read_as_web3_reads_them(world, session_id)
    await _logs_read_as_web3_reads_them(world, session_id)


async def _views_read_as_web3_reads_them(world: World, session_id: int) -> None:
    """Every view of the protocol's contracts whose arguments are numbers and addresses, called on
    this session's state (ids 0 and 1, the session, an auditor of it): `ChainClient.call` (its
    `ViewPlan`, `trust.adapters.chain.views`) returns exactly what web3's own call returns, and
    reverts the same way."""
    auditor = world.llm[0]
    compared = 0
    answered: list[tuple[Any, object]] = []
    reverting = None
    for handle in (world.protocol.audit, world.protocol.registry, world.protocol.segment_keys, world.protocol.params):
        contract = handle.contract
        for item in contract.abi:
            if item.get("type") != "function" or item.get("stateMutability") not in ("view", "pure"):
                continue
            types = [p["type"] for p in item["inputs"]]
            if not all(t.startswith("uint") or t == "address" for t in types):
                continue
            for small in (0, 1):
                args = [
                    auditor if t == "address" else session_id if "session" in p["name"].lower() else small
                    for t, p in zip(types, item["inputs"], strict=True)
                ]
                fn = contract.functions[item["name"]](*args)
                try:
                    expected: object = shape(await fn.call())
                except ContractLogicError:
                    expected = ("raises", "a revert")
                try:
                    got: object = shape(await world.chain.call(contract.functions[item["name"]](*args)))
                except ContractReverted:
                    got = ("raises", "a revert")
                assert got == expected, (item["name"], args)
                compared += expected[0] != "raises"
                if expected[0] != "raises":
                    answered.append((contract.functions[item["name"]](*args), expected))
                else:
                    reverting = contract.functions[item["name"]](*args)
    assert compared > 40
    assert world.chain._views, "the views were read through their plans"
    # in JSON-RPC batches, in order; a revert among them raises as it does alone
    fns = [fn for fn, _ in answered]
    assert [shape(v) for v in await world.chain.call_many(fns)] == [e for _, e in answered]
    with pytest.raises(ContractReverted):
        await world.chain.call_many([*fns[:3], reverting, *fns[3:6]])


async def _logs_read_as_web3_reads_them(world: World, session_id: int) -> None:
    """Every event of the protocol's contracts in this session's blocks, read by
    `ChainClient.get_logs` (its `EventPlan`s, `trust.adapters.chain.logs`) and by web3's own
    `get_logs`: the same logs, the same shapes; so are a filtered read and a read of several
    events in one request."""
    chain, audit = world.chain, world.protocol.audit
    found = 0
    for handle in (audit, world.protocol.registry, world.protocol.segment_keys, world.protocol.params):
        for item in handle.contract.abi:
            if item.get("type") != "event":
                continue
            event = handle.contract.events[item["name"]]()
            expected = [shape(log) for log in await event.get_logs(from_block=0)]
            assert [shape(log) for log in await chain.get_logs(event, from_block=0)] == expected, item["name"]
            found += len(expected)
    assert found > 50
    drawn = audit.contract.events.CommitteeDrawn()
    by_session = await drawn.get_logs(from_block=0, argument_filters={"sessionId": session_id})
    assert len(by_session) == 3  # two first rounds and the escalation
    ours = await chain.get_logs(drawn, from_block=0, argument_filters={"sessionId": session_id})
    assert [shape(log) for log in ours] == [shape(log) for log in by_session]
    assert await chain.get_logs(drawn, from_block=0, argument_filters={"sessionId": session_id + 1}) == []
    names = ["CommitteeDrawn", "SessionOpened", "SegmentEscalated"]
    together = await chain.get_logs([audit.contract.events[n]() for n in names], from_block=0)
    apart = [log for n in names for log in await audit.contract.events[n]().get_logs(from_block=0)]
    apart.sort(key=lambda log: (log["blockNumber"], log["logIndex"]))
    assert [shape(log) for log in together] == [shape(log) for log in apart]
    assert {log["event"] for log in together} == set(names)
    assert chain._events, "the logs were read through their plans"
