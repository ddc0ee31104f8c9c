"""The trace root: OZ StandardMerkleTree layout, every proof verifies, any changed field fails."""

from __future__ import annotations

import base64
import hashlib

import pytest
from eth_abi import encode
from eth_hash.auto import keccak
from hypothesis import given, settings
from hypothesis import strategies as st
from multiformats import CID, multihash

from trust.core.cid import parse_cid
from trust.core.privacy.merkle import (
    CONTEXT_TIER,
    CONTEXT_WEIGHT,
    MAX_PROOF_HASHES,
    SegmentLeaf,
    build,
    check_inclusion,
    cid_bytes,
    hash_pair,
    leaf_hash,
    process_proof,
    tree_from_hashes,
    verify,
)
from trust.errors import GraphError, VerificationError


def _standard_leaf(types: list[str], values: list[object]) -> bytes:
    return bytes(keccak(keccak(encode(types, values))))


def test_tree_matches_a_published_standard_merkle_tree_dump_of_eight_leaves() -> None:
    # A `StandardMerkleTree.of(values, ["address"]).dump()` found in a public repository: root,
    # every node and each value's treeIndex must come out identical.
    values = [
        "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
        "0x000000000000d34c44564053af35e4fe271d0caa",
        "0x0000000000078c65a676f9a1f2ae66db0cbdff48",
        "0x00000000000a29a0800f6f557ddbbe8249397de7",
        "0x00000000000a40322164e8b9e1b909c388bf8317",
        "0x00000000000b69ec332f49b7c4d2b101f93c3bed",
        "0x00000000000be4d9faacf7f669f25118b1736666",
        "0xA8CC44274A9b35D1b55fBe7cfCa528b7a78Fb940",
    ]
    tree = tree_from_hashes([_standard_leaf(["address"], [value]) for value in values])
    assert tree.root.hex() == "7b304f9d916a40cd36caa8f6c157d088804dd56b4b5f1597167414f1e57c6699"
    assert tree.positions == (14, 12, 8, 9, 13, 11, 10, 7)
    assert tree.nodes[1].hex() == "8816bb1dbc65ec25bbd355d256d30ca638864e0e2132ec0fe4e3cecb7f2a8f6b"


def test_tree_matches_a_published_dump_with_an_odd_leaf_count() -> None:
    values = [["0x80d628ff4AC2aFf620C3474663F1e559234bbE0c", i] for i in range(3)]
    tree = tree_from_hashes([_standard_leaf(["address", "uint256"], value) for value in values])
    assert [node.hex() for node in tree.nodes] == [
        "0fecce441c7468f17e3fe4a5f211b77a15b27c9ab3d33317df385dfbe5487034",
        "636ab2686ee3036244cf3d6b5574e051e4b20a3577b008975dbcca6dde2897d2",
        "d90245da324d7908326a3d56a9659741551a4603c397bf4dd373976bd85660e7",
        "36fb17c97ec80bb961ff0adff1af4a2a34847ecc40653c162e327117a76e3ec9",
        "1867c4ebd455913e429523a5c2d4b3a79f58068b5a25af911956245ed03a659d",
    ]
    assert tree.positions == (4, 3, 2)


def _leaf(index: int, seed: int = 0) -> SegmentLeaf:
    digest = hashlib.sha256(f"blob {index} {seed}".encode()).digest()
    cid = bytes([0x01, 0x55, 0x12, 0x20]) + hashlib.sha256(digest).digest()
    return SegmentLeaf(index, cid, digest, 1 + index % 3, 1 + index, index % 2 == 0)


def test_leaf_hash_is_the_double_keccak_of_the_abi_encoding() -> None:
    leaf = _leaf(3)
    encoded = encode(
        ["uint256", "bytes", "bytes32", "uint8", "uint32", "bool"],
        [3, leaf.cid, leaf.ciphertext_digest, leaf.tier, leaf.weight, leaf.critical],
    )
    assert leaf.encode() == encoded
    assert leaf_hash(leaf) == keccak(keccak(encoded))


