"""Kubo's CIDv1 for a blob, computed here, so that no IPFS node is trusted to say what it stored.

`ipfs add --cid-version=1 --raw-leaves --chunker=size-262144` (Kubo's layout, which the local
Helia node reproduces) turns bytes into a UnixFS file DAG:

- the bytes are cut into fixed chunks of 262144 bytes (256 KiB; the last one shorter);
- each chunk is a `raw` block (multicodec 0x55) addressed by its sha2-256 multihash;
- a blob of one chunk (or none: the empty blob) IS that raw block: its CID is the raw-leaf CID;
- more chunks are gathered by a balanced tree of `dag-pb` nodes (multicodec 0x70) with at most 174
  links each (Kubo's `Import.UnixFSFileMaxLinks`): every leaf at the same depth, nodes filled left
  to right, a lone trailing child still wrapped in its own parent (boxo's `balanced` layout, which
  packing level by level reproduces exactly);
- a `dag-pb` node is the protobuf PBNode `{Links: [{Hash, Name: "", Tsize}], Data}` in dag-pb's
  canonical order (Links, field 2, before Data, field 1; inside a link Hash, Name, Tsize; Kubo always
  writes the empty Name), and Data is the UnixFS protobuf `{Type: File (2), filesize,
  blocksizes...}` (no inline data; blocksizes repeated, not packed, as proto2 writes them);
- `Tsize` of a link is the whole sub-DAG's encoded size (a raw leaf: its length; a node: its own
  encoding plus its links' Tsizes); `blocksizes[i]` is the file bytes under link i.

The CID is CIDv1, sha2-256, written in base32 lower case with the `b` multibase prefix. The layout
was checked against Kubo's published vectors (the `hello world` raw leaves, the empty raw block and
gateway-conformance's `multiblock.txt`, a 1026-byte file cut into 256-byte chunks) and against the
local Helia node. The dag-pb and UnixFS protobufs are written by hand (a few length-delimited
fields): no maintained Python package encodes them; the `multiformats` package does the CID itself
(multibase, multihash, CIDv0/CIDv1 parsing and bytes) and the varints.

This is the project's one CID codec: the Merkle leaves (`trust.core.privacy.merkle.cid_bytes`), the
chain adapter (binary CIDs in calls and events) and the explorer's index all read and write CIDs here,
so a CID one of them accepts, every other accepts too.

`digest32` is what the contracts store for a CID: the 32-byte sha2-256 digest inside the CID's
multihash (of the raw block for a one-chunk blob, of the root dag-pb node otherwise). The codec is
not kept: `cid_from_digest32` rebuilds the CID when the caller knows it (a segment's size decides:
at most one chunk is `raw`, more is `dag-pb`), and a swapped codec cannot pass for a segment, since
the block read under the other codec is not the committed ciphertext (its digest is committed too).

Pure code: no I/O. Layout parameters other than Kubo's are accepted only so that tests can build
deep trees from small inputs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from multiformats import CID, multihash, varint

from trust.errors import ConfigError, VerificationError

_SHA2_256 = multihash.get("sha2-256")
"""Held for the life of the process. multiformats caches its multihash objects in a weak dictionary
and looks one up with `in` then `[]`: when nothing else holds the sha2-256 object, a garbage
collection between the two makes `CID.decode` of a valid CID raise `KeyError: 'sha2-256'` (seen in a
worker that then read a provider's envelope as "not a CID"). With this reference the entry never
goes away."""

__all__ = [
    "CHUNK_SIZE_BYTES",
    "DAG_PB_CODEC",
    "MAX_LINKS",
    "RAW_CODEC",
    "SHA2_256_CODE",
    "Block",
    "Cid",
    "FileLink",
    "FileNode",
    "UnixfsDag",
    "UnixfsHasher",
    "cid_from_bytes",
    "cid_from_digest32",
    "decode_file_node",
    "digest32",
    "parse_cid",
    "unixfs_cid",
    "unixfs_dag",
]

CHUNK_SIZE_BYTES = 262_144
"""Kubo's default fixed chunk (`size-262144`)."""
MAX_LINKS = 174
"""Kubo's default links per file node (`Import.UnixFSFileMaxLinks`)."""
RAW_CODEC = 0x55
DAG_PB_CODEC = 0x70
SHA2_256_CODE = 0x12
_SHA2_256_BYTES = 32
_MAX_CHUNK_SIZE_BYTES = 1_048_576  # the largest block IPFS nodes exchange (bitswap's 1 MiB limit)
_UNIXFS_FILE = 2
_CODEC_NAMES = {RAW_CODEC: "raw", DAG_PB_CODEC: "dag-pb"}
_CIDV1_PREFIX = {
    codec: varint.encode(1) + varint.encode(codec) + varint.encode(SHA2_256_CODE) + varint.encode(_SHA2_256_BYTES)
    for codec in _CODEC_NAMES
}
"""A sha2-256 CIDv1's bytes before the digest, per codec: `<version><codec><multihash code><length>`."""


@dataclass(frozen=True, slots=True)
class Cid:
    """A parsed CID: what it addresses (codec), how (multihash code and digest), and its text."""

    text: str
    version: int
    codec: int
    hash_code: int
    digest: bytes

    @property
    def codec_name(self) -> str:
        return _CODEC_NAMES.get(self.codec, hex(self.codec))

    @property
    def is_sha2_256(self) -> bool:
        return self.hash_code == SHA2_256_CODE and len(self.digest) == _SHA2_256_BYTES

    def to_bytes(self) -> bytes:
        """The binary CID (as a dag-pb link's Hash, a Merkle leaf and the contracts hold it; a CIDv0 is
        its bare multihash)."""
        return bytes(CID.decode(self.text))

    def __str__(self) -> str:
        return self.text


def parse_cid(text: str) -> Cid:
    """Parse a CID string (CIDv1 in any multibase, or a CIDv0 `Qm...`).

    Raises `VerificationError` naming the string and the reason when it is not a CID.
    """
    if not isinstance(text, str):
        raise VerificationError(f"a CID must be a string, got {type(text).__name__}: {text!r}")
    stripped = text.strip()
    if not stripped:
        raise VerificationError("the CID is empty: expected a string such as bafkrei... or bafybei...")
    try:
        cid = CID.decode(stripped)
        hash_code = cid.hashfun.code
        digest = bytes(cid.raw_digest)
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        # multiformats raises a different class per layer (multibase, varint, multicodec, multihash)
        raise VerificationError(
            f"{_shorten(stripped)!r} is not a valid CID ({type(exc).__name__}: {exc}); "
            "expected a CIDv1 such as bafkrei... / bafybei... or a CIDv0 Qm..."
        ) from exc
    return Cid(text=stripped, version=cid.version, codec=cid.codec.code, hash_code=hash_code, digest=digest)


def digest32(cid: str | Cid) -> bytes:
    """The bytes32 the contracts store for `cid`: the sha2-256 digest inside its multihash."""
    parsed = cid if isinstance(cid, Cid) else parse_cid(cid)
    if not parsed.is_sha2_256:
        raise VerificationError(
            f"CID {parsed.text} uses multihash 0x{parsed.hash_code:x} with a {len(parsed.digest)}-byte digest; "
            "only sha2-256 (0x12, 32 bytes) CIDs fit a bytes32: add the blob with hash=sha2-256"
        )
    return parsed.digest


def cid_from_digest32(digest: bytes, *, codec: int = RAW_CODEC) -> str:
    """The CIDv1 (base32) whose sha2-256 digest is `digest`, for a raw leaf or a dag-pb root."""
    if len(digest) != _SHA2_256_BYTES:
        raise VerificationError(f"a sha2-256 digest has 32 bytes, got {len(digest)}: {digest.hex()}")
    if codec not in _CODEC_NAMES:
        raise VerificationError(f"codec 0x{codec:x} is not a UnixFS codec: use 0x55 (raw) or 0x70 (dag-pb)")
    return _cid_text(codec, digest)


def cid_from_bytes(raw: bytes) -> str:
    """The text form of a binary CID: base32 CIDv1 (`b...`), or `Qm...` for a CIDv0.

    Raises `VerificationError` showing the bytes in hex when they are not a CID.
    """
    try:
        cid = CID.decode(bytes(raw))
    except (ValueError, KeyError, IndexError, TypeError) as exc:  # multiformats raises one class per layer
        raise VerificationError(f"0x{bytes(raw).hex()} is not a binary CID ({type(exc).__name__}: {exc})") from exc
    return str(cid if cid.version == 0 else cid.set(base="base32"))


# --- building the DAG -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a UnixFS DAG: its CID and its encoded bytes."""

    cid: str
    data: bytes


@dataclass(frozen=True, slots=True)
class FileLink:
    """A link of a file node: the child's binary CID, its sub-DAG size (Tsize), its file bytes."""

    cid: str
    tsize: int
    blocksize: int


@dataclass(frozen=True, slots=True)
class FileNode:
    """A decoded UnixFS file node (dag-pb): its links and the UnixFS sizes."""

    links: tuple[FileLink, ...]
    filesize: int
    blocksizes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class UnixfsDag:
    """A blob's DAG: the root CID, the blob's size and every block, leaves first, root last."""

    root: str
    size_bytes: int
    blocks: tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class _Link:
    cid_bytes: bytes
    tsize: int
    blocksize: int


class UnixfsHasher:
    """Computes Kubo's CID of a blob fed in pieces of any size, holding one chunk at a time.

    `update` as the bytes stream by, then `finish` once; `keep_blocks=True` also keeps every block
    (for `unixfs_dag`). Memory: one chunk plus a 40-byte link per chunk.
    """

    def __init__(
        self, *, chunk_size: int = CHUNK_SIZE_BYTES, max_links: int = MAX_LINKS, keep_blocks: bool = False
    ) -> None:
        if not 1 <= chunk_size <= _MAX_CHUNK_SIZE_BYTES:
            raise ConfigError(f"chunk_size must be within 1..{_MAX_CHUNK_SIZE_BYTES} bytes, got {chunk_size}")
        if max_links < 2:
            raise ConfigError(f"max_links must be at least 2 for a tree to grow, got {max_links}")
        self._chunk_size = chunk_size
        self._max_links = max_links
        self._pending = bytearray()
        self._leaves: list[_Link] = []
        self._blocks: list[Block] | None = [] if keep_blocks else None
        self._size_bytes = 0
        self._root: str | None = None

    @property
    def size_bytes(self) -> int:
        """Bytes fed so far."""
        return self._size_bytes

    def update(self, data: bytes | bytearray | memoryview) -> None:
        if self._root is not None:
            raise VerificationError("UnixfsHasher.update after finish: use a new hasher for another blob")
        view = memoryview(data).cast("B")
        self._size_bytes += len(view)
        start = 0
        if self._pending:
            take = min(self._chunk_size - len(self._pending), len(view))
            self._pending += view[:take]
            start = take
            if len(self._pending) == self._chunk_size:
                self._add_leaf(bytes(self._pending))
                self._pending.clear()
        while len(view) - start >= self._chunk_size:
            self._add_leaf(bytes(view[start : start + self._chunk_size]))
            start += self._chunk_size
        self._pending += view[start:]

    def finish(self) -> str:
        """The root CID (base32 CIDv1). Idempotent."""
        if self._root is None:
            if self._pending or not self._leaves:  # the tail, or the empty blob's single empty raw leaf
                self._add_leaf(bytes(self._pending))
                self._pending.clear()
            self._root = self._pack()
        return self._root

    def blocks(self) -> tuple[Block, ...]:
        if self._blocks is None:
            raise ConfigError("this UnixfsHasher was made without keep_blocks=True")
        self.finish()
        return tuple(self._blocks)

    def _add_leaf(self, chunk: bytes) -> None:
        digest = hashlib.sha256(chunk).digest()
        self._leaves.append(_Link(_cid_bytes(RAW_CODEC, digest), len(chunk), len(chunk)))
        if self._blocks is not None:
            self._blocks.append(Block(_cid_text(RAW_CODEC, digest), chunk))

    def _pack(self) -> str:
        level = self._leaves
        if len(level) == 1:
            return cid_from_bytes(level[0].cid_bytes)
        while len(level) > 1:
            level = [self._node(level[i : i + self._max_links]) for i in range(0, len(level), self._max_links)]
        return cid_from_bytes(level[0].cid_bytes)

    def _node(self, children: list[_Link]) -> _Link:
        encoded = _encode_file_node(children)
        digest = hashlib.sha256(encoded).digest()
        if self._blocks is not None:
            self._blocks.append(Block(_cid_text(DAG_PB_CODEC, digest), encoded))
        return _Link(
            _cid_bytes(DAG_PB_CODEC, digest),
            len(encoded) + sum(child.tsize for child in children),
            sum(child.blocksize for child in children),
        )


def unixfs_cid(
    data: bytes | bytearray | memoryview | Iterable[bytes],
    *,
    chunk_size: int = CHUNK_SIZE_BYTES,
    max_links: int = MAX_LINKS,
) -> str:
    """Kubo's CIDv1 of `data` (bytes, or an iterable of byte pieces) under the layout above."""
    hasher = UnixfsHasher(chunk_size=chunk_size, max_links=max_links)
    if isinstance(data, bytes | bytearray | memoryview):
        hasher.update(data)
    else:
        for piece in data:
            hasher.update(piece)
    return hasher.finish()


def unixfs_dag(data: bytes, *, chunk_size: int = CHUNK_SIZE_BYTES, max_links: int = MAX_LINKS) -> UnixfsDag:
    """Every block of `data`'s DAG, for tests and for checking what a node holds block by block."""
    hasher = UnixfsHasher(chunk_size=chunk_size, max_links=max_links, keep_blocks=True)
    hasher.update(data)
    root = hasher.finish()
    return UnixfsDag(root=root, size_bytes=hasher.size_bytes, blocks=hasher.blocks())


def decode_file_node(block: bytes) -> FileNode:
    """Decode a dag-pb UnixFS file node; `VerificationError` when it is not one."""
    links: list[tuple[bytes, int]] = []
    data: bytes | None = None
    for field, wire, value in _fields(block, "dag-pb node"):
        if field == 2 and wire == 2:
            assert isinstance(value, bytes)
            links.append(_decode_link(value))
        elif field == 1 and wire == 2:
            assert isinstance(value, bytes)
            data = value
        else:
            raise VerificationError(f"dag-pb node has an unexpected field {field} (wire type {wire})")
    if data is None:
        raise VerificationError("dag-pb node has no Data: it is not a UnixFS node")
    kind: int | None = None
    filesize = 0
    blocksizes: list[int] = []
    for field, wire, value in _fields(data, "UnixFS Data"):
        if field == 1 and wire == 0:
            assert isinstance(value, int)
            kind = value
        elif field == 3 and wire == 0:
            assert isinstance(value, int)
            filesize = value
        elif field == 4 and wire == 0:
            assert isinstance(value, int)
            blocksizes.append(value)
        elif field == 2 and wire == 2:
            if value:
                raise VerificationError("UnixFS file node carries inline data; Kubo's layout never does")
        else:
            raise VerificationError(f"UnixFS Data has an unexpected field {field} (wire type {wire})")
    if kind != _UNIXFS_FILE:
        raise VerificationError(f"UnixFS node has Type {kind}, expected File ({_UNIXFS_FILE})")
    if len(blocksizes) != len(links):
        raise VerificationError(f"UnixFS file node has {len(links)} links but {len(blocksizes)} blocksizes")
    if sum(blocksizes) != filesize:
        raise VerificationError(f"UnixFS filesize {filesize} differs from the sum of blocksizes {sum(blocksizes)}")
    return FileNode(
        links=tuple(
            FileLink(_link_cid_text(raw), tsize, size) for (raw, tsize), size in zip(links, blocksizes, strict=True)
        ),
        filesize=filesize,
        blocksizes=tuple(blocksizes),
    )


# --- protobuf, CIDs ---------------------------------------------------------------------------


def _encode_file_node(children: list[_Link]) -> bytes:
    out = bytearray()
    for child in children:
        link = (
            _key(1, 2)
            + varint.encode(len(child.cid_bytes))
            + child.cid_bytes
            + _key(2, 2)
            + b"\x00"  # Name: "" (Kubo writes the empty name)
            + _key(3, 0)
            + varint.encode(child.tsize)
        )
        out += _key(2, 2) + varint.encode(len(link)) + link
    unixfs = bytearray(_key(1, 0) + varint.encode(_UNIXFS_FILE))
    unixfs += _key(3, 0) + varint.encode(sum(child.blocksize for child in children))
    for child in children:
        unixfs += _key(4, 0) + varint.encode(child.blocksize)
    out += _key(1, 2) + varint.encode(len(unixfs)) + unixfs
    return bytes(out)


def _decode_link(data: bytes) -> tuple[bytes, int]:
    cid_bytes: bytes | None = None
    tsize = 0
    for field, wire, value in _fields(data, "dag-pb link"):
        if field == 1 and wire == 2:
            assert isinstance(value, bytes)
            cid_bytes = value
        elif field == 2 and wire == 2:
            if value:
                raise VerificationError(f"a file link carries the name {value!r}: file chunks are unnamed")
        elif field == 3 and wire == 0:
            assert isinstance(value, int)
            tsize = value
        else:
            raise VerificationError(f"dag-pb link has an unexpected field {field} (wire type {wire})")
    if cid_bytes is None:
        raise VerificationError("dag-pb link has no Hash")
    return cid_bytes, tsize


def _fields(data: bytes, what: str) -> Iterable[tuple[int, int, int | bytes]]:
    position = 0
    while position < len(data):
        key, position = _read_varint(data, position, what)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _read_varint(data, position, what)
            yield field, wire, value
        elif wire == 2:
            length, position = _read_varint(data, position, what)
            if position + length > len(data):
                raise VerificationError(f"{what} is truncated: field {field} wants {length} bytes")
            yield field, wire, data[position : position + length]
            position += length
        else:
            raise VerificationError(f"{what} has field {field} with unsupported wire type {wire}")


def _read_varint(data: bytes, position: int, what: str) -> tuple[int, int]:
    try:
        value, length, _ = varint.decode_raw(memoryview(data)[position:])
    except ValueError as exc:  # multiformats: empty, truncated, longer than 9 bytes, or not minimal
        if all(byte & 0x80 for byte in data[position:]):
            raise VerificationError(f"{what} is truncated inside a varint at byte {position}") from exc
        raise VerificationError(f"{what} has a malformed varint at byte {position}: {exc}") from exc
    return value, position + length


def _key(field: int, wire: int) -> bytes:
    return varint.encode(field << 3 | wire)


def _cid_bytes(codec: int, digest: bytes) -> bytes:
    """The binary CIDv1 of a sha2-256 digest: `_CIDV1_PREFIX[codec]` then the digest. Not
    `bytes(CID(...))`: building a `CID` costs about 120 us (it looks the codec and the multihash up in
    their tables and type-checks its arguments), and the hasher makes one per chunk."""
    return _CIDV1_PREFIX[codec] + digest


def _cid_text(codec: int, digest: bytes) -> str:
    """The base32 CIDv1 of a sha2-256 digest under `codec`."""
    return str(CID("base32", 1, codec, multihash.wrap(digest, SHA2_256_CODE)))


def _link_cid_text(raw: bytes) -> str:
    try:
        return cid_from_bytes(raw)
    except VerificationError as exc:
        raise VerificationError(f"a dag-pb link holds bytes that are not a CID: {raw.hex()}") from exc


def _shorten(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."
