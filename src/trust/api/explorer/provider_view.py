"""The explorer's provider view: the critiques of a provider's own sessions, opened on their segment pages.

A seat's audit report (its vote, score, error type, expected value, critique and evaluation time) is
sealed to the reply key of the session's provider (`trust.core.privacy.reports`; the key is derived from
the provider's wallet, `trust.services.sdk.keys.reply_key`): the chain says where each report lies
(`ReportPublished`), only the provider can read it. Critiques discuss the trace's content, which is
private (docs/privacy.md), so a public explorer never shows them. An explorer that the provider runs
for itself may: `ProviderView(account, ipfs_url)` (opt-in, nothing reads reports without it) gives it
the provider's wallet, from which `ReportReader` derives each session's reply key, and the IPFS node
the sealed blobs are fetched from. Only sessions whose provider is that wallet are read; for any other
the page keeps saying that the reports are sealed to their provider.

A report is read as the SDK reads it (`trust.services.sdk.session.SessionDriver.reports`): `KuboClient.cat`
fetches at most `MAX_REPORT_FETCH_BYTES` and checks the bytes against the CID the chain announced,
then `open_report` checks the seal against the seat the chain names (session, segment, round, seat,
auditor) and the session's trace root.

Pages stay fast: the reports of a segment are fetched concurrently (at most `fetch_concurrency` at
once) and a page waits at most `wait_seconds` for them; a fetch still running then goes on in the
background, its seat says so, and the next view shows its result. A report that opened, or that
could not be opened (its bytes matched the CID, so it never will), is kept per (session, segment,
round, seat) with its CID, for at most `max_cached` seats (the oldest go first); a republished report
(a new CID for the seat) is read afresh. A fetch that failed (the node down, the content not found,
bytes that do not match the CID) is not kept: the next view tries again. Nothing is raised to the
page: every outcome is a `SeatReading` that says in words what happened.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections import OrderedDict
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account.signers.local import LocalAccount

from trust.adapters.storage.kubo import KuboClient
from trust.api.index import SegmentDetail, SessionSummary
from trust.core.privacy.reports import AuditReport, open_report
from trust.errors import TrustError
from trust.services.sdk.keys import reply_key
from trust.services.sdk.session import MAX_REPORT_FETCH_BYTES

__all__ = [
    "DEFAULT_FETCH_CONCURRENCY",
    "DEFAULT_MAX_CACHED",
    "DEFAULT_WAIT_SECONDS",
    "ProviderView",
    "ReadingState",
    "ReportReader",
    "SeatReading",
]

log = logging.getLogger("trust.api")

DEFAULT_WAIT_SECONDS = 3.0
"""How long a segment page waits for its reports before it is rendered without those still coming."""
DEFAULT_FETCH_CONCURRENCY = 8
"""Report fetches in flight at once (a segment has at most 3 rounds of 7 seats)."""
DEFAULT_MAX_CACHED = 4096
"""Seats whose report is kept (a report is at most 64 KiB; typically 1 KiB)."""
DEFAULT_CONTENT_TIMEOUT_SECONDS = 10.0
"""How long the IPFS node may look for a report's blob before answering that it has none."""

SeatKey = tuple[int, int, int, int]
"""(session id, segment id, round, seat index)."""


@dataclass(frozen=True, slots=True)
class ProviderView:
    """The opt-in provider view of an explorer (`create_explorer_app(..., provider_view=...)`).

    `account` is the provider's wallet: the explorer derives the reply key of each of its sessions
    from it (an EIP-712 signature, never a transaction) and opens their reports. `ipfs_url` is the
    Kubo RPC API the sealed blobs are fetched from. `wait_seconds` bounds how long a segment page
    waits for its reports. Run it only where the provider alone can reach the explorer: the pages
    then show what auditors wrote about the trace's content.
    """

    account: LocalAccount = field(repr=False)
    ipfs_url: str
    wait_seconds: float = DEFAULT_WAIT_SECONDS
    content_timeout_seconds: float = DEFAULT_CONTENT_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        for name in ("wait_seconds", "content_timeout_seconds"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"provider view: {name} must be a positive number of seconds, got {value!r}")

    @property
    def address(self) -> str:
        return str(self.account.address)

    def kubo(self) -> KuboClient:
        """A client of the view's IPFS node (the caller closes it)."""
        return KuboClient(self.ipfs_url, content_timeout_seconds=self.content_timeout_seconds)


class ReadingState(enum.StrEnum):
    OPENED = "opened"
    """Fetched, its CID matched, and opened with the session's reply key."""
    UNAVAILABLE = "unavailable"
    """Could not be fetched: the IPFS node is away, holds no such blob, or answered other bytes."""
    UNREADABLE = "unreadable"
    """Fetched and matching its CID, but it does not open as the report of this seat."""
    PENDING = "pending"
    """Still being fetched when the page was rendered."""


@dataclass(frozen=True, slots=True)
class SeatReading:
    """What the provider view found under one seat's published report CID. `report` is set when
    `state` is OPENED; `note` says what happened, in words, otherwise."""

    cid: str
    state: ReadingState
    report: AuditReport | None = None
    note: str = ""

    @property
    def evaluation_seconds(self) -> float | None:
        """How long the auditor's evaluation took, by its own clock."""
        if self.report is None:
            return None
        return self.report.finished_at - self.report.started_at


@dataclass(slots=True)
class _Entry:
    cid: str
    task: asyncio.Task[SeatReading]


