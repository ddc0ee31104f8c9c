"""Gas per seat of one audit session, measured on a fresh Anvil (`trust bench gas`).

A session of `segments` tier-2 segments with `seats` seats each is run end to end with real
transactions: one batched draw, each auditor committing and then revealing all of its seats in one
transaction (the batch functions), one batched finalization, the trace verdict and the fee split.
Every figure is the gas the receipts report, divided by the number of seats: `seats` per segment is
the committee size, its number of draws (units, each voting once); draws are made with replacement,
so a member drawn twice holds one seat weighing two, and a segment may have fewer distinct seats
(fewer commits and reveals) than draws. The session's
creation is paid by the provider and reported apart, and so are the auditors' reward claims (pull
payments, one transaction per auditor for all of its seats), which the total leaves out as the
issue's breakdown does; the table shows them so that nothing is hidden.

The provider's key delivery is measured beside it, on a fresh Anvil of its own: a session of
tier-1 segments with committees of three draws that seated three distinct members, whose envelope
CIDs (binary CIDv1s of 36 bytes, as the provider publishes them) are announced once with one
`publishEnvelopes` transaction per segment and then with one `publishEnvelopesBatch` of 1, 10 and
50 sets. Which auditors sit in a committee does not change this gas (an address topic costs the
same whatever it holds), so one session suffices.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from trust.adapters.chain.client import SentTransaction
from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.deployment import deploy_protocol
from trust.adapters.chain.protocol import Protocol, open_chain, protocol_artifacts
from trust.adapters.chain.types import EnvelopeSet, SeatCommit, SeatReveal, SegmentSpec
from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.anvil import AnvilNode
from trust.adapters.local.toolchain import Toolchain
from trust.core.cid import unixfs_cid
from trust.lab.devnet import provision_auditors
from trust.settings import DevnetSettings, GovernanceSettings, ProtocolSettings

__all__ = ["BatchGas", "DeliveryGas", "GasReport", "render", "run_gas_benchmark"]

_PHASES = ("draw", "commit", "reveal", "finalize", "distribute")
_FIRST_AUDITOR_INDEX = 100

#: Sets per `publishEnvelopesBatch` measured by default, and the seats of each set (a tier-1 committee).
DELIVERY_SETS: tuple[int, ...] = (1, 10, 50)
_DELIVERY_SEATS = 3
#: Tier-1 auditors of the delivery session, each staking this many times the tier minimum, so that
#: they can back every draw of twice 50 committees of three (300 units) between them.
_DELIVERY_AUDITORS = 12
_DELIVERY_STAKE_MULTIPLE = 10
#: Committees are drawn with replacement, so some seat fewer than three members (a member drawn
#: twice holds one seat): the session draws this many times the sets measured and the sets are the
#: first segments that seated three (at 12 equal auditors, 76% of them).
_DELIVERY_OVERDRAW = 2
_FIRST_DELIVERY_AUDITOR_INDEX = 300
_BPS = 10_000


@dataclass(frozen=True, slots=True)
class BatchGas:
    """One `publishEnvelopesBatch` transaction: its number of sets and the gas its receipt reports."""

    sets: int
    seats_per_set: int
    gas: int

    @property
    def per_set(self) -> int:
        return round(self.gas / self.sets)

    @property
    def per_envelope(self) -> int:
        return round(self.gas / (self.sets * self.seats_per_set))


@dataclass(frozen=True, slots=True)
class DeliveryGas:
    """The provider's key delivery: one `publishEnvelopes` transaction per set against batches.

    `single_gas` is the mean gas of the `single_transactions` one-set transactions (they differ only
    by a few gas of calldata); every figure includes the transaction's base cost and calldata.
    """

    seats_per_set: int
    single_gas: int
    single_transactions: int
    batches: tuple[BatchGas, ...]

    @property
    def single_per_envelope(self) -> int:
        return round(self.single_gas / self.seats_per_set)

    def saving_bps(self, batch: BatchGas) -> int:
        """Gas a set saves in `batch` against its own `publishEnvelopes`, in basis points (negative:
        the batch costs more)."""
        return round((self.single_gas - batch.per_set) * _BPS / self.single_gas)


@dataclass
class GasReport:
    """Gas of each phase, summed over `runs` sessions (each on its own fresh chain)."""

    segments: int
    seats_per_segment: int
    auditors: int
    sessions: int = 1
    """Sessions open at once in each run, their seats committed and revealed together: one commit
    and one reveal transaction per auditor for all of its seats in every session."""
    runs: int = 0
    gas: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    transactions: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    run_totals: list[int] = field(default_factory=list)
    delivery: DeliveryGas | None = None
    distinct_seats: int = 0
    """Seats the draws seated over all runs (distinct members per committee): at most `seats` a run."""

    @property
    def seats(self) -> int:
        """Draws of one run: every segment of every session."""
        return self.segments * self.seats_per_segment * self.sessions

    def add(self, phase: str, sent: SentTransaction) -> None:
        self.gas[phase] += sent.gas_used
        self.transactions[phase] += 1

    def per_seat(self, phase: str) -> int:
        """Mean gas per seat of `phase` over the runs."""
        return round(self.gas[phase] / (self.seats * max(self.runs, 1)))

    def per_run(self, phase: str, what: dict[str, int]) -> float:
        """Mean of `what[phase]` per session."""
        return what[phase] / (max(self.runs, 1) * self.sessions)

    @property
    def per_seat_total(self) -> int:
        return sum(self.per_seat(p) for p in _PHASES)

    def per_distinct_seat(self, phase: str) -> int:
        """Gas of `phase` per seat actually held (a member drawn twice holds one seat): the figure
        that compares runs whose draws gave their members a different number of repeats."""
        return round(self.gas[phase] / max(self.distinct_seats, 1))

    @property
    def per_distinct_seat_total(self) -> int:
        """The total per seat actually held: what a seat costs where the tier is large enough that
        members are rarely drawn twice."""
        return round(sum(self.gas[p] for p in _PHASES) / max(self.distinct_seats, 1))

    def summary(self) -> dict[str, int]:
        """The JSON line: per-seat figures; `finalize` includes the seat's share of distribution."""
        return {
            "sessions": self.sessions,
            "gas_per_seat": self.per_seat_total,
            "draw": self.per_seat("draw"),
            "commit": self.per_seat("commit"),
            "reveal": self.per_seat("reveal"),
            "finalize": self.per_seat("finalize") + self.per_seat("distribute"),
        }


