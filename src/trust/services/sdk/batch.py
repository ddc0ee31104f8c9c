"""Several traces in one session: the lower-level SDK path behind the gateway's source anonymization
(paper 3.4.4, "source anonymization batches traces from multiple providers together so that auditors
cannot identify which provider submitted which trace").

A batch is submitted from one wallet (the gateway's) as ONE on-chain session, so the chain shows a
single provider for all of it. Inside the session:

- Every trace keeps its own graph, but its node ids are rewritten to `<label>/<id>`, where `label` is
  a random batch-local string (`LABEL_HEX_CHARS` hex characters) drawn per trace. Ids of different
  traces therefore never collide in the sealed segments (a segment's associated data, its plaintext
  and its key envelope all carry the node id), and nothing in an id names the provider. The label
  only says which segments share a trace, which the parents in each key grant say already.
- The segments of all traces are sealed under one batch trace id and put in one cryptographically
  random order (`secrets.SystemRandom().shuffle`, a Fisher-Yates shuffle over `os.urandom`): segment
  i of the session is no longer "node i of some trace", so an auditor seated on a few segments cannot
  tell from their indices where one trace ends and the next begins.
- Every member's audit units are seated, as in a session of its own (`trust.core.graphs.units`): its
  nodes, the unresolved `contradicts` edges of an HDAG, the messages into an agent log's audited turns
  (the telephone test). Units are derived from the relabelled graph, so a unit's id and descriptor
  name batch ids (`edge:<label>/<a>-><label>/<b>`), and `BatchMember.original` maps them back.
- Key envelopes are planned on the disjoint union of the members' need-to-know graphs
  (`BatchPlan.graph`, a networkx digraph of `trust.core.graphs.units.access_graph`s, which
  `trust.core.privacy.access` accepts as a graph): a seat on a node still receives its node's key and
  its parents' keys only, a seat on an edge or a contradiction the keys of its two nodes, all of them
  from the same trace.

Why a union digraph and not an `Hdag` or a `Cig`: an HDAG admits one goal node and a CIG one time
line of strictly increasing steps, so neither holds two disjoint traces (nor a trace next to an agent
log), and rewriting steps would change what the auditors read. Each segment's plaintext is already
self-describing (an HDAG node or a CIG turn, `trust.auditors.base.parse_segment_plaintext`), so the
worker needs nothing new; only the provider side needs the union, for what each unit's seat reads.

After the session is final, each trace is judged on its own segments with the SDK's judgement
(`trust.services.sdk.outcome.judge`); the chain's part of that judgement (eq. 3.5-3.6, the critical path and
contradictions) is applied to the trace's segments alone, because the on-chain verdict of the session
covers the whole batch and is therefore no one trace's verdict. `AuditResult.proof.valid_on_chain`
of a batched trace is that session verdict; `BatchResult.inclusion` holds, per trace, the Merkle
proof of each of its segments under the session's trace root, so a provider can check on chain
(`SegmentKeys.verifySegment`) that its segments were audited in that session.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

import networkx as nx

from trust.adapters.storage.kubo import KuboClient
from trust.core.graphs.cig import Cig
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.units import access_graph
from trust.core.privacy import merkle
from trust.core.privacy.access import segment_keys
from trust.core.privacy.segments import (
    DEFAULT_MAX_PLAINTEXT_BYTES,
    MAX_NODE_ID_BYTES,
    Rng,
    encode_node_id,
    new_key,
    new_trace_id,
    seal,
)
from trust.errors import GraphError
from trust.services.delivery import DEFAULT_CONCURRENCY, SegmentProfile, StoredTrace, unit_plaintexts, units_of
from trust.services.sdk.client import TrustClient, segment_profiles, unpin
from trust.services.sdk.config import AuditConfig
from trust.services.sdk.outcome import SegmentOutcome, judge
from trust.services.sdk.result import AuditResult, Proof, Verdict
from trust.services.sdk.session import SessionDriver
from trust.services.sdk.timings import phase_timings

__all__ = [
    "LABEL_HEX_CHARS",
    "BatchClient",
    "BatchEntry",
    "BatchMember",
    "BatchPlan",
    "BatchResult",
    "SegmentInclusion",
    "batch_node_id",
    "check_entry",
    "plan_batch",
    "registered_segments",
    "relabel",
    "store_batch",
]


LABEL_HEX_CHARS = 8
"""Length of a trace's batch-local label: 32 random bits, redrawn on the (rare) collision in a batch."""
_LABEL_SEPARATOR = "/"
_PREFIX_BYTES = LABEL_HEX_CHARS + len(_LABEL_SEPARATOR)
_NO_EXTRA_THRESHOLD = 0.0
"""A provider-side consensus threshold no passed segment falls below: `judge` then re-counts nothing
and applies the chain's rule (eq. 3.5-3.6, critical path, contradictions) to the segments it gets."""


