"""Auditors: one interface (`trust.auditors.base`), three tiers (paper 3.1.1).

- tier 1, computational: deterministic checks (`trust.auditors.computational`, `trust.auditors.checks`)
- tier 2, LLM: an OpenAI-compatible chat endpoint (`trust.auditors.llm`)
- tier 3, human: a review page served by the worker (`trust.auditors.human`)
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

__all__ = [
    "AuditLayer",
    "AuditRequest",
    "Auditor",
    "Check",
    "CheckResult",
    "Outcome",
    "Verdict",
    "default_question",
    "dumps_request",
    "loads_request",
    "request_for",
    "request_from_plaintexts",
]
