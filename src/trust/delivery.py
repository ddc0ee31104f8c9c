"""Segments and keys between a provider and the seated auditors, over IPFS and the chain (paper 3.4).

The provider's side, in the order of a session:

1. `store_trace`: every node sealed under its own key (`trust.privacy.segments`), each blob uploaded
   and pinned (its CID computed locally and checked against the node's answer), and the trace's
   Merkle tree built over the segment leaves (`trust.privacy.merkle`). `StoredTrace.specs()` are
   the segments to register with `createSession`, `StoredTrace.root` the trace root to register.
2. After the draw, `deliver_keys`: for every seat of the drawn committees, the seat's key grant
   (its node's key and its parents', `trust.privacy.access`) sealed to the key the auditor
   registered, uploaded and pinned, and the envelope CIDs published on chain per segment
   (`SegmentKeys.publishEnvelopes`). Recipients come only from the committees on chain.

The auditor's side:

3. `receive_keys`: the envelopes addressed to the auditor (read from `KeyEnvelopePublished`,
   filtered by its address), fetched and opened with its X25519 key against the session's trace
   root. Each grant says where every segment it unlocks lies.
4. `open_granted`: each of those segments checked against the chain (its CID's digest must be the
   `contentDigest` the provider registered for that segment), fetched (the blob is verified against
   its CID and its committed sha256 before it is returned) and decrypted under its trace and node.

Nothing is decrypted that did not verify; every failure is a `VerificationError`, `IpfsError` or
`ChainError` naming the segment.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account.signers.local import LocalAccount

from trust.chain.protocol import KeyEnvelope, Protocol
from trust.chain.types import CommitteeDrawn, SegmentSpec
from trust.errors import VerificationError
from trust.graphs.analysis import critical_path
from trust.graphs.cig import Cig
from trust.graphs.hdag import Hdag, Tier
from trust.privacy import merkle
from trust.privacy.access import Seat, plan_envelopes, seal_envelopes, segment_keys
from trust.privacy.envelopes import MAX_ENVELOPE_BYTES, KeyGrant, SegmentKey, open_envelope
from trust.privacy.segments import Rng, new_trace_id, open_segment, seal_graph
from trust.storage.cid import digest32
from trust.storage.kubo import KuboClient

__all__ = [
    "DEFAULT_CONCURRENCY",
    "ReceivedGrant",
    "SegmentProfile",
    "StoredTrace",
    "default_profiles",
    "deliver_keys",
    "gather_bounded",
    "open_granted",
    "receive_keys",
    "store_trace",
]

DEFAULT_CONCURRENCY = 8
"""IPFS requests in flight at once."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SegmentProfile:
    """How a segment is audited: its tier (1 computational, 2 LLM, 3 human), its weight in the trace
    verdict and whether it lies on the critical path (eq. 3.5-3.6)."""

    tier: int
    weight: int = 1
    critical: bool = False


def default_profiles(graph: Hdag | Cig) -> dict[str, SegmentProfile]:
    """Per node: an HDAG node's routed tier, weight 1, critical when on the goal-to-answer critical
    path; a CIG turn is a tier-2 (LLM) segment of weight 1, not critical (a CIG has no answer path)."""
    if isinstance(graph, Hdag):
        on_path = set(critical_path(graph))
        return {node.id: SegmentProfile(int(node.tier), 1, node.id in on_path) for node in graph.nodes()}
    return {node_id: SegmentProfile(int(Tier.LLM)) for node_id in graph.topological_order()}


@dataclass(frozen=True, slots=True)
class StoredTrace:
    """A trace sealed and stored: what the provider keeps to register and deliver it."""

    trace_id: bytes
    segments: tuple[SegmentKey, ...] = field(repr=False)
    leaves: tuple[merkle.SegmentLeaf, ...] = field(repr=False)
    tree: merkle.MerkleTree = field(repr=False)

    @property
    def root(self) -> bytes:
        """The trace root to register with `createSession`."""
        return self.tree.root

    def specs(self) -> list[SegmentSpec]:
        """The segments to register, in order: tier, weight, critical flag and the CID's digest."""
        return [
            SegmentSpec(tier=leaf.tier, weight=leaf.weight, content_digest=digest32(key.cid), critical=leaf.critical)
            for leaf, key in zip(self.leaves, self.segments, strict=True)
        ]

    def proof(self, index: int) -> list[bytes]:
        """The inclusion proof of segment `index` (`SegmentKeys.verifySegment` checks it on chain)."""
        return self.tree.proof(index)


async def gather_bounded(concurrency: int, jobs: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Runs the jobs at most `concurrency` at a time; results in the jobs' order (the first error
    propagates)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    return list(await asyncio.gather(*(one(job) for job in jobs)))


def _uploads(kubo: KuboClient, blobs: Sequence[bytes]) -> list[Callable[[], Awaitable[str]]]:
    return [partial(kubo.add, blob, pin=True) for blob in blobs]