def test_a_single_segment_root_is_its_leaf_and_its_proof_is_empty() -> None:
    tree = build([_leaf(0)])
    assert tree.root == leaf_hash(_leaf(0))
    assert tree.proof(0) == []
    assert verify(tree.root, _leaf(0), [])


def test_pairs_are_hashed_sorted() -> None:
    a, b = b"\x01" * 32, b"\xff" * 32
    assert hash_pair(a, b) == hash_pair(b, a) == keccak(a + b)


leaf_strategy = st.builds(
    SegmentLeaf,
    index=st.just(0),
    cid=st.binary(min_size=1, max_size=64),
    ciphertext_digest=st.binary(min_size=32, max_size=32),
    tier=st.integers(0, 255),
    weight=st.integers(0, 2**32 - 1),
    critical=st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(leaf_strategy, min_size=1, max_size=40), st.data())
def test_every_leaf_proof_verifies_and_a_changed_field_fails(leaves: list[SegmentLeaf], data: st.DataObject) -> None:
    leaves = [
        SegmentLeaf(i, lf.cid, lf.ciphertext_digest, lf.tier, lf.weight, lf.critical) for i, lf in enumerate(leaves)
    ]
    tree = build(leaves)
    for leaf in leaves:
        proof = tree.proof(leaf.index)
        assert len(proof) <= max(1, len(leaves) - 1).bit_length()
        assert verify(tree.root, leaf, proof)
        check_inclusion(tree.root, leaf, proof)
    target = leaves[data.draw(st.integers(0, len(leaves) - 1))]
    changed = {
        "index": SegmentLeaf(
            target.index + 1, target.cid, target.ciphertext_digest, target.tier, target.weight, target.critical
        ),
        "cid": SegmentLeaf(
            target.index, target.cid + b"\x00", target.ciphertext_digest, target.tier, target.weight, target.critical
        ),
        "digest": SegmentLeaf(
            target.index,
            target.cid,
            bytes([target.ciphertext_digest[0] ^ 1]) + target.ciphertext_digest[1:],
            target.tier,
            target.weight,
            target.critical,
        ),
        "tier": SegmentLeaf(
            target.index, target.cid, target.ciphertext_digest, (target.tier + 1) % 256, target.weight, target.critical
        ),
        "weight": SegmentLeaf(
            target.index,
            target.cid,
            target.ciphertext_digest,
            target.tier,
            (target.weight + 1) % 2**32,
            target.critical,
        ),
        "critical": SegmentLeaf(
            target.index, target.cid, target.ciphertext_digest, target.tier, target.weight, not target.critical
        ),
    }
    proof = tree.proof(target.index)
    for field, other in changed.items():
        if leaf_hash(other) in tree.nodes[len(leaves) - 1 :]:
            continue  # the change made it equal to another leaf of the tree (only with duplicate leaves)
        assert not verify(tree.root, other, proof), field
        with pytest.raises(VerificationError, match=f"segment {other.index}: the Merkle proof"):
            check_inclusion(tree.root, other, proof)


def test_a_tampered_proof_fails() -> None:
    leaves = [_leaf(i) for i in range(7)]
    tree = build(leaves)
    proof = tree.proof(4)
    bad = [proof[0][:-1] + bytes([proof[0][-1] ^ 1]), *proof[1:]]
    assert not verify(tree.root, leaves[4], bad)
    assert not verify(tree.root, leaves[4], proof[:-1])
    assert not verify(tree.root, leaves[4], [*proof, proof[0]])
    assert not verify(tree.root, leaves[4], [b"short"])
    assert process_proof(tree.leaf(4), proof) == tree.root


