"""The attacks of the protocol's security review, replayed against the real contracts (`trust bench attacks`).

Each finding of the review (docs/protocol.md, "Threat model and hardening") is one function below: it
starts from a fresh Anvil with the protocol deployed as the devnet deploys it (`deploy_protocol`,
then the governance timelock owning every contract), but with the protocol parameters of the
settings rather than the devnet's one-seat committees, so that the numbers are the issue's; it plays the attacker with
web3 transactions from the attacker's own accounts, and returns what the chain then says: every
verdict is *measured* (a seat weight read from `seat()`, a revert decoded from the contract, a
`StakeForfeited` event, a segment's status), never assumed. A defence that does not hold is
reported `vulnerable`, with the check that failed. Findings the contracts do not defend yet are
`open` (`OPEN_FINDINGS`, one line each) and make the run fail as well: that is the truth until they
are built. Adding an attack is one function and one line in `ATTACKS`.

Every attack but H3 runs with the block-hash randomness source (insecure, but it seeds draws at once
and the attacks on stake, votes and batches do not depend on it). H3 is about that source: it runs
against the threshold BLS beacon the devnet deploys, with two of its three signers driven in
process, and replays a block producer that re-rolls the randomness block's hash.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eth_account.signers.local import LocalAccount
from eth_utils import keccak
from rich.console import Console
from rich.table import Table

from trust.beacon import bls
from trust.beacon.contract import BeaconContract, RandomnessStatus
from trust.beacon.keys import deal_group, load_signer, signer_file
from trust.beacon.signer import BeaconSigner
from trust.chain.anvil import AnvilNode
from trust.chain.client import ChainClient
from trust.chain.compiler import Artifact, compile_protocol
from trust.chain.deployment import RANDOMNESS_SOURCES, deploy_protocol, hand_to_timelock
from trust.chain.protocol import AuditContract, Protocol
from trust.chain.types import SeatCommit, SeatReveal, SegmentSpec, SegmentStatus
from trust.devnet import dev_account
from trust.errors import ContractReverted
from trust.settings import TOKEN, Settings
from trust.toolchain import Toolchain

__all__ = [
    "ATTACKS",
    "OPEN_FINDINGS",
    "Arena",
    "AttackOutcome",
    "AttacksReport",
    "render",
    "run_attacks",
]

Progress = Callable[[str], None]

DEFENDED = "defended"
VULNERABLE = "vulnerable"
OPEN = "open"

#: Findings with no defence in the contracts yet (docs/protocol.md's table), with the reason.
OPEN_FINDINGS: dict[str, str] = {
    "L2": "seats are not proportional to locked stake across accounts: splitting stake still wins more seats",
}

#: The order of the report (the issue's): attacks and open findings interleaved.
FINDINGS = ("H1", "H2", "H3", "M1", "M2", "M3", "M4", "M5", "L1", "L2", "L3", "L4")

_ETH = 10**18
_ACCOUNT_FUNDING_WEI = 100 * _ETH
#: Auditor and attacker accounts are derived from the devnet mnemonic from this index on (Anvil's
#: funded accounts are 0..9; the devnet's own auditors use random keys).
_FIRST_ACCOUNT_INDEX = 1_000
_BEACON_THRESHOLD = 2
_BEACON_SIGNERS = 3


@dataclass(frozen=True, slots=True)
class AttackOutcome:
    """One finding's result: `verdict` is defended, vulnerable or open; `steps` say what happened."""

    finding: str
    title: str
    verdict: str
    steps: tuple[str, ...]
    reason: str


