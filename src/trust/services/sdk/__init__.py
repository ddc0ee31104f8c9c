"""The provider SDK: audit a reasoning trace or a multi-agent log on the TRUST network (paper 6.2).

    from trust.services.sdk import AuditConfig, TrustClient

    client = TrustClient(rpc_url=..., ipfs_url=..., keystore="provider.json", password=...)
    result = await client.audit_trace(trace, AuditConfig(auditor_tiers=["computational", "llm"]))
    if result.verdict == "VALID":
        ...
    else:
        print(result.failure_reasons)

See docs/sdk.md for the phases, the result and the errors.
"""

from typing import TYPE_CHECKING, Any

from trust.services.sdk.config import AuditConfig
from trust.services.sdk.progress import ProgressEvent
from trust.services.sdk.result import (
    AuditResult,
    Critique,
    NodeResult,
    Outcome,
    PhaseTimings,
    Proof,
    RootCauseResult,
    Verdict,
)

if TYPE_CHECKING:
    from trust.services.sdk.client import TraceInput, TrustClient
    from trust.services.sdk.refinement import NetworkRefinement


def __getattr__(name: str) -> Any:
    """`TrustClient`, `TraceInput` and `NetworkRefinement` load the chain and IPFS adapters on first use only, so that
    reading results (`trust.services.sdk.result`) stays light."""
    if name in ("TrustClient", "TraceInput"):
        from trust.services.sdk import client

        return getattr(client, name)
    if name == "NetworkRefinement":
        from trust.services.sdk import refinement

        return refinement.NetworkRefinement
    raise AttributeError(f"module 'trust.services.sdk' has no attribute {name!r}")


__all__ = [
    "AuditConfig",
    "AuditResult",
    "Critique",
    "NetworkRefinement",
    "NodeResult",
    "Outcome",
    "PhaseTimings",
    "ProgressEvent",
    "Proof",
    "RootCauseResult",
    "TraceInput",
    "TrustClient",
    "Verdict",
]
