"""Privacy by design (paper section 3.4), the pure core: no I/O, randomness passed in.

- `segments`: one AES-256-GCM blob per graph node under its own key, bound to its trace and node;
- `envelopes`: a seat's keys wrapped to its auditor's registered X25519 key (RFC 9180 HPKE);
- `access`: which keys a seat receives (its node and the node's immediate parents) and the
  provider's plan, one envelope per seat read from chain;
- `merkle`: the trace root over the segment leaves, as OpenZeppelin's `MerkleProof` verifies it;
- `reports`: a seat's findings (critique, error type, expected value, score, evaluation time)
  sealed to the provider's per-session reply key (RFC 9180 HPKE, bound to the seat).

Formats and choices: docs/privacy.md.
"""

from trust.core.privacy.access import (
    EnvelopePlan,
    SealedEnvelope,
    Seat,
    grant_for,
    need_to_know,
    parent_lists,
    plan_envelopes,
    readable_nodes,
    seal_envelopes,
    segment_keys,
)
from trust.core.privacy.envelopes import KeyGrant, SegmentKey, open_envelope, public_key_bytes, seal_envelope
from trust.core.privacy.merkle import (
    MerkleTree,
    SegmentLeaf,
    build,
    check_inclusion,
    cid_bytes,
    leaf_hash,
    verify,
)
from trust.core.privacy.reports import AuditReport, clip_text, open_report, seal_report
from trust.core.privacy.segments import (
    SealedSegment,
    dumps_turn,
    loads_turn,
    new_key,
    new_trace_id,
    open_segment,
    seal,
    seal_graph,
    segment_plaintexts,
)

__all__ = [
    "AuditReport",
    "EnvelopePlan",
    "KeyGrant",
    "MerkleTree",
    "SealedEnvelope",
    "SealedSegment",
    "Seat",
    "SegmentKey",
    "SegmentLeaf",
    "build",
    "check_inclusion",
    "cid_bytes",
    "clip_text",
    "dumps_turn",
    "grant_for",
    "leaf_hash",
    "loads_turn",
    "need_to_know",
    "new_key",
    "new_trace_id",
    "open_envelope",
    "open_report",
    "open_segment",
    "parent_lists",
    "plan_envelopes",
    "public_key_bytes",
    "readable_nodes",
    "seal",
    "seal_envelope",
    "seal_envelopes",
    "seal_graph",
    "seal_report",
    "segment_keys",
    "segment_plaintexts",
    "verify",
]