@dataclass
class AttacksReport:
    outcomes: list[AttackOutcome] = field(default_factory=list)
    gas_per_seat: int | None = None

    @property
    def all_defended(self) -> bool:
        return all(o.verdict == DEFENDED for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        """The JSON line: each finding's verdict and the gas per seat of a normal session."""
        return {"attacks": {o.finding: o.verdict for o in self.outcomes}, "gas_per_seat": self.gas_per_seat}


class Checks:
    """What an attack saw, line by line, and the first defence that failed (the reason of `vulnerable`)."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.failed: str | None = None

    def saw(self, text: str) -> None:
        self.steps.append(text)

    def expect(self, ok: bool, text: str, failure: str) -> bool:
        """Records `text` when the defence held, `failure` (and the verdict) when it did not."""
        self.steps.append(text if ok else f"VULNERABLE: {failure}")
        if not ok and self.failed is None:
            self.failed = failure
        return ok

    def outcome(self, finding: str, title: str, held: str) -> AttackOutcome:
        verdict = DEFENDED if self.failed is None else VULNERABLE
        return AttackOutcome(finding, title, verdict, tuple(self.steps), self.failed or held)


@dataclass
class Arena:
    """A fresh chain with the protocol deployed: the accounts and moves every attack shares."""

    settings: Settings
    chain: ChainClient
    protocol: Protocol
    deployer: LocalAccount
    provider: LocalAccount
    keeper: LocalAccount
    #: The beacon's group and the folder of its signer files (H3 only: the other attacks use the block hash).
    beacon_group: bls.BeaconGroup | None = None
    beacon_dir: Path | None = None
    _indices: itertools.count[int] = field(default_factory=lambda: itertools.count(_FIRST_ACCOUNT_INDEX))

    @property
    def audit(self) -> AuditContract:
        return self.protocol.audit

    async def new_account(self) -> LocalAccount:
        """A fresh account with gas money (set directly: the faucet's transactions are not the attack)."""
        account = dev_account(self.settings.devnet.mnemonic, next(self._indices))
        await self.chain.rpc("anvil_setBalance", [account.address, hex(_ACCOUNT_FUNDING_WEI)])
        return account

    async def auditor(self, tier: int, stake_tokens: int) -> LocalAccount:
        """A new account registered in `tier` with `stake_tokens` whole tokens staked, as a worker registers."""
        account = await self.new_account()
        stake = stake_tokens * TOKEN
        await self.protocol.token.transfer(self.deployer, account.address, stake)
        await self.protocol.token.approve(account, self.protocol.registry.address, stake)
        await self.protocol.registry.register(account, tier, keccak(account.address.encode()), "attacks", stake)
        return account

    async def auditors(self, tier: int, stake_tokens: int, count: int) -> list[LocalAccount]:
        return [await self.auditor(tier, stake_tokens) for _ in range(count)]

    async def mine(self, blocks: int = 1) -> None:
        for _ in range(blocks):
            await self.chain.rpc("evm_mine", [])

    async def warp_past(self, timestamp: int) -> None:
        """Mines one block whose timestamp is after `timestamp` (the chain's clock only moves forward)."""
        latest = await self.chain.rpc("eth_getBlockByNumber", ["latest", False])
        await self.chain.rpc("evm_setNextBlockTimestamp", [max(int(latest["timestamp"], 16), timestamp) + 1])
        await self.mine()

    async def mine_to(self, block_number: int) -> None:
        """Mines until `block_number` is the latest block."""
        await self.mine(max(0, block_number - await self.chain.block_number()))

    async def open_session(self, specs: Sequence[SegmentSpec]) -> int:
        session_id, _ = await self.audit.create_session(self.provider, keccak(b"attacks"), specs)
        return int(session_id)

    async def draw(self, session_id: int, segment_ids: Sequence[int]) -> None:
        """Mines past the session's randomness block and draws (the keeper's batch)."""
        session = await self.audit.session(session_id)
        await self.mine_to(session.randomness_block + 1)
        await self.audit.assign_auditors(self.keeper, session_id, segment_ids)

    async def vote(
        self, session_id: int, segment_id: int, wallets: Mapping[str, LocalAccount], votes: Mapping[str, bool]
    ) -> None:
        """Every seat of the segment's current round commits, then reveals `votes[member]`."""
        segment = await self.audit.segment(session_id, segment_id)
        members = await self.audit.committee(session_id, segment_id)
        salts = {m: self.audit.new_salt() for m in members}
        for index, member in enumerate(members):
            commitment = await self.audit.commitment_of(
                session_id, segment_id, segment.round, member, votes[member], salts[member]
            )
            await self.audit.commit_votes(wallets[member], [SeatCommit(session_id, segment_id, index, commitment)])
        # Every seat committed, so the commit window closed with the last commit: reveal now.
        for index, member in enumerate(members):
            reveal = SeatReveal(session_id, segment_id, index, votes[member], salts[member])
            await self.audit.reveal_votes(wallets[member], [reveal])


async def refused(action: Awaitable[object]) -> str | None:
    """The contract error that refused `action`, or None when the transaction went through."""
    try:
        await action
    except ContractReverted as exc:
        if exc.error_name is None:
            return str(exc)
        shown = ", ".join(f"{k}={v}" for k, v in exc.error_args.items() if not isinstance(v, (bytes, list, tuple)))
        return f"{exc.error_name}({shown})"
    return None


def _wallets(accounts: Sequence[LocalAccount]) -> dict[str, LocalAccount]:
    return {str(a.address): a for a in accounts}


def _tokens(amount: int) -> str:
    return f"{amount / TOKEN:,.0f}" if amount % TOKEN == 0 else f"{amount / TOKEN:,.4f}"


def _spec(tier: int = 1, weight: int = 1, tag: int = 1) -> SegmentSpec:
    return SegmentSpec(tier=tier, weight=weight, content_digest=keccak(bytes([tag])))


# ---------------------------------------------------------------------------------------- attacks


async def h1_grinding(arena: Arena) -> Checks:
    """A provider with 23% of tier-1 stake in three accounts tries to learn the seed before its
    inputs are final, and to re-roll by cancelling."""
    c = Checks()
    await arena.auditors(1, 100, 10)
    own = await arena.auditors(1, 100, 3)
    c.saw("tier 1: 10 honest auditors of 100 tokens; the provider controls 3 more (300 of 1,300 tokens: 23%)")
    audit = arena.audit
    fee = await audit.minimum_fee([_spec(tag=1), _spec(tag=2)])
    session_id, _ = await audit.create_empty_session(arena.provider, keccak(b"grind"), 2, fee)
    await audit.register_segments(arena.provider, session_id, [_spec(tag=1)])
    session = await audit.session(session_id)
    c.expect(
        session.randomness_block == 0,
        "one of two segments registered: no randomness block is fixed yet (randomnessBlock = 0)",
        f"a registering session already has randomness block {session.randomness_block}",
    )
    await arena.mine(3)
    error = await refused(audit.assign_auditor(arena.provider, session_id, 0))
    c.expect(
        error is not None,
        f"drawing the registered segment to preview its committee: refused ({error})",
        "a segment of a registering session was drawn: its committee could be previewed",
    )
    balance = await arena.chain.balance(arena.provider.address)
    sent = await audit.cancel_session(arena.provider, session_id)
    gas_cost = sent.gas_used * int(sent.receipt["effectiveGasPrice"])
    refund = await arena.chain.balance(arena.provider.address) - balance + gas_cost
    c.saw(
        f"cancelled before opening: refunded {refund / _ETH:.6f} ETH of {fee / _ETH:.6f}, with no seed ever requested"
    )

    session_id, _ = await audit.create_empty_session(arena.provider, keccak(b"grind 2"), 2, fee)
    opened = await audit.register_segments(arena.provider, session_id, [_spec(tag=1), _spec(tag=2)])
    session = await audit.session(session_id)
    c.expect(
        session.randomness_block > opened.block_number,
        f"the last segment opened the session in block {opened.block_number}: randomness block "
        f"{session.randomness_block} (not mined yet, so nobody knew the seed while choosing the inputs)",
        f"the randomness block {session.randomness_block} was mined before the inputs were fixed "
        f"(block {opened.block_number})",
    )
    await arena.mine_to(session.randomness_block + 1)
    error = await refused(audit.cancel_session(arena.provider, session_id))
    c.expect(
        error is not None,
        f"cancelling once the seed is public, to re-roll: refused ({error})",
        "an open session was cancelled after its seed was public: the provider can re-roll for free",
    )
    error = await refused(audit.register_segments(arena.provider, session_id, [_spec(tag=3)], fee))
    c.expect(
        error is not None,
        f"adding a segment once the seed is public: refused ({error})",
        "a segment was added after the seed was public",
    )
    drawn = await audit.assign_auditors(arena.keeper, session_id, [0, 1])
    mine = {a.address for a in own}
    seats = [m for committee in audit.committees_in(drawn) for m in committee.members]
    c.saw(f"the draw seated the provider's accounts in {sum(m in mine for m in seats)} of {len(seats)} seats")
    return c


async def h2_unbacked_weight(arena: Arena) -> Checks:
    """A whale with 1,000,000 tokens unbonds all but the tier minimum once the snapshot is taken."""
    c = Checks()
    honest = await arena.auditors(1, 100, 4)
    whale = await arena.auditor(1, 1_000_000)
    c.saw("tier 1: a whale with 1,000,000 tokens against 4 honest auditors of 100")
    session_id = await arena.open_session([_spec()])
    session = await arena.audit.session(session_id)
    await arena.mine_to(session.randomness_block)
    await arena.protocol.registry.request_unstake(whale, 999_900 * TOKEN)
    c.saw(f"after the snapshot block {session.randomness_block}, the whale unbonded 999,900 tokens (keeping 100)")
    await arena.draw(session_id, [0])
    members = await arena.audit.committee(session_id, 0)
    if not c.expect(whale.address in members, "the draw seated the whale", "the whale was not seated; rerun"):
        return c
    index = members.index(whale.address)
    weight = (await arena.audit.seat(session_id, 0, 0, index)).weight
    bonded = (await arena.protocol.registry.auditor(whale.address)).stake
    c.expect(
        weight == bonded and weight < 1_000_000 * TOKEN,
        f"the whale's seat weighs {_tokens(weight)} tokens, its bonded stake (not 1,000,000)",
        f"the whale's seat weighs {_tokens(weight)} tokens against {_tokens(bonded)} bonded",
    )
    error = await refused(arena.protocol.registry.request_unstake(whale, bonded))
    c.expect(
        error is not None,
        f"unbonding the rest while the seat is open: refused ({error})",
        "the whale unbonded the stake behind its open seat",
    )
    wallets = _wallets([*honest, whale])
    await arena.vote(session_id, 0, wallets, {m: m != whale.address for m in members})
    await arena.audit.finalize_segments(arena.keeper, session_id, [0])
    status = (await arena.audit.segment(session_id, 0)).status
    c.expect(
        status == SegmentStatus.PASSED,
        "the whale voted Fail, the honest seats Pass: the segment passed",
        f"the whale's Fail decided the segment ({status.name})",
    )
    return c


async def h3_block_hash(arena: Arena) -> Checks:
    """A block producer with 23% of tier-1 stake re-rolls the hash of the randomness block."""
    c = Checks()
    await arena.auditors(1, 100, 10)
    await arena.auditors(1, 100, 3)
    beacon_address = arena.protocol.deployment.contracts[RANDOMNESS_SOURCES["beacon"]]
    beacon = BeaconContract(arena.chain, beacon_address)
    group = arena.beacon_group
    assert group is not None, "H3 runs on a beacon deployment"
    c.saw(f"randomness: the threshold BLS beacon ({group.threshold}-of-{group.count} signers) at {beacon_address}")
    session_id = await arena.open_session([_spec()])
    b = (await arena.audit.session(session_id)).randomness_block
    await arena.mine_to(b - 1)
    seeds: set[bytes] = set()
    hashes: set[bytes] = set()
    committees: set[tuple[str, ...]] = set()
    candidates = 3
    for candidate in range(candidates):
        snapshot = await arena.chain.rpc("evm_snapshot", [])
        block = await arena.chain.w3.eth.get_block("latest")
        # The producer picks the contents of block b: here its timestamp, which changes its hash.
        await arena.chain.rpc("evm_setNextBlockTimestamp", [int(block["timestamp"]) + 1 + candidate])
        await arena.mine(2)
        hashes.add(bytes((await arena.chain.w3.eth.get_block(b))["hash"]))
        error = await refused(arena.audit.assign_auditor(arena.keeper, session_id, 0))
        if candidate == 0:
            c.expect(
                (error or "").startswith("AuditRandomnessPending"),
                f"block {b} mined, its hash public: the draw is refused until the beacon signs ({error})",
                f"the draw used block {b} before the beacon's signature existed ({error or 'it went through'})",
            )
        value = await _run_signers(arena, beacon, b)
        seeds.add(value)
        if candidate == 0:
            shares = {s.index: s.partial for s in await beacon.shares(b, await arena.chain.block_number())}
            signature = bls.aggregate(shares, group.threshold)
            message = bls.beacon_message(arena.chain.chain_id, beacon_address, b)
            c.expect(
                bls.verify(group.group_key, message, signature) and bls.randomness_value(signature) == value,
                "the randomness is keccak of the group's BLS signature of (chain, beacon, block number): "
                "unique for the group key, verified on chain",
                "the published randomness is not the hash of a valid group signature",
            )
        await arena.audit.assign_auditor(arena.keeper, session_id, 0)
        committees.add(tuple(await arena.audit.committee(session_id, 0)))
        await arena.chain.rpc("evm_revert", [snapshot])
    c.expect(
        len(hashes) == candidates and len(seeds) == 1 and len(committees) == 1,
        f"{candidates} candidate blocks {b} with {len(hashes)} different hashes gave {len(seeds)} randomness "
        f"value and {len(committees)} committee: the producer picks nothing",
        f"{len(hashes)} candidate hashes gave {len(seeds)} values and {len(committees)} committees",
    )
    return c


async def _run_signers(arena: Arena, beacon: BeaconContract, block_number: int) -> bytes:
    """Drives signers 1..t (the last signer stays down) until `block_number`'s randomness is published."""
    group, folder = arena.beacon_group, arena.beacon_dir
    assert group is not None and folder is not None, "the signers run on a beacon deployment"
    keys = [load_signer(signer_file(folder, i), group) for i in range(1, _BEACON_THRESHOLD + 1)]
    signers = [BeaconSigner(beacon, key, group, [arena.audit.address]) for key in keys]
    for _ in range(10):
        for signer in signers:
            await signer.step()
        status, value = await beacon.randomness_at(block_number)
        if status is RandomnessStatus.READY:
            return value
        await arena.mine()  # a backup publisher waits a few blocks for the designated one
    raise RuntimeError(f"the beacon signers did not publish block {block_number}'s randomness")


async def m1_veto(arena: Arena) -> Checks:
    """A seat with more than 1 - tau of a round's weight votes against the majority."""
    c = Checks()
    honest = await arena.auditors(1, 100, 2)
    vetoer = await arena.auditor(1, 300)
    higher = await arena.auditors(2, 1_000, 7)
    c.saw("tier 1: a vetoer with 300 tokens and 2 honest auditors of 100 (the vetoer holds 60% > 1 - tau); tier 2: 7")
    wallets = _wallets([*honest, vetoer, *higher])
    session_id = await arena.open_session([_spec()])
    await arena.draw(session_id, [0])
    members = await arena.audit.committee(session_id, 0)
    if not c.expect(vetoer.address in members, "round 1 seated the vetoer", "the vetoer was not seated"):
        return c
    before = await arena.protocol.registry.auditor(vetoer.address)
    await arena.vote(session_id, 0, wallets, {m: m != vetoer.address for m in members})
    escalated = await arena.audit.finalize_segments(arena.keeper, session_id, [0])
    c.saw(
        "the vetoer voted Fail, the others Pass: round 1 "
        + ("undecided, escalated to the next tier" if arena.audit.escalations_in(escalated) == [0] else "decided")
    )
    locked = (await arena.protocol.registry.auditor(vetoer.address)).locked
    c.expect(
        locked >= before.locked > 0,
        f"the vetoer's seat stays locked through the escalation ({_tokens(locked)} tokens)",
        "the vetoer's seat was released at the escalation, without penalty",
    )
    segment = await arena.audit.segment(session_id, 0)
    await arena.mine_to(segment.randomness_block + 1)
    await arena.audit.assign_auditors(arena.keeper, session_id, [0])
    round2 = await arena.audit.committee(session_id, 0)
    await arena.vote(session_id, 0, wallets, dict.fromkeys(round2, True))
    start = await arena.chain.block_number()
    await arena.audit.finalize_segments(arena.keeper, session_id, [0])
    status = (await arena.audit.segment(session_id, 0)).status
    after = await arena.protocol.registry.auditor(vetoer.address)
    lost = sum(a for who, a, _, _ in await arena.protocol.registry.forfeits(start) if who == vetoer.address)
    c.expect(
        status == SegmentStatus.PASSED and after.reputation_wad < before.reputation_wad and after.locked == 0,
        f"round 2 ({len(round2)} tier-2 seats) passed the segment; the vetoer was settled misaligned: reputation "
        f"{before.reputation_wad / _ETH:.3f} -> {after.reputation_wad / _ETH:.3f}, slash roll took "
        f"{_tokens(lost)} tokens",
        f"segment {status.name}; the vetoer's reputation {before.reputation_wad} -> {after.reputation_wad}, "
        f"locked {after.locked}: the veto cost nothing",
    )
    return c


async def m2_skip_budget(arena: Arena) -> Checks:
    """70 sybil accounts holding most of a tier's weight unbond between the snapshot and the draw."""
    c = Checks()
    honest = await arena.auditors(1, 100, 5)
    sybils = await arena.auditors(1, 100, 70)
    c.saw("tier 1: 70 sybil accounts of 100 tokens (7,000) against 5 honest auditors (500)")
    session_id = await arena.open_session([_spec()])
    session = await arena.audit.session(session_id)
    start = await arena.chain.block_number()
    await arena.mine_to(session.randomness_block)
    for sybil in sybils:
        await arena.protocol.registry.request_unstake(sybil, 100 * TOKEN)
    c.saw(f"after the snapshot block {session.randomness_block}, every sybil unbonded all its stake")
    attempts = 0
    while (await arena.audit.segment(session_id, 0)).status == SegmentStatus.AWAITING_DRAW and attempts < 10:
        segment = await arena.audit.segment(session_id, 0)
        await arena.mine_to(max(segment.randomness_block, session.randomness_block) + 1)
        await arena.audit.assign_auditors(arena.keeper, session_id, [0])
        attempts += 1
    sybil_set = {s.address for s in sybils}
    charged = [
        (who, amount)
        for who, amount, reason, _ in await arena.protocol.registry.forfeits(start)
        if "snapshot" in reason
    ]
    members = await arena.audit.committee(session_id, 0)
    total = sum(amount for _, amount in charged)
    c.expect(
        bool(charged) and all(who in sybil_set for who, _ in charged),
        f"{len(charged)} drawn sybils were charged as deserters, {_tokens(total)} tokens in all "
        f"(draw transactions: {attempts})",
        "no sybil was charged for deserting the draw" if not charged else "an honest auditor was charged",
    )
    c.expect(
        bool(members) and not sybil_set & set(members),
        f"the committee seated honest auditors only ({len(members)} seats)",
        f"the committee is {members}: the sybils exhausted the draw",
    )
    if members and not sybil_set & set(members):
        await arena.vote(session_id, 0, _wallets(honest), dict.fromkeys(members, True))
        await arena.audit.finalize_segments(arena.keeper, session_id, [0])
    status = (await arena.audit.segment(session_id, 0)).status
    c.expect(
        status == SegmentStatus.PASSED,
        "the honest committee decided the segment: Passed",
        f"the segment ended {status.name}",
    )
    held = 0
    for sybil in sybils:
        info = await arena.protocol.registry.auditor(sybil.address)
        held += info.stake + info.unbonding
    c.expect(
        held == 7_000 * TOKEN - total,
        f"the sybils hold {_tokens(held)} of their 7,000 tokens: they lost what they were charged",
        f"the sybils hold {_tokens(held)} tokens after {_tokens(total)} charged",
    )
    return c


async def m3_withheld_envelopes(arena: Arena) -> Checks:
    """The provider opens a session and publishes no key envelope, so that every seat is silent."""
    c = Checks()
    honest = await arena.auditors(1, 100, 3)
    await arena.auditors(2, 1_000, 7)  # a next tier to escalate into, had the round escalated
    session_id = await arena.open_session([_spec()])
    await arena.draw(session_id, [0])
    members = await arena.audit.committee(session_id, 0)
    wallets = _wallets(honest)
    registry = arena.protocol.registry
    before = {m: await registry.auditor(m) for m in members}
    fee = (await arena.audit.session(session_id)).fee_wei
    segment = await arena.audit.segment(session_id, 0)
    c.saw(f"3 honest tier-1 auditors seated; the provider publishes no key envelope (fee {fee} wei)")
    await arena.warp_past(segment.delivery_deadline)
    claims = [arena.audit.claim_undelivered(wallets[m], session_id, 0, index) for index, m in enumerate(members)]
    errors = [await refused(claim) for claim in claims]
    if not c.expect(
        errors == [None] * len(members),
        "past the delivery deadline (half the commit window) each seat claimed 'no envelope', checked on chain",
        f"the claims were refused: {errors}",
    ):
        return c
    locked = [(await registry.auditor(m)).locked for m in members]
    c.expect(all(x == 0 for x in locked), "each claim released its seat's stake at once", f"still locked: {locked}")
    await arena.warp_past((await arena.audit.segment(session_id, 0)).reveal_deadline)
    await arena.audit.finalize_segments(arena.keeper, session_id, [0])
    segment = await arena.audit.segment(session_id, 0)
    c.expect(
        segment.status == SegmentStatus.UNDETERMINED and segment.round == 0,
        "the round, undelivered, ended Undetermined instead of escalating: nobody else was drawn in",
        f"segment {segment.status.name} in round {segment.round}: the trap grew",
    )
    lost = [before[m].stake - (await registry.auditor(m)).stake for m in members]
    moved = [(await registry.auditor(m)).reputation_wad - before[m].reputation_wad for m in members]
    paid = [await arena.audit.claimable(m) for m in members]
    rest = (await arena.audit.session(session_id)).fee_wei
    c.expect(
        all(x == 0 for x in lost) and all(x == 0 for x in moved) and all(p > 0 for p in paid),
        f"no stake forfeited, no reputation moved; each seat was credited {paid[0]} wei (R) out of the provider's "
        f"fee ({rest} wei left of {fee})",
        f"forfeited {[_tokens(x) for x in lost]}, reputation moved {moved}, credited {paid}",
    )
    return c


async def m4_round_too_big(arena: Arena) -> Checks:
    """Governance sets committees of 127 seats, whose settlement would exceed a transaction's gas cap."""
    c = Checks()
    params = await arena.protocol.params.params()
    big = {**params, "maxRounds": 1, "committeeSizeTier1": 127}
    calldata = arena.protocol.params.set_params_calldata(big)
    timelock = arena.protocol.timelock
    salt = keccak(b"m4")
    await timelock.schedule(arena.deployer, arena.protocol.params.address, calldata, salt)
    await arena.chain.rpc("evm_increaseTime", [await timelock.min_delay() + 1])
    await arena.mine()
    error = await refused(timelock.execute(arena.deployer, arena.protocol.params.address, calldata, salt))
    c.expect(
        (error or "").startswith("ParamsOutOfRange(name=committeeSizeTier1"),
        f"a timelocked setParams with one round of 127 tier-1 seats (settlement above EIP-7825's 16,777,216 gas): "
        f"refused ({error})",
        "ProtocolParams accepted 127-seat committees: their settlement cannot fit in one transaction",
    )
    current = (await arena.protocol.params.params())["committeeSizeTier1"]
    c.expect(current == params["committeeSizeTier1"], f"tier-1 committees stay at {current}", "the params changed")
    return c


async def m5_weights(arena: Arena) -> Checks:
    """The provider declares a weight-1 step beside a weight-1000 step, so that a failure of the first
    cannot make the trace invalid."""
    c = Checks()
    specs = [_spec(weight=1, tag=1), _spec(weight=1_000, tag=2)]
    error = await refused(arena.audit.create_session(arena.provider, keccak(b"m5"), specs))
    ratio = (await arena.protocol.params.params())["maxWeightRatio"]
    c.expect(
        error is not None,
        f"a session with weights 1 and 1,000: refused ({error}; at most {ratio} times the lightest)",
        "a session whose heaviest segment weighs 1,000 times its lightest was accepted",
    )
    return c


async def l1_just_in_time_stake(arena: Arena) -> Checks:
    """A staker sees a session's `distributeRewards` coming, stakes just before it and leaves just after."""
    c = Checks()
    honest = await arena.auditors(1, 100, 5)
    c.saw("tier 1: 5 auditors of 100 tokens, staked before the session")
    session_id = await arena.open_session([_spec()])
    await arena.draw(session_id, [0])
    members = await arena.audit.committee(session_id, 0)
    await arena.vote(session_id, 0, _wallets(honest), dict.fromkeys(members, True))
    await arena.audit.finalize_segments(arena.keeper, session_id, [0])
    await arena.audit.finalize_trace(arena.keeper, session_id)
    registry = arena.protocol.registry
    # Seen in the mempool: the attacker's stake lands in the block before the distribution.
    attacker = await arena.auditor(1, 9_500)
    held_before = await arena.chain.balance(registry.address)
    await arena.audit.distribute_rewards(arena.keeper, session_id)
    share = await arena.chain.balance(registry.address) - held_before
    await arena.chain.rpc("evm_increaseTime", [12])
    await registry.request_unstake(attacker, 9_500 * TOKEN)
    taken = await registry.pending_staker_reward(attacker.address)
    c.saw(
        f"an attacker staked 9,500 tokens (95% of the stake) just before the distribution of {share:,} wei "
        "to stakers, and asked to unstake a block (12 s) later"
    )
    c.expect(
        taken * 10_000 < share,
        f"the attacker earned {taken:,} wei: its seconds of the stream, under 0.01% of the stakers' share",
        f"the attacker earned {taken:,} wei of the {share:,} wei stakers' share for seconds of stake",
    )
    stream = await registry.staker_reward_stream()
    now = int((await arena.chain.w3.eth.get_block("latest"))["timestamp"])
    await arena.chain.rpc("evm_increaseTime", [max(stream.period_finish - now, 0) + 1])
    await arena.mine()
    kept = sum([await registry.pending_staker_reward(a.address) for a in honest])
    c.expect(
        kept + taken <= share and kept * 100 >= (share - taken) * 99,
        f"once the stream ended, the auditors staked throughout held {kept:,} wei: the rest of the share",
        f"the auditors staked throughout held {kept:,} wei of the {share - taken:,} wei left",
    )
    return c


async def l3_slash_dodge(arena: Arena) -> Checks:
    """An auditor sees a governance slash in the timelock and unbonds, or holds less than the amount."""
    c = Checks()
    dodger = await arena.auditor(1, 1_000)
    small = await arena.auditor(1, 300)
    timelock = arena.protocol.timelock
    slashes = [(dodger, 500), (small, 500)]
    calls = [arena.audit.slash_auditor_calldata(a.address, n * TOKEN, "governance: attacks") for a, n in slashes]
    for i, calldata in enumerate(calls):
        await timelock.schedule(arena.deployer, arena.audit.address, calldata, keccak(bytes([i])))
    c.saw("governance scheduled slashes of 500 tokens of an auditor with 1,000 and of one with 300")
    await arena.protocol.registry.request_unstake(dodger, 1_000 * TOKEN)
    await arena.chain.rpc("evm_increaseTime", [await timelock.min_delay() + 1])
    await arena.mine()
    error = await refused(arena.protocol.registry.execute_unstake(dodger))
    c.expect(
        error is not None,
        f"the first unbonded all 1,000 tokens; withdrawing them once the timelock's delay passed: refused ({error})",
        "the dodger withdrew its stake before the timelocked slash executed",
    )
    for (account, amount), calldata, i in zip(slashes, calls, range(len(calls)), strict=True):
        before = await arena.protocol.registry.auditor(account.address)
        reachable = before.stake - before.locked + before.unbonding
        error = await refused(timelock.execute(arena.deployer, arena.audit.address, calldata, keccak(bytes([i]))))
        after = await arena.protocol.registry.auditor(account.address)
        taken = reachable - (after.stake - after.locked + after.unbonding)
        c.expect(
            error is None and taken == min(amount * TOKEN, reachable),
            f"the slash of {amount} tokens executed: it took {_tokens(taken)} of {_tokens(reachable)} within reach",
            f"the slash of {amount} tokens {'reverted (' + error + ')' if error else f'took {_tokens(taken)}'}",
        )
    return c


async def l4_front_run_batch(arena: Arena) -> Checks:
    """Someone draws, then finalizes, one segment of a keeper's batch just before the batch."""
    c = Checks()
    honest = await arena.auditors(1, 100, 5)
    wallets = _wallets(honest)
    front_runner = await arena.new_account()
    session_id = await arena.open_session([_spec(tag=i) for i in range(1, 4)])
    session = await arena.audit.session(session_id)
    await arena.mine_to(session.randomness_block + 1)
    await arena.audit.assign_auditor(front_runner, session_id, 0)
    error = await refused(arena.audit.assign_auditors(arena.keeper, session_id, [0, 1, 2]))
    statuses = [(await arena.audit.segment(session_id, i)).status for i in range(3)]
    c.expect(
        error is None and all(s == SegmentStatus.VOTING for s in statuses),
        "a front-runner drew segment 0 first; the keeper's draw of [0, 1, 2] went through (all 3 voting)",
        f"the keeper's draw batch {'reverted: ' + error if error else 'left ' + str([s.name for s in statuses])}",
    )
    for i in range(3):
        if statuses[i] == SegmentStatus.VOTING:
            members = await arena.audit.committee(session_id, i)
            await arena.vote(session_id, i, wallets, dict.fromkeys(members, True))
    await arena.audit.finalize_segment(front_runner, session_id, 0)
    error = await refused(arena.audit.finalize_segments(arena.keeper, session_id, [0, 1, 2]))
    statuses = [(await arena.audit.segment(session_id, i)).status for i in range(3)]
    c.expect(
        error is None and all(s == SegmentStatus.PASSED for s in statuses),
        "a front-runner finalized segment 0 first; the keeper's finalization of [0, 1, 2] went through (all passed)",
        f"the keeper's finalize batch {'reverted: ' + error if error else 'left ' + str([s.name for s in statuses])}",
    )
    return c


@dataclass(frozen=True, slots=True)
class Attack:
    title: str
    run: Callable[[Arena], Awaitable[Checks]]
    held: str  # one line for the table when the defence held
    randomness: str = "blockhash"


ATTACKS: dict[str, Attack] = {
    "H1": Attack(
        "committee grinding by the provider", h1_grinding, "the seed is requested only once every input is fixed"
    ),
    "H2": Attack("voting weight not backed by stake", h2_unbacked_weight, "a seat weighs the stake bonded behind it"),
    "H3": Attack("block-hash randomness", h3_block_hash, "a threshold BLS beacon seeds the draw", "beacon"),
    "M1": Attack("free veto", m1_veto, "a vetoer is judged against the later round's verdict"),
    "M2": Attack("sybils exhaust the skip budget", m2_skip_budget, "deserters pay P; the draw retries"),
    "M3": Attack(
        "providers burn honest stake", m3_withheld_envelopes, "undelivered seats claim their release, paid from the fee"
    ),
    "M4": Attack("a round too big to finalize", m4_round_too_big, "validate bounds the settlement gas"),
    "M5": Attack("the provider's weights decide validity", m5_weights, "weights spread at most maxWeightRatio"),
    "L1": Attack(
        "just-in-time staking takes the stakers' share", l1_just_in_time_stake, "the share streams over a week"
    ),
    "L3": Attack("dodging a governance slash", l3_slash_dodge, "a slash takes what is within reach"),
    "L4": Attack("a front-run finalize reverts a batch", l4_front_run_batch, "batches skip what is done"),
}


async def _run_attack(
    name: str, attack: Attack, settings: Settings, toolchain: Toolchain, artifacts: dict[str, Artifact]
) -> AttackOutcome:
    """Runs one attack on its own fresh chain, deployed as the devnet deploys (timelock included)."""
    devnet = settings.devnet
    with AnvilNode.start(toolchain, mnemonic=devnet.mnemonic) as node, tempfile.TemporaryDirectory() as tmp:
        async with ChainClient(node.rpc_url, artifacts, tx_timeout_seconds=settings.tx_timeout_seconds) as chain:
            deployer = dev_account(devnet.mnemonic, 0)
            beacon_dir = Path(tmp) / "beacon"
            group = None
            if attack.randomness == "beacon":
                group = deal_group(beacon_dir, _BEACON_THRESHOLD, _BEACON_SIGNERS)
                for operator in group.operators:
                    await chain.rpc("anvil_setBalance", [operator, hex(_ACCOUNT_FUNDING_WEI)])
            deployment = await deploy_protocol(
                chain,
                deployer,
                settings.protocol,
                settings.governance,
                treasury=dev_account(devnet.mnemonic, 1).address,
                insurance_fund=dev_account(devnet.mnemonic, 2).address,
                randomness=attack.randomness,
                beacon_group=group,
            )
            deployment = await hand_to_timelock(chain, deployer, deployment)
            arena = Arena(
                settings=settings,
                chain=chain,
                protocol=Protocol.bind(chain, deployment),
                deployer=deployer,
                provider=dev_account(devnet.mnemonic, 3),
                keeper=dev_account(devnet.mnemonic, 4),
                beacon_group=group,
                beacon_dir=beacon_dir,
            )
            checks = await attack.run(arena)
    return checks.outcome(name, attack.title, attack.held)


async def run_attacks(
    settings: Settings,
    *,
    only: Sequence[str] | None = None,
    measure_gas: bool = True,
    progress: Progress | None = None,
) -> AttacksReport:
    """Replays the findings `only` names (all of `FINDINGS` by default), each on a fresh Anvil, and
    measures the gas per seat of a normal session as `trust bench gas` does (one session)."""
    names = list(only) if only else list(FINDINGS)
    unknown = [n for n in names if n not in FINDINGS]
    if unknown:
        raise ValueError(f"unknown finding(s) {', '.join(unknown)}: pick from {', '.join(FINDINGS)}")
    say = progress or (lambda _text: None)
    toolchain = Toolchain.discover()
    artifacts = compile_protocol(toolchain)
    report = AttacksReport()
    for name in [n for n in FINDINGS if n in names]:
        if name in OPEN_FINDINGS:
            report.outcomes.append(AttackOutcome(name, "not defended yet", OPEN, (), OPEN_FINDINGS[name]))
            continue
        attack = ATTACKS[name]
        say(f"{name}: {attack.title}")
        report.outcomes.append(await _run_attack(name, attack, settings, toolchain, artifacts))
    if measure_gas:
        from trust.bench.gas import run_gas_benchmark

        say("gas per seat of a normal session")
        gas = await run_gas_benchmark(runs=1, delivery_sets=())
        report.gas_per_seat = gas.per_seat_total
    return report


def render(report: AttacksReport, console: Console, *, json_only: bool = False) -> None:
    """Prints each finding with what happened, then the JSON line (the last line of output)."""
    if not json_only:
        table = Table(title="attacks of the security review, replayed on fresh chains", show_lines=True)
        table.add_column("finding")
        table.add_column("verdict")
        table.add_column("what happened")
        colour = {DEFENDED: "green", VULNERABLE: "red", OPEN: "yellow"}
        for o in report.outcomes:
            story = "\n".join(o.steps) if o.steps else o.reason
            table.add_row(f"{o.finding}\n{o.title}", f"[{colour[o.verdict]}]{o.verdict}[/]", story)
        console.print(table)
        if report.gas_per_seat is not None:
            console.print(f"gas per seat of a normal session: {report.gas_per_seat:,}")
    print(json.dumps(report.to_json()), flush=True)
