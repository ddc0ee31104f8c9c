"""Context-only nodes (`trust.services.delivery`): a CIG's user and tool turns are sealed, stored and committed
by the trace root, and delivered to the seats of the turns that use them, but never registered on
chain, so nobody is seated on them or votes on them.

The chain tests run the provider and the seats against a real IPFS node and the protocol on Anvil:
the seats open their context parents by checking each one's inclusion proof against the session's
trace root, and refuse a tampered proof, a swapped CID, or a context entry posing as a registered
segment or as their own node.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from tests.services.delivery_network import Network, deliver_network
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.types import CommitteeDrawn
from trust.adapters.storage.kubo import KuboClient
from trust.auditors.base import request_from_plaintexts
from trust.core.cid import unixfs_cid
from trust.core.decompose.rules import from_steps
from trust.core.graphs.cig import AgentTurn, Cig, Role
from trust.core.privacy import merkle
from trust.core.privacy.access import need_to_know, segment_keys
from trust.core.privacy.envelopes import KeyGrant, SegmentKey
from trust.core.privacy.segments import new_trace_id, seal_graph, segment_plaintexts
from trust.errors import GraphError, VerificationError
from trust.services.delivery import (
    CONTEXT_ROLES,
    ReceivedGrant,
    SegmentProfile,
    StoredTrace,
    default_profiles,
    deliver_keys,
    open_granted,
    receive_keys,
    store_trace,
)

PASSWORD = "delivery-context-test-only"
TIERS = [2, 2, 2]  # three LLM auditors: every tier-2 seat of the session


def coder_log() -> Cig:
    """u0 (user) -> t1 (coder) -> x2 (tool runs it) -> t3 (reviewer); t3 also reads the task u0."""
    cig = Cig()
    turns = [
        ("u0", Role.USER, "Write f(x) = 2x + 1 and check f(3)."),
        ("t1", Role.CODER, "def f(x):\n    return 2 * x + 1"),
        ("x2", Role.TOOL, "f(3) = 7"),
        ("t3", Role.REVIEWER, "The tool shows f(3) = 7 = 2*3 + 1: correct."),
    ]
    for step, (node_id, role, output) in enumerate(turns):
        cig.add_turn(AgentTurn(id=node_id, step=step, agent=role.value, role=role, output=output))
    for source, target in (("u0", "t1"), ("t1", "x2"), ("x2", "t3"), ("u0", "t3")):
        cig.add_edge(source, target)
    return cig


REGISTERED = ["t1", "t3"]  # the audited turns, segments 0 and 1
EDGES = ["edge:u0->t1", "edge:u0->t3", "edge:x2->t3"]  # the messages into them, segments 2 to 4
CONTEXT = ["u0", "x2"]  # the user and tool turns, context-only leaves 5 and 6 of a stored log


# ------------------------------------------------------------------------ pure: profiles and StoredTrace


def test_user_and_tool_turns_are_context_only_and_hdag_nodes_all_audited() -> None:
    profiles = default_profiles(coder_log())
    assert {node for node, p in profiles.items() if not p.audited} == set(CONTEXT)
    assert CONTEXT_ROLES == {Role.USER, Role.TOOL}
    assert all(p.tier == 2 and p.weight == 1 and not p.critical for p in profiles.values())
    hdag = from_steps("What is 4 * 6 + 2?", ["4 * 6 = 24", "24 + 2 = 26"])
    assert all(p.audited for p in default_profiles(hdag).values())
    with pytest.raises(GraphError, match="audited must be a bool"):
        SegmentProfile(2, audited=1)  # type: ignore[arg-type]


def _sealed_keys(graph: Cig) -> tuple[bytes, list[merkle.SegmentLeaf], list[SegmentKey], list[SegmentKey]]:
    """Keys for t1, t3 (registered) and u0, x2 (context), CIDs computed locally, nothing stored."""
    rng = random.Random(5).randbytes
    trace_id = new_trace_id(rng)
    by_node = {s.node_id: s for s in seal_graph(graph, trace_id, rng)}
    ordered = [by_node[node] for node in REGISTERED + CONTEXT]
    keys = segment_keys(ordered, [unixfs_cid(s.blob) for s in ordered])
    leaves = [
        merkle.SegmentLeaf(k.segment_index, merkle.cid_bytes(k.cid), k.ciphertext_digest, 2, 1, False) for k in keys[:2]
    ]
    return trace_id, leaves, keys[:2], keys[2:]


def test_a_stored_trace_commits_its_context_after_the_registered_segments() -> None:
    trace_id, leaves, registered, context = _sealed_keys(coder_log())
    stored = StoredTrace.build(trace_id, registered, leaves, context)
    assert stored.segment_count == 2 and len(stored.specs()) == 2 and len(stored.tree) == 4
    assert [k.node_id for k in stored.all_segments] == REGISTERED + CONTEXT
    assert [k.segment_index for k in stored.context] == [2, 3]
    assert [(leaf.tier, leaf.weight, leaf.critical) for leaf in stored.context_leaves] == [(0, 0, False)] * 2
    for key, leaf in zip(stored.context, stored.context_leaves, strict=True):
        assert key.proof == tuple(stored.proof(key.segment_index))
        assert merkle.verify(stored.root, leaf, stored.proof(leaf.index))
    # Without context the tree is the one of before: the same root as over the registered leaves alone.
    assert StoredTrace.build(trace_id, registered, leaves).root == merkle.build(leaves).root != stored.root

    # Every inconsistency is refused when the record is made (a journal read back, a hand-built trace).
    with pytest.raises(GraphError, match="at least one registered"):
        StoredTrace(trace_id, (), (), stored.tree, stored.context)
    with pytest.raises(GraphError, match="the tree has 2 leaves"):
        StoredTrace(trace_id, stored.segments, stored.leaves, merkle.build(leaves), stored.context)
    with pytest.raises(GraphError, match="inclusion proof of context segment 3"):
        swapped = (stored.context[0], dataclasses.replace(stored.context[1], proof=stored.context[0].proof))
        StoredTrace(trace_id, stored.segments, stored.leaves, stored.tree, swapped)
    with pytest.raises(GraphError, match=r"context\[0\] \('u0'\) is segment 2; context-only segments follow"):
        StoredTrace(trace_id, stored.segments, stored.leaves, stored.tree, (dataclasses.replace(context[0]),))
    with pytest.raises(GraphError, match="the tree's leaf 1 is not that segment's leaf"):
        reweighted = (stored.leaves[0], dataclasses.replace(stored.leaves[1], weight=5))
        StoredTrace(trace_id, stored.segments, reweighted, stored.tree, stored.context)
    with pytest.raises(GraphError, match="does not hold its CID and digest"):
        moved = (stored.leaves[1], stored.leaves[1])
        StoredTrace(trace_id, stored.segments, (dataclasses.replace(moved[0], index=0), moved[1]), stored.tree)


# ------------------------------------------------------------------------ on a real chain and IPFS node


@pytest.fixture
async def network(chain: ChainClient, mnemonic: str, keystore_dir: Path) -> Network:
    return await deliver_network(chain, mnemonic, keystore_dir, TIERS, PASSWORD)


async def _session(network: Network, kubo: KuboClient, graph: Cig) -> tuple[int, StoredTrace, list[ReceivedGrant]]:
    """Stores `graph`, opens its session, draws every committee, delivers the keys and returns every
    grant the seated auditors receive."""
    audit, chain = network.protocol.audit, network.protocol.chain
    stored = await store_trace(kubo, graph)
    session_id, _ = await audit.create_session(network.provider, stored.root, stored.specs())
    while await chain.block_number() <= (await audit.session(session_id)).randomness_block:
        await chain.rpc("evm_mine", [])
    drawn = await audit.assign_auditors(network.provider, session_id, range(stored.segment_count))
    committees: list[CommitteeDrawn] = audit.committees_in(drawn)
    await deliver_keys(network.protocol, kubo, network.provider, session_id, graph, stored, committees)
    received = [
        grant
        for auditor, private_key in network.private_keys.items()
        for grant in await receive_keys(network.protocol, kubo, auditor, private_key, session_id)
    ]
    return session_id, stored, received


@pytest.mark.chain
@pytest.mark.slow
async def test_seats_on_the_turns_open_their_user_and_tool_parents(network: Network, kubo: KuboClient) -> None:
    protocol, graph = network.protocol, coder_log()
    plaintexts = segment_plaintexts(graph)
    session_id, stored, received = await _session(network, kubo, graph)

    # Two turns and three edges on chain, two context leaves in the same tree; every blob stored and pinned.
    session = await protocol.audit.session(session_id)
    assert session.segment_count == stored.segment_count == 5 and session.trace_root == stored.root
    assert [k.node_id for k in stored.segments] == REGISTERED + EDGES
    assert [k.node_id for k in stored.context] == CONTEXT
    for key in stored.all_segments:
        assert await kubo.pin_ls(key.cid) == {key.cid: "recursive"}
    # The contract's inclusion check accepts both kinds of leaf: the context ones with tier 0 at an
    # index past the session's segments, so nobody can pass one off as a registered segment.
    for leaf in (*stored.leaves, *stored.context_leaves):
        assert await protocol.segment_keys.verify_segment(session_id, leaf, stored.proof(leaf.index))

    # Seats sit only on the registered segments: one grant per seat of each turn and edge (its three
    # draws seat one to three auditors), none on the user or tool turn.
    seated = [len(await protocol.audit.committee(session_id, g)) for g in range(5)]
    assert sorted(r.envelope.segment_id for r in received) == [g for g in range(5) for _ in range(seated[g])]
    for r in received:
        node_id = stored.segments[r.envelope.segment_id].node_id
        if node_id in EDGES:  # an edge's seat reads its unit, the receiver and the sender, nothing else
            opened = await open_granted(protocol, kubo, session_id, r.grant)
            source, target = node_id.removeprefix("edge:").split("->")
            assert list(opened)[1:] == [target, source]
            request = request_from_plaintexts(node_id, opened)
            assert (request.node, request.parents, request.sender) == (
                graph.turn(target),
                (graph.turn(source),),
                source,
            )
            continue
        assert [k.node_id for k in r.grant.segments] == list(need_to_know(graph, node_id))
        assert {k.node_id for k in r.grant.segments if k.context} == set(need_to_know(graph, node_id)) & set(CONTEXT)
        opened = await open_granted(protocol, kubo, session_id, r.grant)
        assert opened == {member: plaintexts[member] for member in need_to_know(graph, node_id)}
        # What the auditor is asked about: its turn, with the user's and the tool's text as parents.
        request = request_from_plaintexts(node_id, opened)
        assert request.node == graph.turn(node_id)
        assert request.parents == tuple(graph.turn(p) for p in graph.parents(node_id))
    reviewer = next(r for r in received if r.grant.node_id == "t3")
    assert (await kubo.cat(reviewer.envelope.envelope_cid))[:5] == b"TREV\x02"  # a grant with proofs: version 2


@pytest.mark.chain
@pytest.mark.slow
async def test_tampered_context_entries_are_refused_before_anything_is_fetched(
    network: Network, kubo: KuboClient
) -> None:
    protocol = network.protocol
    session_id, stored, received = await _session(network, kubo, coder_log())
    grant = next(r.grant for r in received if r.grant.node_id == "t3")  # t3, then u0 and x2 (context)
    own, user, tool = grant.segments

    def with_keys(*keys: SegmentKey) -> KeyGrant:
        return KeyGrant(grant.trace_id, grant.segment_index, grant.node_id, keys)

    assert user.proof is not None and tool.proof is not None
    flipped = (user.proof[0][:-1] + bytes([user.proof[0][-1] ^ 1]), *user.proof[1:])
    refusals = [
        # A proof that does not lead to the session's root.
        (
            with_keys(own, dataclasses.replace(user, proof=flipped), tool),
            r"segment 5 \('u0'\).*inclusion proof leads to",
        ),
        # The tool's blob (stored, well formed) swapped in for the user turn: its leaf is not committed at index 5.
        (
            with_keys(own, dataclasses.replace(user, cid=tool.cid), tool),
            r"segment 5 \('u0'\).*not the session's trace root",
        ),
        # Another trace's blob under the user turn's name.
        (
            with_keys(own, dataclasses.replace(user, cid=await kubo.add(b"not this trace's")), tool),
            r"segment 5 \('u0'\).*not the session's trace root",
        ),
        # A context-only entry without its proof: nothing vouches for it.
        (
            with_keys(own, dataclasses.replace(user, proof=None), tool),
            r"segment 5 \('u0'\).*carries no inclusion proof",
        ),
        # A context entry relabelled as the registered segment 0: checked against segment 0's content digest.
        (
            with_keys(own, dataclasses.replace(user, segment_index=0, proof=None), tool),
            r"segment 0 \('u0'\).*registered on chain has content digest",
        ),
        # ... and one keeping its proof under a registered index: registered segments carry none.
        (
            with_keys(own, dataclasses.replace(user, segment_index=0), tool),
            r"segment 0 \('u0'\).*gives it an inclusion proof, but it is registered",
        ),
    ]
    for forged, message in refusals:
        with pytest.raises(VerificationError, match=message):
            await open_granted(protocol, kubo, session_id, forged)
    # The seat's own node as a context index (an entry the envelope parser would also refuse with a proof).
    own_as_context = dataclasses.replace(user, proof=None)
    with pytest.raises(VerificationError, match=r"segment 5 \('u0'\).*own node must be one of the 5 segments"):
        await open_granted(protocol, kubo, session_id, KeyGrant(grant.trace_id, 5, "u0", (own_as_context,)))
    with pytest.raises(GraphError, match="own node's key carries an inclusion proof"):
        KeyGrant(grant.trace_id, 5, "u0", (user,))
    # The untouched grant still opens.
    assert list(await open_granted(protocol, kubo, session_id, grant)) == ["t3", "u0", "x2"]


@pytest.mark.slow
async def test_a_log_with_nothing_to_audit_is_refused_before_anything_is_uploaded(kubo: KuboClient) -> None:
    graph = Cig()
    graph.add_turn(AgentTurn(id="u0", step=0, agent="user", role=Role.USER, output="What is 2 + 2?"))
    graph.add_turn(AgentTurn(id="x1", step=1, agent="calculator", role=Role.TOOL, output="4"))
    graph.add_edge("u0", "x1")
    # The blobs store_trace would seal under this seed: none of them reaches the node.
    rng_seed = 11
    rng = random.Random(rng_seed).randbytes
    expected = [unixfs_cid(s.blob) for s in seal_graph(graph, new_trace_id(rng), rng)]
    with pytest.raises(GraphError, match="none of the trace's 2 nodes is audited"):
        await store_trace(kubo, graph, rng=random.Random(rng_seed).randbytes)
    pinned = await kubo.pin_ls()
    assert not set(expected) & set(pinned)
    # Auditing the same log explicitly (every turn audited) stores it as before.
    everything = {node_id: SegmentProfile(2) for node_id in ("u0", "x1")}
    stored = await store_trace(kubo, graph, profiles=everything, rng=random.Random(rng_seed).randbytes)
    assert stored.context == () and [k.cid for k in stored.segments] == expected


@pytest.mark.slow
async def test_an_hdag_is_stored_as_before(kubo: KuboClient) -> None:
    hdag = from_steps("What is 4 * 6 + 2?", ["4 * 6 = 24", "24 + 2 = 26"])
    stored = await store_trace(kubo, hdag)
    assert stored.context == () and stored.segment_count == len(hdag)
    assert stored.root == merkle.build(stored.leaves).root
    assert [k.node_id for k in stored.all_segments] == [node.id for node in hdag.nodes()]
    assert all(k.proof is None for k in stored.segments)
