"""Kubo's CID computed locally: published vectors, the DAG's shape, and properties of any blob."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.core.cid import (
    CHUNK_SIZE_BYTES,
    DAG_PB_CODEC,
    MAX_LINKS,
    RAW_CODEC,
    SHA2_256_CODE,
    UnixfsHasher,
    cid_from_bytes,
    cid_from_digest32,
    decode_file_node,
    digest32,
    parse_cid,
    unixfs_cid,
    unixfs_dag,
)
from trust.errors import ConfigError, VerificationError

# Raw-leaf CIDv1s that Kubo (`ipfs add --cid-version=1`) gives, from the UnixFS spec's test vectors,
# IPIP-499's `unixfs-v1-2025` fixtures and Kubo's own sharness fixtures.
RAW_VECTORS = [
    (b"hello world\n", "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4"),
    (b"hello world", "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"),
    (b"", "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"),
    (b"Hello IPFS\n", "bafkreidfdrlkeq4m4xnxuyx6iae76fdm4wgl5d4xzsb77ixhyqwumhz244"),
    (b"hello application/vnd.ipld.car\n", "bafkreifkam6ns4aoolg3wedr4uzrs3kvq66p4pecirz6y2vlrngla62mxm"),
]

# gateway-conformance's multiblock.txt (Kubo 0.21: `ipfs add --cid-version=1 --chunker=size-256`):
# 1026 bytes, five raw leaves under one dag-pb root of 245 bytes.
LOREM = (
    b"Lorem ipsum dolor sit amet, consectetur adipiscing elit. Nunc non imperdiet nunc. Proin ac quam ut nibh "
    b"eleifend aliquet. Vestibulum ante ipsum primis in faucibus orci luctus et ultrices posuere cubilia curae; Sed "
    b"ligula dolor, imperdiet sagittis arcu et, semper tincidunt urna. Donec et tempor augue, quis sollicitudin "
    b"metus. Curabitur semper ullamcorper aliquet. Mauris hendrerit sodales lectus eget fermentum. Proin sollicitudin "
    b"vestibulum commodo. Vivamus nec lectus eu augue aliquet dignissim nec condimentum justo. In hac habitasse "
    b"platea dictumst. Mauris vel sem neque.\n\nVivamus finibus, enim at lacinia semper, arcu erat gravida lacus, sit "
    b"amet gravida magna orci sit amet est. Sed non leo lacus. Nullam viverra ipsum a tincidunt dapibus. Nulla "
    b"pulvinar ligula sit amet ante ultrices tempus. Proin purus urna, semper sed lobortis quis, gravida vitae ipsum. "
    b"Aliquam mi urna, pulvinar eu bibendum quis, convallis ac dolor. In gravida justo sed risus ullamcorper, vitae "
    b"luctus massa hendrerit. Pellentesque habitant amet."
)
MULTIBLOCK_ROOT = "bafybeigcisqd7m5nf3qmuvjdbakl5bdnh4ocrmacaqkpuh77qjvggmt2sa"
MULTIBLOCK_LEAVES = [
    "bafkreie5noke3mb7hqxukzcy73nl23k6lxszxi5w3dtmuwz62wnvkpsscm",
    "bafkreih4ephajybraj6wnxsbwjwa77fukurtpl7oj7t7pfq545duhot7cq",
    "bafkreigu7buvm3cfunb35766dn7tmqyh2um62zcio63en2btvxuybgcpue",
    "bafkreicll3huefkc3qnrzeony7zcfo7cr3nbx64hnxrqzsixpceg332fhe",
    "bafkreifst3pqztuvj57lycamoi7z34b4emf7gawxs74nwrc2c7jncmpaqm",
]


@pytest.mark.parametrize(("data", "expected"), RAW_VECTORS)
def test_raw_leaf_vectors(data: bytes, expected: str) -> None:
    assert unixfs_cid(data) == expected
    parsed = parse_cid(expected)
    assert (parsed.version, parsed.codec, parsed.hash_code) == (1, RAW_CODEC, SHA2_256_CODE)
    assert parsed.digest == hashlib.sha256(data).digest()


def test_multiblock_vector_matches_kubo_block_for_block() -> None:
    assert len(LOREM) == 1026
    dag = unixfs_dag(LOREM, chunk_size=256)
    assert dag.root == unixfs_cid(LOREM, chunk_size=256) == MULTIBLOCK_ROOT
    assert [block.cid for block in dag.blocks[:-1]] == MULTIBLOCK_LEAVES
    root = dag.blocks[-1]
    assert root.cid == MULTIBLOCK_ROOT
    assert len(root.data) == 245  # the spec's `ipfs block stat`; Tsize = 245 + 1026 = 1271
    node = decode_file_node(root.data)
    assert [link.cid for link in node.links] == MULTIBLOCK_LEAVES
    assert node.blocksizes == (256, 256, 256, 256, 2)
    assert node.filesize == 1026
    assert [link.tsize for link in node.links] == [256, 256, 256, 256, 2]


def test_one_chunk_is_a_raw_leaf_and_one_byte_more_is_a_dag_pb_root() -> None:
    full = bytes(range(256)) * (CHUNK_SIZE_BYTES // 256)
    assert parse_cid(unixfs_cid(full)).codec == RAW_CODEC
    dag = unixfs_dag(full + b"x")
    assert parse_cid(dag.root).codec == DAG_PB_CODEC
    node = decode_file_node(dag.blocks[-1].data)
    assert node.blocksizes == (CHUNK_SIZE_BYTES, 1)
    assert [link.cid for link in node.links] == [unixfs_cid(full), unixfs_cid(b"x")]


def test_one_chunk_past_a_full_tree_wraps_the_lone_leaf_in_its_own_parent() -> None:
    # boxo's balanced builder: 175 chunks under 174 links -> root(node(174 leaves), node(1 leaf))
    data = bytes(range(175))
    dag = unixfs_dag(data, chunk_size=1, max_links=MAX_LINKS)
    blocks = {block.cid: block.data for block in dag.blocks}
    root = decode_file_node(blocks[dag.root])
    assert root.blocksizes == (174, 1)
    first, second = (decode_file_node(blocks[link.cid]) for link in root.links)
    assert len(first.links) == 174
    assert [link.cid for link in second.links] == [unixfs_cid(data[174:])]


def test_streaming_in_pieces_equals_one_shot() -> None:
    data = hashlib.sha256(b"seed").digest() * 40_000  # 1.28 MB: five chunks
    hasher = UnixfsHasher()
    for start in range(0, len(data), 100_003):
        hasher.update(data[start : start + 100_003])
    assert hasher.size_bytes == len(data)
    assert hasher.finish() == hasher.finish() == unixfs_cid(data)
    with pytest.raises(VerificationError, match="after finish"):
        hasher.update(b"more")


def _walk(blocks: dict[str, bytes], cid: str, depth: int, leaves: list[tuple[int, bytes]], max_links: int) -> int:
    """Reassemble the file below `cid`; return the sub-DAG's Tsize; record each leaf's depth."""
    parsed = parse_cid(cid)
    assert hashlib.sha256(blocks[cid]).digest() == parsed.digest
    if parsed.codec == RAW_CODEC:
        leaves.append((depth, blocks[cid]))
        return len(blocks[cid])
    node = decode_file_node(blocks[cid])
    assert 1 <= len(node.links) <= max_links
    total = len(blocks[cid])
    for link, blocksize in zip(node.links, node.blocksizes, strict=True):
        before = sum(len(chunk) for _, chunk in leaves)
        tsize = _walk(blocks, link.cid, depth + 1, leaves, max_links)
        assert link.tsize == tsize
        assert sum(len(chunk) for _, chunk in leaves) - before == blocksize
        total += tsize
    return total


@settings(max_examples=150, deadline=None)
@given(
    data=st.binary(max_size=600),
    chunk_size=st.integers(1, 48),
    max_links=st.integers(2, 6),
)
def test_any_blob_reassembles_from_a_balanced_dag(data: bytes, chunk_size: int, max_links: int) -> None:
    dag = unixfs_dag(data, chunk_size=chunk_size, max_links=max_links)
    blocks = {block.cid: block.data for block in dag.blocks}
    leaves: list[tuple[int, bytes]] = []
    tsize = _walk(blocks, dag.root, 0, leaves, max_links)
    assert b"".join(chunk for _, chunk in leaves) == data
    assert len({depth for depth, _ in leaves}) == 1, "every leaf at the same depth"
    assert all(len(chunk) == chunk_size for _, chunk in leaves[:-1])
    assert tsize == sum(len(block.data) for block in dag.blocks)  # Tsize counts repeated blocks each time
    chunks = max(1, -(-len(data) // chunk_size))
    depth = leaves[0][0]
    if chunks == 1:
        assert depth == 0
    else:
        assert max_links ** (depth - 1) < chunks <= max_links**depth, "the shallowest tree that holds them"


@settings(max_examples=100, deadline=None)
@given(data=st.binary(min_size=1, max_size=400), pieces=st.lists(st.integers(0, 50), max_size=20))
def test_cid_is_stable_under_any_split(data: bytes, pieces: list[int]) -> None:
    hasher = UnixfsHasher(chunk_size=16, max_links=3)
    start = 0
    for size in pieces:
        hasher.update(data[start : start + size])
        start += size
    hasher.update(data[start:])
    assert hasher.finish() == unixfs_cid(data, chunk_size=16, max_links=3)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(min_size=1, max_size=400), index=st.integers(min_value=0), flip=st.integers(1, 255))
def test_any_changed_byte_changes_the_cid(data: bytes, index: int, flip: int) -> None:
    index %= len(data)
    tampered = bytearray(data)
    tampered[index] ^= flip
    for chunk_size, max_links in [(CHUNK_SIZE_BYTES, MAX_LINKS), (16, 3)]:
        assert unixfs_cid(bytes(tampered), chunk_size=chunk_size, max_links=max_links) != unixfs_cid(
            data, chunk_size=chunk_size, max_links=max_links
        )
    assert unixfs_cid(data + b"\x00") != unixfs_cid(data)
    assert unixfs_cid(data[:-1]) != unixfs_cid(data)


def test_parse_cid_reads_every_form() -> None:
    raw = parse_cid("bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4")
    assert raw.codec_name == "raw" and raw.is_sha2_256
    assert str(raw) == raw.text
    assert raw.to_bytes() == bytes([0x01, 0x55, 0x12, 0x20]) + raw.digest
    base16 = parse_cid("f01551220" + raw.digest.hex())
    assert (base16.version, base16.codec, base16.digest) == (1, RAW_CODEC, raw.digest)
    v0 = parse_cid("QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn")  # the empty directory
    assert (v0.version, v0.codec_name) == (0, "dag-pb")
    assert v0.digest == parse_cid("bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354").digest


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "b",
        "bafy",
        "Qm123",
        "hello",
        "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei",  # one character short
        "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4a",  # one character long
        "zzz",  # a CID version that does not exist
        "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2dev!i4",
    ],
)
def test_parse_cid_rejects_malformed_strings_by_name(text: str) -> None:
    with pytest.raises(VerificationError, match="CID") as info:
        parse_cid(text)
    assert text.strip() in str(info.value)


def test_parse_cid_rejects_non_strings() -> None:
    with pytest.raises(VerificationError, match="must be a string"):
        parse_cid(b"bafk")  # type: ignore[arg-type]


def test_digest32_is_the_multihash_digest_and_round_trips() -> None:
    assert digest32(unixfs_cid(b"hello world\n")) == hashlib.sha256(b"hello world\n").digest()
    root = unixfs_dag(LOREM, chunk_size=256).blocks[-1]
    assert digest32(MULTIBLOCK_ROOT) == hashlib.sha256(root.data).digest()
    assert digest32(parse_cid(MULTIBLOCK_ROOT)) == digest32(MULTIBLOCK_ROOT)
    assert cid_from_digest32(digest32(MULTIBLOCK_ROOT), codec=DAG_PB_CODEC) == MULTIBLOCK_ROOT
    assert cid_from_digest32(hashlib.sha256(b"").digest()) == unixfs_cid(b"")


def test_digest32_refuses_what_does_not_fit_a_bytes32() -> None:
    with pytest.raises(VerificationError, match="sha2-256"):
        digest32("bafkqaaa")  # identity multihash of nothing
    with pytest.raises(VerificationError, match="32 bytes"):
        cid_from_digest32(b"\x00" * 31)
    with pytest.raises(VerificationError, match="codec"):
        cid_from_digest32(b"\x00" * 32, codec=0x71)


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        (b"", "no Data"),
        (b"\x0a\x02\x08\x01", "Type 1"),  # a directory
        (b"\x12\x03\x0a\x01", "truncated"),
        (b"\x0a\x02\x08\x82", "truncated inside a varint"),
        (b"\x0a\x04\x08\x02\x20\x05", "0 links but 1 blocksizes"),
        (b"\x0a\x04\x08\x02\x18\x05", "differs from the sum"),
        (b"\x0a\x04\x08\x02\x12\x01", "truncated"),
        (b"\x0a\x05\x08\x02\x12\x01x", "inline data"),
        (b"\x0d\x00\x00\x00\x00", "wire type 5"),
        (b"\x12\x03\x12\x01a\x0a\x02\x08\x02", "name b'a'"),
        (b"\x12\x02\x18\x01\x0a\x02\x08\x02", "no Hash"),
    ],
)
def test_decode_file_node_rejects_what_is_not_a_file_node(block: bytes, reason: str) -> None:
    with pytest.raises(VerificationError, match=reason):
        decode_file_node(block)


def test_layout_parameters_are_checked() -> None:
    with pytest.raises(ConfigError, match="chunk_size"):
        UnixfsHasher(chunk_size=0)
    with pytest.raises(ConfigError, match="chunk_size"):
        UnixfsHasher(chunk_size=2 * 1024 * 1024)
    with pytest.raises(ConfigError, match="max_links"):
        UnixfsHasher(max_links=1)
    with pytest.raises(ConfigError, match="keep_blocks"):
        UnixfsHasher().blocks()


def test_a_valid_cid_decodes_after_a_garbage_collection() -> None:
    """multiformats keeps its multihash objects in a weak dictionary and reads it with `in` then
    `[]`; `trust.core.cid` holds the sha2-256 one, so a collection can never drop it in between
    (which made `CID.decode` of a valid CID raise `KeyError: 'sha2-256'`)."""
    import gc

    from multiformats.multihash import Multihash

    raw = parse_cid(unixfs_cid(b"kept")).to_bytes()
    for _ in range(3):
        gc.collect()
        assert "sha2-256" in Multihash._cache
        assert cid_from_bytes(raw) == unixfs_cid(b"kept")
