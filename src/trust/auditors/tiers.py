"""The auditor of each tier, built from the settings with what it needs to run.

- tier 1: `ComputationalAuditor` over every deterministic check, in a fixed order;
- tier 2: `LlmAuditor` on `Settings.auditor_llm` when it names an endpoint, else on the embedded
  SmolLM2-135M model served by a local llama.cpp server (a weak judge: it proves the wiring, not
  the verdicts; point `TRUST_AUDITOR_LLM__BASE_URL` at a real model for real audits);
- tier 3: `HumanAuditor` behind the review page, served while the worker runs.

Resources (the model client, the local model server, the review server) are entered on the
caller's `AsyncExitStack`, so they close with it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack

from trust.auditors.base import Auditor, AuditRequest, Check, Verdict
from trust.auditors.computational import ComputationalAuditor
from trust.errors import ConfigError
from trust.graphs.hdag import Tier
from trust.settings import ReviewSettings, SandboxSettings, Settings

__all__ = ["SeatEventHook", "audit_once", "computational_auditor", "default_checks", "human_auditor", "llm_auditor"]


def default_checks(sandbox: SandboxSettings) -> list[Check]:
    """Every tier-1 check: exact arithmetic, symbolic algebra, formats and schemas, evidence
    grounding of rule-based scoring, and unit tests run in the sandbox."""
    from trust.auditors.checks import ArithmeticCheck, GroundingCheck, SandboxCheck, SchemaCheck, SymbolicCheck

    return [ArithmeticCheck(), SymbolicCheck(), SchemaCheck(), GroundingCheck(), SandboxCheck(sandbox)]


def computational_auditor(sandbox: SandboxSettings) -> ComputationalAuditor:
    return ComputationalAuditor(default_checks(sandbox))


async def llm_auditor(settings: Settings, stack: AsyncExitStack, log: logging.Logger | None = None) -> Auditor:
    """The tier-2 auditor on the configured endpoint, or on the embedded local model."""
    from trust.auditors.llm import LlmAuditor
    from trust.auditors.local_model import LocalModelServer
    from trust.llm import LlmClient

    if settings.auditor_llm.configured:
        client = await stack.enter_async_context(LlmClient(settings.auditor_llm))
    else:
        server = await asyncio.to_thread(LocalModelServer.from_settings, settings)
        await stack.enter_async_context(server)
        client = await stack.enter_async_context(server.client())
        if log is not None:
            log.warning(
                "tier 2 runs on the embedded SmolLM2-135M model at %s: it proves the wiring, not the verdicts; "
                "set TRUST_AUDITOR_LLM__BASE_URL and TRUST_AUDITOR_LLM__MODEL for a real judge",
                server.base_url,
            )
    return LlmAuditor(client, settings.audit)


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
    """One segment audited by `tier`'s auditor, outside any session (`trust audit-segment`)."""
    if tier == Tier.COMPUTATIONAL:
        return await computational_auditor(settings.worker.sandbox).audit(request)
    if tier == Tier.LLM:
        async with AsyncExitStack() as stack:
            return await (await llm_auditor(settings, stack)).audit(request)
    raise ConfigError(
        "tier 3 is a person: run `trust worker run --tier 3` and vote on its review page; "
        f"audit-segment runs tier 1 or 2, not {tier}"
    )
