"""The HTTP gateway for providers: `/v1/audits`, with source anonymization (paper 3.4.4).

- `POST /v1/audits`: 202 `AuditAccepted` (the id, the epoch, links); 400 an unparseable trace, 413 a
  body over `max_body_bytes`, 422 a schema error, 503 the chain, IPFS, a tier's auditors or the
  gateway's funds unavailable.
- `GET /v1/audits/{id}`: `AuditView`, queued, batched, auditing, done (with the SDK's `AuditResult`
  JSON) or failed (with the error); 404 for an unknown id.
- `GET /v1/audits/{id}/events`: server-sent events `status`, `progress`, then `done` or `failed` (the
  `AuditView`); `Last-Event-ID` resumes a stream.
- `GET /v1/audits/{id}/proof`: `ProofView`, the chain, audit contract, session, trace root, finalize
  block and transaction, the session's verdict, this trace's verdict and its segments' inclusion
  proofs; 409 until the audit is done.

Every error is `{"error": {"code", "message"}}` (`ErrorResponse`).

The flow. A submission is parsed and decomposed (`trust.services.sdk.client.trace_graph` / `agents_graph`),
then checked against the network as the SDK checks a trace before uploading anything
(`BatchClient.admit`: the IPFS node, the chain and its deployment, the size limits, a committee for
every tier, the gateway wallet's balance). Only then is it accepted (202) into the open epoch
(`trust.api.gateway.batcher`). When the epoch closes, ALL its traces are audited as ONE session from the
gateway's own wallet, their segments shuffled together under batch-local node ids
(`trust.services.sdk.batch`), so the auditors cannot tell which provider a segment came from. Each trace's
verdict is judged off chain on its own segments with the SDK's judgement; the on-chain verdict of
the session covers the whole batch and is not any one provider's.

Nothing is half-submitted: a refused submission uploads and sends nothing; a batch that fails before
its session opens unpins what it uploaded and every one of its audits fails with the error.

State lives in memory: an audit is kept `retention_seconds` after it ends; a restart forgets every
audit (and the open sessions' keys: escalated rounds of a session the gateway was driving are then
served by nobody). The audit id is 128 random bits and is the only credential: whoever holds it
reads the result.
"""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at definition time,
# and they name `find`, a dependency local to `gateway_router`.
import asyncio
import logging
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from eth_account.signers.local import LocalAccount
from fastapi import APIRouter, Depends, Header, Request, Response, Security
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from fastapi.sse import EventSourceResponse, ServerSentEvent
from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope

from trust.api.gateway.access import AccessControl, AccessDenied
from trust.api.gateway.batcher import Batcher, EpochPolicy
from trust.api.gateway.billing import Billing, BillingRefused, BillingUnavailable, ChargeRecord, pro_rata
from trust.api.gateway.keys import ApiKey
from trust.api.gateway.models import (
    AuditAccepted,
    AuditLinks,
    AuditStatus,
    AuditView,
    BatchView,
    BillingView,
    ErrorDetail,
    ErrorResponse,
    ProgressView,
    ProofView,
    SegmentProofView,
    SubmitRequest,
)
from trust.core.decompose.rules import Trace
from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import Hdag
from trust.errors import (
    AuditError,
    AuditTimeout,
    ChainError,
    ConfigError,
    FeeTooLow,
    GraphError,
    InsufficientAuditors,
    IpfsError,
    SessionInterrupted,
    TrustError,
)
from trust.services.sdk.batch import BatchClient, BatchEntry, SegmentInclusion, registered_segments
from trust.services.sdk.config import AuditConfig
from trust.services.sdk.inputs import trace_document
from trust.services.sdk.progress import ProgressEvent
from trust.services.sdk.result import AuditResult
from trust.settings import Settings

__all__ = [
    "DEFAULT_EPOCH_SECONDS",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_TRACES_PER_EPOCH",
    "AuditState",
    "Gateway",
    "GatewayError",
    "GatewayOptions",
    "StreamEvent",
    "error_for",
    "gateway_router",
    "owner_of",
    "parse_trace",
]

log = logging.getLogger("trust.api.gateway.service")