async def run_gas_benchmark(
    *,
    segments: int = 10,
    seats: int = 5,
    auditors: int = 15,
    runs: int = 5,
    sessions: int = 1,
    delivery_sets: Sequence[int] = DELIVERY_SETS,
) -> GasReport:
    """Runs `runs` times, each on a fresh Anvil, `sessions` sessions at once, and returns the gas of
    each phase, with the key delivery's gas for batches of `delivery_sets` sets (none when empty)
    measured on one more. With several sessions each auditor commits, then reveals, the seats it
    holds in all of them in one transaction, as a worker does with every seat ready in a block.

    Committees come from real block hashes, so which auditor holds how many seats (and with it the
    number of commit and reveal transactions) changes from run to run: the figures are means.
    """
    if auditors < 1 or seats < 1:
        raise ValueError(f"a committee of {seats} draws needs at least one draw and one auditor, not {auditors}")
    if runs < 1:
        raise ValueError(f"runs must be at least 1, not {runs}")
    if sessions < 1:
        raise ValueError(f"sessions must be at least 1, not {sessions}")
    if any(count < 1 for count in delivery_sets):
        raise ValueError(f"delivery_sets must count at least one set per batch, not {list(delivery_sets)}")
    toolchain = Toolchain.discover()
    artifacts = protocol_artifacts()
    report = GasReport(segments=segments, seats_per_segment=seats, auditors=auditors, sessions=sessions)
    if delivery_sets:  # first: a batch the contract refuses fails before the longer session runs
        report.delivery = await _measure_delivery(toolchain, artifacts, tuple(delivery_sets))
    for _ in range(runs):
        before = sum(report.gas[p] for p in _PHASES)
        await _run_once(toolchain, artifacts, report)
        report.runs += 1
        report.run_totals.append(round((sum(report.gas[p] for p in _PHASES) - before) / report.seats))
    return report


