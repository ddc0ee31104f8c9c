"""Segments and keys between a provider and the seated auditors, over IPFS and the chain (paper 3.4).

The provider's side, in the order of a session:

1. `store_trace`: every node sealed under its own key (`trust.core.privacy.segments`), each blob uploaded
   and pinned (its CID computed locally and checked against the node's answer), and the trace's
   Merkle tree built over the segment leaves (`trust.core.privacy.merkle`). `StoredTrace.specs()` are
   the segments to register with `createSession`, `StoredTrace.root` the trace root to register.
   Nodes whose profile is not `audited` (by default a CIG's user and tool turns) are *context-only*:
   their leaves follow the registered segments in the same tree, so the root commits to them, but
   they are not registered, and nobody is seated on them or votes on them.
2. After the draw, `deliver_keys`: for every seat of the drawn committees, the seat's key grant
   (its node's key and its parents', `trust.core.privacy.access`) sealed to the key the auditor
   registered, uploaded and pinned, and the envelope CIDs published on chain, every drawn round
   in one transaction (`SegmentKeys.publishEnvelopesBatch`, `publishEnvelopes` for a single round).
   Recipients come only from the committees on chain.

The auditor's side:

3. `receive_keys`: the envelopes addressed to the auditor (read from `KeyEnvelopePublished`,
   filtered by its address), fetched and opened with its X25519 key against the session's trace
   root. Each grant says where every segment it unlocks lies.
4. `open_granted`: each of those segments checked against the chain (its CID's digest must be the
   `contentDigest` the provider registered for that segment; a context-only parent, which the chain
   does not register, must instead prove its leaf under the session's trace root), fetched (the blob
   is verified against its CID and its committed sha256 before it is returned) and decrypted under
   its trace and node.

Nothing is decrypted that did not verify; every failure is a `VerificationError`, `IpfsError` or
`ChainError` naming the segment.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import networkx as nx
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account.signers.local import LocalAccount

from trust.adapters.chain.protocol import KeyEnvelope, Protocol
from trust.adapters.chain.types import CommitteeDrawn, EnvelopeSet, SegmentSpec, SessionInfo
from trust.adapters.storage.blob_cache import BlobCache
from trust.adapters.storage.kubo import KuboClient
from trust.auditors.base import AuditLayer, AuditRequest
from trust.auditors.checks.messages import edge_decidable
from trust.core.batching import bounded_runs
from trust.core.cid import digest32
from trust.core.graphs.analysis import critical_path
from trust.core.graphs.cig import CONTEXT_ROLES, Cig
from trust.core.graphs.hdag import Hdag, Tier
from trust.core.graphs.units import AuditUnit, UnitKind, access_graph, audit_units, contradiction_tier, unit_plaintext
from trust.core.privacy import merkle
from trust.core.privacy.access import Seat, plan_envelopes, seal_envelopes, segment_keys
from trust.core.privacy.envelopes import MAX_ENVELOPE_BYTES, KeyGrant, SegmentKey, open_envelope
from trust.core.privacy.segments import (
    Rng,
    SealedSegment,
    new_key,
    new_trace_id,
    open_segment,
    seal,
    segment_plaintexts,
)
from trust.errors import GraphError, VerificationError

__all__ = [
    "CONTEXT_ROLES",
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
    "unit_plaintexts",
    "units_of",
]

DEFAULT_CONCURRENCY = 8
"""IPFS requests in flight at once."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SegmentProfile:
    """How a node's segment is audited: its tier (1 computational, 2 LLM, 3 human), its weight in the
    trace verdict, whether it lies on the critical path (eq. 3.5-3.6), and whether it is audited.

    `audited=False` makes the node *context-only*: sealed, stored and committed by the trace root,
    delivered to the seats of its children as a parent, but not registered on chain, so no committee
    is drawn for it and nobody votes on it. Its leaf commits tier 0, weight 0, not critical
    (`merkle.SegmentLeaf.context`) whatever `tier`, `weight` and `critical` say; those keep the
    node's routing, so a profile with `audited` set back to True audits it as routed.
    """

    tier: int
    weight: int = 1
    critical: bool = False
    audited: bool = True
    contradiction: bool = False
    """Registered with the contract's contradiction flag (a `contradicts` edge's unit): its failure
    (a confirmed contradiction) or its staying undetermined makes the trace invalid."""

    def __post_init__(self) -> None:
        if not isinstance(self.audited, bool):
            raise GraphError(f"segment profile: audited must be a bool, got {self.audited!r}")


