"""The gateway's wire format: what a provider sends to `/v1/audits` and what comes back (pydantic at the
edge, as the style guide asks). docs/gateway.md shows each with curl."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from trust.services.sdk.config import AuditConfig, parse_tier

__all__ = [
    "AuditAccepted",
    "AuditLinks",
    "AuditStatus",
    "AuditView",
    "BatchView",
    "BillingView",
    "ErrorDetail",
    "ErrorResponse",
    "ProgressView",
    "ProofView",
    "SegmentProofView",
    "SubmitConfig",
    "SubmitRequest",
]

_SOUND_HDAG_EXAMPLE: dict[str, Any] = {
    "kind": "trace",
    "trace": "Step 1: 3 * 4 = 12 dollars for the notebooks.\nStep 2: 20 - 12 = 8, so Ana gets 8 dollars back.",
    "config": {"auditor_tiers": ["computational", "llm"], "max_latency_ms": 600000},
}


class AuditStatus(StrEnum):
    """Where an audit is: waiting in the open epoch, in a closed epoch being sealed and uploaded, in an
    open session on chain, finished, or failed (with an error)."""

    QUEUED = "queued"
    BATCHED = "batched"
    AUDITING = "auditing"
    DONE = "done"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (AuditStatus.DONE, AuditStatus.FAILED)


class SubmitConfig(BaseModel):
    """The provider's part of `trust.services.sdk.AuditConfig`. The session-wide fields (`fee_wei`, `finalize`,
    `distribute`, `report_grace_ms`) and the size limits are the gateway's: it pays the batch's fee
    from its own wallet and drives the batch's one session, so a provider cannot set them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    auditor_tiers: list[int | str] = Field(
        default_factory=lambda: list[int | str]([1, 2, 3]),
        description="tiers to pay for: 1/2/3 or computational/llm/human; nodes routed elsewhere go to the nearest",
        examples=[["computational", "llm"]],
    )
    consensus_threshold: float | None = Field(
        None, gt=0.5, le=1, description="a stricter share of stake a passed segment needs, read on the gateway"
    )
    max_latency_ms: int | None = Field(
        600_000,
        gt=0,
        description="fail the audit if no verdict within this many ms of the submission (epoch wait included); "
        "null: only the gateway's session timeout",
    )
    privacy_level: Literal["segmented"] = Field("segmented", description="the only level the protocol implements")

    @field_validator("auditor_tiers")
    @classmethod
    def _known_tiers(cls, value: list[int | str]) -> list[int | str]:
        if not value:
            raise ValueError("auditor_tiers is empty: name at least one tier")
        for item in value:
            parse_tier(item)
        return value

    def audit_config(self, *, max_trace_chars: int, max_nodes: int) -> AuditConfig:
        """The SDK config of this submission, under the gateway's size limits."""
        return AuditConfig(
            auditor_tiers=tuple(parse_tier(item) for item in self.auditor_tiers),
            consensus_threshold=self.consensus_threshold,
            max_latency_ms=self.max_latency_ms,
            privacy_level=self.privacy_level,
            max_trace_chars=max_trace_chars,
            max_nodes=max_nodes,
        )


class SubmitRequest(BaseModel):
    """One trace to audit."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [_SOUND_HDAG_EXAMPLE]})

    kind: Literal["trace", "agents"] = Field(
        "trace", description="trace: one model's chain of thought (an HDAG); agents: a multi-agent log (a CIG)"
    )
    trace: str | dict[str, Any] | list[Any] = Field(
        description="kind trace: raw text, a trust.hdag document (object or JSON text), {problem, steps} or a list "
        "of steps; kind agents: a trust.agent-log or Who&When log (object, list or JSON text)"
    )
    config: SubmitConfig = Field(default_factory=SubmitConfig)


class ErrorDetail(BaseModel):
    code: str = Field(description="stable machine-readable code", examples=["invalid_trace"])
    message: str = Field(description="what failed, the values involved and what to do next")
    details: list[dict[str, Any]] | None = Field(None, description="schema errors, one per field (422 only)")


class ErrorResponse(BaseModel):
    """Every error of the gateway, whatever its status."""

    error: ErrorDetail

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "error": {
                        "code": "invalid_trace",
                        "message": "trace is not valid JSON: Expecting value at line 1, column 50 (character 49); "
                        "the text ends there, so it looks cut short. Fix the JSON (nothing was submitted)",
                    }
                }
            ]
        }
    )


class AuditLinks(BaseModel):
    audit: str = Field(description="this audit's status and result")
    events: str = Field(description="server-sent events: status, progress, then done or failed")
    proof: str = Field(description="the on-chain proof once the audit is done (409 before)")


class AuditAccepted(BaseModel):
    """The answer to a submission: the audit's id (keep it secret: whoever holds it reads the result)."""

    id: str
    status: AuditStatus
    epoch: int = Field(description="the gateway epoch the trace joined")
    links: AuditLinks

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "k3Jd0fS2-9QwXcTz1b7mVg",
                    "status": "queued",
                    "epoch": 4,
                    "links": {
                        "audit": "/v1/audits/k3Jd0fS2-9QwXcTz1b7mVg",
                        "events": "/v1/audits/k3Jd0fS2-9QwXcTz1b7mVg/events",
                        "proof": "/v1/audits/k3Jd0fS2-9QwXcTz1b7mVg/proof",
                    },
                }
            ]
        }
    )


