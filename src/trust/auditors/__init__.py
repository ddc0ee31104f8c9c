"""Auditors: one interface (`trust.auditors.base`), three tiers (paper 3.1.1).

- tier 1, computational: deterministic checks (`trust.auditors.computational`, `trust.auditors.checks`)
- tier 2, LLM: an OpenAI-compatible chat endpoint (`trust.auditors.llm`), by default the embedded
  SmolLM2 model on a local llama.cpp server (`trust.adapters.local.llama`)
- tier 3, human: a review page served by the worker (`trust.auditors.human`, `trust.auditors.review`)

`trust.auditors.tiers` builds each tier's auditor from the settings. The tier-2 and tier-3 modules
pull in their web stacks, so they are imported from their modules, not from this package.
"""

from trust.auditors.base import (
    AuditLayer,
    Auditor,
    AuditRequest,
    Check,
    CheckResult,
    Outcome,
    Verdict,
    default_question,
    dumps_request,
    loads_request,
    request_for,
    request_from_plaintexts,
)
from trust.auditors.computational import ComputationalAuditor

__all__ = [
    "AuditLayer",
    "AuditRequest",
    "Auditor",
    "Check",
    "CheckResult",
    "ComputationalAuditor",
    "Outcome",
    "Verdict",
    "default_question",
    "dumps_request",
    "loads_request",
    "request_for",
    "request_from_plaintexts",
]
