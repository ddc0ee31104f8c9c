"""`SegmentKeys.publishReports` on a real Anvil: only a seat's own auditor announces its report, only
once its vote is revealed, and the provider reads every report of its session back by event and
opens it with its reply key.

Reports are real HPKE blobs (`trust.core.privacy.reports`); IPFS is not involved, their CIDs are computed
locally exactly as the node would compute them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account.signers.local import LocalAccount

from tests.one_unit import ONE_UNIT_STAKES
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.deployment import deploy_protocol
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import CommitteeDrawn, Phase, ReportRef, SegmentSpec
from trust.adapters.chain.wallets import dev_account, load_keystore
from trust.core.cid import parse_cid, unixfs_cid
from trust.core.privacy.envelopes import public_key_bytes
from trust.core.privacy.reports import AuditReport, open_report, seal_report
from trust.errors import ContractReverted
from trust.lab.devnet import provision_auditors
from trust.settings import GovernanceSettings, ProtocolSettings

pytestmark = [pytest.mark.chain]

PASSWORD = "reports-test-only"
SETTINGS = ProtocolSettings(
    committee_size_tier1=1,
    committee_size_tier2=3,
    committee_size_tier3=3,
    commit_window_seconds=300,
    reveal_window_seconds=300,
    # One unit per auditor (tests/one_unit.py): each segment seats three distinct auditors.
    **ONE_UNIT_STAKES,
)
ROOT = b"\x52" * 32


@dataclass
class World:
    protocol: Protocol
    provider: LocalAccount
    stranger: LocalAccount
    wallets: dict[str, LocalAccount]
    session_id: int
    drawn: list[CommitteeDrawn]


@pytest.fixture
async def world(chain: ChainClient, mnemonic: str, keystore_dir: Path) -> World:
    """Six tier-2 auditors, three distinct ones seated on each segment of a fresh session."""
    deployer, provider, stranger = dev_account(mnemonic, 0), dev_account(mnemonic, 3), dev_account(mnemonic, 4)
    protocol = Protocol.bind(chain, await deploy_protocol(chain, deployer, SETTINGS, GovernanceSettings()))
    accounts = await provision_auditors(
        protocol, deployer, [2] * 6, keystore_dir, PASSWORD, stake_for=lambda _i, _t: SETTINGS.min_stake(2),
        scrypt_n=2**10,
    )  # fmt: skip
    audit = protocol.audit
    specs = [SegmentSpec(tier=2, weight=1, content_digest=bytes([i + 1]) * 32) for i in range(2)]
    session_id, _ = await audit.create_session(provider, ROOT, specs)
    while await chain.block_number() <= (await audit.session(session_id)).randomness_block:
        await chain.rpc("evm_mine", [])
    drawn = audit.committees_in(await audit.assign_auditors(provider, session_id, [0, 1]))
    wallets = {a.address: load_keystore(Path(a.keystore), PASSWORD) for a in accounts}
    return World(protocol, provider, stranger, wallets, session_id, drawn)


async def _vote(world: World, segment_id: int, members: list[str], vote: bool) -> dict[str, bytes]:
    audit = world.protocol.audit
    salts = {}
    for member in members:
        salts[member] = salt = audit.new_salt()
        commitment = await audit.commitment_of(world.session_id, segment_id, 0, member, vote, salt)
        await audit.commit_vote(world.wallets[member], world.session_id, segment_id, commitment)
    return salts


def _report(world: World, segment_id: int, seat_index: int, auditor: str, critique: str) -> AuditReport:
    return AuditReport(
        world.session_id, segment_id, 0, seat_index, auditor, "fail", 0.0, critique, "factual", "391", 2, 10.0, 12.5
    )


async def test_revealed_seats_announce_their_reports_and_the_provider_opens_them(world: World) -> None:
    keys, audit = world.protocol.segment_keys, world.protocol.audit
    reply = X25519PrivateKey.generate()
    members = list(world.drawn[0].members)
    salts = await _vote(world, 0, members, False)  # every seat committed: the window closed
    assert await audit.phase(world.session_id, 0) is Phase.REVEAL

    store: dict[str, bytes] = {}  # what IPFS would hold
    refs: dict[str, ReportRef] = {}
    for index, member in enumerate(members):
        blob = seal_report(
            _report(world, 0, index, member, f"seat {index}: 17 * 23 = 409 is wrong"),
            trace_root=ROOT,
            recipient_key=public_key_bytes(reply),
        )
        store[unixfs_cid(blob)] = blob
        refs[member] = ReportRef(0, 0, index, unixfs_cid(blob))

    # Committed but not revealed: the report would tell the vote early.
    with pytest.raises(ContractReverted) as early:
        await keys.publish_reports(world.wallets[members[0]], world.session_id, [refs[members[0]]])
    assert early.value.error_name == "SegmentKeysSeatNotRevealed"
    assert early.value.error_args == {"sessionId": world.session_id, "segmentId": 0, "round": 0, "seatIndex": 0}

    for member in members:
        await audit.reveal_vote(world.wallets[member], world.session_id, 0, False, salts[member])
        sent = await keys.publish_reports(world.wallets[member], world.session_id, [refs[member]])
        (announced,) = keys.reports_in(sent)
        assert (announced.segment_id, announced.round, announced.seat_index) == (0, 0, refs[member].seat_index)
        assert announced.auditor == member and announced.cid == refs[member].report_cid
        assert announced.block_number == sent.block_number

    published = await keys.reports_for(world.session_id)
    assert [(p.segment_id, p.seat_index, p.auditor) for p in published] == [(0, i, m) for i, m in enumerate(members)]
    for item in published:
        report = open_report(
            store[item.cid],
            private_key=reply,
            trace_root=ROOT,
            session_id=item.session_id,
            segment_index=item.segment_id,
            round=item.round,
            seat_index=item.seat_index,
            auditor=item.auditor,
        )
        assert report.critique == f"seat {item.seat_index}: 17 * 23 = 409 is wrong"
        assert report.vote == "fail" and report.error_type == "factual" and report.expected == "391"
    assert await keys.reports_for(world.session_id + 1) == []
    await world.protocol.chain.rpc("evm_mine", [])
    assert await keys.reports_for(world.session_id, from_block=published[-1].block_number + 1) == []
    assert len(await keys.reports_for(world.session_id, from_block=published[-1].block_number)) == 1


async def test_only_the_seats_auditor_announces_and_the_latest_report_wins(world: World) -> None:
    keys, audit = world.protocol.segment_keys, world.protocol.audit
    members = list(world.drawn[0].members)
    salts = await _vote(world, 0, members, True)
    for member in members:
        await audit.reveal_vote(world.wallets[member], world.session_id, 0, True, salts[member])
    cid = unixfs_cid(b"a report")
    first, second = members[0], members[1]

    cases = [
        (world.stranger, ReportRef(0, 0, 0, cid), "SegmentKeysNotSeatHolder", members[0]),
        (world.wallets[second], ReportRef(0, 0, 0, cid), "SegmentKeysNotSeatHolder", members[0]),
        (world.provider, ReportRef(0, 0, 0, cid), "SegmentKeysNotSeatHolder", members[0]),
        (world.wallets[first], ReportRef(0, 0, 3, cid), "SegmentKeysNotSeatHolder", "0x" + "00" * 20),
        (world.wallets[first], ReportRef(0, 1, 0, cid), "SegmentKeysNotSeatHolder", "0x" + "00" * 20),
        (world.wallets[first], ReportRef(0, 0, 0, b""), "SegmentKeysEmptyReport", None),
        (world.wallets[first], ReportRef(0, 0, 0, b"\x01" * 129), "SegmentKeysReportTooLong", None),
    ]
    for sender, ref, error, holder in cases:
        with pytest.raises(ContractReverted) as refused:
            await keys.publish_reports(sender, world.session_id, [ref])
        assert refused.value.error_name == error
        if holder is not None:
            assert refused.value.error_args["caller"] == sender.address.lower()
            assert refused.value.error_args["holder"] == holder.lower()
    with pytest.raises(ContractReverted) as none:
        await keys.publish_reports(world.wallets[first], world.session_id, [])
    assert none.value.error_name == "SegmentKeysNoReports"

    # Republished: per seat, the latest event wins; text and binary CIDs are one thing on chain.
    newer = unixfs_cid(b"a corrected report")
    await keys.publish_reports(world.wallets[first], world.session_id, [ReportRef(0, 0, 0, cid)])
    await keys.publish_reports(world.wallets[second], world.session_id, [ReportRef(0, 0, 1, cid)])
    await keys.publish_reports(
        world.wallets[first], world.session_id, [ReportRef(0, 0, 0, parse_cid(newer).to_bytes())]
    )
    latest = {p.seat_index: p.cid for p in await keys.reports_for(world.session_id)}
    assert latest == {0: newer, 1: cid}
    with pytest.raises(ValueError, match="round must be a uint8"):
        ReportRef(0, 256, 0, cid)


async def test_a_seat_of_a_committee_still_committing_reports_after_the_deadline(world: World) -> None:
    keys, audit, chain = world.protocol.segment_keys, world.protocol.audit, world.protocol.chain
    members = list(world.drawn[1].members)
    salts = await _vote(world, 1, members[:2], True)  # the third seat stays silent: no early close
    assert await audit.phase(world.session_id, 1) is Phase.COMMIT
    ref = ReportRef(1, 0, 0, unixfs_cid(b"report"))
    with pytest.raises(ContractReverted) as early:
        await keys.publish_reports(world.wallets[members[0]], world.session_id, [ref])
    assert early.value.error_name == "SegmentKeysSeatNotRevealed"
    await chain.rpc("evm_increaseTime", [SETTINGS.commit_window_seconds + 1])
    await chain.rpc("evm_mine", [])
    await audit.reveal_vote(world.wallets[members[0]], world.session_id, 1, True, salts[members[0]])
    (announced,) = keys.reports_in(await keys.publish_reports(world.wallets[members[0]], world.session_id, [ref]))
    assert announced.auditor == members[0] and announced.segment_id == 1
