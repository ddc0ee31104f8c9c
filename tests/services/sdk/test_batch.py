"""Batches (trust.services.sdk.batch): several traces in one session, their node ids under batch-local labels and
their segments shuffled together; each seat still reads exactly its node and its parents, from the
same trace, and the worker's reader takes HDAG nodes and CIG turns from one session alike.

The sealing and upload test runs against the local IPFS node; the session itself is tested through
the gateway (tests/api/gateway/test_service.py)."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from tests.core.graphs.cig_strategies import APPLES_LOG
from trust.adapters.storage.kubo import KuboClient
from trust.auditors.base import AuditLayer, request_from_plaintexts
from trust.core.decompose.rules import from_steps
from trust.core.graphs.agent_log import LogLimits, build_cig, parse_log
from trust.core.graphs.cig import AgentTurn, Cig
from trust.core.graphs.hdag import Hdag, HdagNode, Level
from trust.core.graphs.units import UnitKind, access_graph
from trust.core.privacy import merkle
from trust.core.privacy.access import Seat, plan_envelopes, seal_envelopes
from trust.core.privacy.envelopes import open_envelope, public_key_bytes
from trust.core.privacy.segments import MAX_NODE_ID_BYTES, open_segment
from trust.errors import GraphError
from trust.services.delivery import units_of
from trust.services.sdk.batch import (
    LABEL_HEX_CHARS,
    BatchEntry,
    batch_node_id,
    check_entry,
    plan_batch,
    registered_segments,
    relabel,
    store_batch,
)
from trust.services.sdk.client import segment_profiles
from trust.services.sdk.config import AuditConfig

AUDITOR = "0x" + "ab" * 20


def _eggs() -> Hdag:
    return from_steps(
        "A shop sells 4 packs of 6 eggs and 2 single eggs. How many eggs?",
        ["4 * 6 = 24 eggs in packs.", "24 + 2 = 26", "So the shop sells 26 eggs."],
    )


def _apples() -> Cig:
    return build_cig(parse_log(APPLES_LOG, LogLimits()))


def _entries() -> list[BatchEntry]:
    """Two traces with the same node ids (they would collide unlabelled) and an agent log."""
    return [
        BatchEntry("trace", _eggs()),
        BatchEntry("trace", _eggs(), AuditConfig(auditor_tiers=[1])),
        BatchEntry("agents", _apples()),
    ]


def test_relabel_prefixes_every_id_and_changes_nothing_else() -> None:
    hdag, cig = _eggs(), _apples()
    for graph in (hdag, cig):
        renamed = relabel(graph, "0badcafe")
        assert sorted(renamed.graph.nodes) == sorted(batch_node_id("0badcafe", n) for n in graph.graph.nodes)
        assert sorted(renamed.graph.edges) == sorted(
            (batch_node_id("0badcafe", a), batch_node_id("0badcafe", b)) for a, b in graph.graph.edges
        )
    renamed_hdag, renamed_cig = relabel(hdag, "0badcafe"), relabel(cig, "0badcafe")
    assert isinstance(renamed_hdag, Hdag) and isinstance(renamed_cig, Cig)
    for node in hdag.nodes():
        assert renamed_hdag.node(batch_node_id("0badcafe", node.id)) == dataclasses.replace(
            node, id=batch_node_id("0badcafe", node.id)
        )
    for turn in cig.turns():
        assert renamed_cig.turn(batch_node_id("0badcafe", turn.id)) == dataclasses.replace(
            turn, id=batch_node_id("0badcafe", turn.id)
        )


def test_a_plan_labels_each_trace_and_shuffles_all_segments_together() -> None:
    entries = _entries()
    plan = plan_batch(entries, rng=random.Random(7))
    labels = [member.label for member in plan.members]
    assert len(set(labels)) == len(labels) and all(re.fullmatch(f"[0-9a-f]{{{LABEL_HEX_CHARS}}}", x) for x in labels)
    every = [node_id for member in plan.members for node_id in member.original]
    counts = [len(units_of(e.graph)) for e in entries]
    assert sorted(plan.order) == sorted(every) and len(set(every)) == sum(counts)
    assert list(plan.order) != every, "the segments are not shuffled"
    owners = plan.owners()
    assert [owners.count(i) for i in range(len(entries))] == counts
    # The way back: every batch id names one member's unit, under its own label.
    for index, member in enumerate(plan.members):
        assert list(member.original.values()) == [unit.id for unit in units_of(entries[index].graph)]
        assert all(member.label + "/" in n for n in member.original)
        routed = segment_profiles(entries[index].graph, entries[index].config)
        # Every unit is seated as it would be in a session of its own: the agent log's messages too.
        assert {member.original[n]: p for n, p in member.profiles.items()} == routed
    # What a batch registers: every audited unit, the agent log's user turn (context) aside.
    assert [registered_segments(e) for e in entries] == [
        sum(p.audited for p in member.profiles.values()) for member in plan.members
    ]
    assert registered_segments(entries[2]) == len(units_of(entries[2].graph)) - 1
    agents = plan.members[2]
    edges = [n for n in agents.original if n.startswith("edge:")]
    assert edges and all(agents.profiles[n].audited for n in edges)
    # Reads only within a trace: the union is disjoint, and it is each member's need-to-know graph.
    for source, target in plan.graph.edges:
        assert source.split("/")[0].removeprefix("edge:") == target.split("/")[0].removeprefix("edge:")
    for member in plan.members:
        access = access_graph(member.graph)
        for unit in access:
            assert list(plan.graph.predecessors(unit)) == list(access.predecessors(unit))
    assert list(plan.profiles) == list(plan.order)
    # Seeded, a plan is reproducible; another seed gives another order.
    assert plan_batch(entries, rng=random.Random(7)).order == plan.order
    assert plan_batch(entries, rng=random.Random(8)).order != plan.order


def test_an_entry_that_would_fail_the_batch_is_refused_up_front() -> None:
    with pytest.raises(GraphError, match="a batch needs at least one trace"):
        plan_batch([])
    long_id = "x" * (MAX_NODE_ID_BYTES - 4)
    graph = Hdag()
    graph.add_node(HdagNode(long_id, Level.GOAL, "What is 2 + 2?"))
    with pytest.raises(GraphError, match="shorten the node ids"):
        check_entry(BatchEntry("trace", graph))
    # Turn ids that fit a batch alone, but not twice in the id of the message between them.
    cig = _apples()
    long_ids = Cig()
    rename = {turn.id: turn.id + "-" + "t" * (MAX_NODE_ID_BYTES // 2) for turn in cig.turns()}
    for turn in cig.turns():
        long_ids.add_turn(dataclasses.replace(turn, id=rename[turn.id]))
    for edge in cig.edges():
        long_ids.add_edge(rename[edge.source], rename[edge.target], edge.origin)
    with pytest.raises(GraphError, match="^edge 'edge:.*shorten the node ids"):
        check_entry(BatchEntry("agents", long_ids))
    with pytest.raises(GraphError, match="no nodes"):
        check_entry(BatchEntry("trace", Hdag()))
    with pytest.raises(GraphError, match="expected 'trace' or 'agents'"):
        check_entry(BatchEntry("essay", _eggs()))


@pytest.mark.slow
async def test_every_seat_of_a_mixed_batch_reads_its_node_and_its_parents_only(ipfs_api_url: str) -> None:
    entries = _entries()
    plan = plan_batch(entries)
    private = X25519PrivateKey.generate()
    async with KuboClient(ipfs_api_url) as kubo:
        stored = await store_batch(kubo, plan)
        pinned = await kubo.pin_ls()
        assert {key.cid for key in stored.all_segments} <= set(pinned)
        assert [key.node_id for key in stored.all_segments] == list(plan.order)
        # The user's turn of the agent log is context: after every registered segment, not voted on.
        audited = [node_id for node_id in plan.order if plan.profiles[node_id].audited]
        assert [key.node_id for key in stored.segments] == audited and stored.context
        assert all(not plan.profiles[key.node_id].audited for key in stored.context)
        for index, (leaf, key) in enumerate(zip(stored.leaves, stored.segments, strict=True)):
            profile = plan.profiles[key.node_id]
            assert (leaf.tier, leaf.weight, leaf.critical) == (profile.tier, profile.weight, profile.critical)
            assert merkle.verify(stored.root, leaf, stored.proof(index))
        seats = [Seat(i, AUDITOR, public_key_bytes(private)) for i in range(len(stored.segments))]
        root = stored.root
        envelopes = seal_envelopes(plan_envelopes(plan.graph, stored.trace_id, stored.all_segments, seats), root)
        owners = plan.owners()
        edge_seats = 0
        for envelope in envelopes:
            segment = envelope.seat.segment_index
            grant = open_envelope(private, envelope.envelope, trace_root=root, segment_index=segment, auditor=AUDITOR)
            plaintexts = {
                member.node_id: open_segment(
                    await kubo.cat(member.cid, expected_digest=member.ciphertext_digest),
                    member.key,
                    grant.trace_id,
                    member.node_id,
                )
                for member in grant.segments
            }
            request = request_from_plaintexts(grant.node_id, plaintexts)  # what the worker builds
            member = plan.members[owners[segment]]
            original = member.original[grant.node_id]
            source = member.entry.graph
            assert grant.node_id == stored.segments[segment].node_id
            if original.startswith("edge:"):
                # The telephone test of a message: the receiving turn, its sender as the one parent.
                sender, receiver = original.removeprefix("edge:").split("->")
                assert request.layer is AuditLayer.EDGE and request.sender == batch_node_id(member.label, sender)
                assert request.node.id == batch_node_id(member.label, receiver)
                assert [p.id for p in request.parents] == [batch_node_id(member.label, sender)]
                assert set(plaintexts) == {grant.node_id, request.node.id, request.sender}
                edge_seats += 1
                continue
            assert request.node.id == grant.node_id
            assert isinstance(request.node, AgentTurn if isinstance(source, Cig) else HdagNode)
            expected_parents = {batch_node_id(member.label, p) for p in source.parents(original)}
            assert {p.id for p in request.parents} == expected_parents
        # Every message into an audited turn of the agent log had a seat of its own.
        assert edge_seats == sum(1 for unit in units_of(entries[2].graph) if unit.kind is UnitKind.EDGE) > 0
