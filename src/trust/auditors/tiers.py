"""The auditor of each tier, built from the settings with what it needs to run.

- tier 1: `ComputationalAuditor` over every deterministic check, in a fixed order;
- tier 2: `LlmAuditor` on `Settings.auditor_llm` when it names an endpoint, else on the embedded
  SmolLM2-135M model served by a local llama.cpp server (a weak judge: it proves the wiring, not
  the verdicts; point `TRUST_AUDITOR_LLM__BASE_URL` at a real model for real audits);
- tier 3: `HumanAuditor` behind the review page, served while the worker runs.

Resources (the model client, the review server) are entered on the caller's `AsyncExitStack`, so
they close with it. The embedded model server is not one of them: it is the home's, shared by every
tier-2 worker of the home and supervised on its own (`trust llm up|down|status`); a worker starts it
(detached) when none runs, follows it when it restarts elsewhere, and never stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from urllib.parse import urlsplit

from trust.auditors.base import Auditor, AuditRequest, Check, Verdict, audit_seat
from trust.auditors.computational import ComputationalAuditor
from trust.core.graphs.hdag import Tier
from trust.errors import ConfigError
from trust.settings import ReviewSettings, SandboxSettings, Settings

__all__ = [
    "AVAILABILITY_CACHE_SECONDS",
    "AVAILABILITY_PROBE_TIMEOUT_SECONDS",
    "SeatEventHook",
    "audit_once",
    "computational_auditor",
    "default_checks",
    "default_contradiction_checks",
    "default_edge_checks",
    "offline_auditors",
    "human_auditor",
    "llm_auditor",
]


def default_checks(sandbox: SandboxSettings) -> list[Check]:
    """Every tier-1 check of the node layer: exact arithmetic, symbolic algebra, formats and
    schemas, evidence grounding of rule-based scoring, unit tests run in the sandbox, and code that
    a tool of the log ran and saw fail."""
    from trust.auditors.checks import (
        ArithmeticCheck,
        ExecutionCheck,
        GroundingCheck,
        SandboxCheck,
        SchemaCheck,
        SymbolicCheck,
    )

    return [
        ArithmeticCheck(),
        SymbolicCheck(),
        SchemaCheck(),
        GroundingCheck(),
        SandboxCheck(sandbox),
        ExecutionCheck(),
    ]


def default_edge_checks() -> list[Check]:
    """Every tier-1 check of the edge layer: reply formats (protocol) and restated values (fidelity)."""
    from trust.auditors.checks import ContractCheck, ValueFidelityCheck

    return [ContractCheck(), ValueFidelityCheck()]


def default_contradiction_checks() -> list[Check]:
    """Every tier-1 check of a contradiction unit: one quantity given two values."""
    from trust.auditors.checks import ContradictionCheck

    return [ContradictionCheck()]


def computational_auditor(sandbox: SandboxSettings) -> ComputationalAuditor:
    return ComputationalAuditor(
        default_checks(sandbox), edge_checks=default_edge_checks(), contradiction_checks=default_contradiction_checks()
    )


AVAILABILITY_CACHE_SECONDS = 1.5
"""How long a probe's answer to `LlmAuditor.unavailable` is reused: the worker asks before each seat
it would take, and a probe per seat would cost more than it tells."""
AVAILABILITY_PROBE_TIMEOUT_SECONDS = 3.0


class _CachedProbe:
    """An availability probe whose answer is reused for `seconds` (one probe at a time)."""

    def __init__(self, probe: Callable[[], Awaitable[str | None]], seconds: float) -> None:
        self._probe = probe
        self._seconds = seconds
        self._answer: str | None = None
        self._at = float("-inf")
        self._lock = asyncio.Lock()

    async def __call__(self) -> str | None:
        async with self._lock:
            if time.monotonic() - self._at >= self._seconds:
                self._answer = await self._probe()
                self._at = time.monotonic()
            return self._answer


def _endpoint_probe(base_url: str, timeout_seconds: float) -> Callable[[], Awaitable[str | None]]:
    """A probe of a configured endpoint that costs no request (no key, no rate limit): whether its
    host accepts a TCP connection."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)

    async def probe() -> str | None:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_seconds)
        except (OSError, TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            return f"the model endpoint {base_url} cannot be reached ({host}:{port}: {reason}); check that it is up"
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return None

    return probe


async def llm_auditor(
    settings: Settings, stack: AsyncExitStack, log: logging.Logger | None = None, *, share_server: bool = True
) -> Auditor:
    """The tier-2 auditor on the configured endpoint, or on the home's embedded model server.

    With no endpoint configured, the home's shared server (`<home>/llm`) is used, started detached
    when none runs; the client follows its record (a restart on another port), and `unavailable()`
    says why while it is down, so that the worker stays out of the draw instead of failing seats.
    `share_server` False is for one-off commands: when the home runs no server, a private one is
    started in a temporary folder and stopped when `stack` closes, rather than left running.
    """
    from trust.adapters.llm.client import LlmClient
    from trust.adapters.local.llama import LocalModelServer, ModelServerHome
    from trust.auditors.llm import LlmAuditor

    if settings.auditor_llm.configured:
        client = await stack.enter_async_context(LlmClient(settings.auditor_llm))
        probe = _endpoint_probe(str(settings.auditor_llm.base_url), AVAILABILITY_PROBE_TIMEOUT_SECONDS)
    else:
        if share_server:
            # Not entered on the stack: the server is the home's, and outlives this worker.
            server = await asyncio.to_thread(LocalModelServer.from_settings, settings)
        else:
            found = await asyncio.to_thread(ModelServerHome.from_settings(settings).running)
            if found is None:
                folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="trust-llm-"))
                found = await stack.enter_async_context(await asyncio.to_thread(LocalModelServer.start, Path(folder)))
            server = found
        home = ModelServerHome(server.directory)
        # The embedded server answers one request at a time, so a request also waits behind other
        # workers' requests: TRUST_AUDITOR_LLM__TIMEOUT_SECONDS is how long that may take.
        limits = settings.auditor_llm
        client = await stack.enter_async_context(
            home.client(timeout_seconds=limits.timeout_seconds, max_retries=limits.max_retries)
        )

        async def probe() -> str | None:
            return await home.problem(AVAILABILITY_PROBE_TIMEOUT_SECONDS)

        if log is not None:
            log.warning(
                "tier 2 runs on the embedded SmolLM2-135M model at %s (pid %d, log %s): it proves the wiring, "
                "not the verdicts; set TRUST_AUDITOR_LLM__BASE_URL and "
                "TRUST_AUDITOR_LLM__MODEL for a real judge",
                server.base_url,
                server.pid,
                server.log_file,
            )
    return LlmAuditor(client, settings.audit, availability=_CachedProbe(probe, AVAILABILITY_CACHE_SECONDS))