class ReportReader:
    """Opens the sealed reports of the sessions `account` provided (see the module docstring).

    `kubo` is the client blobs are fetched with (the caller closes it, after `aclose`); `chain_id`
    and `audit_contract` enter the reply key's derivation. Use one reader per event loop.
    """

    def __init__(
        self,
        account: LocalAccount,
        kubo: KuboClient,
        *,
        chain_id: int,
        audit_contract: str,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
        fetch_concurrency: int = DEFAULT_FETCH_CONCURRENCY,
        max_cached: int = DEFAULT_MAX_CACHED,
    ) -> None:
        if not wait_seconds > 0 or fetch_concurrency < 1 or max_cached < 1:
            raise ValueError(
                f"report reader: wait_seconds ({wait_seconds!r}) must be positive, fetch_concurrency "
                f"({fetch_concurrency!r}) and max_cached ({max_cached!r}) at least 1"
            )
        self._account = account
        self._kubo = kubo
        self._chain_id = chain_id
        self._audit_contract = audit_contract
        self._wait_seconds = wait_seconds
        self._max_cached = max_cached
        self._slots = asyncio.Semaphore(fetch_concurrency)
        self._entries: OrderedDict[SeatKey, _Entry] = OrderedDict()
        self._closed = False

    @property
    def address(self) -> str:
        """The provider whose sessions this reader opens."""
        return str(self._account.address)

    def reads(self, session: SessionSummary) -> bool:
        """Whether `session` was opened by this reader's wallet (only its reports are sealed to it)."""
        return session.provider.lower() == self.address.lower()

    async def read(self, session: SessionSummary, segment: SegmentDetail) -> dict[tuple[int, int], SeatReading]:
        """The reading of every seat of `segment` that published a report, by (round, seat index);
        empty for a session of another provider. Waits at most `wait_seconds`."""
        if self._closed:
            raise RuntimeError("the report reader is closed")
        if not self.reads(session):
            return {}
        key: X25519PrivateKey | None = None
        wanted: dict[tuple[int, int], _Entry] = {}
        for round_ in segment.rounds:
            for seat in round_.seats:
                if seat.report is None:
                    continue
                at: SeatKey = (session.session_id, segment.segment.segment_id, round_.number, seat.index)
                entry = self._entries.get(at)
                if entry is None or entry.cid != seat.report.cid:
                    if key is None:
                        key = self._reply_key(session.trace_root)
                    task = asyncio.create_task(self._fetch(at, seat.auditor, seat.report.cid, session.trace_root, key))
                    entry = self._entries[at] = _Entry(seat.report.cid, task)
                self._entries.move_to_end(at)
                wanted[(round_.number, seat.index)] = entry
        if not wanted:
            return {}
        running = {entry.task for entry in wanted.values() if not entry.task.done()}
        if running:
            await asyncio.wait(running, timeout=self._wait_seconds)
        readings: dict[tuple[int, int], SeatReading] = {}
        for (round_number, index), entry in wanted.items():
            if entry.task.done():
                readings[(round_number, index)] = entry.task.result()
            else:
                readings[(round_number, index)] = SeatReading(
                    entry.cid,
                    ReadingState.PENDING,
                    note=f"still being fetched from the IPFS node at {self._kubo.api_url} after "
                    f"{self._wait_seconds:g} s; reload the page to see it",
                )
        self._evict()
        return readings

    async def aclose(self) -> None:
        """Stops the fetches still running; the reader reads nothing more."""
        self._closed = True
        tasks = [entry.task for entry in self._entries.values() if not entry.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._entries.clear()

    def _reply_key(self, trace_root: bytes) -> X25519PrivateKey:
        return reply_key(
            self._account, chain_id=self._chain_id, audit_contract=self._audit_contract, trace_root=trace_root
        )

    def _evict(self) -> None:
        """Drops the oldest finished entries beyond `max_cached` (a running fetch stays: a page waits on it)."""
        excess = len(self._entries) - self._max_cached
        if excess <= 0:
            return
        for at in [at for at, entry in self._entries.items() if entry.task.done()][:excess]:
            del self._entries[at]

    def _forget(self, at: SeatKey, cid: str) -> None:
        """Drops a failed fetch, so that the next view tries again (unless a newer CID replaced it)."""
        entry = self._entries.get(at)
        if entry is not None and entry.cid == cid:
            del self._entries[at]

    async def _fetch(
        self, at: SeatKey, auditor: str, cid: str, trace_root: bytes, key: X25519PrivateKey
    ) -> SeatReading:
        session_id, segment_id, round_number, seat_index = at
        try:
            async with self._slots:
                blob = await self._kubo.cat(cid, max_bytes=MAX_REPORT_FETCH_BYTES)
        except TrustError as exc:
            # The node away, no such blob on it, bytes that do not match the CID or exceed the limit:
            # the node's answer, not the report, which may be there next time.
            self._forget(at, cid)
            return SeatReading(cid, ReadingState.UNAVAILABLE, note=f"could not be fetched: {exc}")
        except Exception as exc:  # the page says it in words; the log keeps the traceback
            log.exception("provider view: fetching report %s of seat %s failed", cid, at)
            self._forget(at, cid)
            return SeatReading(cid, ReadingState.UNAVAILABLE, note=f"could not be fetched: {type(exc).__name__}: {exc}")
        try:
            report = open_report(
                blob,
                private_key=key,
                trace_root=trace_root,
                session_id=session_id,
                segment_index=segment_id,
                round=round_number,
                seat_index=seat_index,
                auditor=auditor,
            )
        except TrustError as exc:
            return SeatReading(cid, ReadingState.UNREADABLE, note=f"could not be opened: {exc}")
        return SeatReading(cid, ReadingState.OPENED, report)
