"""Need-to-know key distribution (paper 3.4.2): who receives which segment keys.

A seat on node v receives K_v and the keys of v's immediate parents, nothing else: the parents are
the context an auditor needs to judge v (the premises of an HDAG step, the messages a CIG turn
received), and nothing downstream or further up is given. So a seat on v can read exactly
`need_to_know(v) = {v} + parents(v)`, and a coalition of seats can read the union of theirs
(`readable_nodes`), which is what the privacy measurement (`trust.lab.bench.privacy`) counts.

The provider side: `segment_keys` records, per segment, its node, key, CID and digest once the
blobs are stored; `plan_envelopes`, given the committee as read from chain (one `Seat` per seated
auditor and segment, with the encryption key the auditor registered), one `EnvelopePlan` per seat
and nothing else. The function has no other source of recipients, so a key can only go to an
auditor the chain seated; an auditor seated on several segments gets one envelope per seat.

A trace may hold *context-only* segments (a `SegmentKey` with an inclusion proof, listed after
every registered one): nodes a seat reads as parents but nobody audits, such as a CIG's user and
tool turns. Their keys go into the grants of their children's seats like any parent's; no seat
ever sits on them, and a seat on one is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import networkx as nx

from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import Hdag
from trust.core.privacy.envelopes import KeyGrant, SegmentKey, address_bytes, seal_envelope
from trust.core.privacy.segments import SealedSegment
from trust.errors import GraphError, VerificationError

__all__ = [
    "EnvelopePlan",
    "Seat",
    "SealedEnvelope",
    "grant_for",
    "need_to_know",
    "parent_lists",
    "plan_envelopes",
    "readable_nodes",
    "seal_envelopes",
    "segment_keys",
]

Graph: TypeAlias = Hdag | Cig | nx.DiGraph
"""What the access functions accept: an HDAG, a CIG, or their networkx view."""


@dataclass(frozen=True, slots=True)
class Seat:
    """One seat as read from chain: `auditor` (0x address) seated on segment `segment_index`, with
    the X25519 public key it registered (`AuditorRegistry.encryptionKeyOf`, bytes32)."""

    segment_index: int
    auditor: str
    encryption_key: bytes

    def __post_init__(self) -> None:
        if isinstance(self.segment_index, bool) or not isinstance(self.segment_index, int) or self.segment_index < 0:
            raise GraphError(f"seat: segment index {self.segment_index!r} is not a non-negative integer")
        address_bytes(self.auditor)


@dataclass(frozen=True, slots=True)
class EnvelopePlan:
    """What the provider wraps for one seat."""

    seat: Seat
    grant: KeyGrant


@dataclass(frozen=True, slots=True)
class SealedEnvelope:
    """A seat's sealed envelope, ready to store (its CID is then announced on chain per seat)."""

    seat: Seat
    node_id: str
    envelope: bytes = field(repr=False)


def _parents(graph: Graph, node_id: str) -> list[str]:
    if isinstance(graph, Hdag | Cig):
        return graph.parents(node_id)
    if isinstance(graph, nx.DiGraph):
        if node_id not in graph:
            raise GraphError(f"unknown node {node_id!r}")
        return list(graph.predecessors(node_id))
    raise GraphError(f"expected an Hdag, a Cig or a networkx DiGraph, got {type(graph).__name__}")


def _node_ids(graph: Graph) -> list[str]:
    if isinstance(graph, Hdag):
        return [node.id for node in graph.nodes()]
    if isinstance(graph, Cig):
        return graph.topological_order()
    if isinstance(graph, nx.DiGraph):
        return list(graph.nodes)
    raise GraphError(f"expected an Hdag, a Cig or a networkx DiGraph, got {type(graph).__name__}")


def need_to_know(graph: Graph, node_id: str) -> tuple[str, ...]:
    """The nodes a seat on `node_id` may read: the node itself, then its immediate parents."""
    return (node_id, *_parents(graph, node_id))


def parent_lists(graph: Graph) -> dict[str, tuple[str, ...]]:
    """`need_to_know` of every node at once, in the graph's order (one pass; for measurements)."""
    return {node_id: need_to_know(graph, node_id) for node_id in _node_ids(graph)}


def readable_nodes(graph: Graph | Mapping[str, Sequence[str]], seated_nodes: Iterable[str]) -> set[str]:
    """The nodes whose keys a coalition holding seats on `seated_nodes` receives, all together.

    `graph` may be a precomputed `parent_lists` mapping, to count many coalitions cheaply.
    """
    if isinstance(graph, Mapping):
        readable: set[str] = set()
        for node_id in seated_nodes:
            try:
                readable.update(graph[node_id])
            except KeyError:
                raise GraphError(f"unknown node {node_id!r}") from None
        return readable
    return {member for node_id in seated_nodes for member in need_to_know(graph, node_id)}


