"""The provider SDK: audit a reasoning trace or a multi-agent log on the TRUST network (paper 6.2).

    from trust.sdk import AuditConfig, TrustClient

    client = TrustClient(rpc_url=..., ipfs_url=..., keystore="provider.json", password=...)
    result = await client.audit_trace(trace, AuditConfig(auditor_tiers=["computational", "llm"]))
    if result.verdict == "VALID":
        ...
    else:
        print(result.failure_reasons)

The client itself (`trust.sdk.client`) lands with the auditors' reports it reads; this package
holds its configuration, its result and the pure judgement of a finished session.
"""

from trust.sdk.config import AuditConfig
from trust.sdk.progress import ProgressEvent
from trust.sdk.result import AuditResult, Critique, NodeResult, Outcome, PhaseTimings, Proof, RootCauseResult, Verdict

__all__ = [
    "AuditConfig",
    "AuditResult",
    "Critique",
    "NodeResult",
    "Outcome",
    "PhaseTimings",
    "ProgressEvent",
    "Proof",
    "RootCauseResult",
    "Verdict",
]