async def _measure_delivery(
    toolchain: Toolchain, artifacts: dict[str, Artifact], batch_sizes: tuple[int, ...]
) -> DeliveryGas:
    """Announces the envelopes of `max(batch_sizes)` drawn tier-1 segments one transaction per
    segment, then in one batch of each size (republishing is allowed while the rounds vote)."""
    wanted = max(batch_sizes)
    segments = wanted * _DELIVERY_OVERDRAW
    devnet = DevnetSettings()
    settings = ProtocolSettings(committee_size_tier1=_DELIVERY_SEATS, max_segments_per_session=segments)
    with AnvilNode.start(toolchain, mnemonic=devnet.mnemonic) as node, tempfile.TemporaryDirectory() as tmp:
        async with open_chain(node.rpc_url, artifacts=artifacts) as chain:
            deployer = dev_account(devnet.mnemonic, 0)
            provider = dev_account(devnet.mnemonic, 3)
            protocol = Protocol.bind(chain, await deploy_protocol(chain, deployer, settings, GovernanceSettings()))
            keys = protocol.segment_keys
            maximum = await keys.max_batch_envelopes()
            if wanted * _DELIVERY_SEATS > maximum:
                raise ValueError(
                    f"a batch of {wanted} sets of {_DELIVERY_SEATS} envelopes exceeds the contract's "
                    f"MAX_BATCH_ENVELOPES ({maximum}); measure at most {maximum // _DELIVERY_SEATS} sets"
                )
            minimum_stake = (await protocol.params.params())["minStakeTier1"]
            await provision_auditors(
                protocol,
                deployer,
                [1] * _DELIVERY_AUDITORS,
                Path(tmp),
                "benchmark-only",
                stake_for=lambda _index, _tier: minimum_stake * _DELIVERY_STAKE_MULTIPLE,
                new_account=lambda index: dev_account(devnet.mnemonic, _FIRST_DELIVERY_AUDITOR_INDEX + index),
                scrypt_n=2**10,
            )
            specs = [SegmentSpec(tier=1, weight=1, content_digest=bytes([i % 255 + 1]) * 32) for i in range(segments)]
            session_id, _ = await protocol.audit.create_session(provider, b"\x02" * 32, specs)
            params = await protocol.audit.session_params(session_id)
            for _ in range(params["randomnessDelayBlocks"] + 1):
                await chain.rpc("evm_mine", [])
            await protocol.audit.assign_auditors(deployer, session_id, range(segments))
            full = [
                g
                for g in range(segments)
                if (await protocol.audit.segment(session_id, g)).seat_count == _DELIVERY_SEATS
            ]
            if len(full) < wanted:
                raise RuntimeError(
                    f"only {len(full)} of {segments} committees seated {_DELIVERY_SEATS} distinct members; "
                    f"the measurement needs {wanted}: raise _DELIVERY_OVERDRAW"
                )
            sets = [
                EnvelopeSet(
                    segment, 0, [unixfs_cid(f"envelope {segment}/{seat}".encode()) for seat in range(_DELIVERY_SEATS)]
                )
                for segment in full[:wanted]
            ]
            singles = [
                await keys.publish_envelopes(provider, session_id, s.segment_id, s.round, s.envelope_cids) for s in sets
            ]
            batches = []
            for count in batch_sizes:
                sent = await keys.publish_envelopes_batch(provider, session_id, sets[:count])
                batches.append(BatchGas(sets=count, seats_per_set=_DELIVERY_SEATS, gas=sent.gas_used))
    return DeliveryGas(
        seats_per_set=_DELIVERY_SEATS,
        single_gas=round(sum(s.gas_used for s in singles) / len(singles)),
        single_transactions=len(singles),
        batches=tuple(batches),
    )


async def _run_once(toolchain: Toolchain, artifacts: dict[str, Artifact], report: GasReport) -> None:
    segments, seats, auditors = report.segments, report.seats_per_segment, report.auditors
    devnet = DevnetSettings()
    protocol_settings = ProtocolSettings(committee_size_tier2=seats, max_segments_per_session=max(segments, 1))
    with AnvilNode.start(toolchain, mnemonic=devnet.mnemonic) as node, tempfile.TemporaryDirectory() as tmp:
        async with open_chain(node.rpc_url, artifacts=artifacts) as chain:
            deployer = dev_account(devnet.mnemonic, 0)
            provider = dev_account(devnet.mnemonic, 3)
            deployment = await deploy_protocol(chain, deployer, protocol_settings, GovernanceSettings())
            protocol = Protocol.bind(chain, deployment)
            minimum_stake = (await protocol.params.params())["minStakeTier2"]
            accounts = await provision_auditors(
                protocol,
                deployer,
                [2] * auditors,
                Path(tmp),
                "benchmark-only",
                # The default stakes (the minimum times 1, 2 or 3), backing every session's draws.
                stake_for=lambda index, _tier: minimum_stake * (index % 3 + 1) * report.sessions,
                new_account=lambda index: dev_account(devnet.mnemonic, _FIRST_AUDITOR_INDEX + index),
                scrypt_n=2**10,
            )
            wallets = {
                a.address: dev_account(devnet.mnemonic, _FIRST_AUDITOR_INDEX + i) for i, a in enumerate(accounts)
            }

            specs = [SegmentSpec(tier=2, weight=1, content_digest=bytes([i + 1]) * 32) for i in range(segments)]
            session_ids = []
            for number in range(report.sessions):
                session_id, created = await protocol.audit.create_session(provider, bytes([number + 1]) * 32, specs)
                session_ids.append(session_id)
                report.gas["create"] += created.gas_used
                report.transactions["create"] += 1
            params = await protocol.audit.session_params(session_ids[0])
            for _ in range(params["randomnessDelayBlocks"] + 1):
                await chain.rpc("evm_mine", [])

            # Seat refs (session, segment, seat index) of each auditor, over every session.
            seats_of: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
            for session_id in session_ids:
                drawn = await protocol.audit.assign_auditors(deployer, session_id, range(segments))
                report.add("draw", drawn)
                for committee in protocol.audit.committees_in(drawn):
                    report.distinct_seats += len(committee.members)
                    for index, member in enumerate(committee.members):
                        seats_of[member].append((session_id, committee.segment_id, index))

            salts = {a: protocol.audit.new_salt() for a in seats_of}
            for auditor, held in seats_of.items():
                batch = [
                    SeatCommit(
                        session_id,
                        segment,
                        index,
                        await protocol.audit.commitment_of(session_id, segment, 0, auditor, True, salts[auditor]),
                    )
                    for session_id, segment, index in held
                ]
                report.add("commit", await protocol.audit.commit_votes(wallets[auditor], batch))

            # Every seat has committed, so each commit window closed with its last commit: reveal now.
            for auditor, held in seats_of.items():
                reveals = [
                    SeatReveal(session_id, segment, index, True, salts[auditor]) for session_id, segment, index in held
                ]
                report.add("reveal", await protocol.audit.reveal_votes(wallets[auditor], reveals))

            for session_id in session_ids:
                report.add("finalize", await protocol.audit.finalize_segments(deployer, session_id, range(segments)))
                _, traced = await protocol.audit.finalize_trace(deployer, session_id)
                report.add("finalize", traced)
                report.add("distribute", await protocol.audit.distribute_rewards(deployer, session_id))
            for auditor, held in seats_of.items():
                for session_id in session_ids:
                    mine = [(segment, index) for held_session, segment, index in held if held_session == session_id]
                    if mine:
                        report.add("claim", await protocol.audit.claim_rewards(wallets[auditor], session_id, mine))