def units_of(graph: Hdag | Cig) -> list[AuditUnit]:
    """The audit units the network seats committees on for `graph` (`trust.core.graphs.units`):
    its nodes, its `contradicts` edges (HDAG), the messages into its audited turns (CIG, the
    telephone test). One definition for sealing, profiles and delivery, so that all three, and a
    session resumed from the journal, agree."""
    return audit_units(graph)


def _edge_tier(graph: Cig, unit: AuditUnit) -> Tier:
    """Where an edge unit is audited: tier 1 when a tier-1 message check decides it (the sender asked
    for a reply format, or the receiver restates a labelled value it was sent), tier 2 otherwise."""
    request = AuditRequest(
        graph.turn(unit.target),
        (graph.turn(unit.source),),
        layer=AuditLayer.EDGE,
        sender=unit.source,
        origin=unit.origin,
    )
    return Tier.COMPUTATIONAL if edge_decidable(request) else Tier.LLM


def default_profiles(graph: Hdag | Cig) -> dict[str, SegmentProfile]:
    """Per unit (`units_of`): an HDAG node's routed tier, weight 1, critical when on the
    goal-to-answer critical path, audited; a contradiction unit of weight 1 with the contradiction
    flag, at tier 1 when a checker decides it and otherwise at its contradicting claim's tier
    (`trust.core.graphs.units.contradiction_tier`); a CIG turn is a tier-2 (LLM) segment of weight
    1, not critical (a CIG has no answer path), audited unless its role is in `CONTEXT_ROLES` (user
    and tool turns: context-only); an edge unit of weight 1, not critical, at tier 1 when a tier-1
    message check decides it and at tier 2 otherwise (`_edge_tier`)."""
    if isinstance(graph, Hdag):
        on_path = set(critical_path(graph))
        profiles = {node.id: SegmentProfile(int(node.tier), 1, node.id in on_path) for node in graph.nodes()}
        for unit in units_of(graph):
            if unit.kind is UnitKind.CONTRADICTION:
                profiles[unit.id] = SegmentProfile(int(contradiction_tier(graph, unit)), 1, contradiction=True)
        return profiles
    profiles = {
        turn.id: SegmentProfile(int(Tier.LLM), audited=turn.role not in CONTEXT_ROLES) for turn in graph.turns()
    }
    for unit in units_of(graph):
        if unit.kind is UnitKind.EDGE:
            profiles[unit.id] = SegmentProfile(int(_edge_tier(graph, unit)))
    return profiles


