"""A protocol deployment on Anvil with real auditors, and one audit session driven through its whole
life with real transactions, recording what happened so that tests can hold the explorer to it.

The session (four segments of a trace stored on the local IPFS node with `store_trace`):
- segment 0, tier 1: pass, pass, fail -> passed (one misaligned seat, slashed or not by its roll);
- segment 1, tier 1, critical: fail x3 -> failed (the trace is invalid);
- segment 2, tier 1: pass, fail, one seat commits and never reveals -> escalates to 7 tier-2 seats,
  six pass and one stays silent -> passed;
- segment 3, tier 2: pass, fail, one seat never commits -> escalates to tier 3, where one auditor's
  stake cannot back 7 draws: three draws short of auditors -> undetermined.
Then the trace is finalized, the fee distributed, every auditor but one claims its aligned seats,
one claims its stakers' share, and governance slashes a tier-2 auditor with a hostile reason. A
tier-3 auditor's metadata URI is hostile HTML. One auditor of segment 1 publishes its audit report
(a critique sealed to the provider's reply key, as a worker seals it), two auditors of segment 0
publish reports that the provider cannot read (one blob that no IPFS node holds, one sealed to
another key), and the provider keeps its session record in a journal, as the SDK does: the
explorer's source of the graph's shape.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from eth_account.signers.local import LocalAccount
from fastapi import FastAPI

from tests.one_unit import ONE_UNIT_STAKES
from trust.adapters.chain.client import ChainClient, SentTransaction
from trust.adapters.chain.deployment import Deployment, deploy_protocol
from trust.adapters.chain.protocol import KeyEnvelope, Protocol
from trust.adapters.chain.types import CommitteeDrawn, ReportRef
from trust.adapters.chain.wallets import dev_account, load_keystore
from trust.adapters.storage.kubo import KuboClient
from trust.adapters.web import serve_in_loop
from trust.core.cid import unixfs_cid
from trust.core.decompose.rules import from_steps
from trust.core.graphs.hdag import Hdag
from trust.core.privacy.reports import AuditReport, seal_report
from trust.lab.devnet import provision_auditors
from trust.services.delivery import SegmentProfile, StoredTrace, deliver_keys, store_trace
from trust.services.sdk.journal import Journal, SessionRecord
from trust.services.sdk.keys import reply_key
from trust.settings import GovernanceSettings, ProtocolSettings

PASSWORD = "explorer-test-only"
COMMIT_WINDOW_SECONDS = 300
REVEAL_WINDOW_SECONDS = 300
PROTOCOL = ProtocolSettings(
    committee_size_tier1=3,
    committee_size_tier2=3,
    committee_size_tier3=3,
    max_rounds=3,
    commit_window_seconds=COMMIT_WINDOW_SECONDS,
    reveal_window_seconds=REVEAL_WINDOW_SECONDS,
    # One unit per auditor (tests/one_unit.py): the story's committees are its planned head counts
    # of one vote each.
    **ONE_UNIT_STAKES,
)
STAKE_UNITS = PROTOCOL.min_stake(1)
"""Every auditor's stake (token base units): it backs one committee draw of P."""
TIERS = [1] * 9 + [2] * 10 + [3]
"""Nine tier-1 auditors (the three tier-1 segments' committees at once: a seat locks its member's
one unit), ten tier-2 (segment 3's first committee, two of whose seats stay locked until its
verdict and one forfeits, then an escalated committee of 2k+1 = 7), and one tier-3 auditor, whose
stake backs one of a tier-3 committee's seven draws."""
HOSTILE_URI = 'javascript:alert(1)//"><script>document.title="pwned"</script><img src=x onerror=alert(2)>'
GOVERNANCE_REASON = '<b>copied votes</b> & "collusion"'
GOVERNANCE_SLASH_UNITS = 5 * 10**18

Vote = bool | None
"""A planned vote: True pass, False fail, None for a seat that commits nothing."""