def batch_node_id(label: str, node_id: str) -> str:
    """The id a node of the trace labelled `label` carries in a batch session."""
    return f"{label}{_LABEL_SEPARATOR}{node_id}"


@dataclass(frozen=True, slots=True)
class BatchEntry:
    """One trace to batch: its kind ("trace": an HDAG, "agents": a CIG), its graph, the provider's
    config (its `auditor_tiers` route the nodes, its `consensus_threshold` reads the outcome; the
    session-wide fields, fee and latency, are the batch's) and how long decomposing it took, in
    seconds (reported as the decomposition phase of its result)."""

    kind: str
    graph: Hdag | Cig = field(repr=False)
    config: AuditConfig = field(default_factory=AuditConfig)
    decomposition_s: float = 0.0


@dataclass(frozen=True, slots=True)
class BatchMember:
    """An entry inside a batch: its label, its graph under batch ids, and the way back."""

    entry: BatchEntry
    label: str
    graph: Hdag | Cig = field(repr=False)
    profiles: dict[str, SegmentProfile] = field(repr=False)
    """Tier, weight, critical and contradiction flags of every unit by batch id (the entry's own
    routing, renamed)."""
    original: dict[str, str] = field(repr=False)
    """Batch id -> the id the provider's graph gives the unit (a node id, or an edge or contradiction
    unit's id over the provider's node ids)."""


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """The members of a batch and the session's segment order (batch ids, shuffled)."""

    members: tuple[BatchMember, ...]
    order: tuple[str, ...]
    graph: nx.DiGraph = field(repr=False)
    """The disjoint union of the members' need-to-know graphs under batch ids (for key envelopes): a
    unit's predecessors are what its seat reads."""

    @property
    def profiles(self) -> dict[str, SegmentProfile]:
        """Every segment's profile, in session order."""
        merged = {key: value for member in self.members for key, value in member.profiles.items()}
        return {node_id: merged[node_id] for node_id in self.order}

    def owners(self) -> tuple[int, ...]:
        """The member index of each segment, in session order: the link the batch hides."""
        owner = {node_id: index for index, member in enumerate(self.members) for node_id in member.original}
        return tuple(owner[node_id] for node_id in self.order)


@dataclass(frozen=True, slots=True)
class SegmentInclusion:
    """One segment of a batched trace as the session's trace root commits to it, with its Merkle
    proof (sorted-pair keccak, `trust.core.privacy.merkle`; `SegmentKeys.verifySegment` checks it)."""

    node_id: str
    """The provider's node id."""
    leaf: merkle.SegmentLeaf
    proof: tuple[bytes, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node_id,
            "segment": self.leaf.index,
            "cid": "0x" + self.leaf.cid.hex(),
            "ciphertext_digest": "0x" + self.leaf.ciphertext_digest.hex(),
            "tier": self.leaf.tier,
            "weight": self.leaf.weight,
            "critical": self.leaf.critical,
            "proof": ["0x" + step.hex() for step in self.proof],
        }


@dataclass(frozen=True, slots=True)
class BatchResult:
    """The outcome of a batch session: one `AuditResult` per entry (in the entries' order), the
    session's proof (its verdict covers the whole batch), each entry's segment inclusion proofs and
    the member index of each segment in session order."""

    proof: Proof
    results: tuple[AuditResult, ...]
    inclusion: tuple[tuple[SegmentInclusion, ...], ...]
    owners: tuple[int, ...]

    @property
    def session_id(self) -> int:
        return self.proof.session_id


# ---------------------------------------------------------------------- planning (pure)


