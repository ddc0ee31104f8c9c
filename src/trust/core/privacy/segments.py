"""Segments: one AES-256-GCM blob per graph node, under a key K_v of its own (paper 3.4.1, 3.4.2).

Blob format, version 1 (all that is stored on IPFS for a node):

    offset  size  field
    0       4     magic b"TRSG"
    4       1     format version (1)
    5       12    GCM nonce, random per seal
    17      n+16  AES-256-GCM ciphertext of the n-byte plaintext, then the 16-byte tag

Associated data (authenticated, never stored: the reader supplies what it expects):

    b"TRSG" || version || trace_id (32 bytes) || len(node_id) as uint16 big-endian || node_id (UTF-8)

so a blob only opens under the trace and node it was sealed for: moving it to another node or
another trace, or relabelling its version, fails the tag exactly as a wrong key or a flipped bit
does. GCM cannot tell these apart, and the error says so.

`trace_id` is 32 random bytes the provider draws once per trace, before sealing, and sends to every
seat inside its key envelope (`trust.core.privacy.envelopes`). It cannot be the on-chain trace root (that
root commits to the blobs' digests, so it exists only after sealing) nor the session id (assigned
after `createSession`). Reusing one trace id for two traces is harmless for confidentiality (every
node has its own key) but gives up the cross-trace binding, so draw a fresh one.

Keys are 32 random bytes, fresh per node, never derived from each other: holding K_v says nothing
about any other node's key, which is what makes need-to-know distribution (`trust.core.privacy.access`)
meaningful. Nonces are 96 random bits; each key seals exactly one plaintext, so a nonce is never
reused under a key.

Randomness comes in as `rng(n) -> n bytes` (`os.urandom` in production) so tests are reproducible.
The plaintext of an HDAG node is `trust.core.graphs.serialization.dumps_node`; of a CIG turn, `dumps_turn`
here (docs/privacy.md, "CIG turn JSON"). Both are canonical ASCII JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from trust.core.graphs.cig import AgentTurn, Cig, ReplyContract, Role
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.serialization import dumps_node
from trust.errors import ConfigError, GraphError, VerificationError

__all__ = [
    "DEFAULT_MAX_PLAINTEXT_BYTES",
    "HEADER_BYTES",
    "KEY_BYTES",
    "MAGIC",
    "MAX_NODE_ID_BYTES",
    "NONCE_BYTES",
    "TAG_BYTES",
    "TRACE_ID_BYTES",
    "TURN_FORMAT",
    "TURN_VERSION",
    "VERSION",
    "Rng",
    "SealedSegment",
    "associated_data",
    "dumps_turn",
    "encode_node_id",
    "loads_turn",
    "new_key",
    "new_trace_id",
    "open_segment",
    "parse_header",
    "seal",
    "seal_graph",
    "segment_plaintexts",
    "turn_to_dict",
]

Rng = Callable[[int], bytes]
"""A source of random bytes, `os.urandom`-like: `rng(n)` returns exactly n bytes."""

MAGIC = b"TRSG"
VERSION = 1
KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
TRACE_ID_BYTES = 32
HEADER_BYTES = len(MAGIC) + 1 + NONCE_BYTES
MAX_NODE_ID_BYTES = 1024
"""Longest node id (UTF-8) a blob can be bound to; HDAG and CIG ids are a few characters."""

DEFAULT_MAX_PLAINTEXT_BYTES = 8 * 1024 * 1024
"""Largest plaintext sealed or opened by default (8 MiB, the HDAG reader's whole-document limit):
one node's text is far smaller, so a bigger blob is refused before any decryption work."""

TURN_FORMAT = "trust.cig-turn"
TURN_VERSION = 1
_ROLES = frozenset(role.value for role in Role)
_TURN_FIELDS = ("format", "version", "id", "step", "agent", "role", "input", "output", "timestamp", "contract")


@dataclass(frozen=True, slots=True)
class SealedSegment:
    """One sealed node: the blob to store, its key (kept by the provider, wrapped per seat) and
    `ciphertext_digest = sha256(blob)`, the value committed in the trace root's leaf."""

    node_id: str
    blob: bytes
    key: bytes = field(repr=False)
    ciphertext_digest: bytes


def _random(rng: Rng, n: int, what: str) -> bytes:
    value = rng(n)
    if not isinstance(value, bytes) or len(value) != n:
        got = f"{len(value)} bytes" if isinstance(value, bytes) else type(value).__name__
        raise ConfigError(f"the random source returned {got} when asked for {n} {what} bytes; pass os.urandom")
    return value


def new_key(rng: Rng) -> bytes:
    """A fresh 32-byte AES-256 key."""
    return _random(rng, KEY_BYTES, "key")


def new_trace_id(rng: Rng) -> bytes:
    """A fresh 32-byte trace id (see the module docstring)."""
    return _random(rng, TRACE_ID_BYTES, "trace id")


def _check_trace_id(trace_id: bytes) -> None:
    if not isinstance(trace_id, bytes) or len(trace_id) != TRACE_ID_BYTES:
        got = f"{len(trace_id)} bytes" if isinstance(trace_id, bytes) else type(trace_id).__name__
        raise GraphError(f"trace id: expected {TRACE_ID_BYTES} bytes, got {got}")


def _check_key(key: bytes, node_id: str) -> None:
    if not isinstance(key, bytes) or len(key) != KEY_BYTES:
        got = f"{len(key)} bytes" if isinstance(key, bytes) else type(key).__name__
        raise VerificationError(f"segment {node_id!r}: the key must be {KEY_BYTES} bytes (AES-256), got {got}")


def encode_node_id(node_id: str) -> bytes:
    """The UTF-8 bytes of a node id as bound into associated data and envelope info."""
    if not isinstance(node_id, str) or not node_id:
        raise GraphError(f"node id {node_id!r}: expected a non-empty string")
    try:
        encoded = node_id.encode("utf-8")
    except UnicodeEncodeError:
        raise GraphError(f"node id {node_id!r}: not valid Unicode text") from None
    if len(encoded) > MAX_NODE_ID_BYTES:
        raise GraphError(f"node id {node_id[:40]!r}...: {len(encoded)} bytes, above {MAX_NODE_ID_BYTES}")
    return encoded


def associated_data(trace_id: bytes, node_id: str, version: int = VERSION) -> bytes:
    """The GCM associated data binding a blob to its format version, trace and node."""
    _check_trace_id(trace_id)
    encoded = encode_node_id(node_id)
    return MAGIC + bytes([version]) + trace_id + len(encoded).to_bytes(2, "big") + encoded


def seal(
    node_id: str,
    plaintext: bytes,
    trace_id: bytes,
    key: bytes,
    rng: Rng,
    *,
    max_plaintext_bytes: int = DEFAULT_MAX_PLAINTEXT_BYTES,
) -> SealedSegment:
    """Encrypts one node's plaintext under `key` (use `new_key(rng)`: one fresh key per node)."""
    if not isinstance(plaintext, bytes):
        raise GraphError(f"segment {node_id!r}: plaintext must be bytes, got {type(plaintext).__name__}")
    if len(plaintext) > max_plaintext_bytes:
        raise GraphError(
            f"segment {node_id!r}: {len(plaintext):,} plaintext bytes, above the limit of {max_plaintext_bytes:,}; "
            "split the node or raise max_plaintext_bytes on both sides"
        )
    ad = associated_data(trace_id, node_id)
    _check_key(key, node_id)
    nonce = _random(rng, NONCE_BYTES, "nonce")
    blob = MAGIC + bytes([VERSION]) + nonce + AESGCM(key).encrypt(nonce, plaintext, ad)
    return SealedSegment(node_id, blob, key, hashlib.sha256(blob).digest())


def parse_header(blob: bytes, *, max_plaintext_bytes: int = DEFAULT_MAX_PLAINTEXT_BYTES) -> tuple[int, bytes]:
    """(version, nonce) of a blob, after checking its size and magic; `VerificationError` otherwise."""
    if not isinstance(blob, bytes | bytearray | memoryview):
        raise VerificationError(f"segment blob: expected bytes, got {type(blob).__name__}")
    size = len(blob)
    smallest = HEADER_BYTES + TAG_BYTES
    if size < smallest:
        raise VerificationError(
            f"segment blob: {size} bytes is truncated; a blob holds at least {smallest} "
            "(header and GCM tag). Fetch it again; nothing was decrypted"
        )
    if size > smallest + max_plaintext_bytes:
        raise VerificationError(
            f"segment blob: {size:,} bytes is oversized; the limit is {smallest + max_plaintext_bytes:,} "
            f"({max_plaintext_bytes:,} plaintext bytes). Nothing was decrypted"
        )
    if bytes(blob[: len(MAGIC)]) != MAGIC:
        raise VerificationError(
            f"segment blob: starts with {bytes(blob[:4])!r}, not the magic {MAGIC!r}: not a TRUST segment"
        )
    version = blob[len(MAGIC)]
    if version != VERSION:
        raise VerificationError(f"segment blob: format version {version}, this reader knows only {VERSION}")
    return version, bytes(blob[len(MAGIC) + 1 : HEADER_BYTES])


def open_segment(
    blob: bytes,
    key: bytes,
    trace_id: bytes,
    node_id: str,
    *,
    ciphertext_digest: bytes | None = None,
    max_plaintext_bytes: int = DEFAULT_MAX_PLAINTEXT_BYTES,
) -> bytes:
    """The plaintext of a blob sealed for (`trace_id`, `node_id`) under `key`.

    Checks, in order, each raising `VerificationError` before any decryption: the size bounds, the
    magic and version, and `sha256(blob) == ciphertext_digest` when a digest is given (the value
    from the trace root's leaf); then the GCM tag.
    """
    version, nonce = parse_header(blob, max_plaintext_bytes=max_plaintext_bytes)
    if ciphertext_digest is not None:
        actual = hashlib.sha256(blob).digest()
        if actual != ciphertext_digest:
            raise VerificationError(
                f"segment {node_id!r}: sha256 of the blob is {actual.hex()}, the committed digest is "
                f"{ciphertext_digest.hex()}: the blob is not the one the trace root commits to; nothing was decrypted"
            )
    _check_key(key, node_id)
    ad = associated_data(trace_id, node_id, version)
    try:
        return AESGCM(key).decrypt(nonce, bytes(blob[HEADER_BYTES:]), ad)
    except InvalidTag:
        raise VerificationError(
            f"segment {node_id!r} of trace {trace_id.hex()[:16]}...: authentication failed: wrong key, tampered "
            "ciphertext or a blob of another node/trace. Nothing was decrypted; fetch the blob again and check "
            "the key envelope"
        ) from None


# ---------------------------------------------------------------------- plaintexts


def turn_to_dict(turn: AgentTurn) -> dict[str, Any]:
    """The JSON object of one CIG turn, fields in the canonical order (docs/privacy.md)."""
    contract = None
    if turn.contract is not None:
        contract = {"format": turn.contract.format, "required": list(turn.contract.required)}
    return {
        "format": TURN_FORMAT,
        "version": TURN_VERSION,
        "id": turn.id,
        "step": turn.step,
        "agent": turn.agent,
        "role": turn.role.value,
        "input": turn.input,
        "output": turn.output,
        "timestamp": turn.timestamp,
        "contract": contract,
    }


def dumps_turn(turn: AgentTurn) -> str:
    """The canonical JSON text of one turn (no whitespace, ASCII only): the plaintext of its segment.

    It carries the turn alone. What the turn received from other turns (its parents' outputs) is in
    the parents' own segments, readable with the parents' keys that the seat's envelope also holds.
    """
    return json.dumps(turn_to_dict(turn), ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, value in pairs:
        if name in result:
            raise GraphError(f"turn JSON: duplicate field {name!r}")
        result[name] = value
    return result


def loads_turn(text: str | bytes) -> AgentTurn:
    """Reads `dumps_turn` output back, strictly: `GraphError` naming the field otherwise."""
    try:
        data = json.loads(text, object_pairs_hook=_reject_duplicates)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GraphError(f"turn JSON: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise GraphError("turn JSON: expected an object")
    unknown = [name for name in data if name not in _TURN_FIELDS]
    missing = [name for name in _TURN_FIELDS if name not in data]
    if unknown or missing:
        raise GraphError(f"turn JSON: unknown fields {unknown}, missing fields {missing}")
    if data["format"] != TURN_FORMAT or data["version"] != TURN_VERSION:
        raise GraphError(f"turn JSON: format {data['format']!r} version {data['version']!r}, expected {TURN_FORMAT} 1")
    for name in ("id", "agent", "role", "input", "output"):
        if not isinstance(data[name], str):
            raise GraphError(f"turn JSON: {name}: expected a string")
    if data["role"] not in _ROLES:
        raise GraphError(f"turn JSON: role {data['role']!r}: expected one of {', '.join(sorted(_ROLES))}")
    step = data["step"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise GraphError(f"turn JSON: step: expected a non-negative integer, got {step!r}")
    if data["timestamp"] is not None and not isinstance(data["timestamp"], str):
        raise GraphError("turn JSON: timestamp: expected a string or null")
    contract = None
    raw = data["contract"]
    if raw is not None:
        if not isinstance(raw, dict) or set(raw) != {"format", "required"}:
            raise GraphError("turn JSON: contract: expected {format, required} or null")
        required = raw["required"]
        if not isinstance(required, list) or not all(isinstance(f, str) for f in required):
            raise GraphError("turn JSON: contract.required: expected a list of strings")
        contract = ReplyContract(raw["format"], tuple(required))
    return AgentTurn(
        id=data["id"],
        step=step,
        agent=data["agent"],
        role=Role(data["role"]),
        output=data["output"],
        input=data["input"],
        timestamp=data["timestamp"],
        contract=contract,
    )


def segment_plaintexts(graph: Hdag | Cig) -> dict[str, bytes]:
    """The plaintext of every node's segment, by node id, in the graph's order (insertion order for
    an HDAG, time order for a CIG): that order is the segment index order."""
    if isinstance(graph, Hdag):
        return {node.id: dumps_node(node).encode("ascii") for node in graph.nodes()}
    if isinstance(graph, Cig):
        return {turn.id: dumps_turn(turn).encode("ascii") for turn in graph.turns()}
    raise GraphError(f"expected an Hdag or a Cig, got {type(graph).__name__}")


def seal_graph(
    graph: Hdag | Cig,
    trace_id: bytes,
    rng: Rng,
    *,
    max_plaintext_bytes: int = DEFAULT_MAX_PLAINTEXT_BYTES,
) -> list[SealedSegment]:
    """Every node sealed under its own fresh key, in segment order (`segment_plaintexts` order)."""
    return [
        seal(node_id, plaintext, trace_id, new_key(rng), rng, max_plaintext_bytes=max_plaintext_bytes)
        for node_id, plaintext in segment_plaintexts(graph).items()
    ]