@dataclass
class World:
    chain: ChainClient
    protocol: Protocol
    deployment: Deployment
    deployer: LocalAccount
    provider: LocalAccount
    wallets: dict[str, LocalAccount]
    tier1: list[str]
    tier2: list[str]
    hostile: str
    initial_stake: dict[str, int]


@dataclass
class Story:
    """What the test did, as the transactions' receipts say."""

    world: World
    session_id: int
    graph: Hdag
    stored: StoredTrace
    fee_wei: int
    created: SentTransaction
    journal: Journal
    committees: dict[tuple[int, int], CommitteeDrawn] = field(default_factory=dict)
    draws: dict[tuple[int, int], SentTransaction] = field(default_factory=dict)
    commits: dict[tuple[int, int, str], SentTransaction] = field(default_factory=dict)
    reveals: dict[tuple[int, int, str], tuple[bool, SentTransaction]] = field(default_factory=dict)
    silent_committers: set[tuple[int, int, str]] = field(default_factory=set)
    envelopes: list[KeyEnvelope] = field(default_factory=list)
    finalizations: list[SentTransaction] = field(default_factory=list)
    unavailable_draws: list[SentTransaction] = field(default_factory=list)
    trace_finalized: SentTransaction | None = None
    distributed: SentTransaction | None = None
    claims: dict[str, SentTransaction] = field(default_factory=dict)
    unclaimed: str = ""
    staker_claimer: str = ""
    staker_claim: SentTransaction | None = None
    governance_slashed: str = ""
    report: tuple[int, int, int, str, str] | None = None
    """(segment, round, seat, auditor, report CID) of the published report."""
    unreadable: dict[tuple[int, int, int], tuple[str, str]] = field(default_factory=dict)
    """(segment, round, seat) -> (report CID, "unavailable" or "unreadable") of the reports the
    provider cannot read: a CID no node holds, a report sealed to another key."""


async def build_world(chain: ChainClient, mnemonic: str, keystore_dir: Path) -> World:
    deployer, provider = dev_account(mnemonic, 0), dev_account(mnemonic, 3)
    await chain.rpc("evm_setAutomine", [True])
    deployment = await deploy_protocol(chain, deployer, PROTOCOL, GovernanceSettings())
    protocol = Protocol.bind(chain, deployment)
    # One unit per auditor (see PROTOCOL): every seat votes one, and the threshold reads as a head count.
    accounts = await provision_auditors(
        protocol,
        deployer,
        TIERS,
        keystore_dir,
        PASSWORD,
        stake_for=lambda _index, _tier: STAKE_UNITS,
        scrypt_n=2**10,
    )
    wallets = {a.address: load_keystore(Path(a.keystore), PASSWORD) for a in accounts}
    hostile = accounts[-1].address
    registry = protocol.registry
    key = (await registry.auditor(hostile)).encryption_key
    await chain.transact(registry.contract.functions.updateProfile(key, HOSTILE_URI), wallets[hostile])
    return World(
        chain=chain,
        protocol=protocol,
        deployment=deployment,
        deployer=deployer,
        provider=provider,
        wallets=wallets,
        tier1=[a.address for a in accounts if a.tier == 1],
        tier2=[a.address for a in accounts if a.tier == 2],
        hostile=hostile,
        initial_stake={a.address: a.stake for a in accounts},
    )


async def mine_past(chain: ChainClient, block: int) -> None:
    while await chain.block_number() <= block:
        await chain.rpc("evm_mine", [])


async def warp(chain: ChainClient, seconds: int) -> None:
    await chain.rpc("evm_increaseTime", [seconds])
    await chain.rpc("evm_mine", [])