def render(report: GasReport, console: Console) -> None:
    """Prints the per-phase table, then the summary as one JSON line (the last line of output)."""
    table = Table(
        title=(
            f"gas per seat: {report.segments} segments x {report.seats_per_segment} seats, "
            f"{report.auditors} auditors, "
            + (
                f"mean of {report.runs} sessions"
                if report.sessions == 1
                else f"{report.sessions} sessions at once (one commit and one reveal per auditor), {report.runs} runs"
            )
        )
    )
    table.add_column("phase")
    table.add_column("transactions / session", justify="right")
    table.add_column("gas / session", justify="right")
    table.add_column("gas / seat", justify="right")

    def row(phase: str, label: str | None = None) -> None:
        table.add_row(
            label or phase,
            f"{report.per_run(phase, report.transactions):.1f}",
            f"{report.per_run(phase, report.gas):,.0f}",
            f"{report.per_seat(phase):,}",
        )

    for phase in _PHASES:
        row(phase)
    spread = f"(runs: {min(report.run_totals):,} to {max(report.run_totals):,})" if report.run_totals else ""
    table.add_row("[bold]total[/bold]", "", spread, f"[bold]{report.per_seat_total:,}[/bold]")
    table.add_section()
    row("create", "create (provider)")
    row("claim", "claim (auditors, pull)")
    console.print(table)
    if report.distinct_seats:
        sessions = max(report.runs, 1) * report.sessions
        console.print(
            f"gas per seat held: {report.per_distinct_seat_total:,} ({report.distinct_seats / sessions:.1f} members "
            f"seated per session for its {report.seats // report.sessions} draws: a member drawn twice holds one "
            "seat, commits and reveals once)"
        )
    if report.delivery is not None:
        console.print(_delivery_table(report.delivery))
    print(json.dumps(report.summary()), flush=True)


def _delivery_table(delivery: DeliveryGas) -> Table:
    """One `publishEnvelopes` per set against `publishEnvelopesBatch`: gas per transaction, set and
    envelope, and what a set saves in the batch."""
    table = Table(
        title=(
            f"key delivery (provider): sets of {delivery.seats_per_set} envelopes (binary CIDv1s of 36 bytes), "
            "gas per transaction"
        )
    )
    table.add_column("call")
    table.add_column("sets / transaction", justify="right")
    table.add_column("gas / transaction", justify="right")
    table.add_column("gas / set", justify="right")
    table.add_column("gas / envelope", justify="right")
    table.add_column("saved per set", justify="right")
    table.add_row(
        f"publishEnvelopes (mean of {delivery.single_transactions})",
        "1",
        f"{delivery.single_gas:,}",
        f"{delivery.single_gas:,}",
        f"{delivery.single_per_envelope:,}",
        "",
    )
    for batch in delivery.batches:
        table.add_row(
            "publishEnvelopesBatch",
            f"{batch.sets}",
            f"{batch.gas:,}",
            f"{batch.per_set:,}",
            f"{batch.per_envelope:,}",
            f"{delivery.saving_bps(batch) / 100:.1f}%",
        )
    return table