async def store_trace(
    kubo: KuboClient,
    graph: Hdag | Cig,
    *,
    profiles: Mapping[str, SegmentProfile] | None = None,
    rng: Rng = os.urandom,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> StoredTrace:
    """Seals every node, uploads and pins every blob, and builds the trace's Merkle tree.

    `profiles` gives each node's tier, weight and critical flag (`default_profiles` when None).
    """
    profiles = default_profiles(graph) if profiles is None else profiles
    trace_id = new_trace_id(rng)
    sealed = seal_graph(graph, trace_id, rng)
    missing = [s.node_id for s in sealed if s.node_id not in profiles]
    if missing:
        raise VerificationError(f"no segment profile (tier, weight, critical) for nodes {missing[:5]}")
    cids = await gather_bounded(concurrency, _uploads(kubo, [s.blob for s in sealed]))
    segments = tuple(segment_keys(sealed, cids))
    leaves = tuple(
        merkle.SegmentLeaf(
            key.segment_index,
            merkle.cid_bytes(key.cid),
            key.ciphertext_digest,
            profiles[key.node_id].tier,
            profiles[key.node_id].weight,
            profiles[key.node_id].critical,
        )
        for key in segments
    )
    return StoredTrace(trace_id, segments, leaves, merkle.build(leaves))


async def deliver_keys(
    protocol: Protocol,
    kubo: KuboClient,
    provider: LocalAccount,
    session_id: int,
    graph: Hdag | Cig,
    stored: StoredTrace,
    committees: Sequence[CommitteeDrawn],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    reply_key: bytes | None = None,
) -> list[KeyEnvelope]:
    """Seals, stores and announces one key envelope per seat of `committees` (as drawn on chain).

    Each auditor's encryption key is read from the registry; the envelope CIDs of a segment are
    published in committee order. `reply_key` (the provider's per-session X25519 public key, 32 raw
    bytes) goes into every grant: the seats seal their audit reports to it after revealing
    (`trust.privacy.reports`); None asks for no reports. Returns the announced envelopes.
    """
    session = await protocol.audit.session(session_id)
    if session.trace_root != stored.root:
        raise VerificationError(
            f"session {session_id} has trace root 0x{session.trace_root.hex()}, this trace's is "
            f"0x{stored.root.hex()}: deliver the keys of the trace the session registered"
        )
    auditors = sorted({member for committee in committees for member in committee.members})
    infos = await asyncio.gather(*(protocol.registry.auditor(member) for member in auditors))
    key_of = {member: info.encryption_key for member, info in zip(auditors, infos, strict=True)}
    seats = [Seat(c.segment_id, member, key_of[member]) for c in committees for member in c.members]
    plans = plan_envelopes(graph, stored.trace_id, stored.segments, seats, reply_key=reply_key)
    sealed = seal_envelopes(plans, stored.root)
    cids = await gather_bounded(concurrency, _uploads(kubo, [s.envelope for s in sealed]))
    cid_of = {(s.seat.segment_index, s.seat.auditor): cid for s, cid in zip(sealed, cids, strict=True)}
    announced: list[KeyEnvelope] = []
    for c in committees:
        sent = await protocol.segment_keys.publish_envelopes(
            provider, session_id, c.segment_id, c.round, [cid_of[(c.segment_id, member)] for member in c.members]
        )
        announced += protocol.segment_keys.envelopes_in(sent)
    return announced


@dataclass(frozen=True, slots=True)
class ReceivedGrant:
    """An opened key envelope: the seat it was published for and the keys it holds."""

    envelope: KeyEnvelope
    grant: KeyGrant


async def receive_keys(
    protocol: Protocol,
    kubo: KuboClient,
    auditor: str,
    private_key: X25519PrivateKey | bytes,
    session_id: int,
    *,
    from_block: int = 0,
) -> list[ReceivedGrant]:
    """The key grants of every seat `auditor` holds in `session_id` whose envelope was published."""
    root = (await protocol.audit.session(session_id)).trace_root
    envelopes = await protocol.segment_keys.envelopes_for(auditor, from_block=from_block, session_id=session_id)
    blobs = await gather_bounded(
        DEFAULT_CONCURRENCY,
        [partial(kubo.cat, e.envelope_cid, max_bytes=MAX_ENVELOPE_BYTES) for e in envelopes],
    )
    return [
        ReceivedGrant(
            envelope,
            open_envelope(private_key, blob, trace_root=root, segment_index=envelope.segment_id, auditor=auditor),
        )
        for envelope, blob in zip(envelopes, blobs, strict=True)
    ]


async def open_granted(protocol: Protocol, kubo: KuboClient, session_id: int, grant: KeyGrant) -> dict[str, bytes]:
    """The plaintext of every segment `grant` unlocks, by node id, the seat's own node first.

    Each segment's CID must carry the digest registered on chain for its index, and its blob must
    match the CID and the committed sha256; only then is it decrypted.
    """
    registered = await asyncio.gather(*(protocol.audit.segment(session_id, s.segment_index) for s in grant.segments))
    for key, info in zip(grant.segments, registered, strict=True):
        if digest32(key.cid) != info.content_digest:
            raise VerificationError(
                f"segment {key.segment_index} ({key.node_id!r}) of session {session_id}: the envelope points to "
                f"{key.cid}, but the segment registered on chain has content digest 0x{info.content_digest.hex()}; "
                "nothing was fetched or decrypted"
            )
    blobs = await gather_bounded(
        DEFAULT_CONCURRENCY,
        [partial(kubo.cat, key.cid, expected_digest=key.ciphertext_digest) for key in grant.segments],
    )
    return {
        key.node_id: open_segment(blob, key.key, grant.trace_id, key.node_id, ciphertext_digest=key.ciphertext_digest)
        for key, blob in zip(grant.segments, blobs, strict=True)
    }
