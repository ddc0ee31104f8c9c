"""A beacon signer: follows `RandomnessRequested` on the beacon, signs each requested block once it
is mined, posts its partial signature on chain, and publishes the group signature once t valid
partials are there.

There is no trusted aggregator: the chain is the channel. Every signer reads every posted share
(`ShareSubmitted`), checks each with the contract's own pairing check (`verifyShare`, an eth_call,
free), interpolates any t valid ones (`bls.aggregate`) and calls `publish`, which verifies the
result against the group key. A bad share is never used, so it costs at most a retry; since a
threshold signature is unique, whoever publishes cannot change the value. To keep n signers from
paying n times for one publication, the signer whose share brings block b to t valid shares
publishes at once (it holds them all: no one waits for another pass), signer `(b mod n) + 1` as soon
as it sees t shares, and the others only `backup_delay_blocks` later, if it is still missing. Two
signers completing the threshold in the same block both publish; the second is refused
(`BeaconAlreadyPublished`, in its estimate when the first is already mined).

Rules that hold at every step:
- Never sign a block that is not mined (b must be at most the chain's head): before that its
  randomness must not exist anywhere. The contract refuses such a share as well.
- Only requests from `requesters` (the audit contract, and whoever the operator adds) are
  answered, so a stranger's requests cost the signers no gas.
- Nothing is kept that the chain does not hold: on (re)start the signer reads the requests of the
  last 256 blocks (older ones are expired) and the shares already posted, so a crash loses
  nothing and re-running never posts a share twice.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from trust.adapters.chain.beacon import BeaconContract, RandomnessStatus
from trust.adapters.chain.client import SentTransaction
from trust.adapters.chain.protocol import Protocol
from trust.adapters.local.beacon.keys import SignerKey, load_group, load_signer
from trust.core.beacon import bls
from trust.errors import BeaconError, ChainError, ContractReverted
from trust.settings import Settings

__all__ = ["RANDOMNESS_WINDOW_BLOCKS", "BeaconSigner", "StepReport", "run_signer"]

RANDOMNESS_WINDOW_BLOCKS = 256
"""A block's randomness can be published and read for this many blocks after it (`ThresholdBeacon`)."""

Log = Callable[[str], None]


@dataclass
class StepReport:
    """What one pass did, block numbers each (for logs and tests)."""

    requested: list[int] = field(default_factory=list)
    shared: list[int] = field(default_factory=list)
    published: list[int] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)
    expired: list[int] = field(default_factory=list)


