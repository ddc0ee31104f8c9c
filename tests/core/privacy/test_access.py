"""Need-to-know distribution: a seat gets its node and the node's parents, only seated auditors get keys."""

from __future__ import annotations

import dataclasses
import random

import networkx as nx
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.graphs.hdag_strategies import valid_hdags
from trust.core.cid import unixfs_cid
from trust.core.decompose.rules import from_steps
from trust.core.graphs.cig import AgentTurn, Cig, Role
from trust.core.graphs.hdag import Hdag
from trust.core.privacy import (
    Seat,
    grant_for,
    need_to_know,
    new_trace_id,
    open_envelope,
    open_segment,
    parent_lists,
    plan_envelopes,
    public_key_bytes,
    readable_nodes,
    seal_envelopes,
    seal_graph,
    segment_keys,
)
from trust.core.privacy.envelopes import SegmentKey
from trust.errors import GraphError, VerificationError

TRACE_ID = b"\x07" * 32


def _auditor(i: int) -> str:
    return "0x" + f"{i + 1:040x}"


@pytest.fixture
def hdag() -> Hdag:
    return from_steps(
        "A shop sells 4 packs of 6 eggs and 2 single eggs. How many eggs?",
        ["4 * 6 = 24 eggs in packs.", "24 + 2 = 26", "So the shop sells 26 eggs."],
    )


def test_a_seat_reads_its_node_and_its_immediate_parents_only(hdag: Hdag) -> None:
    for node in hdag.nodes():
        wanted = need_to_know(hdag, node.id)
        assert wanted[0] == node.id
        assert set(wanted[1:]) == set(hdag.parents(node.id))
    # s2 depends on s1 and hangs under the goal: nothing of s3, nor s1's operation.
    assert set(need_to_know(hdag, "s2")) == {"s2", "s1", "g0"}


def test_end_to_end_each_seated_auditor_decrypts_exactly_its_need_to_know(hdag: Hdag) -> None:
    rng = random.Random(3).randbytes
    trace_id = new_trace_id(rng)
    sealed = seal_graph(hdag, trace_id, rng)
    order = [segment.node_id for segment in sealed]
    stored = segment_keys(sealed, [unixfs_cid(segment.blob) for segment in sealed])
    blobs = {segment.node_id: segment for segment in sealed}
    privates = [X25519PrivateKey.generate() for _ in range(4)]
    seated = {0: [0, 1], 2: [1, 2], 3: [3]}  # segment index -> auditors
    committee = [
        Seat(index, _auditor(a), public_key_bytes(privates[a])) for index, members in seated.items() for a in members
    ]
    root = bytes(range(32))  # the session's trace root, as the chain shows it
    envelopes = seal_envelopes(plan_envelopes(hdag, trace_id, stored, committee), root)
    assert sorted((e.seat.segment_index, e.seat.auditor) for e in envelopes) == sorted(
        (s.segment_index, s.auditor) for s in committee
    )
    for sealed_envelope in envelopes:
        seat = sealed_envelope.seat
        a = int(seat.auditor, 16) - 1
        node_id = order[seat.segment_index]
        grant = open_envelope(
            privates[a],
            sealed_envelope.envelope,
            trace_root=root,
            segment_index=seat.segment_index,
            auditor=seat.auditor,
        )
        assert grant.trace_id == trace_id and grant.node_id == node_id
        assert list(grant.keys) == list(need_to_know(hdag, node_id))
        for member in grant.segments:
            segment = blobs[member.node_id]
            # The grant says where each readable segment lies: its index, CID and digest.
            assert member == stored[order.index(member.node_id)]
            assert member.cid == unixfs_cid(segment.blob) and member.ciphertext_digest == segment.ciphertext_digest
            assert open_segment(
                segment.blob, member.key, trace_id, member.node_id, ciphertext_digest=member.ciphertext_digest
            )
        for other in set(order) - set(grant.keys):
            with pytest.raises(VerificationError, match="authentication failed"):
                open_segment(blobs[other].blob, grant.keys[node_id], trace_id, other)


def _stored(hdag: Hdag) -> list[SegmentKey]:
    """Segment keys for every node, in order (placeholder CIDs and digests: planning reads neither)."""
    cid = unixfs_cid(b"segment")
    return [SegmentKey(node.id, i, cid, bytes([i + 1]) * 32, bytes([i]) * 32) for i, node in enumerate(hdag.nodes())]


def test_the_plan_covers_only_the_committee_and_each_seat_once(hdag: Hdag) -> None:
    order = [node.id for node in hdag.nodes()]
    keys = _stored(hdag)
    key = b"\x09" * 32
    seat = Seat(1, _auditor(0), key)
    duplicate = Seat(1, _auditor(0).lower(), key)
    plans = plan_envelopes(hdag, TRACE_ID, keys, [seat, duplicate, Seat(2, _auditor(0), key)])
    assert [(p.seat.segment_index, p.grant.node_id) for p in plans] == [(1, order[1]), (2, order[2])]
    assert plan_envelopes(hdag, TRACE_ID, keys, []) == []