def relabel(graph: Hdag | Cig, label: str) -> Hdag | Cig:
    """A copy of `graph` with every node id `batch_node_id(label, id)`; nothing else changes."""
    if isinstance(graph, Hdag):
        hdag = Hdag()
        for node in graph.nodes():
            hdag.add_node(dataclasses.replace(node, id=batch_node_id(label, node.id)))
        for edge in graph.edges():
            hdag.add_edge(batch_node_id(label, edge.source), batch_node_id(label, edge.target), edge.type)
        return hdag
    if isinstance(graph, Cig):
        cig = Cig()
        for turn in graph.turns():
            cig.add_turn(dataclasses.replace(turn, id=batch_node_id(label, turn.id)))
        for cig_edge in graph.edges():
            cig.add_edge(batch_node_id(label, cig_edge.source), batch_node_id(label, cig_edge.target), cig_edge.origin)
        return cig
    raise GraphError(f"a batch holds HDAGs and CIGs, not {type(graph).__name__}")


def check_entry(entry: BatchEntry) -> None:
    """Everything that could make sealing fail for this entry inside a batch, checked up front so that
    one bad trace never fails the others: an empty graph, a node or unit id too long to carry the
    batch label, a node whose plaintext exceeds the segment limit. `GraphError` naming the node."""
    if entry.kind not in ("trace", "agents"):
        raise GraphError(f"batch entry kind {entry.kind!r}: expected 'trace' or 'agents'")
    if len(entry.graph) == 0:
        raise GraphError("the graph has no nodes: nothing to audit")
    for node_id in entry.graph.graph.nodes:
        size = len(encode_node_id(node_id)) + _PREFIX_BYTES
        if size > MAX_NODE_ID_BYTES:
            raise GraphError(
                f"node id {node_id[:40]!r}... is {size - _PREFIX_BYTES} bytes; in a batch it carries a "
                f"{_PREFIX_BYTES}-byte label and must stay within {MAX_NODE_ID_BYTES} bytes: shorten the node ids"
            )
    # The unit ids as a batch writes them (any label has the same length): an edge unit's names two.
    labelled = units_of(relabel(entry.graph, "0" * LABEL_HEX_CHARS))
    for unit, batched in zip(units_of(entry.graph), labelled, strict=True):
        size = len(batched.id.encode())
        if size > MAX_NODE_ID_BYTES:
            raise GraphError(
                f"{unit.kind.value} {unit.id[:40]!r}... is {size} bytes in a batch, where each node id it names "
                f"carries a {_PREFIX_BYTES}-byte label; ids must stay within {MAX_NODE_ID_BYTES} bytes: shorten "
                "the node ids"
            )
    for node_id, plaintext in unit_plaintexts(entry.graph).items():
        if len(plaintext) > DEFAULT_MAX_PLAINTEXT_BYTES:
            raise GraphError(
                f"node {node_id!r} is {len(plaintext):,} bytes as a segment, over the limit of "
                f"{DEFAULT_MAX_PLAINTEXT_BYTES:,}: split it"
            )


def registered_segments(entry: BatchEntry) -> int:
    """How many segments `entry` registers in a batch session: its audited units (its audited nodes,
    and its edge and contradiction units); context-only turns travel unregistered."""
    return sum(1 for profile in segment_profiles(entry.graph, entry.config).values() if profile.audited)


def _label(rng: random.Random, taken: set[str]) -> str:
    while True:
        label = f"{rng.getrandbits(4 * LABEL_HEX_CHARS):0{LABEL_HEX_CHARS}x}"
        if label not in taken:
            taken.add(label)
            return label


def plan_batch(entries: Sequence[BatchEntry], *, rng: random.Random | None = None) -> BatchPlan:
    """Labels every entry, renames its nodes and profiles, and shuffles all segments together.

    `rng` draws the labels and the permutation; the default, `secrets.SystemRandom()`, draws from
    the operating system's CSPRNG (pass a seeded `random.Random` only in tests).
    """
    if not entries:
        raise GraphError("a batch needs at least one trace")
    rng = rng if rng is not None else secrets.SystemRandom()
    taken: set[str] = set()
    members: list[BatchMember] = []
    union = nx.DiGraph()
    for entry in entries:
        check_entry(entry)
        label = _label(rng, taken)
        renamed = relabel(entry.graph, label)
        units = units_of(renamed)
        # Relabelling keeps the graph's order, so both graphs list their units in the same order.
        original = {unit.id: own.id for unit, own in zip(units, units_of(entry.graph), strict=True)}
        profiles = segment_profiles(entry.graph, entry.config)
        members.append(
            BatchMember(entry, label, renamed, {unit.id: profiles[original[unit.id]] for unit in units}, original)
        )
        access = access_graph(renamed, units)
        union.add_nodes_from(access)
        # Unit by unit, so that each unit's predecessors keep the order its seat reads them in.
        union.add_edges_from((read, unit) for unit in access for read in access.predecessors(unit))
    order = [node_id for member in members for node_id in member.original]
    rng.shuffle(order)
    # Registered segments first, context-only nodes (CIG user and tool turns) after them, each part
    # in the shuffled order: the trace root commits to both, only the first are voted on.
    audited = {node_id for member in members for node_id, profile in member.profiles.items() if profile.audited}
    order = [node_id for node_id in order if node_id in audited] + [n for n in order if n not in audited]
    return BatchPlan(tuple(members), tuple(order), union)