DEFAULT_EPOCH_SECONDS = 30.0
"""How long an epoch collects traces after its first one arrived."""
DEFAULT_MAX_TRACES_PER_EPOCH = 16
DEFAULT_MAX_SEGMENTS_PER_EPOCH = 1024
"""Segments of one batch session (the protocol's `maxSegmentsPerSession` may lower it)."""
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body: a trace of `AuditConfig.max_trace_chars` (10^6) characters of ASCII, with JSON
escaping to spare; non-ASCII text takes up to four bytes a character."""
DEFAULT_MAX_TRACE_CHARS = 1_000_000
DEFAULT_MAX_NODES = 1024
DEFAULT_SESSION_TIMEOUT_SECONDS = 900.0
"""How long a batch's session is driven before its audits fail with `timeout`."""
DEFAULT_REPORT_GRACE_SECONDS = 3.0
DEFAULT_RETENTION_SECONDS = 3600.0
"""How long a finished audit stays readable."""
DEFAULT_MAX_OPEN_AUDITS = 1024
"""Audits not yet finished at once; beyond it submissions get 503 `busy`."""
MAX_EVENTS_KEPT = 512
"""Events kept per audit for replay (progress events of one stage with the same counts are merged)."""
AUDIT_ID_BYTES = 16
"""Random bytes of an audit id (128 bits: the id is the credential that reads the result)."""
_MS_PER_SECOND = 1000
_FINAL_EVENTS = frozenset({"done", "failed"})


@dataclass(frozen=True, slots=True)
class GatewayOptions:
    """The gateway's settings (seconds and bytes as named). See docs/gateway.md for each."""

    epoch_seconds: float = DEFAULT_EPOCH_SECONDS
    max_traces_per_epoch: int = DEFAULT_MAX_TRACES_PER_EPOCH
    max_segments_per_epoch: int = DEFAULT_MAX_SEGMENTS_PER_EPOCH
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_trace_chars: int = DEFAULT_MAX_TRACE_CHARS
    max_nodes: int = DEFAULT_MAX_NODES
    session_timeout_seconds: float = DEFAULT_SESSION_TIMEOUT_SECONDS
    report_grace_seconds: float = DEFAULT_REPORT_GRACE_SECONDS
    retention_seconds: float = DEFAULT_RETENTION_SECONDS
    max_open_audits: int = DEFAULT_MAX_OPEN_AUDITS

    def __post_init__(self) -> None:
        EpochPolicy(self.epoch_seconds, self.max_traces_per_epoch, self.max_segments_per_epoch)
        for name in ("max_body_bytes", "max_trace_chars", "max_nodes", "max_open_audits"):
            if getattr(self, name) < 1:
                raise ConfigError(f"gateway {name} must be at least 1, got {getattr(self, name)}")
        for name in ("session_timeout_seconds", "retention_seconds"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"gateway {name} must be positive, got {getattr(self, name)}")
        if not self.report_grace_seconds >= 0:
            raise ConfigError(f"gateway report_grace_seconds must be zero or more, got {self.report_grace_seconds}")


class GatewayError(Exception):
    """An answer other than success: its HTTP status, stable code and message."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[dict[str, Any]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = dict(headers or {})

    def response(self) -> JSONResponse:
        body = ErrorResponse(error=ErrorDetail(code=self.code, message=self.message, details=self.details))
        return JSONResponse(
            body.model_dump(mode="json", exclude_none=True), status_code=self.status, headers=self.headers
        )


def error_for(exc: TrustError) -> tuple[int, str]:
    """The HTTP status and code of an SDK error: the provider's input is 400, everything the gateway
    or the network lacks right now is 503 (retry later), the rest 500."""
    if isinstance(exc, GraphError):
        return 400, "invalid_trace"
    if isinstance(exc, BillingUnavailable):
        return 503, "billing_unavailable"
    if isinstance(exc, SessionInterrupted):
        return 503, "ipfs_error" if exc.service == "ipfs" else "chain_error"
    if isinstance(exc, IpfsError):
        return 503, "ipfs_error"
    if isinstance(exc, ChainError):
        return 503, "chain_error"
    if isinstance(exc, InsufficientAuditors):
        return 503, "auditors_unavailable"
    if isinstance(exc, AuditTimeout):
        return 504, "timeout"
    if isinstance(exc, FeeTooLow):
        return 500, "fee_too_low"
    if isinstance(exc, AuditError):
        return 503, "gateway_unfunded"
    return 500, "internal"


# ---------------------------------------------------------------------------------------- inputs


def parse_trace(kind: str, trace: str | Mapping[str, Any] | list[Any], config: AuditConfig) -> Hdag | Cig:
    """The graph of a submission (`GraphError` naming what is wrong). A trace is raw text, a
    trust.hdag document (object or text), {problem, steps} or a list of steps; an agent log is
    what `trust.services.sdk.client.agents_graph` reads (object, list or JSON text). Text is read as what it
    claims to be (`trust.services.sdk.inputs`): text that opens with `{` or `[` must be JSON, and JSON that
    does not parse is refused with its position, never decomposed as prose."""
    from trust.services.sdk.client import agents_graph, trace_graph

    if kind == "agents":
        return agents_graph(trace, config, what="trace (the agent log)")
    if isinstance(trace, str):
        return trace_graph(trace, config, what="trace")
    document = trace_document(trace, "trace")
    if isinstance(document, Trace) and document.steps is not None:
        total = sum(len(step) for step in document.steps) + len(document.problem or "")
        if total > config.max_trace_chars:
            raise GraphError(
                f"trace is {total:,} characters, over the limit of {config.max_trace_chars:,} (max_trace_chars): "
                "split it"
            )
    return trace_graph(document, config, what="trace")


# ---------------------------------------------------------------------------------------- state


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One server-sent event of an audit: its id (1, 2, ... per audit), name and data."""

    id: int
    event: str
    data: dict[str, Any]


