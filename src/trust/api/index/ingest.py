"""Reading the chain into the projection: the protocol contracts' logs in bounded block ranges, in
chain order, block times, reorganizations, and the one view a final verdict needs.

`refresh()` reads only the blocks mined since the last call, with `eth_getLogs` over at most
`block_range` blocks per request (many public RPC providers cap a request at 2,000 to 10,000
blocks): on an idle chain that is one `eth_getBlockByNumber` for the latest block plus one to check
that the last indexed block is still canonical. A reorganization is detected by the hash of the
last indexed block: when it changed, the model is rebuilt from the start block. `confirmations`
keeps the newest blocks out of the model on chains where reorgs are common.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, Literal, TypeVar

from web3.contract.async_contract import AsyncContractEvent
from web3.exceptions import BlockNotFound, Web3Exception

from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import SegmentStatus
from trust.api.index.projection import Handler, Projection
from trust.api.index.values import RefreshReport, TxRef
from trust.errors import ChainError

__all__ = ["DEFAULT_LOG_BLOCK_RANGE", "DEFAULT_VIEW_CONCURRENCY", "Ingest", "bounded"]

DEFAULT_LOG_BLOCK_RANGE = 2_000
"""Blocks per `eth_getLogs` request: within what public RPC providers accept (many cap a request at
2,000 to 10,000 blocks), and a few hundred logs per request on a busy deployment."""
DEFAULT_VIEW_CONCURRENCY = 8
"""View calls in flight at once when a page needs many (the auditors list, a segment's seats)."""

T = TypeVar("T")


def _int(value: Any) -> int:
    """A JSON-RPC quantity (hex string or int) as an int."""
    return int(value, 16) if isinstance(value, str) else int(value)


async def bounded(concurrency: int, jobs: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Runs the jobs with at most `concurrency` in flight; their results in the jobs' order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    return list(await asyncio.gather(*(one(job) for job in jobs)))


class Ingest:
    """Feeds one deployment's events to `projection`, from `start_block` on.

    Not locked: its owner (`ChainIndex`) runs `refresh()` and its reads one at a time.
    """

    def __init__(
        self, protocol: Protocol, *, start_block: int, block_range: int, confirmations: int, view_concurrency: int
    ) -> None:
        self.protocol = protocol
        self.start_block = start_block
        self.block_range = block_range
        self.confirmations = confirmations
        self.view_concurrency = view_concurrency
        self.projection = Projection()
        self._next_block = start_block
        self._head_hash: bytes | None = None
        self.head_time = 0
        """The newest indexed block's time (unix seconds)."""
        self._events = self._event_table()

    def _reset(self) -> None:
        self.projection = Projection()
        self._next_block = self.start_block
        self._head_hash = None
        self.head_time = 0
        self._events = self._event_table()

    def _event_table(self) -> dict[bytes, tuple[AsyncContractEvent, Handler]]:
        """topic0 -> (the event, its handler), for every event the model reads."""
        contracts = {
            "audit": self.protocol.audit.contract.events,
            "registry": self.protocol.registry.contract.events,
            "segment_keys": self.protocol.segment_keys.contract.events,
            "params": self.protocol.params.contract.events,
        }
        table = {}
        for (contract, name), handler in self.projection.handlers().items():
            event: AsyncContractEvent = contracts[contract][name]()
            table[bytes.fromhex(str(event.topic).removeprefix("0x"))] = (event, handler)
        return table

    @property
    def head_block(self) -> int:
        """The last block indexed (start_block - 1 before the first refresh)."""
        return self._next_block - 1

    async def refresh(self) -> RefreshReport:
        """Reads the blocks mined since the last refresh and applies their events.

        Raises `ChainError` when the node cannot be read; what was read before the failing range
        stays applied, and the next refresh resumes there.
        """
        rebuilt = False
        if self._head_hash is not None and await self._block_hash(self.head_block) != self._head_hash:
            self._reset()
            rebuilt = True
        await self._resolve_finals()
        time_before = self.head_time
        latest = await self._block("latest")
        target = _int(latest["number"]) - self.confirmations
        first = self._next_block
        requests = logs = 0
        while self._next_block <= target:
            end = min(self._next_block + self.block_range - 1, target)
            batch = await self._logs(self._next_block, end)
            requests += 1
            logs += len(batch)
            await self._apply(batch)
            self._next_block = end + 1
            self._head_hash = None  # unknown until the loop ends; a failure below skips one reorg check
            await self._resolve_finals()
        if self._head_hash is None:
            if self.head_block == _int(latest["number"]):
                self._head_hash = bytes(latest["hash"])
                self.head_time = _int(latest["timestamp"])
            else:
                head = await self._block(self.head_block)
                self._head_hash, self.head_time = bytes(head["hash"]), _int(head["timestamp"])
        if self.head_time > time_before and time_before < self.projection.stream_finish:
            self.projection.stale.all_auditors = True  # the stakers' share streams: every pending reward grew
        return RefreshReport(first, self._next_block - 1, requests, logs, rebuilt)

    async def _block(self, number: int | Literal["latest"]) -> Mapping[str, Any]:
        try:
            block: Mapping[str, Any] = await self.protocol.chain.w3.eth.get_block(number)
        except (Web3Exception, OSError, TimeoutError) as exc:
            raise ChainError(
                f"reading block {number} from {self.protocol.chain.rpc_url} failed: {exc}; is the node running?"
            ) from exc
        return block

    async def _block_hash(self, number: int) -> bytes:
        """The hash of block `number`; empty when the chain has no such block (any more)."""
        if number < 0:
            return b""
        try:
            return bytes((await self._block(number))["hash"])
        except ChainError as exc:
            if isinstance(exc.__cause__, BlockNotFound):
                return b""  # the chain is shorter than it was: a reorganization or a reset devnet
            raise

    async def _logs(self, from_block: int, to_block: int) -> list[Mapping[str, Any]]:
        addresses = [
            self.protocol.audit.address,
            self.protocol.registry.address,
            self.protocol.segment_keys.address,
            self.protocol.params.address,
        ]
        try:
            logs = await self.protocol.chain.w3.eth.get_logs(
                {"fromBlock": from_block, "toBlock": to_block, "address": addresses}
            )
        except (Web3Exception, OSError, TimeoutError) as exc:
            raise ChainError(
                f"eth_getLogs for blocks {from_block}..{to_block} at {self.protocol.chain.rpc_url} failed: {exc}; "
                f"if the node limits log ranges, lower block_range (now {self.block_range})"
            ) from exc
        return sorted(logs, key=lambda log: (int(log["blockNumber"]), int(log["logIndex"])))

    async def _apply(self, logs: Sequence[Mapping[str, Any]]) -> None:
        """Applies logs in chain order; block times come with the logs (`blockTimestamp`, which
        current nodes return) or are read once per block."""
        times: dict[int, int] = {}
        missing = set()
        for log in logs:
            number = int(log["blockNumber"])
            stamp = log.get("blockTimestamp")
            if stamp is not None:
                times[number] = _int(stamp)
            else:
                missing.add(number)
        missing -= times.keys()
        if missing:
            blocks = await bounded(self.view_concurrency, [partial(self._block, n) for n in sorted(missing)])
            times.update({int(b["number"]): int(b["timestamp"]) for b in blocks})
        for log in logs:
            topics = log.get("topics") or []
            if not topics:
                continue
            entry = self._events.get(bytes(topics[0]))
            if entry is None:
                continue  # ownership, upgrades, parameters: not shown
            event, handler = entry
            decoded = event.process_log(log)
            tx = "0x" + bytes(log["transactionHash"]).hex()
            self.projection.begin(tx)
            handler(decoded["args"], TxRef(tx, int(log["blockNumber"]), times[int(log["blockNumber"])]))

    async def _resolve_finals(self) -> None:
        """Segments whose `SegmentFinalized(passed=false)` may mean Failed or Undetermined: the
        segment view says which (a final status never changes, so one read each)."""
        projection = self.projection
        if not projection.unresolved:
            return
        pending = sorted(projection.unresolved)
        infos = await bounded(self.view_concurrency, [partial(self.protocol.audit.segment, s, g) for s, g in pending])
        for (session_id, segment_id), info in zip(pending, infos, strict=True):
            if info.status is SegmentStatus.UNDETERMINED:
                projection.settle_undetermined(session_id, segment_id)
            projection.unresolved.discard((session_id, segment_id))