# ---------------------------------------------------------------------- storing


async def store_batch(
    kubo: KuboClient, plan: BatchPlan, *, rng: Rng = os.urandom, concurrency: int = DEFAULT_CONCURRENCY
) -> StoredTrace:
    """Seals every segment of the batch in session order under one batch trace id and a fresh key per
    node, uploads and pins the blobs, and builds the session's Merkle tree.

    If any upload fails, the blobs that did upload are unpinned before the error propagates.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    trace_id = new_trace_id(rng)
    plaintexts = {key: value for member in plan.members for key, value in unit_plaintexts(member.graph).items()}
    sealed = [seal(node_id, plaintexts[node_id], trace_id, new_key(rng), rng) for node_id in plan.order]
    gate = asyncio.Semaphore(concurrency)

    async def upload(blob: bytes) -> str:
        async with gate:
            return await kubo.add(blob, pin=True)

    answers = await asyncio.gather(*(upload(s.blob) for s in sealed), return_exceptions=True)
    failures = [a for a in answers if isinstance(a, BaseException)]
    if failures:
        await unpin(kubo, [a for a in answers if isinstance(a, str)])
        raise failures[0]
    cids = cast(list[str], answers)
    return StoredTrace.from_keys(trace_id, segment_keys(sealed, cids), plan.profiles)


# ---------------------------------------------------------------------- the session


def _valid_alone(graph: Hdag | Cig, segments: Sequence[SegmentOutcome], beta_bps: int) -> bool:
    """What `finalizeTrace` would have decided for these segments alone: `judge`'s own rule, asked
    with a threshold that re-counts nothing and with the chain's side taken as valid."""
    alone = judge(graph, segments, valid_on_chain=True, beta_bps=beta_bps, consensus_threshold=_NO_EXTRA_THRESHOLD)
    return alone.verdict is Verdict.VALID


def _unlabelled(segment: SegmentOutcome, member: BatchMember) -> SegmentOutcome:
    """A segment's outcome under the provider's node id; the auditors' critiques, which may quote the
    batch ids of the node and its parents, read without the label too."""
    prefix = batch_node_id(member.label, "")
    critiques = tuple(dataclasses.replace(c, critique=c.critique.replace(prefix, "")) for c in segment.critiques)
    return dataclasses.replace(segment, node_id=member.original[segment.node_id], critiques=critiques)