class AuditState:
    """One submission, from the open epoch to its result: what the endpoints read and the events its
    streams follow. Mutated only by the gateway, on the event loop."""

    def __init__(
        self, audit_id: str, entry: BatchEntry, submitted_at: float, segments: int, owner: str | None = None
    ) -> None:
        self.id = audit_id
        self.entry = entry
        self.segments = segments
        """The segments it registers in its batch's session (`trust.services.sdk.batch.registered_segments`)."""
        self.submitted_at = submitted_at
        self.owner = owner
        """Who may read it: `owner_of` the submitting key (None: an open gateway, anyone)."""
        self.charge: ChargeRecord | None = None
        """What it costs its provider (a billing gateway only)."""
        self.status = AuditStatus.QUEUED
        self.epoch: int | None = None
        self.batch_traces: int | None = None
        self.batch_segments: int | None = None
        self.session_id: int | None = None
        self.result: AuditResult | None = None
        self.inclusion: tuple[SegmentInclusion, ...] = ()
        self.error: ErrorDetail | None = None
        self.timer: asyncio.TimerHandle | None = None
        self._events: deque[StreamEvent] = deque(maxlen=MAX_EVENTS_KEPT)
        self._next_id = 1
        self._signal = asyncio.Event()
        self._last_progress: dict[str, tuple[int, int]] = {}

    @property
    def signal(self) -> asyncio.Event:
        """Set at the next event: take it before reading `events_after`, then wait on it."""
        return self._signal

    def _publish(self, event: str, data: dict[str, Any]) -> None:
        self._events.append(StreamEvent(self._next_id, event, data))
        self._next_id += 1
        signal, self._signal = self._signal, asyncio.Event()
        signal.set()

    def events_after(self, last_id: int) -> list[StreamEvent]:
        """Events newer than `last_id`; once the audit ended, at least its final event (a stream that
        reconnects after the end gets the result again rather than waiting forever)."""
        newer = [event for event in self._events if event.id > last_id]
        if not newer and self.status.terminal and self._events:
            return [self._events[-1]]
        return newer

    def advance(self, status: AuditStatus) -> None:
        self.status = status
        self._publish("status", {"status": str(status), "epoch": self.epoch, "session_id": self.session_id})

    def progress(self, event: ProgressEvent) -> None:
        counts = (event.done, event.total)
        if not event.message and self._last_progress.get(event.stage) == counts:
            return  # the session loop repeats unchanged counts on every block
        self._last_progress[event.stage] = counts
        view = ProgressView(stage=event.stage, done=event.done, total=event.total, message=event.message)
        self._publish("progress", view.model_dump(mode="json"))

    def _end(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def succeed(self, result: AuditResult, inclusion: tuple[SegmentInclusion, ...]) -> None:
        self.result, self.inclusion, self.status = result, inclusion, AuditStatus.DONE
        self._end()
        self._publish("done", {})

    def fail(self, code: str, message: str) -> None:
        self.error, self.status = ErrorDetail(code=code, message=message), AuditStatus.FAILED
        self._end()
        self._publish("failed", {})


# ---------------------------------------------------------------------------------------- the service


def owner_of(key: ApiKey | None) -> str | None:
    """Whose audits a key reads: its provider's (every key bound to one address reads that address's
    audits, so a provider can rotate keys), else its own; None on an open gateway."""
    if key is None:
        return None
    return key.provider if key.provider is not None else f"key:{key.key_id}"


class Gateway:
    """The audits of one gateway: admission, epochs, one batch session per epoch, results.

    `account` is the gateway's wallet: it pays every batch's fee and gas. `settings` gives the chain,
    IPFS and deployment (as for `TrustClient`); `rpc_url` and `ipfs_url` override them. `access`
    holds the API keys, rates and quotas (`trust.api.gateway.access`); None serves anyone (an open gateway,
    only for one behind its own authentication). With `billing`, each key's provider pays its
    trace's share of the epoch's fee from its escrow (`trust.api.gateway.billing`; it needs `access`, whose
    keys name the providers).
    """

    def __init__(
        self,
        account: LocalAccount,
        settings: Settings,
        *,
        rpc_url: str | None = None,
        ipfs_url: str | None = None,
        options: GatewayOptions | None = None,
        poll_seconds: float = 0.1,
        journal_dir: Path | None = None,
        access: AccessControl | None = None,
        billing: bool = False,
    ) -> None:
        self.options = options or GatewayOptions()
        self.access = access
        if billing and access is None:
            raise ConfigError("a billing gateway needs API keys (access): each key names the provider who pays")
        self.billing = Billing(account, settings, rpc_url or settings.effective_rpc_url) if billing else None
        self._billing_locks: dict[str, asyncio.Lock] = {}
        self._client_options: dict[str, Any] = {
            "account": account,
            "settings": settings,
            "poll_seconds": poll_seconds,
            "journal_dir": journal_dir,
        }
        self._rpc_url, self._ipfs_url = rpc_url, ipfs_url
        self._admission = self._client(None)
        self._audits: dict[str, AuditState] = {}
        self._closing = False
        self._batcher: Batcher[AuditState] = Batcher(
            EpochPolicy(
                self.options.epoch_seconds, self.options.max_traces_per_epoch, self.options.max_segments_per_epoch
            ),
            self._run_epoch,
        )

    def _client(self, progress: Callable[[ProgressEvent], None] | None) -> BatchClient:
        return BatchClient(self._rpc_url, self._ipfs_url, progress=progress, **self._client_options)

    @property
    def address(self) -> str:
        """The gateway wallet's address: the provider of every batch session on chain."""
        return self._admission.address

    @property
    def batcher(self) -> Batcher[AuditState]:
        return self._batcher

    def get(self, audit_id: str, key: ApiKey | None = None) -> AuditState:
        """The audit `audit_id`, if `key` may read it (its owner's; any key on an open gateway):
        another provider's audit is "not found", as if it did not exist."""
        audit = self._audits.get(audit_id)
        if audit is None or (audit.owner is not None and audit.owner != owner_of(key)):
            raise GatewayError(
                404,
                "not_found",
                f"no audit {audit_id!r}: the id is wrong, or the audit ended more than "
                f"{self.options.retention_seconds:.0f} s ago, or the gateway restarted since",
            )
        return audit

    def open_audits(self) -> int:
        return sum(1 for audit in self._audits.values() if not audit.status.terminal)

    async def submit(self, request: SubmitRequest, key: ApiKey | None = None) -> AuditState:
        """Parses, checks and queues one submission of `key` (None: an open gateway) (see the module
        docstring); raises `GatewayError`, `AccessDenied` (the key's quota is used up) or the SDK's
        `TrustError` (mapped by `error_for`) when it is refused. A refused submission does not count
        against the key's quota."""
        claim = None
        if key is not None and self.access is not None:
            claim = self.access.claim_quota(key)
        try:
            audit = await self._submit(request, key)
        except BaseException:
            if claim is not None and self.access is not None:
                self.access.release(claim)
            raise
        if claim is not None and self.access is not None:
            self.access.confirm(claim, audit.id)
        return audit

    async def _submit(self, request: SubmitRequest, key: ApiKey | None) -> AuditState:
        if self._closing:
            raise GatewayError(503, "shutting_down", "the gateway is shutting down; submit to it again once it is up")
        open_now = self.open_audits()
        if open_now >= self.options.max_open_audits:
            raise GatewayError(
                503,
                "busy",
                f"{open_now} audits are open, the gateway's limit (max_open_audits); retry once some have ended",
            )
        config = request.config.audit_config(
            max_trace_chars=self.options.max_trace_chars, max_nodes=self.options.max_nodes
        )
        started = time.monotonic()
        graph = await asyncio.to_thread(parse_trace, request.kind, request.trace, config)
        entry = BatchEntry(request.kind, graph, config, time.monotonic() - started)
        chain_limit = await self._admission.admit(entry)
        cap = min(self.options.max_segments_per_epoch, chain_limit)
        segments = registered_segments(entry)
        if segments > cap:
            raise GraphError(
                f"the trace has {segments} segments to audit (its nodes, and the messages or contradictions "
                f"between them); one batch holds at most {cap} (the gateway's max_segments_per_epoch and the "
                "protocol's maxSegmentsPerSession): split the trace"
            )
        if self._closing:
            raise GatewayError(503, "shutting_down", "the gateway is shutting down; submit to it again once it is up")
        audit_id = secrets.token_urlsafe(AUDIT_ID_BYTES)
        if self.billing is None:
            return self._accept(audit_id, entry, key, cap, None, segments)
        provider = None if key is None else key.provider
        # One admission per provider at a time: the estimates of its waiting traces must include
        # every trace admitted before this one.
        async with self._billing_locks.setdefault(provider or "", asyncio.Lock()):
            try:
                charge = await self.billing.admit(provider, graph, config, self._waiting_wei(provider), audit_id)
            except BillingRefused as exc:
                raise GatewayError(402, exc.code, exc.message) from None
            if self._closing:
                raise GatewayError(
                    503, "shutting_down", "the gateway is shutting down; submit to it again once it is up"
                )
            return self._accept(audit_id, entry, key, cap, charge, segments)

    def _waiting_wei(self, provider: str | None) -> int:
        """The estimates of `provider`'s traces admitted but not reserved yet (their epoch is open)."""
        return sum(
            audit.charge.estimate_wei
            for audit in self._audits.values()
            if audit.charge is not None
            and audit.charge.status == "estimated"
            and not audit.status.terminal
            and audit.charge.provider == provider
        )

    def _accept(
        self,
        audit_id: str,
        entry: BatchEntry,
        key: ApiKey | None,
        cap: int,
        charge: ChargeRecord | None,
        segments: int,
    ) -> AuditState:
        graph, config = entry.graph, entry.config
        audit = AuditState(audit_id, entry, time.time(), segments, owner_of(key))
        audit.charge = charge
        # No await from here on: the epoch's dispatch (a task) sees the audit registered and queued.
        audit.epoch = self._batcher.add(audit, segments, max_segments=cap)
        self._audits[audit.id] = audit
        if config.max_latency_ms is not None:
            seconds = config.max_latency_ms / _MS_PER_SECOND
            audit.timer = asyncio.get_running_loop().call_later(seconds, self._expire, audit)
        audit.advance(AuditStatus.QUEUED)
        log.info("audit %s… (%s, %d nodes) queued in epoch %d", audit.id[:6], entry.kind, len(graph), audit.epoch)
        return audit

    def _retire(self, audit: AuditState) -> None:
        asyncio.get_running_loop().call_later(self.options.retention_seconds, self._audits.pop, audit.id, None)

    def _expire(self, audit: AuditState) -> None:
        if audit.status.terminal:
            return
        budget = audit.entry.config.max_latency_ms
        where = "" if audit.session_id is None else f"; session {audit.session_id} goes on on chain"
        audit.fail("timeout", f"no verdict within max_latency_ms = {budget} of the submission{where}")
        self._retire(audit)

    def _session_config(self) -> AuditConfig:
        return AuditConfig(
            max_latency_ms=int(self.options.session_timeout_seconds * _MS_PER_SECOND),
            report_grace_ms=int(self.options.report_grace_seconds * _MS_PER_SECOND),
            max_nodes=self.options.max_segments_per_epoch,
        )

    async def _reserve(self, number: int, audits: list[AuditState]) -> tuple[list[AuditState], int | None]:
        """A billing gateway's step before the batch: reserve each audit's estimate in its provider's
        escrow; an audit whose reservation fails fails alone (`payment_failed`). Returns the audits
        that go on, with their shares of the batch's fee set, and that fee (None without billing)."""
        if self.billing is None:
            return audits, None
        records = [audit.charge for audit in audits if audit.charge is not None]
        try:
            errors = await self.billing.reserve(records)
        except TrustError as exc:
            await self.billing.release(records)
            self._fail_all(audits, error_for(exc)[1], f"the escrow could not be reached: {exc}", number)
            return [], None
        live: list[AuditState] = []
        for audit, error in zip(audits, errors, strict=True):
            if error is None:
                live.append(audit)
            elif not audit.status.terminal:
                audit.fail("payment_failed", f"{error}; nothing was uploaded or sent for this trace")
                self._retire(audit)
        if not live:
            return [], None
        try:
            fee = await self.billing.batch_fee([(audit.entry.graph, audit.entry.config) for audit in live])
        except TrustError as exc:
            await self.billing.release(records)
            self._fail_all(live, error_for(exc)[1], str(exc), number)
            return [], None
        shares = pro_rata(fee, [audit.charge.estimate_wei for audit in live if audit.charge is not None])
        for audit, share in zip(live, shares, strict=True):
            assert audit.charge is not None
            audit.charge.amount_wei = share
        return live, fee

    async def _run_epoch(self, number: int, audits: list[AuditState]) -> None:
        """One closed epoch: every audit still waiting goes into one batch session (a billing gateway
        reserves each one's share first, charges it once the session is open, and releases it if
        the session never opens)."""
        live = [audit for audit in audits if not audit.status.terminal]
        live, fee = await self._reserve(number, live)
        if not live:
            return
        records = [audit.charge for audit in live if audit.charge is not None]
        charging: list[asyncio.Task[None]] = []
        try:
            await self._run_batch(number, live, fee, charging)
        except asyncio.CancelledError:
            # The gateway is stopping: its reservations lapse on their own (RESERVATION_SECONDS).
            raise
        if self.billing is not None and not charging:
            # The session never opened: nothing was paid, so nothing is charged.
            await self.billing.release(records)

    async def _run_batch(
        self, number: int, live: list[AuditState], fee: int | None, charging: list[asyncio.Task[None]]
    ) -> None:
        segments = sum(audit.segments for audit in live)
        for audit in live:
            audit.batch_traces, audit.batch_segments = len(live), segments
            audit.advance(AuditStatus.BATCHED)
        log.info("epoch %d closed: %d traces, %d segments", number, len(live), segments)

        def fan_out(event: ProgressEvent) -> None:
            for audit in live:
                if not audit.status.terminal:
                    audit.progress(event)

        def opened(session_id: int) -> None:
            if self.billing is not None:
                # Right away, beside the session's own transactions (one nonce lock per wallet):
                # the charge is what pays the gateway back for the fee it has just paid.
                records = [audit.charge for audit in live if audit.charge is not None]
                task = asyncio.get_running_loop().create_task(
                    self.billing.charge(records, session_id), name=f"gateway epoch {number} charges"
                )
                charging.append(task)
            for audit in live:
                audit.session_id = session_id
                if not audit.status.terminal:
                    audit.advance(AuditStatus.AUDITING)

        session = self._session_config()
        if fee is not None:
            session = session.model_copy(update={"fee_wei": fee})
        try:
            outcome = await self._client(fan_out).audit_batch([audit.entry for audit in live], session, on_open=opened)
        except asyncio.CancelledError:
            self._fail_all(live, "gateway_stopped", "the gateway stopped before the verdict", number)
            raise
        except AuditTimeout as exc:
            self._fail_all(
                live,
                "timeout",
                f"no verdict within the gateway's session timeout ({self.options.session_timeout_seconds:.0f} s); "
                f"session {exc.session_id} goes on on chain",
                number,
            )
            return
        except TrustError as exc:
            self._fail_all(live, error_for(exc)[1], str(exc), number)
            return
        except Exception as exc:  # a bug must not leave audits waiting forever
            log.exception("epoch %d failed unexpectedly", number)
            self._fail_all(live, "internal", f"the batch failed unexpectedly: {type(exc).__name__}: {exc}", number)
            return
        finally:
            if charging:
                # The results show the charge: wait for it (it was sent when the session opened).
                await asyncio.gather(*charging, return_exceptions=True)
        for audit, result, inclusion in zip(live, outcome.results, outcome.inclusion, strict=True):
            if not audit.status.terminal:
                audit.succeed(result, inclusion)
                self._retire(audit)
        log.info("epoch %d: session %d final", number, outcome.session_id)

    def _fail_all(self, audits: list[AuditState], code: str, message: str, number: int) -> None:
        log.warning("epoch %d failed (%s): %s", number, code, message)
        for audit in audits:
            if not audit.status.terminal:
                where = (
                    f" (session {audit.session_id} is open on chain)"
                    if audit.session_id is not None and code != "timeout"
                    else ""
                )
                audit.fail(code, message + where)
                self._retire(audit)

    async def aclose(self) -> None:
        """Stops taking submissions; audits still queued or running fail with `gateway_stopped`."""
        self._closing = True
        for audit in await self._batcher.aclose():
            if not audit.status.terminal:
                audit.fail("gateway_stopped", "the gateway stopped before this trace's epoch closed; submit it again")
        for audit in self._audits.values():
            if audit.timer is not None:
                audit.timer.cancel()


# ---------------------------------------------------------------------------------------- HTTP


class BodyTooLarge(HTTPException):
    """A body over the limit. An `HTTPException`, because FastAPI lets those through its body reading
    unchanged (any other exception there becomes a 400 "error parsing the body")."""

    def __init__(self, limit: int, declared: int | None) -> None:
        size = f"declares {declared:,} bytes, over" if declared is not None else "went past, while streaming,"
        super().__init__(
            413,
            f"the request body {size} the gateway's limit of {limit:,} bytes (max_body_bytes): "
            "split the trace or ask the operator to raise the limit",
        )


class _LimitedRequest(Request):
    """A request whose body is read with a size limit, before anything parses it: a declared
    Content-Length over the limit is refused unread, a chunked body as soon as it passes it."""

    def __init__(self, scope: Scope, receive: Receive, max_body_bytes: int) -> None:
        super().__init__(scope, receive)
        self.max_body_bytes = max_body_bytes

    async def body(self) -> bytes:
        if not hasattr(self, "_body"):
            declared = self.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
                raise BodyTooLarge(self.max_body_bytes, int(declared))
            chunks: list[bytes] = []
            size = 0
            async for chunk in self.stream():
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise BodyTooLarge(self.max_body_bytes, None)
                chunks.append(chunk)
            self._body = b"".join(chunks)
        return self._body


def _validation_error(exc: RequestValidationError) -> GatewayError:
    details = [
        {"loc": [str(part) for part in error.get("loc", ())], "msg": str(error.get("msg", "")), "type": error["type"]}
        for error in exc.errors()
    ]
    if not details:
        return GatewayError(422, "invalid_request", "the request does not match the schema")
    first = exc.errors()[0]
    if first["type"] == "json_invalid":
        reason = first.get("ctx", {}).get("error", "malformed")
        return GatewayError(422, "invalid_json", f"the body is not JSON ({reason} at character {first['loc'][-1]})")
    more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
    return GatewayError(422, "invalid_request", f"{'.'.join(details[0]['loc'])}: {details[0]['msg']}{more}", details)


def _gateway_route(max_body_bytes: int, access: AccessControl | None) -> type[APIRoute]:
    """A route class that authenticates the request and counts a submission against its key's rate
    (with `access`) before anything else, reads bodies under the limit, and renders every error as
    `ErrorResponse`, so the router answers in its own format whatever app mounts it. The key is left
    in `request.state.api_key` (None on an open gateway)."""

    class GatewayRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            original = super().get_route_handler()

            async def handler(request: Request) -> Response:
                try:
                    # Before the body is read: an anonymous client must not make the gateway read
                    # (and parse) megabytes, nor learn anything from a 413 or a 422.
                    request.state.api_key = None
                    if access is not None:
                        key = access.authenticate(request.headers.get("authorization"))
                        if request.method == "POST":
                            access.hit_rate(key)
                        request.state.api_key = key
                    return await original(_LimitedRequest(request.scope, request.receive, max_body_bytes))
                except AccessDenied as exc:
                    if exc.status == 429:
                        log.info("%s %s refused (%s): %s", request.method, request.url.path, exc.code, exc.message)
                    return GatewayError(exc.status, exc.code, exc.message, headers=exc.headers()).response()
                except BodyTooLarge as exc:
                    return GatewayError(413, "body_too_large", exc.detail).response()
                except RequestValidationError as exc:
                    return _validation_error(exc).response()
                except GatewayError as exc:
                    return exc.response()
                except TrustError as exc:
                    status, code = error_for(exc)
                    if status >= 500:
                        log.warning("%s %s refused (%s): %s", request.method, request.url.path, code, exc)
                    return GatewayError(status, code, str(exc)).response()
                except HTTPException as exc:
                    return GatewayError(exc.status_code, "http_error", str(exc.detail)).response()
                except Exception as exc:  # a bug: still a JSON error, and logged with its traceback
                    log.exception("%s %s failed unexpectedly", request.method, request.url.path)
                    message = f"the gateway failed unexpectedly ({type(exc).__name__}); the operator's log has details"
                    return GatewayError(500, "internal", message).response()

            return handler

    return GatewayRoute


_INVALID: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorResponse, "description": "the request does not match the schema"}
}
_UNAUTHENTICATED: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "no API key, not one of this gateway's keys, or a revoked one"}
}
_LIMITED: dict[int | str, dict[str, Any]] = {
    429: {
        "model": ErrorResponse,
        "description": "the key's submission rate or its quota of traces is used up (Retry-After says when to retry)",
    }
}
_UNFUNDED: dict[int | str, dict[str, Any]] = {
    402: {
        "model": ErrorResponse,
        "description": "the key's provider has no escrow deposit or authorization covering the trace's fee",
    }
}
_BEARER_SCHEME = HTTPBearer(
    auto_error=False, scheme_name="apiKey", description="a gateway API key: `trust gateway keys create`"
)
_UNKNOWN: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorResponse, "description": "no such audit (or it ended more than retention_seconds ago)"}
}
_JSON_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
_STREAM_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"description": answer["description"], "content": _JSON_ERROR}
    for status, answer in {**_UNKNOWN, **_INVALID}.items()
}
"""The stream's errors are JSON, not events: `model` would document them under text/event-stream."""