GRAPH_QUESTION = "Is the dosing plan sound?"
GRAPH_STEPS = ["The patient weighs 70 kg.", "The dose is 5 mg per kg.", "So the dose is 350 mg."]
PROFILES = {
    "g0": SegmentProfile(1),
    "s1": SegmentProfile(1, critical=True),
    "s2": SegmentProfile(1),
    "s3": SegmentProfile(2),
}


async def now_seconds(chain: ChainClient) -> int:
    return int((await chain.w3.eth.get_block("latest"))["timestamp"])


async def vote_round(
    story: Story, round_id: int, plans: dict[int, dict[str, Vote]], silent: set[tuple[int, str]]
) -> None:
    """One round of several segments: commits every planned vote (None: no commit), reveals all but
    the `silent` (segment, member) seats' once each segment's commit window is over, and leaves the chain past every
    reveal deadline. Works whether a window closes early (every seat committed) or at its deadline."""
    world, audit, chain = story.world, story.world.protocol.audit, story.world.chain
    salts: dict[tuple[int, str], bytes] = {}
    for segment_id, plan in plans.items():
        for member, vote in plan.items():
            if vote is None:
                continue
            salts[(segment_id, member)] = salt = audit.new_salt()
            commitment = audit.commitment(story.session_id, segment_id, round_id, member, vote, salt)
            story.commits[(segment_id, round_id, member)] = await audit.commit_vote(
                world.wallets[member], story.session_id, segment_id, commitment
            )
    waiting = set(plans)
    while waiting:
        deadlines = {g: (await audit.segment(story.session_id, g)).commit_deadline for g in waiting}
        now = await now_seconds(chain)
        for segment_id in sorted(g for g, deadline in deadlines.items() if deadline < now):
            waiting.discard(segment_id)
            for member, vote in plans[segment_id].items():
                if vote is None:
                    continue
                if (segment_id, member) in silent:
                    story.silent_committers.add((segment_id, round_id, member))
                    continue
                salt = salts[(segment_id, member)]
                sent = await audit.reveal_vote(world.wallets[member], story.session_id, segment_id, vote, salt)
                story.reveals[(segment_id, round_id, member)] = (vote, sent)
        if waiting:
            await warp(chain, min(deadlines[g] for g in waiting) - now + 1)
    last = max([(await audit.segment(story.session_id, g)).reveal_deadline for g in plans])
    now = await now_seconds(chain)
    if last >= now:
        await warp(chain, last - now + 1)