class BatchClient(TrustClient):
    """A `TrustClient` that also audits several traces as one session (`audit_batch`), and checks
    one entry against the network before it joins a batch (`admit`). Same wallet, settings and
    connections as its parent; see the module docstring for what a batch hides and what it does not.
    """

    async def admit(self, entry: BatchEntry) -> int:
        """Every check the SDK makes before an upload, for this entry alone: the node limits, the IPFS
        node, the chain and the deployment, a committee for every tier it needs, and that the wallet
        holds the entry's minimum fee. Returns the protocol's `maxSegmentsPerSession` (the most
        segments one batch may hold). Raises what `TrustClient.audit_trace` raises before sending."""
        check_entry(entry)
        profiles = segment_profiles(entry.graph, entry.config)
        async with self._connection() as (protocol, kubo):
            await self._preflight(protocol, kubo, profiles, entry.config)
            return int((await protocol.params.params())["maxSegmentsPerSession"])

    async def audit_batch(
        self,
        entries: Sequence[BatchEntry],
        session: AuditConfig | None = None,
        *,
        rng: random.Random | None = None,
        on_open: Callable[[int], None] | None = None,
    ) -> BatchResult:
        """Audits `entries` as one session from this client's wallet and judges each on its own.

        `session` gives the session-wide fields: the fee (`fee_wei`, the contract's minimum when
        unset), `max_latency_ms` (from now), `report_grace_ms`, `finalize`, `distribute`, and
        `max_nodes` for the whole batch. `on_open(session_id)` is called once the session is open.
        Nothing is left behind on failure before the session opens: blobs are unpinned.
        """
        session = session or AuditConfig()
        marks = {"start": time.time()}
        plan = plan_batch(entries, rng=rng)
        profiles = plan.profiles
        async with self._connection() as (protocol, kubo):
            fee = await self._preflight(protocol, kubo, profiles, session)
            self._say("upload", 0, len(profiles))
            stored = await store_batch(kubo, plan)
            marks["decomposed"] = marks["start"]
            marks["uploaded"] = time.time()
            self._say("upload", len(profiles), len(profiles))
            # The union is a networkx digraph: `deliver_keys` hands it to `plan_envelopes`, which takes
            # one (`trust.core.privacy.access.Graph`); nothing else of the driver reads the graph, and this
            # record is never written to the journal (its graph has no JSON form there).
            union = cast("Hdag | Cig", plan.graph)
            driver = await self._open(protocol, kubo, "batch", union, stored, fee, session, marks, journal=False)
            if on_open is not None:
                on_open(driver.session_id)
            return await self._finish_batch(driver, plan, session)

    async def _finish_batch(self, driver: SessionDriver, plan: BatchPlan, session: AuditConfig) -> BatchResult:
        budget = session.max_latency_ms
        await driver.drive(None if budget is None else driver.marks["start"] + budget / 1000)
        reports = await driver.retrying(lambda: driver.reports(session.report_grace_ms / 1000))
        outcomes = await driver.retrying(lambda: driver.outcomes(reports))
        protocol = driver.protocol
        info = await driver.retrying(lambda: protocol.audit.session(driver.session_id))
        params = await driver.retrying(lambda: protocol.audit.session_params(driver.session_id))
        beta_bps = int(params["betaBps"])
        stored = driver.record.stored
        proof = Proof(
            chain_id=protocol.chain.chain_id,
            audit_contract=protocol.audit.address,
            session_id=driver.session_id,
            trace_root="0x" + stored.root.hex(),
            finalized_block=driver.finalized_block,
            finalize_tx=driver.finalize_tx,
            valid_on_chain=info.valid,
        )
        transactions = {name: tuple(hashes) for name, hashes in driver.transactions.items()}
        results: list[AuditResult] = []
        inclusion: list[tuple[SegmentInclusion, ...]] = []
        for member in plan.members:
            own = [_unlabelled(o, member) for o in outcomes if o.node_id in member.original]
            indices = {o.index for o in own}
            graph, config = member.entry.graph, member.entry.config
            judgement = judge(
                graph,
                own,
                valid_on_chain=_valid_alone(graph, own, beta_bps),
                beta_bps=beta_bps,
                consensus_threshold=config.consensus_threshold,
            )
            tracks = [track for (segment, _round), track in driver.rounds.items() if segment in indices]
            evaluations = [report for (segment, _r, _s), report in reports.items() if segment in indices]
            marks = dict(driver.marks)
            marks["start"] = driver.marks["start"] - member.entry.decomposition_s
            results.append(
                AuditResult(
                    verdict=judgement.verdict,
                    kind=member.entry.kind,
                    nodes=judgement.nodes,
                    root_causes=judgement.root_causes,
                    failure_reasons=judgement.failure_reasons,
                    transactions=transactions,
                    proof=proof,
                    phases=phase_timings(marks, tracks, evaluations),
                    seats=sum(len(track.members) for track in tracks),
                    graph=graph,
                    contradictions=judgement.contradictions,
                    edges=judgement.edges,
                    stationary=self._stationary(graph),
                )
            )
            inclusion.append(
                tuple(
                    SegmentInclusion(member.original[key.node_id], leaf, tuple(stored.proof(key.segment_index)))
                    for key, leaf in zip(stored.segments, stored.leaves, strict=True)
                    if key.node_id in member.original
                )
            )
        return BatchResult(proof, tuple(results), tuple(inclusion), plan.owners())