class BeaconSigner:
    """One signer of a beacon group. Drive it with `run` (until `stop` is set) or `step` by step."""

    def __init__(
        self,
        beacon: BeaconContract,
        key: SignerKey,
        group: bls.BeaconGroup,
        requesters: Iterable[str],
        *,
        poll_seconds: float = 0.5,
        backup_delay_blocks: int = 2,
        log_blocks: int = 2_000,
        log: Log | None = None,
    ) -> None:
        self.beacon = beacon
        self.key = key
        self.group = group
        self.requesters = sorted(set(requesters))
        self.poll_seconds = poll_seconds
        self.backup_delay_blocks = backup_delay_blocks
        self.log_blocks = log_blocks
        self._log = log or (lambda _msg: None)
        self._pending: set[int] = set()
        self._scanned_to: int | None = None
        # (block, index, x, y) -> the contract's verdict: a share's validity never changes.
        self._checked: dict[tuple[int, int, int, int], bool] = {}

    @property
    def pending(self) -> set[int]:
        """Requested blocks not yet published nor expired."""
        return set(self._pending)

    async def _scan(self, head: int, report: StepReport) -> None:
        start = max(0, head - RANDOMNESS_WINDOW_BLOCKS) if self._scanned_to is None else self._scanned_to + 1
        if not self.requesters:
            self._scanned_to = head
            return
        while start <= head:
            end = min(head, start + self.log_blocks - 1)
            for request in await self.beacon.requests(start, end, self.requesters):
                if request.block_number not in self._pending:
                    self._pending.add(request.block_number)
                    report.requested.append(request.block_number)
            self._scanned_to = end
            start = end + 1

    async def _valid_shares(self, block_number: int, head: int) -> dict[int, bls.G1Point]:
        """Signer index -> a partial that the contract accepts, from the shares posted on chain."""
        valid: dict[int, bls.G1Point] = {}
        for posted in await self.beacon.shares(block_number, head):
            if posted.index in valid:
                continue
            cache_key = (block_number, posted.index, posted.partial.x, posted.partial.y)
            if cache_key not in self._checked:
                self._checked[cache_key] = await self.beacon.verify_share(block_number, posted.index, posted.partial)
            if self._checked[cache_key]:
                valid[posted.index] = posted.partial
            else:
                self._log(f"block {block_number}: signer {posted.index}'s share does not verify; ignored")
        return valid

    def _designated(self, block_number: int) -> int:
        return block_number % self.group.count + 1

    async def _serve(self, block_number: int, head: int, report: StepReport) -> None:
        # The next transaction lands in block head + 1 at the earliest: the contract's view of "now".
        if head + 1 - block_number > RANDOMNESS_WINDOW_BLOCKS:
            self._pending.discard(block_number)
            report.expired.append(block_number)
            self._log(f"block {block_number}: expired unpublished (fewer than t = {self.group.threshold} shares)")
            return
        status, _ = await self.beacon.randomness_at(block_number)
        if status is RandomnessStatus.READY:
            self._pending.discard(block_number)
            report.finished.append(block_number)
            return
        valid = await self._valid_shares(block_number, head)
        index = self.key.index
        completes = False  # whether this signer's share, posted now, brings the block to t valid shares
        if index not in valid:
            completes = len(valid) + 1 >= self.group.threshold
            partial = bls.sign(self.key.share.secret, self.beacon_message(block_number))
            if not await self._send(
                self.beacon.submit_share(self.key.operator, block_number, index, partial), block_number
            ):
                return
            report.shared.append(block_number)
            self._log(f"block {block_number}: posted the share of signer {index}")
            valid[index] = partial
            self._checked[(block_number, index, partial.x, partial.y)] = True
        if len(valid) < self.group.threshold:
            return
        if not completes and self._designated(block_number) != index and head < block_number + self.backup_delay_blocks:
            return
        signature = bls.aggregate(valid, self.group.threshold)
        if await self._send(self.beacon.publish(self.key.operator, block_number, signature), block_number):
            self._pending.discard(block_number)
            report.published.append(block_number)
            used = sorted(valid)[: self.group.threshold]
            self._log(f"block {block_number}: published the group signature from signers {used}")

    async def _send(self, sending: Awaitable[SentTransaction], block_number: int) -> bool:
        """Awaits a transaction; a revert that says the block is done (published, expired) ends it,
        any other failure is logged and retried at the next step."""
        try:
            await sending
        except ContractReverted as exc:
            if exc.error_name in ("BeaconAlreadyPublished", "BeaconBlockExpired"):
                self._pending.discard(block_number)
                return False
            self._log(f"block {block_number}: {exc}; retrying at the next step")
            return False
        return True

    def beacon_message(self, block_number: int) -> bytes:
        return bls.beacon_message(self.beacon.chain.chain_id, self.beacon.address, block_number)

    async def step(self) -> StepReport:
        """One pass: new requests, then every pending block that is mined."""
        report = StepReport()
        head = await self.beacon.chain.block_number()
        await self._scan(head, report)
        for block_number in sorted(self._pending):
            # Never before it is mined: until then nobody may know this block's randomness.
            if block_number <= head:
                await self._serve(block_number, head, report)
        return report

    async def run(self, stop: asyncio.Event) -> None:
        """Steps every `poll_seconds` until `stop` is set; a chain that does not answer is retried."""
        self._log(
            f"beacon signer {self.key.index} ({self.key.operator.address}) following {self.beacon.address} "
            f"on {self.beacon.chain.rpc_url}: {self.group.threshold}-of-{self.group.count}, requests from "
            f"{', '.join(self.requesters) or 'nobody'}; reading the chain every {self.poll_seconds:g} s"
        )
        while not stop.is_set():
            try:
                await self.step()
            except ChainError as exc:
                self._log(f"the chain did not answer ({exc}); retrying")
            try:
                await asyncio.wait_for(stop.wait(), self.poll_seconds)
            except TimeoutError:
                pass


async def run_signer(settings: Settings, key_file: Path, rpc_url: str, log: Log) -> None:
    """`trust beacon run`: signer of `key_file` (its group is the `group.json` beside it) on the
    beacon of this chain's deployment, answering the audit contract and
    `BeaconSettings.extra_requesters`; stops on SIGTERM or SIGINT."""
    group = load_group(key_file.parent)
    key = load_signer(key_file, group)
    beacon_settings = settings.beacon
    async with Protocol.connect(settings, rpc_url) as protocol:
        chain, deployment = protocol.chain, protocol.deployment
        address = deployment.contracts.get("ThresholdBeacon")
        if address is None:
            raise BeaconError(
                f"the deployment of chain {chain.chain_id} has no ThresholdBeacon (its randomness is "
                f"{deployment.extra.get('randomness', 'blockhash')}): deploy with the beacon (`trust devnet up`)"
            )
        beacon = BeaconContract(chain, address)
        if await beacon.group_key() != group.group_key:
            raise BeaconError(
                f"the beacon at {address} was deployed for another group than {key_file.parent / 'group.json'}; "
                "redeploy it for this group (a fresh devnet: `trust devnet down`, delete the devnet folder, `up`)"
            )
        signer = BeaconSigner(
            beacon,
            key,
            group,
            [deployment.contracts["TRUSTAudit"], *beacon_settings.extra_requesters],
            poll_seconds=beacon_settings.poll_seconds,
            backup_delay_blocks=beacon_settings.backup_delay_blocks,
            log_blocks=beacon_settings.log_blocks,
            log=log,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        try:
            await signer.run(stop)
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
        log(f"beacon signer {key.index} stopped")
