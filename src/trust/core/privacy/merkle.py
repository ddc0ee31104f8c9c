"""The trace root: a Merkle root over the segment leaves, verifiable with OpenZeppelin's `MerkleProof`.

The tree is OpenZeppelin's `StandardMerkleTree` (the `@openzeppelin/merkle-tree` JS library, default
`sortLeaves: true`), so that library, this module and the contracts agree on every root and proof:

- a leaf is `keccak256(bytes.concat(keccak256(abi.encode(uint256 index, bytes cid, bytes32
  ciphertextDigest, uint8 tier, uint32 weight, bool critical))))`. Hashing twice keeps a leaf from
  ever equalling an inner node (64 bytes of two hashes), which defeats second-preimage proofs;
- pairs are hashed sorted, `keccak256(min(a, b) || max(a, b))` (`Hashes.commutativeKeccak256`), so a
  proof carries no left/right flags and `MerkleProof.verify(proof, root, leaf)` accepts it;
- the tree is an array of `2n - 1` hashes: the leaf hashes sorted ascending, the i-th at position
  `2n - 2 - i`; inner node j hashes positions `2j + 1` and `2j + 2`; the root sits at 0. A proof
  lists the siblings from the leaf up. One leaf: the root is the leaf, the proof is empty.

docs/privacy.md states the same encoding for the Solidity side. `build` takes the leaves in index
order 0..m-1: indices 0..n-1 are the session's on-chain segments (the index is the segment id), and
a trace may add *context-only* leaves n..m-1 after them (`SegmentLeaf.context`: tier 0, weight 0,
not critical). Those nodes are sealed and delivered to the seats that need them as parents, but
never registered or voted on; the root still commits to their blobs, so a seat checks a context
segment against the root with its inclusion proof instead of against a registered content digest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eth_abi import encode as abi_encode
from eth_hash.auto import keccak

from trust.core.cid import parse_cid
from trust.errors import GraphError, VerificationError

__all__ = [
    "CONTEXT_TIER",
    "CONTEXT_WEIGHT",
    "LEAF_TYPES",
    "MAX_CID_BYTES",
    "MAX_PROOF_HASHES",
    "MerkleTree",
    "SegmentLeaf",
    "build",
    "check_inclusion",
    "cid_bytes",
    "hash_pair",
    "leaf_hash",
    "process_proof",
    "tree_from_hashes",
    "verify",
]

LEAF_TYPES = ("uint256", "bytes", "bytes32", "uint8", "uint32", "bool")
"""The ABI types of a leaf, in order: index, cid, ciphertextDigest, tier, weight, critical."""

MAX_CID_BYTES = 128
"""Longest binary CID accepted in a leaf: a CIDv1 with a sha2-256 multihash is 36 bytes."""

CONTEXT_TIER = 0
"""The tier a context-only leaf commits. No auditor tier is 0 (they are 1..3), so a context leaf can
never pass for a registered segment, whose tier `SegmentKeys.verifySegment`'s caller compares."""

CONTEXT_WEIGHT = 0
"""The weight a context-only leaf commits: it counts for nothing in the trace verdict."""

MAX_PROOF_HASHES = 32
"""Longest inclusion proof a reader accepts: a tree of up to 2^32 leaves (a proof of a tree of m
leaves holds at most ceil(log2 m) hashes; 4,096 on-chain segments and as many context leaves need 13)."""

_HASH_BYTES = 32
_UINT32_MAX = 2**32 - 1
_UINT256_MAX = 2**256 - 1