@dataclass(frozen=True, slots=True)
class StoredTrace:
    """A trace sealed and stored: what the provider keeps to register and deliver it.

    `segments` and `leaves` are the registered segments, indices 0..n-1 (`segment_count`): what
    `specs()` registers and the chain draws committees for. `context` holds the context-only nodes,
    indices n..m-1, each key with its inclusion proof: delivered to seats as parents, never
    registered. `tree` is built over all m leaves, so the trace root commits to the context too.
    Construction checks that all of these agree (`StoredTrace.build` makes a consistent one).
    """

    trace_id: bytes
    segments: tuple[SegmentKey, ...] = field(repr=False)
    leaves: tuple[merkle.SegmentLeaf, ...] = field(repr=False)
    tree: merkle.MerkleTree = field(repr=False)
    context: tuple[SegmentKey, ...] = field(default=(), repr=False)
    contradictions: frozenset[int] = frozenset()
    """Indices of the registered segments flagged as contradictions (`SegmentProfile.contradiction`).
    The flag is registered on chain, not in the leaf: the leaf layout is the contract's."""

    def __post_init__(self) -> None:
        count = len(self.segments)
        if count == 0:
            raise GraphError("a stored trace needs at least one registered (audited) segment; a session has one")
        stray = sorted(i for i in self.contradictions if not 0 <= i < count)
        if stray:
            raise GraphError(
                f"stored trace: contradiction flags on segments {stray[:5]}, but it registers 0..{count - 1}"
            )
        if len(self.leaves) != count:
            raise GraphError(f"stored trace: {count} registered segments but {len(self.leaves)} leaves")
        for index, (key, leaf) in enumerate(zip(self.segments, self.leaves, strict=True)):
            if key.segment_index != index or leaf.index != index or key.context:
                raise GraphError(
                    f"stored trace: segments[{index}] is segment {key.segment_index} ({key.node_id!r}), its leaf "
                    f"{leaf.index}: list the registered segments in index order, without inclusion proofs"
                )
            if leaf.cid != merkle.cid_bytes(key.cid) or leaf.ciphertext_digest != key.ciphertext_digest:
                raise GraphError(
                    f"stored trace: the leaf of segment {index} ({key.node_id!r}) does not hold its CID and digest"
                )
        for offset, key in enumerate(self.context):
            if key.segment_index != count + offset or not key.context:
                raise GraphError(
                    f"stored trace: context[{offset}] ({key.node_id!r}) is segment {key.segment_index}; context-only "
                    f"segments follow the registered ones ({count}, {count + 1}, ...) and carry their inclusion proof"
                )
        if len(self.tree) != count + len(self.context):
            raise GraphError(
                f"stored trace: the tree has {len(self.tree)} leaves, the trace {count} registered and "
                f"{len(self.context)} context-only segments"
            )
        for leaf in (*self.leaves, *self.context_leaves):
            if self.tree.leaf(leaf.index) != merkle.leaf_hash(leaf):
                raise GraphError(f"stored trace: the tree's leaf {leaf.index} is not that segment's leaf")
        for key in self.context:
            if key.proof != tuple(self.tree.proof(key.segment_index)):
                raise GraphError(
                    f"stored trace: the inclusion proof of context segment {key.segment_index} ({key.node_id!r}) "
                    "is not the tree's"
                )

    @classmethod
    def build(
        cls,
        trace_id: bytes,
        segments: Sequence[SegmentKey],
        leaves: Sequence[merkle.SegmentLeaf],
        context: Sequence[SegmentKey] = (),
        contradictions: frozenset[int] = frozenset(),
    ) -> StoredTrace:
        """The stored trace of registered `segments` (with their `leaves`) and `context`-only keys
        (indices following theirs; any proof they carry is replaced by the tree's): builds the tree
        over all the leaves and gives every context key its inclusion proof."""
        context_leaves = [
            merkle.SegmentLeaf.context(key.segment_index, merkle.cid_bytes(key.cid), key.ciphertext_digest)
            for key in context
        ]
        tree = merkle.build([*leaves, *context_leaves])
        proved = tuple(dataclasses.replace(key, proof=tuple(tree.proof(key.segment_index))) for key in context)
        return cls(trace_id, tuple(segments), tuple(leaves), tree, proved, contradictions)

    @classmethod
    def from_keys(
        cls, trace_id: bytes, keys: Sequence[SegmentKey], profiles: Mapping[str, SegmentProfile]
    ) -> StoredTrace:
        """The stored trace of `keys` in index order, the audited nodes' first (by their `profiles`)
        and the context-only ones after them: each audited key's leaf takes its profile's tier,
        weight and critical flag, then `build` makes the tree and the context proofs."""
        registered = 0
        while registered < len(keys) and profiles[keys[registered].node_id].audited:
            registered += 1
        stray = [key.node_id for key in keys[registered:] if profiles[key.node_id].audited]
        if stray:
            raise GraphError(f"audited nodes {stray[:5]} come after context-only ones: register them first")
        leaves = [
            merkle.SegmentLeaf(
                key.segment_index,
                merkle.cid_bytes(key.cid),
                key.ciphertext_digest,
                profiles[key.node_id].tier,
                profiles[key.node_id].weight,
                profiles[key.node_id].critical,
            )
            for key in keys[:registered]
        ]
        flagged = frozenset(i for i, key in enumerate(keys[:registered]) if profiles[key.node_id].contradiction)
        return cls.build(trace_id, keys[:registered], leaves, keys[registered:], flagged)

    @property
    def root(self) -> bytes:
        """The trace root to register with `createSession` (over registered and context leaves)."""
        return self.tree.root

    @property
    def segment_count(self) -> int:
        """How many segments are registered on chain (the session's `segmentCount`)."""
        return len(self.segments)

    @property
    def all_segments(self) -> tuple[SegmentKey, ...]:
        """Every stored node's key in index order: the registered segments, then the context-only ones."""
        return (*self.segments, *self.context)

    @property
    def context_leaves(self) -> tuple[merkle.SegmentLeaf, ...]:
        """The leaves of the context-only segments (tier 0, weight 0, not critical), in index order."""
        return tuple(
            merkle.SegmentLeaf.context(key.segment_index, merkle.cid_bytes(key.cid), key.ciphertext_digest)
            for key in self.context
        )

    def specs(self) -> list[SegmentSpec]:
        """The segments to register, in order: tier, weight, critical flag and the CID's digest (the
        registered segments only; context-only ones are committed by the root alone)."""
        return [
            SegmentSpec(
                tier=leaf.tier,
                weight=leaf.weight,
                content_digest=digest32(key.cid),
                critical=leaf.critical,
                contradiction=leaf.index in self.contradictions,
            )
            for leaf, key in zip(self.leaves, self.segments, strict=True)
        ]

    def proof(self, index: int) -> list[bytes]:
        """The inclusion proof of segment `index`, registered or context-only (`SegmentKeys.verifySegment`
        checks either on chain; a context leaf has tier 0 and an index past the session's segments)."""
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

    `profiles` gives each node's tier, weight, critical flag and whether it is audited
    (`default_profiles` when None). The audited nodes become segments 0..n-1 in the graph's order,
    the context-only ones n..m-1 after them. Refused before anything is uploaded: a node without a
    profile (`VerificationError`), a graph with no audited node (`GraphError`: nothing to audit).
    """
    profiles = default_profiles(graph) if profiles is None else profiles
    trace_id = new_trace_id(rng)
    sealed = seal_units(graph, trace_id, rng)
    missing = [s.node_id for s in sealed if s.node_id not in profiles]
    if missing:
        raise VerificationError(f"no segment profile (tier, weight, critical) for nodes {missing[:5]}")
    audited = [s for s in sealed if profiles[s.node_id].audited]
    context = [s for s in sealed if not profiles[s.node_id].audited]
    if not audited:
        raise GraphError(
            f"none of the trace's {len(sealed)} nodes is audited (every profile says audited=False, as for a "
            "multi-agent log of user and tool turns only): there is nothing to register or vote on; audit at "
            "least one node"
        )
    ordered = audited + context
    cids = await gather_bounded(concurrency, _uploads(kubo, [s.blob for s in ordered]))
    return StoredTrace.from_keys(trace_id, segment_keys(ordered, cids), profiles)


def unit_plaintexts(graph: Hdag | Cig) -> dict[str, bytes]:
    """The plaintext of every unit's segment (`units_of`), by unit id: every node's own segment in the
    graph's order (`segment_plaintexts`), then the descriptor of every other unit, in unit order."""
    plaintexts = segment_plaintexts(graph)
    for unit in units_of(graph):
        if unit.kind is not UnitKind.NODE:
            plaintexts[unit.id] = unit_plaintext(unit)
    return plaintexts


