"""`SegmentKeys` on a real Anvil: segment inclusion proofs built in Python verify on chain, and key
envelopes reach exactly the seated auditors.

The Merkle side builds the trace tree with `trust.core.privacy.merkle` (OpenZeppelin's StandardMerkleTree
layout) over real AES-256-GCM segments whose CIDs are computed as Kubo would, opens a session with
that root, and checks every leaf's proof through `verifySegment`, plus proofs that must fail. The
delivery side seats a committee, seals one HPKE envelope per seat with `trust.core.privacy.access`,
publishes the envelope CIDs, and has each auditor find its own envelopes by event and open them with
its registered X25519 key. IPFS itself is not involved: the envelope CIDs are computed locally,
exactly as the node would compute them.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account.signers.local import LocalAccount

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.deployment import PROTOCOL_CONTRACTS, Deployment, deploy_protocol, hand_to_timelock
from trust.adapters.chain.protocol import KeyEnvelope, Protocol
from trust.adapters.chain.types import EnvelopeSet, SegmentSpec
from trust.adapters.chain.wallets import dev_account, load_keystore
from trust.core.cid import digest32, parse_cid, unixfs_cid
from trust.core.privacy import merkle
from trust.core.privacy.access import Seat, plan_envelopes, seal_envelopes
from trust.core.privacy.envelopes import SegmentKey, open_envelope
from trust.core.privacy.segments import new_key, new_trace_id, seal
from trust.errors import ContractReverted, DeploymentNotFound, VerificationError
from trust.lab.devnet import provision_auditors
from trust.settings import GovernanceSettings, ProtocolSettings

pytestmark = [pytest.mark.chain]

PASSWORD = "segment-keys-test-only"
SETTINGS = ProtocolSettings(
    committee_size_tier1=1,
    committee_size_tier2=3,
    committee_size_tier3=3,
    commit_window_seconds=300,
    reveal_window_seconds=300,
)


@dataclass(frozen=True, slots=True)
class Trace:
    """A sealed trace: its leaves (segment order), its tree and the specs to register on chain."""

    leaves: list[merkle.SegmentLeaf]
    tree: merkle.MerkleTree
    specs: list[SegmentSpec]


def sealed_trace(count: int, seed: int) -> Trace:
    """`count` segments of real AES-256-GCM ciphertext (sizes up to 600 KB, so some CIDs are
    multi-chunk dag-pb), with the leaf fields a provider commits to."""
    rng = random.Random(seed)
    trace_id = new_trace_id(os.urandom)
    leaves, specs = [], []
    # Weights anywhere in uint32, within the session's allowed spread (maxWeightRatio, 10 by default).
    lightest = rng.randint(1, (2**32 - 1) // 10)
    for index in range(count):
        size = rng.choice([40, 1_000, 70_000, 600_000])
        segment = seal(f"n{index}", rng.randbytes(size), trace_id, new_key(os.urandom), os.urandom)
        cid = unixfs_cid(segment.blob)
        tier, weight, critical = rng.choice([1, 2, 3]), rng.randint(lightest, 10 * lightest), rng.random() < 0.3
        leaves.append(
            merkle.SegmentLeaf(index, merkle.cid_bytes(cid), segment.ciphertext_digest, tier, weight, critical)
        )
        specs.append(SegmentSpec(tier=tier, weight=weight, content_digest=digest32(cid), critical=critical))
    return Trace(leaves, merkle.build(leaves), specs)


async def _deployed(chain: ChainClient, deployer: LocalAccount) -> Protocol:
    return Protocol.bind(chain, await deploy_protocol(chain, deployer, SETTINGS, GovernanceSettings()))


# ---------------------------------------------------------------------- inclusion proofs


@pytest.mark.parametrize("count", [1, 2, 3, 7, 16, 33])
async def test_every_segment_of_a_python_tree_verifies_on_chain(chain: ChainClient, mnemonic: str, count: int) -> None:
    deployer, provider = dev_account(mnemonic, 0), dev_account(mnemonic, 3)
    protocol = await _deployed(chain, deployer)
    keys = protocol.segment_keys
    trace = sealed_trace(count, seed=count)
    session_id, _ = await protocol.audit.create_session(provider, trace.tree.root, trace.specs)
    assert (await protocol.audit.session(session_id)).trace_root == trace.tree.root

    for leaf in trace.leaves:
        proof = trace.tree.proof(leaf.index)
        assert await keys.leaf_hash(leaf) == merkle.leaf_hash(leaf) == trace.tree.leaf(leaf.index)
        assert merkle.verify(trace.tree.root, leaf, proof)
        assert await keys.verify_segment(session_id, leaf, proof), leaf.index
        # The registered segment of the same index carries the leaf's routing fields.
        registered = await protocol.audit.segment(session_id, leaf.index)
        assert (registered.tier, registered.weight, registered.critical) == (leaf.tier, leaf.weight, leaf.critical)


async def test_wrong_proofs_fail_on_chain_as_in_python(chain: ChainClient, mnemonic: str) -> None:
    deployer, provider = dev_account(mnemonic, 0), dev_account(mnemonic, 3)
    protocol = await _deployed(chain, deployer)
    keys = protocol.segment_keys
    trace = sealed_trace(9, seed=99)
    session_id, _ = await protocol.audit.create_session(provider, trace.tree.root, trace.specs)
    other_session, _ = await protocol.audit.create_session(provider, b"\x5a" * 32, trace.specs)
    leaf = trace.leaves[4]
    proof = trace.tree.proof(4)
    assert await keys.verify_segment(session_id, leaf, proof)

    flipped = [bytes([proof[0][0] ^ 1]) + proof[0][1:], *proof[1:]]
    other_cid = merkle.cid_bytes(unixfs_cid(b"another blob"))
    wrong: dict[str, tuple[merkle.SegmentLeaf, list[bytes]]] = {
        "another leaf's proof": (leaf, trace.tree.proof(5)),
        "a truncated proof": (leaf, proof[:-1]),
        "an empty proof": (leaf, []),
        "a flipped sibling": (leaf, flipped),
        "another index": (
            merkle.SegmentLeaf(5, leaf.cid, leaf.ciphertext_digest, leaf.tier, leaf.weight, leaf.critical),
            proof,
        ),
        "another cid": (
            merkle.SegmentLeaf(4, other_cid, leaf.ciphertext_digest, leaf.tier, leaf.weight, leaf.critical),
            proof,
        ),
        "another digest": (merkle.SegmentLeaf(4, leaf.cid, b"\x01" * 32, leaf.tier, leaf.weight, leaf.critical), proof),
        "another tier": (
            merkle.SegmentLeaf(4, leaf.cid, leaf.ciphertext_digest, leaf.tier % 3 + 1, leaf.weight, leaf.critical),
            proof,
        ),
        "another weight": (
            merkle.SegmentLeaf(4, leaf.cid, leaf.ciphertext_digest, leaf.tier, leaf.weight ^ 1, leaf.critical),
            proof,
        ),
        "another critical flag": (
            merkle.SegmentLeaf(4, leaf.cid, leaf.ciphertext_digest, leaf.tier, leaf.weight, not leaf.critical),
            proof,
        ),
    }
    for what, (candidate, candidate_proof) in wrong.items():
        assert not merkle.verify(trace.tree.root, candidate, candidate_proof), what
        assert not await keys.verify_segment(session_id, candidate, candidate_proof), what
    # The right proof under another session's root.
    assert not await keys.verify_segment(other_session, leaf, proof)

    with pytest.raises(ContractReverted) as unknown:
        await keys.verify_segment(77, leaf, proof)
    assert unknown.value.error_name == "SegmentKeysUnknownSession"
    assert unknown.value.error_args == {"sessionId": 77}


# ---------------------------------------------------------------------- key delivery


@dataclass
class Committee:
    protocol: Protocol
    provider: LocalAccount
    stranger: LocalAccount
    wallets: dict[str, LocalAccount]
    private_keys: dict[str, X25519PrivateKey]
    public_keys: dict[str, bytes]


@pytest.fixture
async def committee(chain: ChainClient, mnemonic: str, keystore_dir: Path) -> Committee:
    deployer, provider, stranger = dev_account(mnemonic, 0), dev_account(mnemonic, 3), dev_account(mnemonic, 4)
    protocol = await _deployed(chain, deployer)
    accounts = await provision_auditors(protocol, deployer, [2, 2, 2], keystore_dir, PASSWORD, scrypt_n=2**10)
    private_keys = {}
    for account in accounts:
        key = serialization.load_pem_private_key(Path(account.encryption_key_file).read_bytes(), PASSWORD.encode())
        assert isinstance(key, X25519PrivateKey)
        private_keys[account.address] = key
    return Committee(
        protocol=protocol,
        provider=provider,
        stranger=stranger,
        wallets={a.address: load_keystore(Path(a.keystore), PASSWORD) for a in accounts},
        private_keys=private_keys,
        public_keys={a.address: bytes.fromhex(a.encryption_public_key[2:]) for a in accounts},
    )


async def _mine_past(chain: ChainClient, block: int) -> None:
    while await chain.block_number() <= block:
        await chain.rpc("evm_mine", [])


async def test_envelopes_reach_exactly_the_seated_auditors(committee: Committee) -> None:
    protocol, provider = committee.protocol, committee.provider
    audit, keys, chain = protocol.audit, protocol.segment_keys, protocol.chain
    # A diamond: a -> b, a -> c, (b, c) -> d; segment i is node order[i], all tier 2.
    graph = nx.DiGraph([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    order = ["a", "b", "c", "d"]
    node_keys = {node: new_key(os.urandom) for node in order}
    trace_id = new_trace_id(os.urandom)
    specs = [SegmentSpec(tier=2, weight=1, content_digest=bytes([i + 1]) * 32) for i in range(4)]
    session_id, _ = await audit.create_session(provider, b"\x77" * 32, specs)

    # Before the draw there is no seat to address.
    with pytest.raises(ContractReverted) as early:
        await keys.publish_envelopes(provider, session_id, 1, 0, [unixfs_cid(b"x")] * 3)
    assert early.value.error_name == "SegmentKeysNotVoting"
    assert early.value.error_args == {"sessionId": session_id, "segmentId": 1, "status": 1}

    await _mine_past(chain, (await audit.session(session_id)).randomness_block)
    drawn = audit.committees_in(await audit.assign_auditors(provider, session_id, [0, 1, 2, 3]))
    seats = [Seat(c.segment_id, member, await _registered_key(protocol, member)) for c in drawn for member in c.members]
    assert all(seat.encryption_key == committee.public_keys[seat.auditor] for seat in seats)
    stored = [
        SegmentKey(node, i, unixfs_cid(node.encode()), bytes([i + 1]) * 32, node_keys[node])
        for i, node in enumerate(order)
    ]
    root = (await audit.session(session_id)).trace_root
    sealed = seal_envelopes(plan_envelopes(graph, trace_id, stored, seats), root)
    store = {unixfs_cid(s.envelope): s.envelope for s in sealed}  # what IPFS would hold
    cid_of = {(s.seat.segment_index, s.seat.auditor): unixfs_cid(s.envelope) for s in sealed}

    published: list[KeyEnvelope] = []
    for c in drawn:
        sent = await keys.publish_envelopes(
            provider, session_id, c.segment_id, c.round, [cid_of[(c.segment_id, m)] for m in c.members]
        )
        announced = keys.envelopes_in(sent)
        assert [(e.seat_index, e.auditor, e.envelope_cid) for e in announced] == [
            (i, m, cid_of[(c.segment_id, m)]) for i, m in enumerate(c.members)
        ]
        published += announced

    for auditor, wallet in committee.wallets.items():
        mine = await keys.envelopes_for(auditor, session_id=session_id)
        # One envelope per seat the auditor holds (each committee's three draws seat one to three
        # of the three auditors: a member drawn twice holds one seat).
        assert sorted(e.segment_id for e in mine) == sorted(c.segment_id for c in drawn if auditor in c.members)
        for envelope in mine:
            assert envelope.auditor == wallet.address
            node = order[envelope.segment_id]
            grant = open_envelope(
                committee.private_keys[auditor],
                store[envelope.envelope_cid],
                trace_root=root,
                segment_index=envelope.segment_id,
                auditor=auditor,
            )
            assert grant.trace_id == trace_id and grant.node_id == node
            assert grant.keys == {n: node_keys[n] for n in (node, *graph.predecessors(node))}
        # An envelope addressed to someone else does not open with this auditor's key.
        foreign = next((e for e in published if e.auditor != auditor), None)
        if foreign is None:
            continue  # it won every draw of every committee
        with pytest.raises(VerificationError, match="authentication failed"):
            open_envelope(
                committee.private_keys[auditor],
                store[foreign.envelope_cid],
                trace_root=root,
                segment_index=foreign.segment_id,
                auditor=auditor,
            )
    assert await keys.envelopes_for(committee.stranger.address) == []


async def test_republishing_replaces_a_seats_envelope(committee: Committee) -> None:
    protocol, provider = committee.protocol, committee.provider
    audit, keys, chain = protocol.audit, protocol.segment_keys, protocol.chain
    specs = [SegmentSpec(tier=2, weight=1, content_digest=b"\x31" * 32)] * 2
    session_id, _ = await audit.create_session(provider, b"\x78" * 32, specs)
    await _mine_past(chain, (await audit.session(session_id)).randomness_block)
    first, second = audit.committees_in(await audit.assign_auditors(provider, session_id, [0, 1]))
    # One CID per seat: a committee of three draws seats one to three members.
    cids = {
        (tag, c.segment_id): [unixfs_cid(f"{tag}-{c.segment_id}-{i}".encode()) for i in range(len(c.members))]
        for tag in ("old", "new", "other")
        for c in (first, second)
    }
    await keys.publish_envelopes(provider, session_id, 0, 0, cids[("old", 0)])
    await keys.publish_envelopes(provider, session_id, 1, 0, cids[("other", 1)])
    await keys.publish_envelopes(provider, session_id, 0, 0, cids[("new", 0)])

    seat = len(first.members) - 1
    auditor = first.members[seat]
    latest = await keys.envelopes_for(auditor, session_id=session_id)
    by_segment = {e.segment_id: e for e in latest}
    assert by_segment[0].envelope_cid == cids[("new", 0)][seat]
    assert by_segment[0].seat_index == seat and by_segment[0].round == 0
    on_second = auditor in second.members
    if on_second:
        assert by_segment[1].envelope_cid == cids[("other", 1)][second.members.index(auditor)]
    else:
        assert 1 not in by_segment
    only_zero = await keys.envelopes_for(auditor, session_id=session_id, segment_id=0)
    assert [e.envelope_cid for e in only_zero] == [cids[("new", 0)][seat]]
    assert await keys.envelopes_for(auditor, session_id=session_id + 1) == []
    # Text and binary CIDs are the same thing on chain.
    await keys.publish_envelopes(provider, session_id, 1, 0, [parse_cid(c).to_bytes() for c in cids[("new", 1)]])
    assert {e.envelope_cid for e in await keys.envelopes_for(auditor, segment_id=1)} == (
        {cids[("new", 1)][second.members.index(auditor)]} if on_second else set()
    )


async def test_an_envelope_that_is_no_cid_is_read_as_a_corrupt_delivery_not_fatal_to_its_reader(
    committee: Committee, caplog: pytest.LogCaptureFixture
) -> None:
    """The contract checks a CID's length, not its form: a provider can announce bytes that are no
    CID. Its seats' workers read them with everything else addressed to them instead of failing
    their whole scan: the bad one comes back as its hex, which no read accepts (the seat then votes
    fail as for any corrupt delivery, issue M3), and the good ones still arrive."""
    protocol, provider = committee.protocol, committee.provider
    audit, keys, chain = protocol.audit, protocol.segment_keys, protocol.chain
    specs = [SegmentSpec(tier=2, weight=1, content_digest=b"\x32" * 32)] * 2
    session_id, _ = await audit.create_session(provider, b"\x79" * 32, specs)
    await _mine_past(chain, (await audit.session(session_id)).randomness_block)
    first, second = audit.committees_in(await audit.assign_auditors(provider, session_id, [0, 1]))
    auditor = first.members[0]
    await keys.publish_envelopes(provider, session_id, 0, 0, [b"\x01\x02 not a cid"] * len(first.members))
    good = [unixfs_cid(f"good-{i}".encode()) for i in range(len(second.members))]
    await keys.publish_envelopes(provider, session_id, 1, 0, good)
    with caplog.at_level("WARNING", logger="trust.adapters.chain"):
        mine = {e.segment_id: e.envelope_cid for e in await keys.envelopes_for(auditor, session_id=session_id)}
    assert mine[0] == "0x" + b"\x01\x02 not a cid".hex() and "not a binary CID" in caplog.text
    with pytest.raises(VerificationError, match="is not a valid CID"):
        parse_cid(mine[0])  # what `KuboClient.cat` does first: the seat's `_open` votes fail on it
    if auditor in second.members:
        assert mine[1] == good[second.members.index(auditor)]


async def test_publication_refusals_name_the_failed_check(committee: Committee) -> None:
    protocol, provider = committee.protocol, committee.provider
    audit, keys, chain = protocol.audit, protocol.segment_keys, protocol.chain
    session_id, _ = await audit.create_session(provider, b"\x79" * 32, [SegmentSpec(2, 1, b"\x41" * 32)])
    await _mine_past(chain, (await audit.session(session_id)).randomness_block)
    await audit.assign_auditors(provider, session_id, [0])
    members = await audit.committee(session_id, 0)
    seats = len(members)  # one to three: the committee's three draws, a member drawn twice one seat
    cids = [unixfs_cid(f"e{i}".encode()) for i in range(seats)]
    extra = [*cids, unixfs_cid(b"one too many")]

    cases = [
        (committee.stranger, session_id, 0, 0, cids, "SegmentKeysNotProvider"),
        (committee.wallets[members[0]], session_id, 0, 0, cids, "SegmentKeysNotProvider"),
        (provider, session_id + 5, 0, 0, cids, "SegmentKeysUnknownSession"),
        (provider, session_id, 1, 0, cids, "SegmentKeysUnknownSegment"),
        (provider, session_id, 0, 1, cids, "SegmentKeysWrongRound"),
        (provider, session_id, 0, 0, extra, "SegmentKeysWrongEnvelopeCount"),
        (provider, session_id, 0, 0, [*cids[:-1], b""], "SegmentKeysEmptyEnvelope"),
        (provider, session_id, 0, 0, [*cids[:-1], b"\x01" * 129], "SegmentKeysEnvelopeTooLong"),
    ]
    for sender, session, segment, round_id, envelope_cids, error in cases:
        with pytest.raises(ContractReverted) as refused:
            await keys.publish_envelopes(sender, session, segment, round_id, envelope_cids)
        assert refused.value.error_name == error
    with pytest.raises(ContractReverted) as count:
        await keys.publish_envelopes(provider, session_id, 0, 0, extra)
    # The contract counts seats (`committee()`), not draws.
    assert count.value.error_args == {
        "sessionId": session_id,
        "segmentId": 0,
        "count": seats + 1,
        "seatCount": seats,
    }
    with pytest.raises(ContractReverted) as not_provider:
        await keys.publish_envelopes(committee.stranger, session_id, 0, 0, cids)
    assert not_provider.value.error_args == {
        "sessionId": session_id,
        "caller": committee.stranger.address.lower(),
        "provider": provider.address.lower(),
    }
    with pytest.raises(VerificationError, match="not a valid CID"):
        await keys.publish_envelopes(provider, session_id, 0, 0, ["not-a-cid", *cids[1:]])
    assert await keys.max_envelope_cid_bytes() == 128


def _announced(envelopes: list[KeyEnvelope]) -> list[tuple[int, int, int, int, str, str]]:
    """What a publication says, without where it lies in the chain (block, log index)."""
    return [(e.session_id, e.segment_id, e.round, e.seat_index, e.auditor, e.envelope_cid) for e in envelopes]


async def test_a_batch_announces_what_one_call_per_set_would(committee: Committee) -> None:
    protocol, provider = committee.protocol, committee.provider
    audit, keys, chain = protocol.audit, protocol.segment_keys, protocol.chain
    specs = [SegmentSpec(tier=2, weight=1, content_digest=bytes([0x60 + i]) * 32) for i in range(4)]
    session_id, _ = await audit.create_session(provider, b"\x7a" * 32, specs)
    await _mine_past(chain, (await audit.session(session_id)).randomness_block)
    drawn = audit.committees_in(await audit.assign_auditors(provider, session_id, range(4)))
    # Sets out of segment order, one CID given in binary form (the chain holds the same bytes); one
    # CID per seat (a committee's three draws seat one to three members).
    cids = {
        c.segment_id: [unixfs_cid(f"batch-{c.segment_id}-{i}".encode()) for i in range(len(c.members))] for c in drawn
    }
    order = [2, 0, 3, 1]
    sets = [EnvelopeSet(s, 0, cids[s]) for s in order]
    sets[1] = EnvelopeSet(0, 0, [parse_cid(cids[0][0]).to_bytes(), *cids[0][1:]])

    singles = [await keys.publish_envelopes(provider, session_id, s, 0, cids[s]) for s in order]
    one_by_one = [e for sent in singles for e in keys.envelopes_in(sent)]
    sent = await keys.publish_envelopes_batch(provider, session_id, sets)
    batched = keys.envelopes_in(sent)

    members = {c.segment_id: c.members for c in drawn}
    expected = [(session_id, s, 0, i, members[s][i], cids[s][i]) for s in order for i in range(len(members[s]))]
    assert _announced(batched) == _announced(one_by_one) == expected
    assert all(e.block_number == sent.block_number for e in batched)
    assert [e.log_index for e in batched] == sorted(e.log_index for e in batched)
    # One transaction instead of four, and cheaper than the four together.
    assert sent.gas_used < sum(single.gas_used for single in singles)
    # Readers see the batch's envelopes as the current ones, as for a later publishEnvelopes.
    for auditor in committee.wallets:
        mine = await keys.envelopes_for(auditor, session_id=session_id)
        assert [(e.segment_id, e.block_number) for e in mine] == [
            (s, sent.block_number) for s in range(4) if auditor in members[s]
        ]
        assert all(e.envelope_cid == cids[e.segment_id][members[e.segment_id].index(auditor)] for e in mine)

    # A segment twice in one batch: per seat, the later set wins.
    newer = [unixfs_cid(f"newer-{i}".encode()) for i in range(len(members[1]))]
    again = await keys.publish_envelopes_batch(
        provider, session_id, [EnvelopeSet(1, 0, cids[1]), EnvelopeSet(1, 0, newer)]
    )
    assert [e.envelope_cid for e in keys.envelopes_in(again)] == [*cids[1], *newer]
    seated = members[1][-1]
    assert [e.envelope_cid for e in await keys.envelopes_for(seated, segment_id=1)] == [newer[-1]]


async def test_batch_refusals_name_the_failed_check_and_publish_nothing(committee: Committee) -> None:
    protocol, provider = committee.protocol, committee.provider
    audit, keys, chain = protocol.audit, protocol.segment_keys, protocol.chain
    specs = [SegmentSpec(tier=2, weight=1, content_digest=bytes([0x70 + i]) * 32) for i in range(2)]
    session_id, _ = await audit.create_session(provider, b"\x7b" * 32, specs)
    await _mine_past(chain, (await audit.session(session_id)).randomness_block)
    await audit.assign_auditors(provider, session_id, [0, 1])
    # One CID per seat of each segment (its three draws seat one to three members).
    k0, k1 = len(await audit.committee(session_id, 0)), len(await audit.committee(session_id, 1))
    cids = [unixfs_cid(f"r{i}".encode()) for i in range(k0)]
    cids1 = [unixfs_cid(f"s{i}".encode()) for i in range(k1)]
    good = EnvelopeSet(0, 0, cids)
    maximum = await keys.max_batch_envelopes()
    assert maximum == 256

    cases = [
        (provider, session_id, [], "SegmentKeysNoEnvelopeSets", {"sessionId": session_id}),
        (
            provider,
            session_id,
            [good] * (maximum // k0 + 1),
            "SegmentKeysBatchTooLarge",
            {"sessionId": session_id, "envelopeCount": k0 * (maximum // k0 + 1), "maximum": maximum},
        ),
        (provider, session_id + 9, [good], "SegmentKeysUnknownSession", {"sessionId": session_id + 9}),
        (
            committee.stranger,
            session_id,
            [good],
            "SegmentKeysNotProvider",
            {
                "sessionId": session_id,
                "caller": committee.stranger.address.lower(),
                "provider": provider.address.lower(),
            },
        ),
        # The second set is wrong: the whole batch reverts, naming that set's segment.
        (
            provider,
            session_id,
            [good, EnvelopeSet(1, 0, [*cids1, unixfs_cid(b"one too many")])],
            "SegmentKeysWrongEnvelopeCount",
            {"sessionId": session_id, "segmentId": 1, "count": k1 + 1, "seatCount": k1},
        ),
        (
            provider,
            session_id,
            [good, EnvelopeSet(1, 1, cids1)],
            "SegmentKeysWrongRound",
            {"sessionId": session_id, "segmentId": 1, "round": 1, "currentRound": 0},
        ),
        (
            provider,
            session_id,
            [good, EnvelopeSet(2, 0, cids1)],
            "SegmentKeysUnknownSegment",
            {"sessionId": session_id, "segmentId": 2},
        ),
        (
            provider,
            session_id,
            [good, EnvelopeSet(1, 0, [*cids1[:-1], b"\x01" * 129])],
            "SegmentKeysEnvelopeTooLong",
            {"sessionId": session_id, "segmentId": 1, "seatIndex": k1 - 1, "length": 129, "maximum": 128},
        ),
    ]
    for sender, session, sets, error, args in cases:
        with pytest.raises(
            ContractReverted, match=f"publishEnvelopesBatch\\(\\) from .* reverted with {error}"
        ) as refused:
            await keys.publish_envelopes_batch(sender, session, sets)
        assert (refused.value.error_name, refused.value.error_args) == (error, args)
    # A text that is not a CID is refused before anything is sent.
    with pytest.raises(VerificationError, match="not a valid CID"):
        await keys.publish_envelopes_batch(provider, session_id, [good, EnvelopeSet(1, 0, ["not-a-cid", *cids1[1:]])])
    for auditor in committee.wallets:
        assert await keys.envelopes_for(auditor, session_id=session_id) == []

    with pytest.raises(ValueError, match="round must be a uint8"):
        EnvelopeSet(0, 256, cids)
    with pytest.raises(ValueError, match="segment_id must be a uint256"):
        EnvelopeSet(-1, 0, cids)
    with pytest.raises(ValueError, match="sequence of CIDs, one per seat"):
        EnvelopeSet(0, 0, cids[0])
    assert EnvelopeSet(0, 0, cids).envelope_cids == tuple(cids)


async def _registered_key(protocol: Protocol, auditor: str) -> bytes:
    return (await protocol.registry.auditor(auditor)).encryption_key


# ---------------------------------------------------------------------- deployment


async def test_segment_keys_is_deployed_bound_and_handed_to_the_timelock(
    chain: ChainClient, mnemonic: str, tmp_path: Path
) -> None:
    deployer = dev_account(mnemonic, 0)
    deployment = await deploy_protocol(chain, deployer, SETTINGS, GovernanceSettings())
    assert set(PROTOCOL_CONTRACTS) <= set(deployment.contracts) & set(deployment.implementations)
    keys = Protocol.bind(chain, deployment).segment_keys
    assert await chain.call(keys.contract.functions.audit()) == deployment.contracts["TRUSTAudit"]
    assert await chain.call(keys.contract.functions.owner()) == deployer.address
    deployment = await hand_to_timelock(chain, deployer, deployment)
    assert await chain.call(keys.contract.functions.owner()) == deployment.contracts["TimelockController"]

    # A deployment file written before SegmentKeys existed does not load: redeploy.
    contracts = {k: v for k, v in deployment.contracts.items() if k != "SegmentKeys"}
    deployment.replace(contracts=contracts).save(tmp_path)
    with pytest.raises(DeploymentNotFound, match="has no SegmentKeys .*trust deploy"):
        Deployment.load(tmp_path, deployment.chain_id)