def test_build_refuses_empty_or_out_of_order_leaves() -> None:
    with pytest.raises(GraphError, match="at least one leaf"):
        build([])
    with pytest.raises(GraphError, match=r"leaves\[1\] has index 2"):
        build([_leaf(0), _leaf(2)])
    with pytest.raises(GraphError, match="tree has leaves 0..1"):
        build([_leaf(0), _leaf(1)]).proof(2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"index": -1}, "index -1"),
        ({"cid": b""}, "cid must be"),
        ({"ciphertext_digest": b"\x00" * 31}, "32-byte sha256"),
        ({"tier": 256}, "not a uint8"),
        ({"weight": 2**32}, "not a uint32"),
        ({"critical": 1}, "must be a bool"),
    ],
)
def test_leaf_fields_are_range_checked(kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {
        "index": 0,
        "cid": b"\x01",
        "ciphertext_digest": b"\x00" * 32,
        "tier": 1,
        "weight": 1,
        "critical": False,
    }
    fields.update(kwargs)
    with pytest.raises(GraphError, match=message):
        SegmentLeaf(**fields)  # type: ignore[arg-type]


def test_cid_bytes_decodes_cidv1_base32_and_cidv0() -> None:
    # The raw-leaf CIDv1 of "hello world\n" (ipfs add --cid-version=1 --raw-leaves), and its digest.
    digest = hashlib.sha256(b"hello world\n").digest()
    raw = bytes([0x01, 0x55, 0x12, 0x20]) + digest
    text = "b" + base64.b32encode(raw).decode().lower().rstrip("=")
    assert cid_bytes(text) == raw
    # A CIDv0 is base58btc of a bare sha2-256 multihash (0x12 0x20 + 32 bytes).
    v0 = cid_bytes("QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG")
    assert len(v0) == 34
    assert v0[:2] == b"\x12\x20"
    for bad in ("", "zb2rh", "bafy!!", "baaaa"):
        with pytest.raises(GraphError, match="cid"):
            cid_bytes(bad)


@pytest.mark.parametrize("base", ["base32", "base58btc", "base36", "base64url"])
def test_cid_bytes_reads_every_multibase_parse_cid_reads(base: str) -> None:
    # merkle once decoded only base32 CIDv1 and base58btc CIDv0 by hand, so a base58btc CIDv1
    # (`z...`), which parse_cid and every IPFS node accept, failed to commit into a leaf.
    digest = hashlib.sha256(b"hello world\n").digest()
    cid = CID(base, 1, "raw", multihash.wrap(digest, "sha2-256"))
    text = str(cid)
    assert cid_bytes(text) == parse_cid(text).to_bytes() == bytes(cid) == bytes([0x01, 0x55, 0x12, 0x20]) + digest


def test_cid_bytes_rejects_what_parse_cid_rejects_with_the_cid_named() -> None:
    text = str(CID("base58btc", 1, "raw", multihash.wrap(bytes(32), "sha2-256")))[:-3]
    with pytest.raises(VerificationError):
        parse_cid(text)
    with pytest.raises(GraphError, match=f"cid '{text}': .*not a valid CID"):
        cid_bytes(text)


def test_context_leaves_follow_the_segments_in_one_tree_and_commit_tier_0() -> None:
    registered = [_leaf(i) for i in range(3)]
    context = [SegmentLeaf.context(i, registered[0].cid, bytes([i]) * 32) for i in range(3, 6)]
    assert (
        [(c.tier, c.weight, c.critical) for c in context]
        == [(CONTEXT_TIER, CONTEXT_WEIGHT, False)] * 3
        == [(0, 0, False)] * 3
    )
    tree = build([*registered, *context])
    for leaf in (*registered, *context):
        assert verify(tree.root, leaf, tree.proof(leaf.index))
        assert len(tree.proof(leaf.index)) <= MAX_PROOF_HASHES
    # The same blob committed as a registered segment is another leaf: a context proof does not pass for it.
    posing = SegmentLeaf(context[0].index, context[0].cid, context[0].ciphertext_digest, 2, 1, False)
    assert not verify(tree.root, posing, tree.proof(context[0].index))
