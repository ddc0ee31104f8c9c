"""Typed access to a deployed `ThresholdBeacon` (and to whichever randomness source an audit
contract uses), and its deployment.

Services call these methods, never web3's dynamic `contract.functions.x`. Writes take the signing
account explicitly: a signer posts its shares from its own operator account.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from trust.adapters.chain.client import ChainClient, SentTransaction
from trust.core.beacon import bls
from trust.errors import ChainError, ContractReverted

__all__ = [
    "BeaconContract",
    "BeaconRequest",
    "RandomnessSourceInfo",
    "RandomnessStatus",
    "SubmittedShare",
    "deploy_beacon",
    "identify_randomness_source",
]


class RandomnessStatus(IntEnum):
    """`IRandomnessSource.Status`."""

    PENDING = 0
    READY = 1
    EXPIRED = 2


@dataclass(frozen=True, slots=True)
class BeaconRequest:
    """A `RandomnessRequested` event: `requester` fixed `block_number` (asked in block `seen_in`)."""

    block_number: int
    requester: str
    seen_in: int


@dataclass(frozen=True, slots=True)
class SubmittedShare:
    """A `ShareSubmitted` event: signer `index`'s partial signature of `block_number`'s message."""

    block_number: int
    index: int
    partial: bls.G1Point
    seen_in: int
    log_index: int


def _g1(raw: Any) -> bls.G1Point:
    return bls.G1Point(int(raw[0]), int(raw[1]))


def _g2(raw: Any) -> bls.G2Point:
    return bls.G2Point((int(raw[0][0]), int(raw[0][1])), (int(raw[1][0]), int(raw[1][1])))


class BeaconContract:
    """`ThresholdBeacon`: requests, shares, publication and the views an aggregator needs."""

    def __init__(self, chain: ChainClient, address: str) -> None:
        self.chain = chain
        self.address = to_checksum_address(address)
        self.contract = chain.contract("ThresholdBeacon", address)

    # -- writes
    async def request(self, caller: LocalAccount, block_number: int) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.request(block_number), caller)

    async def submit_share(
        self, operator: LocalAccount, block_number: int, index: int, partial: bls.G1Point
    ) -> SentTransaction:
        fn = self.contract.functions.submitShare(block_number, index, partial.to_chain())
        return await self.chain.transact(fn, operator)

    async def publish(self, caller: LocalAccount, block_number: int, signature: bls.G1Point) -> SentTransaction:
        return await self.chain.transact(self.contract.functions.publish(block_number, signature.to_chain()), caller)

    # -- views
    async def randomness_at(self, block_number: int) -> tuple[RandomnessStatus, bytes]:
        status, value = await self.chain.call(self.contract.functions.randomnessAt(block_number))
        return RandomnessStatus(int(status)), bytes(value)

    async def verify_share(self, block_number: int, index: int, partial: bls.G1Point) -> bool:
        """The contract's own pairing check of a partial signature (an eth_call: free, and exactly
        the arithmetic `publish` will apply to the aggregate)."""
        fn = self.contract.functions.verifyShare(block_number, index, partial.to_chain())
        return bool(await self.chain.call(fn))

    async def message_point(self, block_number: int) -> bls.G1Point:
        return _g1(await self.chain.call(self.contract.functions.messagePoint(block_number)))

    async def threshold(self) -> int:
        return int(await self.chain.call(self.contract.functions.threshold()))

    async def signer_count(self) -> int:
        return int(await self.chain.call(self.contract.functions.signerCount()))

    async def group_key(self) -> bls.G2Point:
        return _g2(await self.chain.call(self.contract.functions.groupKey()))

    async def signer(self, index: int) -> tuple[bls.G2Point, str]:
        key, operator = await self.chain.call(self.contract.functions.signer(index))
        return _g2(key), to_checksum_address(operator)

    # -- events
    async def _logs(self, event: str, from_block: int, to_block: int, filters: dict[str, Any] | None) -> list[Any]:
        try:
            logs = await self.chain.get_logs(
                self.contract.events[event](), from_block=from_block, to_block=to_block, argument_filters=filters
            )
        except Exception as exc:  # the provider raises transport-specific errors
            raise ChainError(f"reading {event} from {self.chain.rpc_url} failed: {exc}") from exc
        return sorted(logs, key=lambda item: (int(item["blockNumber"]), int(item["logIndex"])))

    async def requests(
        self, from_block: int, to_block: int, requesters: list[str] | None = None
    ) -> list[BeaconRequest]:
        """`RandomnessRequested` in blocks `from_block`..`to_block`, from `requesters` only when given."""
        filters = {"requester": [to_checksum_address(r) for r in requesters]} if requesters is not None else None
        return [
            BeaconRequest(
                int(log["args"]["blockNumber"]), to_checksum_address(log["args"]["requester"]), log["blockNumber"]
            )
            for log in await self._logs("RandomnessRequested", from_block, to_block, filters)
        ]

    async def shares(self, block_number: int, to_block: int) -> list[SubmittedShare]:
        """The partial signatures posted for `block_number` (all posted after it was mined, up to
        `to_block`), in chain order."""
        if to_block < block_number:
            return []  # not mined yet: no share can exist (the contract refuses them)
        logs = await self._logs("ShareSubmitted", block_number, to_block, {"blockNumber": block_number})
        return [
            SubmittedShare(
                int(log["args"]["blockNumber"]),
                int(log["args"]["index"]),
                bls.G1Point(int(log["args"]["x"]), int(log["args"]["y"])),
                int(log["blockNumber"]),
                int(log["logIndex"]),
            )
            for log in logs
        ]


async def deploy_beacon(chain: ChainClient, deployer: LocalAccount, group: bls.BeaconGroup) -> str:
    """Deploys a `ThresholdBeacon` for `group` and returns its address."""
    return await chain.deploy("ThresholdBeacon", deployer, *group.constructor_args())


@dataclass(frozen=True, slots=True)
class RandomnessSourceInfo:
    """What an audit contract's randomness source is, as `trust params show` and `trust devnet up`
    print it. `threshold` and `signers` are set for a threshold beacon."""

    address: str
    kind: str
    threshold: int | None = None
    signers: int | None = None

    def describe(self) -> str:
        if self.kind == "ThresholdBeacon":
            return f"ThresholdBeacon at {self.address}: {self.threshold}-of-{self.signers} threshold BLS beacon"
        if self.kind == "BlockhashRandomness":
            return (
                f"BlockhashRandomness at {self.address}: the block hash, INSECURE (a block producer "
                "chooses it); for unit tests only"
            )
        return f"an unknown contract at {self.address} (neither ThresholdBeacon nor BlockhashRandomness)"


async def identify_randomness_source(chain: ChainClient, address: str) -> RandomnessSourceInfo:
    """Which randomness source lives at `address`: the block-hash source is recognized by its code
    (it has no immutables), a threshold beacon by answering `threshold()` and `signerCount()`."""
    address = to_checksum_address(address)
    code = await chain.code_at(address)
    blockhash_code = chain.artifacts["BlockhashRandomness"].deployed_bytecode
    if code and "0x" + code.hex() == blockhash_code:
        return RandomnessSourceInfo(address, "BlockhashRandomness")
    if code:
        beacon = BeaconContract(chain, address)
        try:
            return RandomnessSourceInfo(
                address, "ThresholdBeacon", await beacon.threshold(), await beacon.signer_count()
            )
        except (ContractReverted, ChainError):
            pass
    return RandomnessSourceInfo(address, "unknown")