def segment_keys(sealed: Sequence[SealedSegment], cids: Sequence[str]) -> list[SegmentKey]:
    """The provider's record of a stored trace: segment i is `sealed[i]`, stored under `cids[i]`."""
    if len(sealed) != len(cids):
        raise GraphError(f"{len(sealed)} sealed segments but {len(cids)} CIDs: store every segment once")
    return [
        SegmentKey(segment.node_id, index, cid, segment.ciphertext_digest, segment.key)
        for index, (segment, cid) in enumerate(zip(sealed, cids, strict=True))
    ]


def grant_for(
    graph: Graph,
    node_id: str,
    trace_id: bytes,
    segments: Mapping[str, SegmentKey],
    *,
    reply_key: bytes | None = None,
) -> KeyGrant:
    """The `KeyGrant` of a seat on `node_id`: its own and its parents' `SegmentKey`, from `segments`,
    and the provider's `reply_key` (raw X25519 public key) for the seat's audit report, if any."""
    wanted = need_to_know(graph, node_id)
    missing = [member for member in wanted if member not in segments]
    if missing:
        raise GraphError(f"node {node_id!r}: no segment key for {missing}; seal and store every node first")
    if segments[node_id].context:
        raise GraphError(
            f"node {node_id!r} is a context-only segment ({segments[node_id].segment_index}): it is delivered to "
            "the seats of its children, and no seat audits it"
        )
    return KeyGrant(
        trace_id,
        segments[node_id].segment_index,
        node_id,
        tuple(segments[member] for member in wanted),
        reply_key,
    )


def plan_envelopes(
    graph: Graph,
    trace_id: bytes,
    segments: Sequence[SegmentKey],
    committee: Iterable[Seat],
    *,
    reply_key: bytes | None = None,
) -> list[EnvelopePlan]:
    """One envelope plan per seat of `committee`, and only for those seats.

    `trace_id` is the one the segments were sealed under; `segments[i]` is segment i, every node of
    the graph exactly once: the registered segments first, then the context-only ones (those with an
    inclusion proof; `trust.services.delivery.StoredTrace.all_segments`). `committee` is what the chain
    seated; the same seat read twice (for example from two event queries) yields one plan. Raises
    `VerificationError` when the committee does not fit the trace: a seat on a segment the trace
    does not have or on a context-only one, or one auditor read with two different encryption keys.
    Every grant carries `reply_key` (the provider's per-session report key; None for no reports).
    """
    nodes = _node_ids(graph)
    by_node = {segment.node_id: segment for segment in segments}
    if len(segments) != len(nodes) or set(by_node) != set(nodes):
        extra = sorted(set(by_node) - set(nodes))[:5]
        absent = sorted(set(nodes) - set(by_node))[:5]
        raise GraphError(
            f"segments must hold every node of the graph exactly once ({len(segments)} given, "
            f"{len(nodes)} nodes; unknown {extra}, missing {absent})"
        )
    misplaced = [i for i, segment in enumerate(segments) if segment.segment_index != i]
    if misplaced:
        raise GraphError(
            f"segments[{misplaced[0]}] names segment {segments[misplaced[0]].segment_index}: list them in order"
        )
    registered = sum(1 for segment in segments if not segment.context)
    stray = [i for i, segment in enumerate(segments) if segment.context != (i >= registered)]
    if stray:
        raise GraphError(
            f"segments[{stray[0]}] ({segments[stray[0]].node_id!r}): list the registered segments first, then the "
            "context-only ones (those with an inclusion proof)"
        )
    plans: list[EnvelopePlan] = []
    seen: set[tuple[int, str]] = set()
    key_of: dict[str, bytes] = {}
    span = f"0..{registered - 1}" if registered else "none"
    for seat in committee:
        if seat.segment_index >= registered:
            raise VerificationError(
                f"auditor {seat.auditor} is seated on segment {seat.segment_index}, but the trace registers segments "
                f"{span} (and {len(segments) - registered} context-only after them, which nobody audits): the "
                "committee was read for another session"
            )
        auditor = seat.auditor.lower()
        known = key_of.setdefault(auditor, seat.encryption_key)
        if known != seat.encryption_key:
            raise VerificationError(
                f"auditor {seat.auditor} was read with two encryption keys (0x{known.hex()} and "
                f"0x{seat.encryption_key.hex()}); read the committee and the registry again at one block"
            )
        if (seat.segment_index, auditor) in seen:
            continue
        seen.add((seat.segment_index, auditor))
        node_id = segments[seat.segment_index].node_id
        plans.append(EnvelopePlan(seat, grant_for(graph, node_id, trace_id, by_node, reply_key=reply_key)))
    return plans


def seal_envelopes(plans: Iterable[EnvelopePlan], trace_root: bytes) -> list[SealedEnvelope]:
    """Seals every plan to its seat's registered key, for the session whose trace root is `trace_root`."""
    return [
        SealedEnvelope(
            plan.seat,
            plan.grant.node_id,
            seal_envelope(
                plan.grant,
                trace_root=trace_root,
                auditor=plan.seat.auditor,
                recipient_key=plan.seat.encryption_key,
            ),
        )
        for plan in plans
    ]
