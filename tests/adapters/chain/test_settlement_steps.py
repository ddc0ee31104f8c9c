"""A round too big for one settlement transaction (issue M4) finalized through the chain wrapper.

One tier-1 segment drawn by a committee of 40 draws from 44 auditors whose stake backs one draw
each, so 40 seats; every seat stays silent (each forfeits). `AuditContract.finalize_segments` with
8 seats a transaction first steps the settlement with `settleSegment` until 8 entries are left,
then finalizes the segment in one `finalizeSegments` transaction that carries its verdict. Real
contracts on a real Anvil.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.one_unit import ONE_UNIT_STAKES
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.deployment import deploy_protocol
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import SegmentSpec, SegmentStatus
from trust.adapters.chain.wallets import dev_account
from trust.api.index import ChainIndex
from trust.errors import ContractReverted, ParameterError
from trust.lab.devnet import provision_auditors
from trust.settings import GovernanceSettings, ProtocolSettings

pytestmark = [pytest.mark.chain]

DRAWS = 40
SEATS_PER_TX = 8
SETTINGS = ProtocolSettings(
    committee_size_tier1=DRAWS,
    max_rounds=1,
    commit_window_seconds=300,
    reveal_window_seconds=300,
    # One unit per auditor (tests/one_unit.py): the round seats 40 distinct members and its
    # settlement list has 40 entries.
    **ONE_UNIT_STAKES,
)


async def _past(chain: ChainClient, block: int) -> None:
    while await chain.block_number() <= block:
        await chain.rpc("evm_mine", [])


async def test_finalize_segments_settles_a_large_round_in_steps(
    chain: ChainClient, mnemonic: str, keystore_dir: Path
) -> None:
    deployer, provider = dev_account(mnemonic, 0), dev_account(mnemonic, 3)
    deployment = await deploy_protocol(chain, deployer, SETTINGS, GovernanceSettings())
    protocol = Protocol.bind(chain, deployment)
    audit, registry = protocol.audit, protocol.registry
    accounts = await provision_auditors(
        protocol,
        deployer,
        [1] * (DRAWS + 4),
        keystore_dir,
        "steps-test-only",
        stake_for=lambda _index, _tier: SETTINGS.min_stake(1),
        scrypt_n=2**10,
    )
    segment = SegmentSpec(tier=1, weight=1, critical=False, contradiction=False, content_digest=b"\x11" * 32)
    session_id, _ = await audit.create_session(provider, b"\x22" * 32, [segment])
    await _past(chain, (await audit.session(session_id)).randomness_block)
    await audit.assign_auditors(deployer, session_id, [0])
    info = await audit.segment(session_id, 0)
    assert info.status is SegmentStatus.VOTING
    assert info.seat_count == DRAWS

    # Before the voting ends a step reverts, and so does the wrapper (nothing was sent).
    with pytest.raises(ContractReverted) as refused:
        await audit.finalize_segments(deployer, session_id, [0], seats_per_tx=SEATS_PER_TX)
    assert refused.value.error_name == "AuditVotingNotOver"
    with pytest.raises(ParameterError, match="seats_per_tx"):
        await audit.finalize_segments(deployer, session_id, [0], seats_per_tx=0)

    await chain.rpc("evm_increaseTime", [SETTINGS.commit_window_seconds + SETTINGS.reveal_window_seconds + 1])
    await chain.rpc("evm_mine", [])
    assert await audit.settlement_progress(session_id, 0) == (0, DRAWS)
    start = await chain.block_number()
    sent = await audit.finalize_segments(deployer, session_id, [0], seats_per_tx=SEATS_PER_TX)

    # The steps before the batch: (40 - 8) / 8 of them, each settling 8 entries, in order.
    steps = [
        (int(e["args"]["settled"]), int(e["args"]["total"]))
        for e in await audit.contract.events.SegmentSettlementProgress().get_logs(
            from_block=start + 1, to_block=sent.receipt["blockNumber"] - 1
        )
    ]
    assert steps == [(8, 40), (16, 40), (24, 40), (32, 40)]
    # The batch settles the last 8 and records the verdict: one round, every seat silent.
    assert audit.settlement_steps_in(sent) == [(0, DRAWS, DRAWS)]
    assert (await audit.segment(session_id, 0)).status is SegmentStatus.UNDETERMINED
    assert len(audit.slashed_in(sent)) == SEATS_PER_TX
    assert await audit.settlement_progress(session_id, 0) == (0, 0)
    for account in accounts:
        assert (await registry.auditor(account.address)).locked == 0

    # The explorer's index gives every step's forfeits to the round (not only the closing batch's),
    # and replays them as seat penalties taken from locked stake.
    index = ChainIndex(protocol)
    await index.refresh()
    seats = (await index.segment(session_id, 0)).rounds[0].seats
    penalty = SETTINGS.to_params()["penaltyPerSeat"]
    assert len(seats) == DRAWS and all(seat.forfeited_units == penalty for seat in seats)
    for seat in seats[:3] + seats[-3:]:
        last = (await index.auditor(seat.auditor)).history[-1]
        info = await registry.auditor(seat.auditor)
        assert (last.event, last.stake_units, last.unbonding_units) == ("forfeit", info.stake, info.unbonding)
