"""The attacks of the protocol's security review, replayed against the real contracts (`trust bench attacks`).

Each finding of the review (docs/protocol.md, "Threat model and hardening") is one function below: it
starts from a fresh Anvil with the protocol deployed as the devnet deploys it (`deploy_protocol`,
then the governance timelock owning every contract), but with the protocol parameters of the
settings rather than the devnet's one-seat committees, so that the numbers are the issue's (an
attack may change a parameter it needs, `Attack.protocol`: M1 draws tier-1 committees of five,
since at tau = 0.66 any split of three votes decides); it plays the attacker with web3 transactions
from the attacker's own accounts, and returns what the chain then says: every verdict is *measured*
(a seat's units read from `seat()`, a committee drawn by the registry's own `drawCommittee`, a
revert decoded from the contract, a `StakeForfeited` event, a segment's status), never assumed. A
defence that does not hold is reported `vulnerable`, with the check that failed. Findings the
contracts do not defend yet are `open` (`OPEN_FINDINGS`, one line each; none now) and make the run
fail as well: that is the truth until they are built. Adding an attack is one function and one line
in `ATTACKS`.

Every attack but H3 runs with the block-hash randomness source (insecure, but it seeds draws at once
and the attacks on stake, votes and batches do not depend on it). H3 is about that source: it runs
against the threshold BLS beacon the devnet deploys, with two of its three signers driven in
process, and replays a block producer that re-rolls the randomness block's hash.
"""

from __future__ import annotations

import itertools
import json
import math
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eth_account.signers.local import LocalAccount
from eth_utils import keccak
from rich.console import Console
from rich.table import Table

from trust.adapters.chain.beacon import BeaconContract, RandomnessStatus
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.deployment import RANDOMNESS_SOURCES, deploy_protocol, hand_to_timelock
from trust.adapters.chain.protocol import (
    SETTLEMENT_CHUNK_SEATS,
    AuditContract,
    Protocol,
    open_chain,
    protocol_artifacts,
)
from trust.adapters.chain.types import SeatCommit, SeatReveal, SegmentSpec, SegmentStatus
from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.anvil import AnvilNode
from trust.adapters.local.beacon.keys import deal_group, load_signer, signer_file
from trust.adapters.local.toolchain import Toolchain
from trust.core.beacon import bls
from trust.core.cid import unixfs_cid
from trust.errors import ContractReverted
from trust.services.beacon.signer import BeaconSigner
from trust.settings import TOKEN, ProtocolSettings, Settings

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
OPEN_FINDINGS: dict[str, str] = {}

#: The order of the report (the issue's): attacks and open findings interleaved.
FINDINGS = ("H1", "H2", "H3", "M1", "M2", "M3", "M4", "M5", "L1", "L2", "L3", "L4")

_ETH = 10**18
_BPS = 10_000
_ACCOUNT_FUNDING_WEI = 100 * _ETH
#: Auditor and attacker accounts are derived from the devnet mnemonic from this index on (Anvil's
#: funded accounts are 0..9; the devnet's own auditors use random keys).
_FIRST_ACCOUNT_INDEX = 1_000
_BEACON_THRESHOLD = 2
_BEACON_SIGNERS = 3
#: `ParamsLib.SETTLEMENT_GAS_BUDGET`: the most gas one draw or settlement step may need (M4).
_SETTLEMENT_GAS_BUDGET = 12_000_000


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

    async def units(self, session_id: int, segment_id: int) -> dict[str, int]:
        """Each member of the segment's current committee with its units: the draws it won (a seat
        votes, locks P, earns R and forfeits P that many times)."""
        segment = await self.audit.segment(session_id, segment_id)
        members = await self.audit.committee(session_id, segment_id)
        return {
            m: (await self.audit.seat(session_id, segment_id, segment.round, i)).weight for i, m in enumerate(members)
        }


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
    await audit.assign_auditors(arena.keeper, session_id, [0, 1])
    mine = {a.address for a in own}
    units = [await arena.units(session_id, g) for g in (0, 1)]
    won = sum(u for drawn in units for m, u in drawn.items() if m in mine)
    c.saw(f"the draw gave the provider's accounts {won} of the {sum(sum(d.values()) for d in units)} committee votes")
    return c


