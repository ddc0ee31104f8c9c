"""A trace from provider to seated auditors through a real IPFS node and a real chain (`trust.services.delivery`).

The provider seals an HDAG, stores every blob on the local IPFS node, registers the segments with
the Merkle root on Anvil, and after the draw delivers one key envelope per seat (stored on IPFS,
announced on chain). Each auditor then finds its envelopes by event, opens them with the X25519 key
it registered, and fetches, verifies and decrypts exactly its node and the node's parents.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from tests.core.graphs.test_units import corrected
from tests.services.delivery_network import Network, deliver_network
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.types import CommitteeDrawn
from trust.adapters.chain.wallets import dev_account
from trust.adapters.storage.kubo import KuboClient
from trust.auditors.base import Outcome, request_from_plaintexts
from trust.auditors.tiers import computational_auditor
from trust.core.cid import unixfs_cid
from trust.core.decompose.rules import from_steps
from trust.core.graphs.hdag import Hdag
from trust.core.privacy.access import need_to_know
from trust.core.privacy.envelopes import KeyGrant, public_key_bytes
from trust.core.privacy.segments import segment_plaintexts
from trust.errors import VerificationError
from trust.services.delivery import (
    SegmentProfile,
    StoredTrace,
    default_profiles,
    deliver_keys,
    gather_bounded,
    open_granted,
    receive_keys,
    store_trace,
)
from trust.settings import SandboxSettings

pytestmark = [pytest.mark.chain, pytest.mark.slow]

PASSWORD = "delivery-test-only"
TIERS = [1, 2, 2, 2, 2]  # one computational auditor, four LLM auditors (three draws per tier-2 committee)


@pytest.fixture
async def network(chain: ChainClient, mnemonic: str, keystore_dir: Path) -> Network:
    return await deliver_network(chain, mnemonic, keystore_dir, TIERS, PASSWORD)


def eggs() -> Hdag:
    return from_steps(
        "A shop sells 4 packs of 6 eggs and 2 single eggs. How many eggs does it sell?",
        ["4 * 6 = 24 eggs in packs.", "24 + 2 = 26", "So the shop sells 26 eggs."],
    )


async def _open_session(network: Network, stored: StoredTrace) -> tuple[int, list[CommitteeDrawn]]:
    audit, chain = network.protocol.audit, network.protocol.chain
    session_id, _ = await audit.create_session(network.provider, stored.root, stored.specs())
    while await chain.block_number() <= (await audit.session(session_id)).randomness_block:
        await chain.rpc("evm_mine", [])
    drawn = await audit.assign_auditors(network.provider, session_id, range(len(stored.segments)))
    return session_id, audit.committees_in(drawn)


async def test_each_seat_reads_exactly_its_node_and_parents(network: Network, kubo: KuboClient) -> None:
    protocol, graph = network.protocol, eggs()
    plaintexts = segment_plaintexts(graph)
    stored = await store_trace(kubo, graph)

    # Every blob is on the node, pinned, under the CID the trace root commits to.
    assert [key.node_id for key in stored.segments] == list(plaintexts)
    for key, leaf in zip(stored.segments, stored.leaves, strict=True):
        assert await kubo.pin_ls(key.cid) == {key.cid: "recursive"}
        assert unixfs_cid(await kubo.cat(key.cid)) == key.cid
        assert (leaf.tier, leaf.critical) == (
            default_profiles(graph)[key.node_id].tier,
            default_profiles(graph)[key.node_id].critical,
        )

    session_id, committees = await _open_session(network, stored)
    assert (await protocol.audit.session(session_id)).trace_root == stored.root
    for index, leaf in enumerate(stored.leaves):
        assert await protocol.segment_keys.verify_segment(session_id, leaf, stored.proof(index))

    announced = await deliver_keys(protocol, kubo, network.provider, session_id, graph, stored, committees)
    seats = {(c.segment_id, member) for c in committees for member in c.members}
    assert {(e.segment_id, e.auditor) for e in announced} == seats
    # Two tier-1 draws (one auditor) and four tier-2 committees of three draws: a member drawn twice
    # holds one seat, so each tier-2 segment seats one to three of the four LLM auditors.
    assert len(seats) == sum(len(c.members) for c in committees) <= 2 * 1 + 4 * 3
    assert all(len(c.members) == 1 for c in committees if c.tier == 1)

    for auditor, private_key in network.private_keys.items():
        received = await receive_keys(protocol, kubo, auditor, private_key, session_id)
        assert sorted(r.envelope.segment_id for r in received) == sorted(s for s, a in seats if a == auditor)
        for r in received:
            node_id = stored.segments[r.envelope.segment_id].node_id
            assert r.grant.trace_id == stored.trace_id and r.grant.node_id == node_id
            assert r.grant.reply_key is None  # no reply key given: no reports asked for
            opened = await open_granted(protocol, kubo, session_id, r.grant)
            assert list(opened) == list(need_to_know(graph, node_id))
            assert all(opened[member] == plaintexts[member] for member in opened)

    # Someone with no seat finds no envelope; a seat's envelope does not open with another's key.
    stranger = dev_account("test test test test test test test test test test test junk", 9)
    assert await receive_keys(protocol, kubo, stranger.address, X25519PrivateKey.generate(), session_id) == []
    first, second = list(network.private_keys)[:2]
    with pytest.raises(VerificationError, match="authentication failed"):
        await receive_keys(protocol, kubo, first, network.private_keys[second], session_id)


async def test_a_contradiction_is_registered_flagged_and_its_seat_reads_only_the_two_claims(
    network: Network, kubo: KuboClient
) -> None:
    protocol, graph = network.protocol, corrected()
    unit_id = "contradiction:s1|s2"
    stored = await store_trace(kubo, graph)
    assert [key.node_id for key in stored.segments] == ["goal", "s1", "s2", "s3", unit_id]
    session_id, committees = await _open_session(network, stored)
    flagged = [await protocol.audit.segment(session_id, i) for i in range(len(stored.segments))]
    assert [(info.tier, info.contradiction) for info in flagged] == [
        (2, False),
        (1, False),
        (2, False),
        (1, False),
        (1, True),
    ]

    await deliver_keys(protocol, kubo, network.provider, session_id, graph, stored, committees)
    plaintexts = segment_plaintexts(graph)
    judged = []
    for auditor, private_key in network.private_keys.items():
        for r in await receive_keys(protocol, kubo, auditor, private_key, session_id):
            if r.grant.node_id != unit_id:
                continue
            opened = await open_granted(protocol, kubo, session_id, r.grant)
            assert list(opened) == [unit_id, "s1", "s2"]
            assert (opened["s1"], opened["s2"]) == (plaintexts["s1"], plaintexts["s2"])
            judged.append(
                await computational_auditor(SandboxSettings()).audit(request_from_plaintexts(unit_id, opened))
            )
    # One tier-1 auditor holds the unit's one seat; it confirms the contradiction (18 against 15).
    assert [v.vote for v in judged] == [Outcome.FAIL]


async def test_the_providers_reply_key_reaches_every_seat(network: Network, kubo: KuboClient) -> None:
    protocol, graph = network.protocol, eggs()
    stored = await store_trace(kubo, graph)
    session_id, committees = await _open_session(network, stored)
    reply_key = public_key_bytes(X25519PrivateKey.generate())
    await deliver_keys(protocol, kubo, network.provider, session_id, graph, stored, committees, reply_key=reply_key)
    received = [
        r
        for auditor, private_key in network.private_keys.items()
        for r in await receive_keys(protocol, kubo, auditor, private_key, session_id)
    ]
    assert len(received) == sum(len(c.members) for c in committees)
    assert {r.grant.reply_key for r in received} == {reply_key}


async def test_a_pointer_the_chain_did_not_register_is_never_fetched(network: Network, kubo: KuboClient) -> None:
    protocol, graph = network.protocol, eggs()
    stored = await store_trace(kubo, graph)
    session_id, committees = await _open_session(network, stored)
    await deliver_keys(protocol, kubo, network.provider, session_id, graph, stored, committees[:1])
    seat = committees[0]
    (received,) = await receive_keys(protocol, kubo, seat.members[0], network.private_keys[seat.members[0]], session_id)
    grant = received.grant
    own = grant.segments[0]

    # Another blob, stored and well formed, but not the one registered for this segment.
    decoy = await kubo.add(b"a blob the provider never registered")
    moved = KeyGrant(grant.trace_id, grant.segment_index, grant.node_id, (dataclasses.replace(own, cid=decoy),))
    with pytest.raises(VerificationError, match="registered on chain has content digest"):
        await open_granted(protocol, kubo, session_id, moved)
    # The registered CID, but a digest that is not the blob's: the fetch refuses it.
    wrong_digest = dataclasses.replace(own, ciphertext_digest=b"\x01" * 32)
    with pytest.raises(VerificationError):
        await open_granted(
            protocol, kubo, session_id, KeyGrant(grant.trace_id, grant.segment_index, grant.node_id, (wrong_digest,))
        )
    # The right blob under the wrong key fails authentication.
    wrong_key = dataclasses.replace(own, key=b"\x02" * 32)
    with pytest.raises(VerificationError, match="authentication failed"):
        await open_granted(
            protocol, kubo, session_id, KeyGrant(grant.trace_id, grant.segment_index, grant.node_id, (wrong_key,))
        )


async def test_keys_go_only_to_the_session_that_registered_the_trace(network: Network, kubo: KuboClient) -> None:
    protocol, graph = network.protocol, eggs()
    stored = await store_trace(kubo, graph)
    other = await store_trace(kubo, graph)  # the same graph sealed again: new keys, new blobs, another root
    assert other.root != stored.root and other.trace_id != stored.trace_id
    session_id, committees = await _open_session(network, stored)
    with pytest.raises(VerificationError, match="deliver the keys of the trace the session registered"):
        await deliver_keys(protocol, kubo, network.provider, session_id, graph, other, committees)


async def test_profiles_must_cover_every_node(kubo: KuboClient) -> None:
    graph = eggs()
    with pytest.raises(VerificationError, match="no segment profile"):
        await store_trace(kubo, graph, profiles={"g0": SegmentProfile(2)})
    custom = {node.id: SegmentProfile(3, weight=7, critical=True) for node in graph.nodes()}
    stored = await store_trace(kubo, graph, profiles=custom)
    assert {(s.tier, s.weight, s.critical) for s in stored.specs()} == {(3, 7, True)}


async def test_gather_bounded_keeps_order_and_refuses_zero() -> None:
    async def value(i: int) -> int:
        return i

    assert await gather_bounded(2, [lambda i=i: value(i) for i in range(5)]) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="at least 1"):
        await gather_bounded(0, [])