def test_a_committee_that_does_not_fit_the_trace_is_refused(hdag: Hdag) -> None:
    keys = _stored(hdag)
    n = len(keys)
    with pytest.raises(VerificationError, match=f"segment {n}, but the trace registers segments 0..{n - 1}"):
        plan_envelopes(hdag, TRACE_ID, keys, [Seat(n, _auditor(0), b"\x02" * 32)])
    with pytest.raises(VerificationError, match="two encryption keys"):
        plan_envelopes(hdag, TRACE_ID, keys, [Seat(0, _auditor(0), b"\x02" * 32), Seat(1, _auditor(0), b"\x03" * 32)])
    with pytest.raises(GraphError, match="exactly once"):
        plan_envelopes(hdag, TRACE_ID, keys[:-1], [])
    with pytest.raises(GraphError, match=r"segments\[0\] names segment 1: list them in order"):
        plan_envelopes(hdag, TRACE_ID, [keys[1], keys[0], *keys[2:]], [])
    with pytest.raises(GraphError, match=r"no segment key for \['g0', 's1'\]"):
        grant_for(hdag, "s2", TRACE_ID, {"s2": keys[[node.id for node in hdag.nodes()].index("s2")]})
    with pytest.raises(GraphError, match="3 sealed segments but 2 CIDs"):
        segment_keys(seal_graph(hdag, bytes(32), random.Random(0).randbytes)[:3], ["x", "y"])
    with pytest.raises(GraphError, match="auditor address"):
        Seat(0, "alice", b"\x02" * 32)


@settings(max_examples=40, deadline=None)
@given(valid_hdags(max_nodes=12), st.data())
def test_a_coalition_reads_the_union_of_its_seats_need_to_know(hdag: Hdag, data: st.DataObject) -> None:
    order = [node.id for node in hdag.nodes()]
    seated = data.draw(st.lists(st.sampled_from(order), max_size=len(order)))
    lists = parent_lists(hdag)
    expected = {member for node_id in seated for member in need_to_know(hdag, node_id)}
    assert readable_nodes(hdag, seated) == expected == readable_nodes(lists, seated)
    assert readable_nodes(hdag.graph, seated) == expected
    # A coalition never reads a node unless it sits on it or on one of its children.
    graph: nx.DiGraph = hdag.graph
    for node_id in expected:
        assert node_id in seated or any(child in seated for child in graph.successors(node_id))


def test_readable_nodes_names_an_unknown_node(hdag: Hdag) -> None:
    with pytest.raises(GraphError, match="unknown node 'zz'"):
        readable_nodes(parent_lists(hdag), ["zz"])


def _cig() -> Cig:
    """u0 (user) -> t1 (expert) -> x2 (tool) -> t3 (expert), and u0 -> t3."""
    cig = Cig()
    for step, (node_id, role) in enumerate(
        (("u0", Role.USER), ("t1", Role.EXPERT), ("x2", Role.TOOL), ("t3", Role.EXPERT))
    ):
        cig.add_turn(AgentTurn(id=node_id, step=step, agent=role.value, role=role, output=f"turn {step}"))
    for source, target in (("u0", "t1"), ("t1", "x2"), ("x2", "t3"), ("u0", "t3")):
        cig.add_edge(source, target)
    return cig


def _cig_keys() -> list[SegmentKey]:
    """t1 and t3 registered (segments 0, 1), u0 and x2 context-only (2, 3; placeholder proofs)."""
    cid = unixfs_cid(b"segment")
    order = [("t1", None), ("t3", None), ("u0", (b"\x05" * 32,)), ("x2", (b"\x06" * 32,))]
    return [
        SegmentKey(node, i, cid, bytes([i + 1]) * 32, bytes([i]) * 32, proof) for i, (node, proof) in enumerate(order)
    ]


def test_context_keys_reach_the_seats_of_their_children_and_nobody_sits_on_them() -> None:
    cig, keys = _cig(), _cig_keys()
    key = b"\x09" * 32
    plans = plan_envelopes(cig, TRACE_ID, keys, [Seat(0, _auditor(0), key), Seat(1, _auditor(1), key)])
    grants = {plan.grant.node_id: plan.grant for plan in plans}
    assert [k.node_id for k in grants["t1"].segments] == ["t1", "u0"]
    assert [k.node_id for k in grants["t3"].segments] == ["t3", "u0", "x2"]  # parents in graph order
    # The context parents travel with their proofs (the seat checks them against the root).
    assert grants["t3"].segment("x2").proof == (b"\x06" * 32,) and grants["t3"].format_version == 2
    with pytest.raises(VerificationError, match=r"registers segments 0\.\.1 \(and 2 context-only after them"):
        plan_envelopes(cig, TRACE_ID, keys, [Seat(2, _auditor(0), key)])
    with pytest.raises(GraphError, match=r"segments\[1\] \('u0'\): list the registered segments first"):
        reordered = [keys[0], *(dataclasses.replace(k, segment_index=i + 1) for i, k in enumerate(keys[2:]))]
        plan_envelopes(cig, TRACE_ID, [*reordered, dataclasses.replace(keys[1], segment_index=3)], [])
    with pytest.raises(GraphError, match="'u0' is a context-only segment"):
        grant_for(cig, "u0", TRACE_ID, {k.node_id: k for k in keys})