async def run_story(world: World, kubo: KuboClient, journal: Journal) -> Story:
    audit, chain = world.protocol.audit, world.chain
    graph = from_steps(GRAPH_QUESTION, GRAPH_STEPS)
    stored = await store_trace(kubo, graph, profiles=PROFILES)
    fee = await audit.minimum_fee(stored.specs())
    session_id, created = await audit.create_session(world.provider, stored.root, stored.specs(), fee_wei=fee)
    story = Story(world, session_id, graph, stored, fee, created, journal)
    record = SessionRecord(
        chain_id=chain.chain_id,
        audit_contract=audit.address,
        kind="trace",
        graph=graph,
        stored=stored,
        session_id=session_id,
        fee_wei=fee,
        created_tx=created.tx_hash,
    )
    journal.save(record)

    await mine_past(chain, (await audit.session(session_id)).randomness_block)
    drawn = await audit.assign_auditors(world.provider, session_id, [0, 1, 2, 3])
    for committee in audit.committees_in(drawn):
        story.committees[(committee.segment_id, committee.round)] = committee
        story.draws[(committee.segment_id, committee.round)] = drawn
    first = [story.committees[(g, 0)] for g in range(4)]
    story.envelopes += await deliver_keys(world.protocol, kubo, world.provider, session_id, graph, stored, first)
    # The provider corrects segment 0's envelopes: the latest publication per seat wins.
    story.envelopes += await deliver_keys(world.protocol, kubo, world.provider, session_id, graph, stored, first[:1])

    m0, m1, m2, m3 = (story.committees[(g, 0)].members for g in range(4))
    plans: dict[int, dict[str, Vote]] = {
        0: {m0[0]: True, m0[1]: True, m0[2]: False},
        1: {m: False for m in m1},
        2: {m2[0]: True, m2[1]: False, m2[2]: True},
        3: {m3[0]: True, m3[1]: False, m3[2]: None},
    }
    await vote_round(story, 0, plans, silent={(2, m2[2])})
    await publish_report(story, kubo, 1, 0, 0)
    await publish_unreadable_reports(story, kubo)
    # One batch: the index must give each AuditorSlashed to the right segment.
    story.finalizations.append(await audit.finalize_segments(world.deployer, session_id, [0, 1, 2, 3]))

    # Round 1: segment 2 escalated to tier 2 (7 seats), segment 3 to tier 3 (7 seats, 1 auditor).
    escalated = [await audit.segment(session_id, g) for g in (2, 3)]
    await mine_past(chain, max(s.randomness_block for s in escalated))
    drawn = await audit.assign_auditors(world.deployer, session_id, [2, 3])
    story.unavailable_draws.append(drawn)
    (committee,) = audit.committees_in(drawn)
    story.committees[(2, 1)] = committee
    story.draws[(2, 1)] = drawn
    story.envelopes += await deliver_keys(world.protocol, kubo, world.provider, session_id, graph, stored, [committee])
    for _attempt in (2, 3):
        await mine_past(chain, (await audit.segment(session_id, 3)).randomness_block)
        story.unavailable_draws.append(await audit.assign_auditors(world.deployer, session_id, [3]))
    members = committee.members
    await vote_round(story, 1, {2: {m: (True if i < len(members) - 1 else None) for i, m in enumerate(members)}}, set())
    story.finalizations.append(await audit.finalize_segments(world.deployer, session_id, [2]))

    _, story.trace_finalized = await audit.finalize_trace(world.deployer, session_id)
    story.distributed = await audit.distribute_rewards(world.deployer, session_id)

    aligned = aligned_seats(story)
    story.unclaimed = story.committees[(1, 0)].members[0]  # aligned: segment 1 failed unanimously
    for auditor, seats in sorted(aligned.items()):
        if auditor != story.unclaimed:
            story.claims[auditor] = await audit.claim_rewards(world.wallets[auditor], session_id, seats)
    story.staker_claimer = world.tier2[0]
    # The stakers' share streams over a week from the distribution: an hour of it is claimable.
    await chain.rpc("evm_increaseTime", [STAKER_STREAM_WAIT_SECONDS])
    await chain.rpc("evm_mine", [])
    story.staker_claim = await world.protocol.registry.claim_staker_reward(world.wallets[story.staker_claimer])
    # Governance slashes an auditor with a history to chart: one seated, aligned and paid in segment
    # 2's escalated round (which tier-2 auditors the draw seats depends on the block hashes).
    story.governance_slashed = next(m for m in members[:-1] if m != story.staker_claimer)
    slash = audit.contract.functions.slashAuditor(story.governance_slashed, GOVERNANCE_SLASH_UNITS, GOVERNANCE_REASON)
    await chain.transact(slash, world.deployer)
    return story


STAKER_STREAM_WAIT_SECONDS = 3_600
"""How long the story waits after the distribution before an auditor claims its stakers' share."""

CRITIQUE = "5 mg per kg is not the dose the question states (<b>2 mg</b> per kg); the step's premise is wrong."
"""The published critique: markup in it must show as text."""
EXPECTED = "2 mg per kg"
EVALUATION_SECONDS = 8.25