async def h2_unbacked_weight(arena: Arena) -> Checks:
    """A whale with 1,000,000 tokens unbonds all but the tier minimum once the snapshot is taken,
    hoping to vote with the weight the snapshot counted."""
    c = Checks()
    honest = await arena.auditors(1, 100, 4)
    whale = await arena.auditor(1, 1_000_000)
    c.saw("tier 1: a whale with 1,000,000 tokens against 4 honest auditors of 100")
    registry = arena.protocol.registry
    session_id = await arena.open_session([_spec()])
    session = await arena.audit.session(session_id)
    await arena.mine_to(session.randomness_block)
    start = await arena.chain.block_number()
    await registry.request_unstake(whale, 999_900 * TOKEN)
    c.saw(f"after the snapshot block {session.randomness_block}, the whale unbonded 999,900 tokens (keeping 100)")
    await arena.draw(session_id, [0])
    units = await arena.units(session_id, 0)
    penalty = (await arena.audit.session_params(session_id))["penaltyPerSeat"]
    charged = [
        amount
        for who, amount, reason, _ in await registry.forfeits(start)
        if who == whale.address and "snapshot" in reason
    ]
    c.expect(
        whale.address not in units and charged == [penalty],
        f"the draw passed the whale over (stake that may leave backs no vote) and charged it P = "
        f"{_tokens(penalty)} tokens of its unbonding stake; the committee is {len(units)} honest seats",
        f"the whale {'sat' if whale.address in units else 'was passed over'} and was charged {charged}",
    )
    k = (await arena.audit.segment(session_id, 0)).committee_size
    locked = {m: (await registry.auditor(m)).locked for m in units}
    c.expect(
        sum(units.values()) == k and all(locked[m] == u * penalty for m, u in units.items()),
        f"each seat weighs the draws it won ({sorted(units.values(), reverse=True)}, {k} in all), each backed "
        f"by P locked: {', '.join(_tokens(v) for v in locked.values())} tokens",
        f"seat weights {units} against locks {locked} (P = {_tokens(penalty)})",
    )
    seated = next(iter(units))
    error = await refused(registry.request_unstake(_wallets(honest)[seated], 1))
    c.expect(
        error is not None,
        f"a seated auditor unbonding while its seat is open: refused ({error})",
        "a seated auditor unbonded the stake behind its open seat",
    )
    await arena.vote(session_id, 0, _wallets(honest), dict.fromkeys(units, True))
    await arena.audit.finalize_segments(arena.keeper, session_id, [0])
    status = (await arena.audit.segment(session_id, 0)).status
    c.expect(
        status == SegmentStatus.PASSED,
        "the honest seats decided the segment: Passed",
        f"the segment ended {status.name}",
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


M1_SEGMENTS = 8
"""Segments of the veto session: the vetoer blocks those where it won more than 1 - tau and less than
tau of the votes (2 or 3 of 5, with half the stake: 5/8 of the committees), so that eight leave
none to block about once in 2,500 runs."""
M1_COMMITTEE_SIZE = 5
"""Tier-1 committees of M1: at tau = 0.66 a committee of three cannot be vetoed (any split of three
votes gives one side 2/3), one of five can (2 or 3 votes of 5 decide neither way)."""


async def m1_veto(arena: Arena) -> Checks:
    """A vetoer votes against the majority wherever it holds more than 1 - tau of a round's votes."""
    c = Checks()
    honest = await arena.auditors(1, 500, 3)
    vetoer = await arena.auditor(1, 1_500)
    higher = await arena.auditors(2, 1_000, 7)
    c.saw(
        f"tier 1 (committees of {M1_COMMITTEE_SIZE} draws): a vetoer with 1,500 tokens and 3 honest auditors of 500 "
        "(half the stake); tier 2: 7 auditors"
    )
    wallets = _wallets([*honest, vetoer, *higher])
    registry = arena.protocol.registry
    tau_bps = (await arena.protocol.params.params())["tauBps"]
    session_id = await arena.open_session([_spec(tag=g) for g in range(1, M1_SEGMENTS + 1)])
    await arena.draw(session_id, list(range(M1_SEGMENTS)))
    units = {g: await arena.units(session_id, g) for g in range(M1_SEGMENTS)}

    def blocks(drawn: Mapping[str, int]) -> bool:
        mine, k = drawn.get(vetoer.address, 0), sum(drawn.values())
        return (k - mine) * _BPS < tau_bps * k and mine * _BPS < tau_bps * k

    vetoed = [g for g in range(M1_SEGMENTS) if blocks(units[g])]
    share = [units[g].get(vetoer.address, 0) for g in range(M1_SEGMENTS)]
    if not c.expect(
        bool(vetoed),
        f"round 1 gave the vetoer {share} of {M1_COMMITTEE_SIZE} votes: it can block segments {vetoed}",
        f"the vetoer won {share} votes: no round to block (rerun)",
    ):
        return c
    for g in range(M1_SEGMENTS):
        await arena.vote(session_id, g, wallets, {m: g not in vetoed or m != vetoer.address for m in units[g]})
    sent = await arena.audit.finalize_segments(arena.keeper, session_id, list(range(M1_SEGMENTS)))
    escalated = sorted(arena.audit.escalations_in(sent))
    # Read once round 1 is settled: the segments it decided moved the vetoer's reputation already
    # (up where it voted with the majority), so only what the deciding round does is compared.
    before = await registry.auditor(vetoer.address)
    locked = before.locked
    penalty = (await arena.audit.session_params(session_id))["penaltyPerSeat"]
    held = sum(units[g][vetoer.address] for g in vetoed) * penalty
    c.expect(
        escalated == vetoed and locked == held > 0,
        f"the vetoer voted Fail where it could block, Pass elsewhere: segments {escalated} undecided and escalated "
        f"to tier 2; the vetoer's seats there stay locked through the escalation ({_tokens(locked)} tokens)",
        f"escalated {escalated} of the vetoed {vetoed}; the vetoer holds {_tokens(locked)} locked, not "
        f"{_tokens(held)}: the veto was released without penalty",
    )
    for g in escalated:
        segment = await arena.audit.segment(session_id, g)
        await arena.mine_to(segment.randomness_block + 1)
    await arena.audit.assign_auditors(arena.keeper, session_id, escalated)
    seats2 = 0
    for g in escalated:
        round2 = await arena.audit.committee(session_id, g)
        seats2 += len(round2)
        await arena.vote(session_id, g, wallets, dict.fromkeys(round2, True))
    start = await arena.chain.block_number()
    await arena.audit.finalize_segments(arena.keeper, session_id, escalated)
    statuses = [(await arena.audit.segment(session_id, g)).status for g in escalated]
    after = await registry.auditor(vetoer.address)
    lost = sum(a for who, a, _, _ in await registry.forfeits(start) if who == vetoer.address)
    c.expect(
        all(s == SegmentStatus.PASSED for s in statuses)
        and after.reputation_wad < before.reputation_wad
        and after.locked == 0,
        f"round 2 ({seats2} tier-2 seats in all) passed every vetoed segment; the vetoer was settled misaligned on "
        f"each: reputation {before.reputation_wad / _ETH:.3f} -> {after.reputation_wad / _ETH:.3f}, slash rolls took "
        f"{_tokens(lost)} tokens",
        f"segments {[s.name for s in statuses]}; the vetoer's reputation {before.reputation_wad} -> "
        f"{after.reputation_wad}, locked {after.locked}: the veto cost nothing",
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
        f"the committee seated honest auditors only ({len(members)} of them)",
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
    units = await arena.units(session_id, 0)
    reward = (await arena.audit.session_params(session_id))["rewardPerSeatWei"]
    c.saw(
        f"{len(members)} honest tier-1 seats ({sum(units.values())} votes); the provider publishes no key envelope "
        f"(fee {fee} wei)"
    )
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
        all(x == 0 for x in lost)
        and all(x == 0 for x in moved)
        and paid == [reward * units[m] for m in members]
        and rest == fee - sum(paid),
        f"no stake forfeited, no reputation moved; each seat was credited R per vote ({', '.join(map(str, paid))} "
        f"wei) out of the provider's fee ({rest} wei left of {fee})",
        f"forfeited {[_tokens(x) for x in lost]}, reputation moved {moved}, credited {paid}",
    )
    await _m3_corrupt_envelopes(arena, c, wallets)
    return c


async def _m3_corrupt_envelopes(arena: Arena, c: Checks, wallets: Mapping[str, LocalAccount]) -> None:
    """The provider publishes envelopes on chain in time, but ones that open for nobody (bytes of
    no envelope, under their true CIDs): delivery is recorded, so no seat can claim its release. Each
    seat votes fail with its reason, as the worker does for what it cannot read (docs/worker.md):
    the segment fails at once and nobody forfeits."""
    registry = arena.protocol.registry
    session_id = await arena.open_session([_spec(tag=2)])
    await arena.draw(session_id, [0])
    members = await arena.audit.committee(session_id, 0)
    before = {m: await registry.auditor(m) for m in members}
    corrupt = [unixfs_cid(b"no envelope opens here %d" % index) for index in range(len(members))]
    await arena.protocol.segment_keys.publish_envelopes(arena.provider, session_id, 0, 0, corrupt)
    segment = await arena.audit.segment(session_id, 0)
    await arena.warp_past(segment.delivery_deadline)
    error = await refused(arena.audit.claim_undelivered(wallets[members[0]], session_id, 0, 0))
    c.expect(
        segment.delivered and (error or "").startswith("AuditEnvelopesDelivered"),
        f"a second session: the provider published {len(members)} envelopes in time that open for nobody; "
        f"the chain recorded the delivery, so 'no envelope' is refused ({error})",
        f"delivered={segment.delivered}, claimUndelivered: {error or 'accepted'}",
    )
    await arena.vote(session_id, 0, wallets, {m: False for m in members})
    await arena.audit.finalize_segments(arena.keeper, session_id, [0])
    await arena.audit.finalize_trace(arena.keeper, session_id)
    await arena.audit.distribute_rewards(arena.keeper, session_id)
    segment = await arena.audit.segment(session_id, 0)
    lost = [before[m].stake - (await registry.auditor(m)).stake for m in members]
    claims = [await arena.audit.claim_rewards(wallets[m], session_id, [(0, i)]) for i, m in enumerate(members)]
    earned = [arena.audit.rewards_claimed_in(sent) for sent in claims]
    c.expect(
        segment.status == SegmentStatus.FAILED and segment.round == 0 and all(x == 0 for x in lost) and all(earned),
        "every seat, unable to read its segment, voted fail with its reason: the segment failed in round 0, "
        f"nobody forfeited, each seat claimed its reward ({', '.join(map(str, earned))} wei) from the fee",
        f"segment {segment.status.name} in round {segment.round}, forfeited {[_tokens(x) for x in lost]}, "
        f"earned {earned}",
    )


async def m4_round_too_big(arena: Arena) -> Checks:
    """Governance sets committees of 127 draws, whose settlement in one transaction could exceed a
    transaction's gas cap; every seat of such a round stays silent (each forfeits)."""
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
    c.saw(f"a timelocked setParams with one round of 127 tier-1 draws: {error or 'accepted'}")
    members = await arena.auditors(1, 100, 40)
    c.saw("tier 1: 40 auditors of 100 tokens")
    session_id = await arena.open_session([_spec()])
    await arena.draw(session_id, [0])
    segment = await arena.audit.segment(session_id, 0)
    await arena.warp_past(segment.reveal_deadline)
    _, total = await arena.audit.settlement_progress(session_id, 0)
    c.saw(f"a round of {segment.committee_size} draws on {segment.seat_count} seats, all silent: {total} to settle")
    steps = await arena.audit.settle_down_to(arena.keeper, session_id, 0, SETTLEMENT_CHUNK_SEATS)
    last = await arena.audit.finalize_segments(arena.keeper, session_id, [0])
    gas = [sent.gas_used for sent in [*steps, last]]
    final = (await arena.audit.segment(session_id, 0)).status
    locked = [(await arena.protocol.registry.auditor(m.address)).locked for m in members]
    c.expect(
        error is None and total > SETTLEMENT_CHUNK_SEATS and len(gas) == -(-total // SETTLEMENT_CHUNK_SEATS),
        f"settled in {len(gas)} transactions of at most {SETTLEMENT_CHUNK_SEATS} seats ({gas} gas)",
        f"the 127-draw round was not settled in steps ({error}, {total} entries, {len(gas)} transactions)",
    )
    c.expect(
        max(gas) <= _SETTLEMENT_GAS_BUDGET and final.is_final and not any(locked),
        f"each under the {_SETTLEMENT_GAS_BUDGET:,} budget; the segment ended {final.name} and every stake unlocked",
        f"a settlement step used {max(gas):,} gas, or the round did not end ({final.name}, locks {locked})",
    )
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


L2_DRAWS = 1_000
"""Committees drawn per seed by the registry's own `drawCommittee` (simulated, nothing locked). At
3 draws a committee, 30% of the stake expects 900 units over 1,000 committees, give or take 25: the
draw without replacement the fix replaced (one seat per account) gave one account about 660."""
L2_SESSION_SEGMENTS = 6
"""Segments of the session run through the real contracts, to follow what the units earn."""
L2_SIGMAS = 4.0
"""A count is consistent with its expectation within this many standard deviations."""


async def l2_split_stake(arena: Arena) -> Checks:
    """An attacker holds the same stake in one account and split over twelve, to see which wins more
    of the committee: more units (votes, rewards, penalties) for the split would make the draw
    reward account count, not stake."""
    c = Checks()
    honest = await arena.auditors(1, 1_000, 4)
    single = await arena.auditor(1, 3_000)
    split = await arena.auditors(1, 250, 12)
    c.saw(
        "tier 1: 4 honest auditors of 1,000 tokens; the attacker stakes 3,000 in one account and 3,000 more "
        "split over 12 accounts of 250 (30% of the stake each way)"
    )
    await arena.mine(2)
    snapshot = await arena.chain.block_number() - 1
    params = await arena.protocol.params.params()
    k, penalty = int(params["committeeSizeTier1"]), int(params["penaltyPerSeat"])
    split_set = {a.address for a in split}
    single_units = split_units = single_seats = split_seats = most = 0
    for d in range(L2_DRAWS):
        members, weights = await arena.protocol.registry.simulate_draw(
            arena.audit.address, 1, k, keccak(b"L2" + d.to_bytes(4, "big")), snapshot, penalty
        )
        for member, units in zip(members, weights, strict=True):
            if member == single.address:
                single_units, single_seats, most = single_units + units, single_seats + 1, max(most, units)
            elif member in split_set:
                split_units, split_seats = split_units + units, split_seats + 1
    share = 3_000 / 10_000
    expected = L2_DRAWS * k * share
    sd = math.sqrt(L2_DRAWS * k * share * (1 - share))
    # The two counts of one committee are multinomial: var(single - split) = k (p + p) per committee.
    sd_difference = math.sqrt(L2_DRAWS * k * 2 * share)
    c.saw(
        f"{L2_DRAWS} committees of {k} drawn by the registry's drawCommittee (eth_call as the audit contract, "
        f"snapshot block {snapshot}): one account won {single_units} units in {single_seats} seats, the twelve "
        f"{split_units} units in {split_seats} seats; k * share = {expected:.0f} expected each"
    )
    c.expect(
        most > 1,
        f"one account drawn more than once holds one seat of several units (up to {most}): it is not capped at one "
        "seat a committee",
        "one account never held more than one unit of a committee: the draw is without replacement",
    )
    c.expect(
        abs(single_units - expected) <= L2_SIGMAS * sd and abs(split_units - expected) <= L2_SIGMAS * sd,
        f"each way wins its share of the units: |{single_units} - {expected:.0f}| and |{split_units} - "
        f"{expected:.0f}| within {L2_SIGMAS:g} sd ({L2_SIGMAS * sd:.0f})",
        f"units {single_units} (one account) and {split_units} (twelve) against {expected:.0f} expected, sd {sd:.1f}",
    )
    c.expect(
        abs(single_units - split_units) <= L2_SIGMAS * sd_difference,
        f"splitting gains nothing: {split_units} - {single_units} = {split_units - single_units} units, within "
        f"{L2_SIGMAS:g} sd of 0 ({L2_SIGMAS * sd_difference:.0f}); the split holds more seats, each weighing fewer "
        "units, and a seat votes, earns and forfeits per unit",
        f"the split won {split_units} units against {single_units} for one account (sd {sd_difference:.1f})",
    )

    # The same through a session: every seat votes, earns R and locks P per unit it won.
    session_id = await arena.open_session([_spec(tag=g) for g in range(1, L2_SESSION_SEGMENTS + 1)])
    await arena.draw(session_id, list(range(L2_SESSION_SEGMENTS)))
    wallets = _wallets([*honest, single, *split])
    won: dict[str, int] = {}
    seats: dict[str, list[tuple[int, int]]] = {}
    for g in range(L2_SESSION_SEGMENTS):
        drawn = await arena.units(session_id, g)
        for index, (member, n) in enumerate(drawn.items()):
            won[member] = won.get(member, 0) + n
            seats.setdefault(member, []).append((g, index))
    locked = {m: (await arena.protocol.registry.auditor(m)).locked for m in won}
    c.expect(
        all(locked[m] == n * penalty for m, n in won.items()),
        f"the session's {L2_SESSION_SEGMENTS} committees locked P per unit of each seat",
        f"locks {locked} against units {won} (P = {_tokens(penalty)})",
    )
    for g in range(L2_SESSION_SEGMENTS):
        await arena.vote(session_id, g, wallets, dict.fromkeys(await arena.audit.committee(session_id, g), True))
    await arena.audit.finalize_segments(arena.keeper, session_id, list(range(L2_SESSION_SEGMENTS)))
    await arena.audit.finalize_trace(arena.keeper, session_id)
    session = await arena.audit.session(session_id)
    share_bps = (await arena.audit.session_params(session_id))["auditorShareBps"]
    # `FeeSplit`: the auditors' pool over the aligned units (the chain's alignedSeats), floored.
    per_unit = session.fee_wei * share_bps // _BPS // session.aligned_seats
    await arena.audit.distribute_rewards(arena.keeper, session_id)
    claimed: dict[str, int] = {}
    for member in (single.address, *(a.address for a in split)):
        if member in seats:
            sent = await arena.audit.claim_rewards(wallets[member], session_id, seats[member])
            claimed[member] = arena.audit.rewards_claimed_in(sent)
    aligned = sum(won.values())
    attacker_single = claimed.get(single.address, 0)
    attacker_split = sum(v for m, v in claimed.items() if m in split_set)
    c.expect(
        bool(claimed) and session.aligned_seats == aligned and all(v == per_unit * won[m] for m, v in claimed.items()),
        f"every seat was paid R per unit ({per_unit} wei of {aligned} aligned units): one account claimed "
        f"{attacker_single} wei for {won.get(single.address, 0)} units, the twelve {attacker_split} wei for "
        f"{sum(n for m, n in won.items() if m in split_set)} units",
        f"claims {claimed} against units {won}: a reward not proportional to units",
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
    protocol: Mapping[str, Any] = field(default_factory=dict)
    """Protocol settings the attack needs changed from the run's (`ProtocolSettings` fields)."""


ATTACKS: dict[str, Attack] = {
    "H1": Attack(
        "committee grinding by the provider", h1_grinding, "the seed is requested only once every input is fixed"
    ),
    "H2": Attack("voting weight not backed by stake", h2_unbacked_weight, "a seat weighs the stake bonded behind it"),
    "H3": Attack("block-hash randomness", h3_block_hash, "a threshold BLS beacon seeds the draw", "beacon"),
    "M1": Attack(
        "free veto",
        m1_veto,
        "a vetoer is judged against the later round's verdict",
        protocol={"committee_size_tier1": M1_COMMITTEE_SIZE},
    ),
    "M2": Attack("sybils exhaust the skip budget", m2_skip_budget, "deserters pay P; the draw retries"),
    "M3": Attack(
        "providers burn honest stake",
        m3_withheld_envelopes,
        "undelivered seats claim their release, paid from the fee; seats vote fail on what they cannot read",
    ),
    "M4": Attack("a round too big to finalize", m4_round_too_big, "settlement in steps, each within the gas budget"),
    "M5": Attack("the provider's weights decide validity", m5_weights, "weights spread at most maxWeightRatio"),
    "L1": Attack(
        "just-in-time staking takes the stakers' share", l1_just_in_time_stake, "the share streams over a week"
    ),
    "L2": Attack(
        "splitting stake wins more seats",
        l2_split_stake,
        "draws with replacement: units follow stake, whatever the accounts",
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
        timeout = settings.tx_timeout_seconds
        async with open_chain(node.rpc_url, artifacts=artifacts, tx_timeout_seconds=timeout) as chain:
            deployer = dev_account(devnet.mnemonic, 0)
            beacon_dir = Path(tmp) / "beacon"
            group = None
            if attack.randomness == "beacon":
                group = deal_group(beacon_dir, _BEACON_THRESHOLD, _BEACON_SIGNERS)
                for operator in group.operators:
                    await chain.rpc("anvil_setBalance", [operator, hex(_ACCOUNT_FUNDING_WEI)])
            protocol = ProtocolSettings.model_validate(settings.protocol.model_dump() | dict(attack.protocol))
            deployment = await deploy_protocol(
                chain,
                deployer,
                protocol,
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
    artifacts = protocol_artifacts()
    report = AttacksReport()
    for name in [n for n in FINDINGS if n in names]:
        if name in OPEN_FINDINGS:
            report.outcomes.append(AttackOutcome(name, "not defended yet", OPEN, (), OPEN_FINDINGS[name]))
            continue
        attack = ATTACKS[name]
        say(f"{name}: {attack.title}")
        report.outcomes.append(await _run_attack(name, attack, settings, toolchain, artifacts))
    if measure_gas:
        from trust.lab.bench.gas import run_gas_benchmark

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