class BatchView(BaseModel):
    """The batch an audit went into: public on chain, except which of its segments are whose."""

    epoch: int
    traces: int = Field(description="traces in the batch (this one included)")
    segments: int = Field(description="segments of the batch's session")
    session_id: int | None = Field(None, description="the session, once createSession is mined")


class BillingView(BaseModel):
    """What the audit costs its provider (a billing gateway only): the estimate checked at submission,
    the trace's pro rata share of its batch's fee (by first-round seats), and the escrow's
    transactions. Amounts are decimal strings of wei (JSON numbers lose precision past 2^53)."""

    provider: str = Field(description="the address whose escrow pays (the key's --provider)")
    escrow: str = Field(description="the ProviderEscrow contract")
    status: Literal["estimated", "reserved", "charged", "released", "failed"] = Field(
        description="estimated (waiting for its epoch), reserved (before the session opened), charged, released "
        "(the session never opened), failed (see error)"
    )
    estimate_wei: str = Field(description="the minimum fee of a session of this trace alone: the most it is charged")
    amount_wei: str | None = Field(None, description="its share of the batch's fee, once the epoch closed")
    reservation_id: str = Field(description="the escrow reservation (SHA-256 of the audit id, never the id)")
    reserve_tx: str | None = None
    charge_tx: str | None = Field(None, description="the escrow's charge (event Charged names the session)")
    release_tx: str | None = None
    session_id: int | None = None
    error: str | None = None


class AuditView(BaseModel):
    """An audit's state; `result` once done (the SDK's `AuditResult` JSON, docs/sdk.md), `error` once
    failed. `result.proof.valid_on_chain` is the verdict of the batch's session, not of this trace."""

    id: str
    kind: Literal["trace", "agents"]
    status: AuditStatus
    submitted_at: datetime
    nodes: int = Field(description="nodes of the trace's graph (one segment each)")
    batch: BatchView | None = None
    result: dict[str, Any] | None = None
    error: ErrorDetail | None = None
    billing: BillingView | None = Field(None, description="what it costs its provider (a billing gateway only)")
    links: AuditLinks


class ProgressView(BaseModel):
    """A progress event of the batch's session (`trust.services.sdk.ProgressEvent`; counts cover the batch)."""

    stage: str
    done: int
    total: int
    message: str = ""


class SegmentProofView(BaseModel):
    """One segment of this trace as the session's trace root commits to it."""

    node: str = Field(description="the provider's node id")
    segment: int = Field(description="its segment index in the session")
    cid: str = Field(description="binary CID of the sealed blob, hex")
    ciphertext_digest: str
    tier: int
    weight: int
    critical: bool
    proof: list[str] = Field(description="Merkle proof (sorted pairs) for SegmentKeys.verifySegment")


class ProofView(BaseModel):
    """Where the audit lives on chain. The session audited the whole batch: `session_valid_on_chain`
    is the batch's verdict; `verdict` is this trace's, judged on its own segments (listed with their
    inclusion proofs under `trace_root`)."""

    chain_id: int
    audit_contract: str
    session_id: int
    trace_root: str = Field(description="the session's Merkle root (over every segment of the batch)")
    finalized_block: int | None
    finalize_tx: str | None
    session_valid_on_chain: bool
    verdict: Literal["VALID", "INVALID"]
    batch_traces: int
    segments: list[SegmentProofView]