def provider_reply_key(story: Story) -> bytes:
    """The public reply key of the story's session: what the provider puts into every key grant."""
    audit = story.world.protocol.audit
    key = reply_key(
        story.world.provider, chain_id=story.world.chain.chain_id, audit_contract=audit.address,
        trace_root=story.stored.root,
    )  # fmt: skip
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def seat_report(story: Story, segment_id: int, round_id: int, seat: int, started_at: float) -> AuditReport:
    """The report a worker writes for a revealed seat."""
    committee = story.committees[(segment_id, round_id)]
    auditor = committee.members[seat]
    vote, _ = story.reveals[(segment_id, round_id, auditor)]
    return AuditReport(
        session_id=story.session_id,
        segment_index=segment_id,
        round=round_id,
        seat_index=seat,
        auditor=auditor,
        vote="pass" if vote else "fail",
        score=0.9,
        critique=CRITIQUE,
        error_type=None if vote else "factual",
        expected=None if vote else EXPECTED,
        tier=committee.tier,
        started_at=started_at,
        finished_at=started_at + EVALUATION_SECONDS,
    )


async def publish_report(story: Story, kubo: KuboClient, segment_id: int, round_id: int, seat: int) -> None:
    """The seat's auditor seals a critique to the provider's reply key, stores it on IPFS and
    announces it on chain (what a worker does once its vote is revealed)."""
    world = story.world
    auditor = story.committees[(segment_id, round_id)].members[seat]
    report = seat_report(story, segment_id, round_id, seat, float(await now_seconds(world.chain) - 60))
    sealed = seal_report(report, trace_root=story.stored.root, recipient_key=provider_reply_key(story))
    cid = await kubo.add(sealed)
    ref = ReportRef(segment_id=segment_id, round=round_id, seat_index=seat, report_cid=cid)
    await world.protocol.segment_keys.publish_reports(world.wallets[auditor], story.session_id, [ref])
    story.report = (segment_id, round_id, seat, auditor, cid)


async def publish_unreadable_reports(story: Story, kubo: KuboClient) -> None:
    """Seats 0 and 1 of segment 0 announce reports the provider cannot read: seat 0 a CID whose
    bytes were never stored (no node can provide them), seat 1 a report sealed to another key."""
    world = story.world
    members = story.committees[(0, 0)].members
    started_at = float(await now_seconds(world.chain) - 60)
    other_key = X25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    lost = seal_report(seat_report(story, 0, 0, 0, started_at), trace_root=story.stored.root, recipient_key=other_key)
    missing = unixfs_cid(lost + b"never stored")
    wrong_key = await kubo.add(
        seal_report(seat_report(story, 0, 0, 1, started_at), trace_root=story.stored.root, recipient_key=other_key)
    )
    for seat, cid, why in ((0, missing, "unavailable"), (1, wrong_key, "unreadable")):
        ref = ReportRef(segment_id=0, round=0, seat_index=seat, report_cid=cid)
        await world.protocol.segment_keys.publish_reports(world.wallets[members[seat]], story.session_id, [ref])
        story.unreadable[(0, 0, seat)] = (cid, why)


FINAL_RESULTS = {0: True, 1: False, 2: True}
"""The decided segments' verdicts (segment 3 ends undetermined)."""
FINAL_ROUND = {0: 0, 1: 0, 2: 1}


def aligned_seats(story: Story) -> dict[str, list[tuple[int, int]]]:
    """(segment, seat index) of each auditor's aligned seats: revealed the decided outcome in the
    segment's final round."""
    seats: dict[str, list[tuple[int, int]]] = {}
    for segment_id, outcome in FINAL_RESULTS.items():
        committee = story.committees[(segment_id, FINAL_ROUND[segment_id])]
        for index, member in enumerate(committee.members):
            revealed = story.reveals.get((segment_id, committee.round, member))
            if revealed is not None and revealed[0] == outcome:
                seats.setdefault(member, []).append((segment_id, index))
    return seats


# ---------------------------------------------------------------------------------------- a server


def serve(app: FastAPI) -> contextlib.AbstractAsyncContextManager[str]:
    """Serves `app` in this event loop on a free port; yields its URL."""
    return serve_in_loop(app, "the explorer server")
