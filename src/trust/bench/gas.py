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
tier-1 segments with committees of three draws (one to three seats each: one envelope per seat), whose
envelope CIDs (binary CIDv1s of 36 bytes, as the
provider publishes them) are announced once with one `publishEnvelopes` transaction per segment and
then with one `publishEnvelopesBatch` of 1, 10 and 50 sets. Which auditors sit in a committee does
not change this gas (an address topic costs the same whatever it holds), so one session suffices.
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

from trust.chain.anvil import AnvilNode
from trust.chain.client import ChainClient, SentTransaction
from trust.chain.compiler import Artifact, compile_protocol
from trust.chain.deployment import deploy_protocol
from trust.chain.protocol import Protocol
from trust.chain.types import EnvelopeSet, SeatCommit, SeatReveal, SegmentSpec
from trust.devnet import dev_account, provision_auditors
from trust.settings import DevnetSettings, GovernanceSettings, ProtocolSettings
from trust.storage.cid import unixfs_cid
from trust.toolchain import Toolchain

__all__ = ["BatchGas", "DeliveryGas", "GasReport", "render", "run_gas_benchmark"]

_PHASES = ("draw", "commit", "reveal", "finalize", "distribute")
_FIRST_AUDITOR_INDEX = 100

#: Sets per `publishEnvelopesBatch` measured by default, and the seats of each set (a tier-1 committee).
DELIVERY_SETS: tuple[int, ...] = (1, 10, 50)
_DELIVERY_SEATS = 3
#: Tier-1 auditors of the delivery session, each staking this many times the tier minimum, so that
#: they can back every seat of 50 committees of three (150 seats) between them.
_DELIVERY_AUDITORS = 6
_DELIVERY_STAKE_MULTIPLE = 10
_FIRST_DELIVERY_AUDITOR_INDEX = 300
_BPS = 10_000


@dataclass(frozen=True, slots=True)
class BatchGas:
    """One `publishEnvelopesBatch` transaction: its number of sets, their envelopes (one per seat)
    and the gas its receipt reports."""

    sets: int
    envelopes: int
    gas: int

    @property
    def per_set(self) -> int:
        return round(self.gas / self.sets)

    @property
    def per_envelope(self) -> int:
        return round(self.gas / self.envelopes)


@dataclass(frozen=True, slots=True)
class DeliveryGas:
    """The provider's key delivery: one `publishEnvelopes` transaction per set against batches of the
    first sets.

    `single_gas` holds each set's own transaction, `envelopes` each set's envelopes (its committee's
    seats: three draws seat one to three members); a batch of n sets is compared with the n one-set
    transactions of the same sets. Every figure includes the transaction's base cost and calldata.
    """

    single_gas: tuple[int, ...]
    envelopes: tuple[int, ...]
    batches: tuple[BatchGas, ...]

    @property
    def single_transactions(self) -> int:
        return len(self.single_gas)

    @property
    def single_mean_gas(self) -> int:
        return round(sum(self.single_gas) / len(self.single_gas))

    @property
    def envelopes_per_set(self) -> float:
        return sum(self.envelopes) / len(self.envelopes)

    @property
    def single_per_envelope(self) -> int:
        return round(sum(self.single_gas) / sum(self.envelopes))

    def saving_bps(self, batch: BatchGas) -> int:
        """Gas the batch saves against one `publishEnvelopes` for each of its sets, in basis points
        (negative: the batch costs more)."""
        singles = sum(self.single_gas[: batch.sets])
        return round((singles - batch.gas) * _BPS / singles)