@dataclass(frozen=True, slots=True)
class SegmentLeaf:
    """What the trace root commits to for one segment.

    `cid` is the binary CID of the encrypted blob (`cid_bytes` converts the text form);
    `ciphertext_digest` is `sha256(blob)`, the whole blob including its header; `tier` is the
    on-chain tier id (1..3, but any uint8 is encoded); `weight` the segment's weight in the trace
    verdict; `critical` whether it is on the critical path.
    """

    index: int
    cid: bytes
    ciphertext_digest: bytes
    tier: int
    weight: int
    critical: bool

    def __post_init__(self) -> None:
        if isinstance(self.index, bool) or not isinstance(self.index, int) or not 0 <= self.index <= _UINT256_MAX:
            raise GraphError(f"segment leaf index {self.index!r}: expected an integer in 0..2^256-1")
        if not isinstance(self.cid, bytes) or not 0 < len(self.cid) <= MAX_CID_BYTES:
            raise GraphError(
                f"segment leaf {self.index}: cid must be 1..{MAX_CID_BYTES} bytes of binary CID "
                f"(got {_describe(self.cid)}); convert a text CID with cid_bytes()"
            )
        if not isinstance(self.ciphertext_digest, bytes) or len(self.ciphertext_digest) != _HASH_BYTES:
            raise GraphError(
                f"segment leaf {self.index}: ciphertext_digest must be the 32-byte sha256 of the blob, "
                f"got {_describe(self.ciphertext_digest)}"
            )
        if isinstance(self.tier, bool) or not isinstance(self.tier, int) or not 0 <= self.tier <= 255:
            raise GraphError(f"segment leaf {self.index}: tier {self.tier!r} is not a uint8")
        if isinstance(self.weight, bool) or not isinstance(self.weight, int) or not 0 <= self.weight <= _UINT32_MAX:
            raise GraphError(f"segment leaf {self.index}: weight {self.weight!r} is not a uint32")
        if not isinstance(self.critical, bool):
            raise GraphError(f"segment leaf {self.index}: critical must be a bool, got {self.critical!r}")

    @classmethod
    def context(cls, index: int, cid: bytes, ciphertext_digest: bytes) -> SegmentLeaf:
        """The leaf of a context-only node at `index` (after every on-chain segment): tier
        `CONTEXT_TIER`, weight `CONTEXT_WEIGHT`, not critical."""
        return cls(index, cid, ciphertext_digest, CONTEXT_TIER, CONTEXT_WEIGHT, False)

    def encode(self) -> bytes:
        """`abi.encode(index, cid, ciphertextDigest, tier, weight, critical)`."""
        return abi_encode(
            list(LEAF_TYPES),
            [self.index, self.cid, self.ciphertext_digest, self.tier, self.weight, self.critical],
        )


def _describe(value: object) -> str:
    if isinstance(value, bytes):
        return f"{len(value)} bytes"
    return type(value).__name__


def cid_bytes(cid: str) -> bytes:
    """The binary form of a text CID, read by the one CID codec (`trust.core.cid.parse_cid`): a CIDv1
    in any multibase (`b...` base32, what `ipfs add --cid-version=1` prints, `z...` base58btc, ...)
    or a CIDv0 (`Qm...`, whose binary form is the bare multihash).

    Raises `GraphError` naming the CID and the reason for a malformed string or a binary CID longer
    than `MAX_CID_BYTES`.
    """
    if not isinstance(cid, str) or not cid:
        raise GraphError(f"cid {cid!r}: expected a non-empty CID string")
    try:
        raw = parse_cid(cid).to_bytes()
    except VerificationError as exc:
        raise GraphError(f"cid {cid!r}: {exc}") from exc
    if len(raw) > MAX_CID_BYTES:
        raise GraphError(f"cid {cid!r}: {len(raw)} bytes, above {MAX_CID_BYTES}")
    return raw


def leaf_hash(leaf: SegmentLeaf) -> bytes:
    """`keccak256(bytes.concat(keccak256(abi.encode(...))))`, OZ's standard (double-hashed) leaf."""
    return bytes(keccak(keccak(leaf.encode())))


def hash_pair(a: bytes, b: bytes) -> bytes:
    """`keccak256` of the two 32-byte values in ascending order (OZ `Hashes.commutativeKeccak256`)."""
    return bytes(keccak(a + b if a <= b else b + a))