def seal_units(graph: Hdag | Cig, trace_id: bytes, rng: Rng) -> list[SealedSegment]:
    """Every unit's segment (`unit_plaintexts`: the nodes, then the other units' descriptors) sealed
    under a fresh key of its own."""
    return [
        seal(unit_id, plaintext, trace_id, new_key(rng), rng) for unit_id, plaintext in unit_plaintexts(graph).items()
    ]


async def deliver_keys(
    protocol: Protocol,
    kubo: KuboClient,
    provider: LocalAccount,
    session_id: int,
    graph: Hdag | Cig | nx.DiGraph,
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
    (`trust.core.privacy.reports`); None asks for no reports. Returns the announced envelopes.
    """
    session = await protocol.audit.session(session_id)
    if session.trace_root != stored.root:
        raise VerificationError(
            f"session {session_id} has trace root 0x{session.trace_root.hex()}, this trace's is "
            f"0x{stored.root.hex()}: deliver the keys of the trace the session registered"
        )
    auditors = sorted({member for committee in committees for member in committee.members})
    infos = await protocol.registry.auditors(auditors)
    key_of = {member: info.encryption_key for member, info in zip(auditors, infos, strict=True)}
    seats = [Seat(c.segment_id, member, key_of[member]) for c in committees for member in c.members]
    # A seat reads its unit and what the unit is about (`trust.core.graphs.units.access_graph`); a
    # batch's union graph comes as a networkx digraph already.
    access = access_graph(graph, units_of(graph)) if isinstance(graph, Hdag | Cig) else graph
    plans = plan_envelopes(access, stored.trace_id, stored.all_segments, seats, reply_key=reply_key)
    sealed = seal_envelopes(plans, stored.root)
    cids = await gather_bounded(concurrency, _uploads(kubo, [s.envelope for s in sealed]))
    cid_of = {(s.seat.segment_index, s.seat.auditor): cid for s, cid in zip(sealed, cids, strict=True)}
    sets = [
        EnvelopeSet(c.segment_id, c.round, [cid_of[(c.segment_id, member)] for member in c.members]) for c in committees
    ]
    announced: list[KeyEnvelope] = []
    # `publishEnvelopesBatch` takes at most so many envelopes; a set larger than that, impossible
    # with committees of at most 127 seats, goes alone.
    most = await protocol.segment_keys.max_batch_envelopes()
    for chunk in bounded_runs(sets, most, lambda item: len(item.envelope_cids)):
        if len(chunk) == 1:  # one round alone is cheaper through the single call
            (only,) = chunk
            sent = await protocol.segment_keys.publish_envelopes(
                provider, session_id, only.segment_id, only.round, list(only.envelope_cids)
            )
        else:
            sent = await protocol.segment_keys.publish_envelopes_batch(provider, session_id, chunk)
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


async def open_granted(
    protocol: Protocol,
    kubo: KuboClient,
    session_id: int,
    grant: KeyGrant,
    *,
    session: SessionInfo | None = None,
    digests: MutableMapping[tuple[int, int], bytes] | None = None,
    blobs: BlobCache | None = None,
) -> dict[str, bytes]:
    """The plaintext of every segment `grant` unlocks, by node id, the seat's own node first.

    `session` is the session as just read (read here when None). `digests` caches the content digests
    registered on chain by (session, segment): they never change once registered, so a worker
    opening many seats of one trace (whose parents repeat) reads each once. `blobs` does the same
    for the ciphertexts, by (CID, ciphertext digest), once fetched and checked.

    A segment registered on chain (index below the session's `segmentCount`) must have a CID carrying
    the digest registered for its index. A context-only parent (an index past them, delivered but
    never registered) must carry an inclusion proof of its leaf (index, CID, digest, tier 0, weight
    0, not critical) under the session's trace root. The seat's own node must be a registered
    segment. Only then is each blob fetched (checked against its CID and committed sha256) and
    decrypted. Every refusal is a `VerificationError` naming the segment; nothing is fetched before
    every entry checked.
    """
    if session is None:
        session = await protocol.audit.session(session_id)
    count = session.segment_count
    own = grant.segments[0]
    if own.segment_index >= count or own.context:
        raise VerificationError(
            f"segment {own.segment_index} ({own.node_id!r}) of session {session_id}: a seat's own node must be one "
            f"of the {count} segments registered on chain, not a context-only one; nothing was fetched or decrypted"
        )
    registered = [key for key in grant.segments if key.segment_index < count]
    known = digests if digests is not None else {}
    unread = [key.segment_index for key in registered if (session_id, key.segment_index) not in known]
    for index, info in zip(unread, await protocol.audit.segments([(session_id, i) for i in unread]), strict=True):
        known[(session_id, index)] = info.content_digest
    for key in registered:
        content_digest = known[(session_id, key.segment_index)]
        if key.context:
            raise VerificationError(
                f"segment {key.segment_index} ({key.node_id!r}) of session {session_id}: the envelope gives it an "
                "inclusion proof, but it is registered on chain, so it is checked against its content digest and "
                "carries none; nothing was fetched or decrypted"
            )
        if digest32(key.cid) != content_digest:
            raise VerificationError(
                f"segment {key.segment_index} ({key.node_id!r}) of session {session_id}: the envelope points to "
                f"{key.cid}, but the segment registered on chain has content digest 0x{content_digest.hex()}; "
                "nothing was fetched or decrypted"
            )
    for key in grant.segments:
        if key.segment_index >= count:
            _check_context(key, session_id, count, session.trace_root)

    async def fetch(key: SegmentKey) -> bytes:
        load = partial(kubo.cat, key.cid, expected_digest=key.ciphertext_digest)
        return await (load() if blobs is None else blobs.fetch((key.cid, key.ciphertext_digest), load))

    fetched = await gather_bounded(DEFAULT_CONCURRENCY, [partial(fetch, key) for key in grant.segments])
    return {
        key.node_id: open_segment(blob, key.key, grant.trace_id, key.node_id, ciphertext_digest=key.ciphertext_digest)
        for key, blob in zip(grant.segments, fetched, strict=True)
    }


def _check_context(key: SegmentKey, session_id: int, count: int, trace_root: bytes) -> None:
    """A context-only entry's leaf must lead to the session's trace root through its proof."""
    where = f"segment {key.segment_index} ({key.node_id!r}) of session {session_id}"
    if key.proof is None:
        raise VerificationError(
            f"{where}: not registered on chain (the session has {count} segments) and its entry carries no "
            "inclusion proof, so nothing vouches for it; nothing was fetched or decrypted"
        )
    leaf = merkle.SegmentLeaf.context(key.segment_index, merkle.cid_bytes(key.cid), key.ciphertext_digest)
    computed = merkle.process_proof(merkle.leaf_hash(leaf), key.proof)
    if computed != trace_root:
        raise VerificationError(
            f"{where}: a context-only segment whose inclusion proof leads to 0x{computed.hex()}, not the session's "
            f"trace root 0x{trace_root.hex()}: its CID, digest or proof is not what the provider committed; "
            "nothing was fetched or decrypted"
        )