@dataclass
class GasReport:
    """Gas of each phase, summed over `runs` sessions (each on its own fresh chain)."""

    segments: int
    seats_per_segment: int
    auditors: int
    runs: int = 0
    gas: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    transactions: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    run_totals: list[int] = field(default_factory=list)
    delivery: DeliveryGas | None = None

    @property
    def seats(self) -> int:
        return self.segments * self.seats_per_segment

    def add(self, phase: str, sent: SentTransaction) -> None:
        self.gas[phase] += sent.gas_used
        self.transactions[phase] += 1

    def per_seat(self, phase: str) -> int:
        """Mean gas per seat of `phase` over the runs."""
        return round(self.gas[phase] / (self.seats * max(self.runs, 1)))

    def per_run(self, phase: str, what: dict[str, int]) -> float:
        return what[phase] / max(self.runs, 1)

    @property
    def per_seat_total(self) -> int:
        return sum(self.per_seat(p) for p in _PHASES)

    def summary(self) -> dict[str, int]:
        """The JSON line: per-seat figures; `finalize` includes the seat's share of distribution."""
        return {
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
    delivery_sets: Sequence[int] = DELIVERY_SETS,
) -> GasReport:
    """Runs `runs` sessions, each on a fresh Anvil, and returns the gas of each phase, with the key
    delivery's gas for batches of `delivery_sets` sets (none when empty) measured on one more.

    Committees come from real block hashes, so which auditor holds how many seats (and with it the
    number of commit and reveal transactions) changes from run to run: the figures are means.
    """
    if auditors < 1 or seats < 1:
        raise ValueError(f"a committee of {seats} draws needs at least one draw and one auditor, not {auditors}")
    if runs < 1:
        raise ValueError(f"runs must be at least 1, not {runs}")
    if any(count < 1 for count in delivery_sets):
        raise ValueError(f"delivery_sets must count at least one set per batch, not {list(delivery_sets)}")
    toolchain = Toolchain.discover()
    artifacts = compile_protocol(toolchain)
    report = GasReport(segments=segments, seats_per_segment=seats, auditors=auditors)
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
    segments = max(batch_sizes)
    devnet = DevnetSettings()
    settings = ProtocolSettings(committee_size_tier1=_DELIVERY_SEATS, max_segments_per_session=segments)
    with AnvilNode.start(toolchain, mnemonic=devnet.mnemonic) as node, tempfile.TemporaryDirectory() as tmp:
        async with ChainClient(node.rpc_url, artifacts) as chain:
            deployer = dev_account(devnet.mnemonic, 0)
            provider = dev_account(devnet.mnemonic, 3)
            protocol = Protocol.bind(chain, await deploy_protocol(chain, deployer, settings, GovernanceSettings()))
            keys = protocol.segment_keys
            maximum = await keys.max_batch_envelopes()
            if segments * _DELIVERY_SEATS > maximum:
                raise ValueError(
                    f"a batch of {segments} sets of {_DELIVERY_SEATS} envelopes exceeds the contract's "
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

            # One envelope per seat: the committee's draws seat one to `_DELIVERY_SEATS` members.
            seated = [len(await protocol.audit.committee(session_id, segment)) for segment in range(segments)]
            sets = [
                EnvelopeSet(segment, 0, [unixfs_cid(f"envelope {segment}/{seat}".encode()) for seat in range(count)])
                for segment, count in enumerate(seated)
            ]
            singles = [
                await keys.publish_envelopes(provider, session_id, s.segment_id, s.round, s.envelope_cids) for s in sets
            ]
            batches = []
            for count in batch_sizes:
                sent = await keys.publish_envelopes_batch(provider, session_id, sets[:count])
                batches.append(BatchGas(sets=count, envelopes=sum(seated[:count]), gas=sent.gas_used))
    return DeliveryGas(
        single_gas=tuple(s.gas_used for s in singles),
        envelopes=tuple(seated),
        batches=tuple(batches),
    )


async def _run_once(toolchain: Toolchain, artifacts: dict[str, Artifact], report: GasReport) -> None:
    segments, seats, auditors = report.segments, report.seats_per_segment, report.auditors
    devnet = DevnetSettings()
    protocol_settings = ProtocolSettings(committee_size_tier2=seats, max_segments_per_session=max(segments, 1))
    with AnvilNode.start(toolchain, mnemonic=devnet.mnemonic) as node, tempfile.TemporaryDirectory() as tmp:
        async with ChainClient(node.rpc_url, artifacts) as chain:
            deployer = dev_account(devnet.mnemonic, 0)
            provider = dev_account(devnet.mnemonic, 3)
            deployment = await deploy_protocol(chain, deployer, protocol_settings, GovernanceSettings())
            protocol = Protocol.bind(chain, deployment)
            accounts = await provision_auditors(
                protocol,
                deployer,
                [2] * auditors,
                Path(tmp),
                "benchmark-only",
                new_account=lambda index: dev_account(devnet.mnemonic, _FIRST_AUDITOR_INDEX + index),
                scrypt_n=2**10,
            )
            wallets = {
                a.address: dev_account(devnet.mnemonic, _FIRST_AUDITOR_INDEX + i) for i, a in enumerate(accounts)
            }

            specs = [SegmentSpec(tier=2, weight=1, content_digest=bytes([i + 1]) * 32) for i in range(segments)]
            session_id, created = await protocol.audit.create_session(provider, b"\x01" * 32, specs)
            report.gas["create"] += created.gas_used
            report.transactions["create"] += 1
            params = await protocol.audit.session_params(session_id)
            for _ in range(params["randomnessDelayBlocks"] + 1):
                await chain.rpc("evm_mine", [])

            drawn = await protocol.audit.assign_auditors(deployer, session_id, range(segments))
            report.add("draw", drawn)
            seats_of: dict[str, list[tuple[int, int]]] = defaultdict(list)
            for committee in protocol.audit.committees_in(drawn):
                for index, member in enumerate(committee.members):
                    seats_of[member].append((committee.segment_id, index))

            salts = {a: protocol.audit.new_salt() for a in seats_of}
            commits = {}
            for auditor, held in seats_of.items():
                batch = [
                    SeatCommit(
                        session_id,
                        segment,
                        index,
                        await protocol.audit.commitment_of(session_id, segment, 0, auditor, True, salts[auditor]),
                    )
                    for segment, index in held
                ]
                commits[auditor] = batch
            for auditor, commit_batch in commits.items():
                report.add("commit", await protocol.audit.commit_votes(wallets[auditor], commit_batch))

            # Every seat has committed, so the commit window closed with the last commit: reveal now.
            reveals = {
                a: [SeatReveal(session_id, segment, index, True, salts[a]) for segment, index in held]
                for a, held in seats_of.items()
            }
            for auditor, reveal_batch in reveals.items():
                report.add("reveal", await protocol.audit.reveal_votes(wallets[auditor], reveal_batch))

            report.add("finalize", await protocol.audit.finalize_segments(deployer, session_id, range(segments)))
            _, traced = await protocol.audit.finalize_trace(deployer, session_id)
            report.add("finalize", traced)
            report.add("distribute", await protocol.audit.distribute_rewards(deployer, session_id))
            for auditor, held in seats_of.items():
                report.add("claim", await protocol.audit.claim_rewards(wallets[auditor], session_id, held))


def render(report: GasReport, console: Console) -> None:
    """Prints the per-phase table, then the summary as one JSON line (the last line of output)."""
    table = Table(
        title=(
            f"gas per seat: {report.segments} segments x {report.seats_per_segment} seats, "
            f"{report.auditors} auditors, mean of {report.runs} sessions"
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
    if report.delivery is not None:
        console.print(_delivery_table(report.delivery))
    print(json.dumps(report.summary()), flush=True)


def _delivery_table(delivery: DeliveryGas) -> Table:
    """One `publishEnvelopes` per set against `publishEnvelopesBatch`: gas per transaction, set and
    envelope, and what a set saves in the batch."""
    table = Table(
        title=(
            f"key delivery (provider): sets of {delivery.envelopes_per_set:.1f} envelopes on average, one per seat "
            "(binary CIDv1s of 36 bytes), gas per transaction; a batch of n sets against the same n sets one by one"
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
        f"{delivery.single_mean_gas:,}",
        f"{delivery.single_mean_gas:,}",
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
