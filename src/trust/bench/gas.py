"""Gas per seat of one audit session, measured on a fresh Anvil (`trust bench gas`).

A session of `segments` tier-2 segments with `seats` seats each is run end to end with real
transactions: one batched draw, each auditor committing and then revealing all of its seats in one
transaction (the batch functions), one batched finalization, the trace verdict and the fee split.
Every figure is the gas the receipts report, divided by the number of seats. The session's
creation is paid by the provider and reported apart; withdrawals are reported for information.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from trust.chain.anvil import AnvilNode
from trust.chain.client import ChainClient, SentTransaction
from trust.chain.compiler import compile_protocol
from trust.chain.deployment import deploy_protocol
from trust.chain.protocol import Protocol
from trust.chain.types import SeatCommit, SeatReveal, SegmentSpec
from trust.devnet import dev_account, provision_auditors
from trust.settings import DevnetSettings, GovernanceSettings, ProtocolSettings
from trust.toolchain import Toolchain

__all__ = ["GasReport", "render", "run_gas_benchmark"]

_PHASES = ("draw", "commit", "reveal", "finalize", "distribute")


@dataclass
class GasReport:
    segments: int
    seats_per_segment: int
    auditors: int
    gas: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    transactions: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    @property
    def seats(self) -> int:
        return self.segments * self.seats_per_segment

    def add(self, phase: str, sent: SentTransaction) -> None:
        self.gas[phase] += sent.gas_used
        self.transactions[phase] += 1

    def per_seat(self, phase: str) -> int:
        return round(self.gas[phase] / self.seats)

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


async def run_gas_benchmark(*, segments: int = 10, seats: int = 5, auditors: int = 15) -> GasReport:
    """Runs one session on a fresh Anvil and returns the gas of each phase."""
    if auditors < seats:
        raise ValueError(f"a committee of {seats} needs at least {seats} auditors, not {auditors}")
    toolchain = Toolchain.discover()
    artifacts = compile_protocol(toolchain)
    devnet = DevnetSettings()
    protocol_settings = ProtocolSettings(committee_size_tier2=seats, max_segments_per_session=max(segments, 1))
    report = GasReport(segments=segments, seats_per_segment=seats, auditors=auditors)
    with AnvilNode.start(toolchain, mnemonic=devnet.mnemonic) as node, tempfile.TemporaryDirectory() as tmp:
        async with ChainClient(node.rpc_url, artifacts) as chain:
            deployer = dev_account(devnet.mnemonic, 0)
            provider = dev_account(devnet.mnemonic, 3)
            deployment = await deploy_protocol(chain, deployer, protocol_settings, GovernanceSettings())
            protocol = Protocol.bind(chain, deployment)
            accounts = await provision_auditors(
                protocol, deployer, [2] * auditors, Path(tmp), "benchmark-only", scrypt_n=2**10
            )
            from trust.chain.wallets import load_keystore

            wallets = {a.address: load_keystore(Path(a.keystore), "benchmark-only") for a in accounts}

            specs = [SegmentSpec(tier=2, weight=1, content_digest=bytes([i + 1]) * 32) for i in range(segments)]
            session_id, created = await protocol.audit.create_session(provider, b"\x01" * 32, specs)
            report.gas["create"] = created.gas_used
            params = await protocol.audit.session_params(session_id)
            for _ in range(params["randomnessDelayBlocks"] + 1):
                await chain.rpc("evm_mine", [])

            drawn = await protocol.audit.assign_auditors(deployer, session_id, range(segments))
            report.add("draw", drawn)
            seats_of: dict[str, list[tuple[int, int]]] = defaultdict(list)
            for committee in protocol.audit.committees_in(drawn):
                for index, member in enumerate(committee.members):
                    seats_of[member].append((committee.segment_id, index))

            salts = {key: protocol.audit.new_salt() for key, _ in ((k, 0) for k in seats_of)}
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
            for sent in await asyncio.gather(
                *(protocol.audit.commit_votes(wallets[a], batch) for a, batch in commits.items())
            ):
                report.add("commit", sent)

            await chain.rpc("evm_increaseTime", [params["commitWindowSeconds"] + 1])
            await chain.rpc("evm_mine", [])
            reveals = {
                a: [SeatReveal(session_id, segment, index, True, salts[a]) for segment, index in held]
                for a, held in seats_of.items()
            }
            for sent in await asyncio.gather(
                *(protocol.audit.reveal_votes(wallets[a], batch) for a, batch in reveals.items())
            ):
                report.add("reveal", sent)

            report.add("finalize", await protocol.audit.finalize_segments(deployer, session_id, range(segments)))
            _, traced = await protocol.audit.finalize_trace(deployer, session_id)
            report.add("finalize", traced)
            report.add("distribute", await protocol.audit.distribute_rewards(deployer, session_id))
            withdrawn = [await protocol.audit.withdraw(wallets[a]) for a in seats_of]
            report.gas["withdraw"] = sum(w.gas_used for w in withdrawn)
            report.transactions["withdraw"] = len(withdrawn)
    return report


def render(report: GasReport, console: Console) -> None:
    """Prints the per-phase table, then the summary as one JSON line (the last line of output)."""
    table = Table(
        title=f"gas per seat: {report.segments} segments x {report.seats_per_segment} seats, {report.auditors} auditors"
    )
    table.add_column("phase")
    table.add_column("transactions", justify="right")
    table.add_column("gas", justify="right")
    table.add_column("per seat", justify="right")
    for phase in _PHASES:
        table.add_row(phase, str(report.transactions[phase]), f"{report.gas[phase]:,}", f"{report.per_seat(phase):,}")
    table.add_row("[bold]total[/bold]", "", f"{sum(report.gas[p] for p in _PHASES):,}", f"[bold]{report.per_seat_total:,}[/bold]")
    table.add_section()
    table.add_row("create (provider)", "1", f"{report.gas['create']:,}", f"{report.per_seat('create'):,}")
    table.add_row(
        "withdraw (each auditor)", str(report.transactions["withdraw"]), f"{report.gas['withdraw']:,}", f"{report.per_seat('withdraw'):,}"
    )
    console.print(table)
    print(json.dumps(report.summary()), flush=True)