@dataclass(frozen=True, slots=True)
class MerkleTree:
    """A built tree. `nodes` is the array layout of the module docstring (`nodes[0]` is the root);
    `positions[i]` is where the i-th leaf given to `tree_from_hashes` (or segment i) sits."""

    nodes: tuple[bytes, ...]
    positions: tuple[int, ...]

    @property
    def root(self) -> bytes:
        return self.nodes[0]

    def __len__(self) -> int:
        return len(self.positions)

    def leaf(self, index: int) -> bytes:
        """The leaf hash of leaf `index` (input order)."""
        return self.nodes[self._position(index)]

    def proof(self, index: int) -> list[bytes]:
        """The sibling hashes from leaf `index` (input order, = segment index) up to the root."""
        position = self._position(index)
        proof: list[bytes] = []
        while position > 0:
            proof.append(self.nodes[position + 1 if position % 2 else position - 1])
            position = (position - 1) // 2
        return proof

    def _position(self, index: int) -> int:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.positions):
            raise GraphError(f"leaf index {index!r}: the tree has leaves 0..{len(self.positions) - 1}")
        return self.positions[index]


def tree_from_hashes(hashes: Sequence[bytes]) -> MerkleTree:
    """The standard tree over already-hashed leaves (any 32-byte values), in OZ's layout."""
    if not hashes:
        raise GraphError("a Merkle tree needs at least one leaf; a session has at least one segment")
    for i, value in enumerate(hashes):
        if not isinstance(value, bytes) or len(value) != _HASH_BYTES:
            raise GraphError(f"leaf hash [{i}]: expected 32 bytes, got {_describe(value)}")
    n = len(hashes)
    order = sorted(range(n), key=lambda i: hashes[i])
    nodes: list[bytes] = [b""] * (2 * n - 1)
    positions = [0] * n
    for rank, i in enumerate(order):
        positions[i] = 2 * n - 2 - rank
        nodes[positions[i]] = hashes[i]
    for j in range(n - 2, -1, -1):
        nodes[j] = hash_pair(nodes[2 * j + 1], nodes[2 * j + 2])
    return MerkleTree(tuple(nodes), tuple(positions))


def build(leaves: Sequence[SegmentLeaf]) -> MerkleTree:
    """The trace tree over the segment leaves, given in segment order (`leaves[i].index == i`): the
    on-chain segments first, then any context-only leaves (see the module docstring)."""
    for position, leaf in enumerate(leaves):
        if not isinstance(leaf, SegmentLeaf):
            raise GraphError(f"leaves[{position}]: expected a SegmentLeaf, got {type(leaf).__name__}")
        if leaf.index != position:
            raise GraphError(
                f"leaves[{position}] has index {leaf.index}: pass the segments in index order 0..{len(leaves) - 1}"
            )
    return tree_from_hashes([leaf_hash(leaf) for leaf in leaves])


def process_proof(leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """The root a proof leads to from a leaf hash (OZ `MerkleProof.processProof`)."""
    computed = leaf
    for step, sibling in enumerate(proof):
        if not isinstance(sibling, bytes) or len(sibling) != _HASH_BYTES:
            raise VerificationError(f"Merkle proof step {step}: expected a 32-byte hash, got {_describe(sibling)}")
        computed = hash_pair(computed, sibling)
    return computed


def verify(root: bytes, leaf: SegmentLeaf, proof: Sequence[bytes]) -> bool:
    """Whether `proof` proves `leaf` under `root`, exactly as `MerkleProof.verify` on chain."""
    try:
        return process_proof(leaf_hash(leaf), proof) == root
    except VerificationError:
        return False


def check_inclusion(root: bytes, leaf: SegmentLeaf, proof: Sequence[bytes]) -> None:
    """Like `verify`, but raises `VerificationError` naming the segment and both roots."""
    computed = process_proof(leaf_hash(leaf), proof)
    if computed != root:
        raise VerificationError(
            f"segment {leaf.index}: the Merkle proof leads to 0x{computed.hex()}, not the trace root "
            f"0x{root.hex()}; the leaf (cid, digest, tier, weight, critical) or the proof is not the one committed"
        )