async def offline_auditors(settings: Settings, stack: AsyncExitStack) -> list[Auditor]:
    """The auditors an audit outside the network runs (`trust graph localize`, `trust eval`), built
    as a worker builds its own: tier 1 (`computational_auditor`) always, and tier 2 (`llm_auditor`,
    on `Settings.auditor_llm`) when that names an endpoint. Decision: offline, an unset endpoint means
    no tier 2, rather than starting the embedded SmolLM2 server a worker falls back to: that judge
    proves the wiring, not the verdicts, and would slow every offline command down for nothing."""
    auditors: list[Auditor] = [computational_auditor(settings.worker.sandbox)]
    if settings.auditor_llm.configured:
        auditors.append(await llm_auditor(settings, stack, share_server=False))
    return auditors


SeatEventHook = Callable[[object, str, str], None]


async def human_auditor(
    review: ReviewSettings, stack: AsyncExitStack, address: str
) -> tuple[Auditor, SeatEventHook, str]:
    """The tier-3 auditor, a hook that shows the worker's events for a seat (committed, revealed,
    finalized, reward) in the expert's history, and the URL of the review page (served until
    `stack` closes). Seats are named by their label, `str(seat)`."""
    from trust.auditors.human import HumanAuditor, ReviewQueue, ReviewRefused
    from trust.auditors.review import ReviewServer, create_review_app

    queue = ReviewQueue()
    server = await stack.enter_async_context(
        ReviewServer.from_settings(create_review_app(queue, review, auditor_address=address), review)
    )

    def record(seat: object, event: str, detail: str) -> None:
        try:
            queue.record_seat(str(seat), event, detail)
        except ReviewRefused:
            pass  # events before the expert decided (drawn, fetched) have no closed task to show on

    return HumanAuditor(queue), record, server.url


async def audit_once(request: AuditRequest, tier: int, settings: Settings) -> Verdict:
    """One segment audited by `tier`'s auditor, outside any session (`trust audit-segment`), with the
    verdict a seat of the network would give (`audit_seat`)."""
    if tier == Tier.COMPUTATIONAL:
        return await audit_seat(computational_auditor(settings.worker.sandbox), request)
    if tier == Tier.LLM:
        async with AsyncExitStack() as stack:
            return await (await llm_auditor(settings, stack, share_server=False)).audit(request)
    raise ConfigError(
        "tier 3 is a person: run `trust worker run --tier 3` and vote on its review page; "
        f"audit-segment runs tier 1 or 2, not {tier}"
    )