def _links(request: Request, audit_id: str) -> AuditLinks:
    return AuditLinks(
        audit=request.url_for("gateway_audit", audit_id=audit_id).path,
        events=request.url_for("gateway_audit_events", audit_id=audit_id).path,
        proof=request.url_for("gateway_audit_proof", audit_id=audit_id).path,
    )


def _view(request: Request, audit: AuditState) -> AuditView:
    batch = None
    if audit.epoch is not None and audit.batch_traces is not None and audit.batch_segments is not None:
        batch = BatchView(
            epoch=audit.epoch, traces=audit.batch_traces, segments=audit.batch_segments, session_id=audit.session_id
        )
    return AuditView(
        id=audit.id,
        kind="agents" if audit.entry.kind == "agents" else "trace",
        status=audit.status,
        submitted_at=datetime.fromtimestamp(audit.submitted_at, UTC),
        nodes=len(audit.entry.graph),
        batch=batch,
        result=audit.result.to_json() if audit.result is not None else None,
        error=audit.error,
        billing=None if audit.charge is None else BillingView.model_validate(audit.charge.to_json()),
        links=_links(request, audit.id),
    )


def gateway_router(gateway: Gateway) -> APIRouter:
    """The `/v1` routes over `gateway` (see the module docstring)."""
    access = gateway.access
    router = APIRouter(
        prefix="/v1",
        tags=["audits"],
        route_class=_gateway_route(gateway.options.max_body_bytes, access),
        responses=_INVALID if access is None else {**_INVALID, **_UNAUTHENTICATED},
        # Documents the scheme (Swagger's "Authorize"); the route class checks the key first.
        dependencies=[] if access is None else [Security(_BEARER_SCHEME)],
    )

    def find(
        audit_id: Annotated[str, PathParam(description="the id POST /v1/audits returned")], request: Request
    ) -> AuditState:
        return gateway.get(audit_id, request.state.api_key)

    @router.post(
        "/audits",
        status_code=202,
        response_model=AuditAccepted,
        summary="Submit a trace or an agent log",
        description="Parsed, decomposed and checked against the network now; audited with the other traces of "
        "its epoch as one session from the gateway's wallet. Nothing is uploaded or sent for a refused submission.",
        responses={
            400: {"model": ErrorResponse, "description": "the trace cannot be parsed or is too large for a session"},
            **({} if gateway.billing is None else _UNFUNDED),
            413: {"model": ErrorResponse, "description": "the body is over max_body_bytes"},
            **({} if access is None else _LIMITED),
            503: {"model": ErrorResponse, "description": "the chain, IPFS, a tier's auditors or the gateway's funds "},
        },
    )
    async def submit(body: SubmitRequest, request: Request, response: Response) -> AuditAccepted:
        audit = await gateway.submit(body, request.state.api_key)
        links = _links(request, audit.id)
        response.headers["Location"] = links.audit
        assert audit.epoch is not None
        return AuditAccepted(id=audit.id, status=audit.status, epoch=audit.epoch, links=links)

    @router.get(
        "/audits/{audit_id}", name="gateway_audit", response_model=AuditView, summary="An audit", responses=_UNKNOWN
    )
    async def read(audit: Annotated[AuditState, Depends(find)], request: Request) -> AuditView:
        return _view(request, audit)

    @router.get(
        "/audits/{audit_id}/events",
        name="gateway_audit_events",
        response_class=EventSourceResponse,
        summary="Follow an audit (server-sent events)",
        responses=_STREAM_ERRORS,
        description="Events `status` ({status, epoch, session_id}), `progress` (a ProgressView of the batch's "
        "session) and finally `done` or `failed` (the AuditView), each with an id; send `Last-Event-ID` to "
        "resume after a reconnection.",
    )
    async def events(
        audit: Annotated[AuditState, Depends(find)],
        request: Request,
        last_event_id: Annotated[str | None, Header(description="the id of the last event received")] = None,
    ) -> AsyncIterator[ServerSentEvent]:
        after = int(last_event_id) if last_event_id is not None and last_event_id.isdigit() else 0
        while True:
            signal = audit.signal
            for item in audit.events_after(after):
                after = item.id
                final = item.event in _FINAL_EVENTS
                data = _view(request, audit).model_dump(mode="json") if final else item.data
                yield ServerSentEvent(data=data, event=item.event, id=str(item.id))
                if final:
                    return
            await signal.wait()

    @router.get(
        "/audits/{audit_id}/proof",
        name="gateway_audit_proof",
        response_model=ProofView,
        summary="The on-chain proof of a finished audit",
        responses={**_UNKNOWN, 409: {"model": ErrorResponse, "description": "the audit is not done (yet)"}},
    )
    async def proof(audit: Annotated[AuditState, Depends(find)]) -> ProofView:
        result = audit.result
        if result is None:
            if audit.error is not None:
                raise GatewayError(
                    409, "no_proof", f"audit {audit.id} failed ({audit.error.code}): no proof exists for it"
                )
            raise GatewayError(
                409,
                "proof_not_ready",
                f"audit {audit.id} is {audit.status}: the proof exists once its batch's session is final",
            )
        chain = result.proof
        return ProofView(
            chain_id=chain.chain_id,
            audit_contract=chain.audit_contract,
            session_id=chain.session_id,
            trace_root=chain.trace_root,
            finalized_block=chain.finalized_block,
            finalize_tx=chain.finalize_tx,
            session_valid_on_chain=chain.valid_on_chain,
            verdict="VALID" if result.valid else "INVALID",
            batch_traces=audit.batch_traces or 1,
            segments=[SegmentProofView.model_validate(segment.to_json()) for segment in audit.inclusion],
        )

    return router
