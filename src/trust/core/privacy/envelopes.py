"""Key envelopes: the segment keys of one seat, wrapped to its auditor's registered X25519 key.

One envelope per seat (an auditor seated on the segment of node v): it holds K_v and the keys of
v's immediate parents (paper 3.4.2; `trust.core.privacy.access` decides which). It is RFC 9180 HPKE in
base mode, single shot, through `cryptography`'s own HPKE API: DHKEM(X25519, HKDF-SHA256),
HKDF-SHA256, AES-256-GCM. The recipient key is the 32-byte raw X25519 public key the auditor
registered on chain (`AuditorRegistry.encryptionKeyOf`), the key `trust.lab.devnet` creates and stores
as encrypted PKCS#8 PEM for each devnet auditor.

Envelope format, versions 1 and 2 (the same layout; the version says what the payload may hold):

    offset  size  field
    0       4     magic b"TREV"
    4       1     format version (1, or 2 when an entry carries an inclusion proof)
    5       32    enc: the sender's ephemeral X25519 public key (HPKE)
    37      n+16  AES-256-GCM ciphertext of the n-byte key payload, then the tag (HPKE)

HPKE `info` (binds the envelope to its seat; the recipient recomputes it from what it reads on chain):

    b"trust.envelope" || version || trace root (32) || segment index (uint256, big-endian)
    || auditor address (20) || recipient public key (32)

The trace root is the session's Merkle root (`TRUSTAudit.session(id).traceRoot`), which commits to
every blob and so, through each blob's associated data, to the trace id. Everything in `info` is
public on chain where the auditor finds its seat, so it can open the envelope knowing nothing else;
the trace id and the node id it needs to open segments come inside, authenticated.

HPKE already binds the ephemeral and the recipient public keys into the key schedule (DHKEM's
kem_context is enc || pkR); the recipient key is in `info` too so the binding does not rest on that
detail. An envelope copied to another seat, segment, trace or auditor therefore fails to open.

Payload (canonical JSON, ASCII): `{"format":"trust.keys","version":1|2,"trace":"<trace id, 64 hex>",
"segment":i,"node":v,"keys":[{"node":"<id>","segment":j,"cid":"<CID>","digest":"<64 hex>","key":"<64 hex>"},...]}`, the
seat's own node first, then its parents in graph order. Each entry says where that node's segment
lies (its index in the trace, its CID and the sha256 of its blob), so an auditor can fetch and check
every segment it may read from the envelope alone: the chain holds each segment's CID digest, the
IPFS fetch checks the blob against CID and digest, and no public manifest maps node ids to segments.
Optionally `"reply":"<64 hex>"` comes last: the provider's per-session X25519 *reply key* (raw public
key), to which the seat seals its audit report (`trust.core.privacy.reports`). A payload without it
still parses (its grant's `reply_key` is None), so older envelopes stay readable.

Version 2 adds *context-only* segments: nodes sealed and delivered as parents but not registered on
chain (a CIG's user and tool turns; `trust.services.delivery.SegmentProfile.audited`). The chain holds no
content digest for them, so their entry ends with `"proof":["<64 hex>",...]`, the segment's Merkle
inclusion proof (1..`MAX_PROOF_HASHES` sibling hashes, leaf up): the seat rebuilds the leaf (index,
CID, digest, tier 0, weight 0, not critical) and checks it against the session's trace root
(`trust.services.delivery.open_granted`). The seat's own entry never carries one: a seat sits only on a
registered segment. A grant with no proof is written as version 1, byte for byte what readers before
version 2 open; a grant with one is written as version 2, which those readers refuse by its version
byte ("this reader knows only 1") instead of misreading it. The payload's `version` equals the
header's, and a `proof` in a version-1 payload is refused. Each proof adds about 67 bytes per hash
(at most ceil(log2 m) hashes for m leaves: 13 for 8,192), well inside `MAX_ENVELOPE_BYTES`;
`seal_envelope` refuses a grant whose envelope would not fit.

HPKE draws its ephemeral key from the operating system inside `cryptography`: envelopes are not
reproducible byte for byte (segments are, given the rng); tests check round trips and rejections.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hpke
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from trust.core.privacy.merkle import MAX_PROOF_HASHES, cid_bytes
from trust.core.privacy.segments import KEY_BYTES, TRACE_ID_BYTES, encode_node_id
from trust.errors import GraphError, VerificationError

__all__ = [
    "ENVELOPE_HEADER_BYTES",
    "ENVELOPE_MAGIC",
    "ENVELOPE_VERSION",
    "ENVELOPE_VERSIONS",
    "MAX_ENVELOPE_BYTES",
    "PAYLOAD_FORMAT",
    "PLAIN_ENVELOPE_VERSION",
    "PUBLIC_KEY_BYTES",
    "TRACE_ROOT_BYTES",
    "KeyGrant",
    "SegmentKey",
    "address_bytes",
    "envelope_info",
    "open_envelope",
    "public_key_bytes",
    "seal_envelope",
]

ENVELOPE_MAGIC = b"TREV"
ENVELOPE_VERSION = 2
"""The newest envelope format this module writes: 2 for a grant with a context-only key (an entry
with an inclusion proof); a grant without one is still written as version 1."""
PLAIN_ENVELOPE_VERSION = 1
"""The format of a grant whose every key is a registered segment's (no inclusion proofs)."""
ENVELOPE_VERSIONS = frozenset({PLAIN_ENVELOPE_VERSION, ENVELOPE_VERSION})
"""The versions `open_envelope` reads."""
PUBLIC_KEY_BYTES = 32
ENVELOPE_HEADER_BYTES = len(ENVELOPE_MAGIC) + 1 + PUBLIC_KEY_BYTES
PAYLOAD_FORMAT = "trust.keys"
MAX_ENVELOPE_BYTES = 256 * 1024
"""Largest envelope accepted: about 2,500 keys, far above any node's parent count."""

_TAG_BYTES = 16
_INFO_LABEL = b"trust.envelope"
_SUITE = hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM)
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
_HEX_32 = re.compile(r"^[0-9a-f]{64}$")
_DIGEST_BYTES = 32
TRACE_ROOT_BYTES = 32
_ENTRY_FIELDS = frozenset({"node", "segment", "cid", "digest", "key"})
_PROOF_FIELD = "proof"
_PAYLOAD_FIELDS = frozenset({"format", "version", "trace", "segment", "node", "keys"})


@dataclass(frozen=True, slots=True)
class SegmentKey:
    """One node's segment key and where its segment lies: index in the trace, CID (text, base32
    CIDv1 or CIDv0) and `ciphertext_digest = sha256(blob)`.

    `proof` is None for a segment registered on chain (a seat checks its CID against the registered
    content digest); for a context-only segment (delivered as a parent, never audited) it is the
    segment's Merkle inclusion proof under the trace root, 1..`MAX_PROOF_HASHES` sibling hashes of
    32 bytes, leaf up (a seat checks the leaf against the session's root instead).
    """

    node_id: str
    segment_index: int
    cid: str
    ciphertext_digest: bytes
    key: bytes = field(repr=False)
    proof: tuple[bytes, ...] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        encode_node_id(self.node_id)
        where = f"segment key of {self.node_id!r}"
        if isinstance(self.segment_index, bool) or not isinstance(self.segment_index, int) or self.segment_index < 0:
            raise GraphError(f"{where}: segment index {self.segment_index!r} is not a non-negative integer")
        cid_bytes(self.cid)
        if not isinstance(self.ciphertext_digest, bytes) or len(self.ciphertext_digest) != _DIGEST_BYTES:
            raise GraphError(f"{where}: the ciphertext digest is not 32 bytes (sha256 of the blob)")
        if not isinstance(self.key, bytes) or len(self.key) != KEY_BYTES:
            raise GraphError(f"{where}: the key is not 32 bytes")
        if self.proof is not None:
            if not isinstance(self.proof, tuple) or not 0 < len(self.proof) <= MAX_PROOF_HASHES:
                raise GraphError(
                    f"{where}: the inclusion proof must be a tuple of 1 to {MAX_PROOF_HASHES} hashes "
                    "(None for a segment registered on chain)"
                )
            if not all(isinstance(step, bytes) and len(step) == _DIGEST_BYTES for step in self.proof):
                raise GraphError(f"{where}: every step of the inclusion proof must be a 32-byte hash")

    @property
    def context(self) -> bool:
        """Whether this is a context-only segment (one that carries an inclusion proof)."""
        return self.proof is not None

    def entry(self) -> dict[str, Any]:
        """The JSON object of this key in an envelope payload (docs/privacy.md)."""
        document: dict[str, Any] = {
            "node": self.node_id,
            "segment": self.segment_index,
            "cid": self.cid,
            "digest": self.ciphertext_digest.hex(),
            "key": self.key.hex(),
        }
        if self.proof is not None:
            document[_PROOF_FIELD] = [step.hex() for step in self.proof]
        return document

    @classmethod
    def from_entry(cls, entry: object, *, allow_proof: bool = True) -> SegmentKey:
        """Reads `entry()` output back, strictly: exactly the five fields and, if `allow_proof`, an
        optional proof; hex in lowercase, of the right lengths. `GraphError` naming the field otherwise."""
        fields = _ENTRY_FIELDS | {_PROOF_FIELD} if allow_proof else _ENTRY_FIELDS
        if not isinstance(entry, dict) or not _ENTRY_FIELDS <= set(entry) <= fields:
            expected = "{node, segment, cid, digest, key" + ("[, proof]}" if allow_proof else "}")
            got = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
            raise GraphError(f"a key entry is not {expected} (got {got})")
        name = entry["node"]
        for field_name in ("digest", "key"):
            if not isinstance(entry[field_name], str) or not _HEX_32.match(entry[field_name]):
                raise GraphError(f"the {field_name} of node {name!r} is not 64 lowercase hex digits")
        if not isinstance(name, str) or not isinstance(entry["cid"], str) or type(entry["segment"]) is not int:
            raise GraphError("a key entry has a field of the wrong type")
        proof = None
        if _PROOF_FIELD in entry:
            steps = entry[_PROOF_FIELD]
            if (
                not isinstance(steps, list)
                or not 0 < len(steps) <= MAX_PROOF_HASHES
                or not all(isinstance(step, str) and _HEX_32.match(step) for step in steps)
            ):
                raise GraphError(
                    f"the inclusion proof of node {name!r} is not a list of 1 to {MAX_PROOF_HASHES} hashes "
                    "of 64 lowercase hex digits"
                )
            proof = tuple(bytes.fromhex(step) for step in steps)
        return cls(
            name,
            entry["segment"],
            entry["cid"],
            bytes.fromhex(entry["digest"]),
            bytes.fromhex(entry["key"]),
            proof,
        )


@dataclass(frozen=True, slots=True)
class KeyGrant:
    """What one seat receives: the trace id, and the `SegmentKey` of the seat's node (first) and of its
    immediate parents; and `reply_key`, the provider's X25519 public key (32 raw bytes) to seal the
    seat's audit report to, when the provider wants reports (None: it does not). A parent may be a
    context-only segment (its key carries an inclusion proof); the seat's own node never is."""

    trace_id: bytes
    segment_index: int
    node_id: str
    segments: tuple[SegmentKey, ...] = field(repr=False)
    reply_key: bytes | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.trace_id, bytes) or len(self.trace_id) != TRACE_ID_BYTES:
            raise GraphError(f"key grant: the trace id must be {TRACE_ID_BYTES} bytes")
        if self.reply_key is not None and (
            not isinstance(self.reply_key, bytes)
            or len(self.reply_key) != PUBLIC_KEY_BYTES
            or self.reply_key == bytes(PUBLIC_KEY_BYTES)
        ):
            raise GraphError(
                f"key grant: the reply key must be {PUBLIC_KEY_BYTES} raw bytes of an X25519 public key "
                "(public_key_bytes of the provider's reply key), not zero; pass None for no reports"
            )
        if isinstance(self.segment_index, bool) or not isinstance(self.segment_index, int) or self.segment_index < 0:
            raise GraphError(f"key grant: segment index {self.segment_index!r} is not a non-negative integer")
        where = f"key grant for segment {self.segment_index} ({self.node_id!r})"
        if not self.segments or self.segments[0].node_id != self.node_id:
            raise GraphError(f"{where}: the first segment key must be its own node's")
        if self.segments[0].segment_index != self.segment_index:
            raise GraphError(
                f"{where}: its own node's key names segment {self.segments[0].segment_index}, not {self.segment_index}"
            )
        if self.segments[0].context:
            raise GraphError(
                f"{where}: its own node's key carries an inclusion proof, but a seat sits only on a segment "
                "registered on chain, never on a context-only one"
            )
        for attribute, what in (("node_id", "node"), ("segment_index", "segment")):
            values = [getattr(segment, attribute) for segment in self.segments]
            if len(set(values)) != len(values):
                raise GraphError(f"{where}: a {what} appears twice among its keys")

    @property
    def keys(self) -> dict[str, bytes]:
        """`{node_id: key}`, the seat's own node first."""
        return {segment.node_id: segment.key for segment in self.segments}

    def segment(self, node_id: str) -> SegmentKey:
        """The segment key of `node_id` (`GraphError` when the grant holds none)."""
        for segment in self.segments:
            if segment.node_id == node_id:
                return segment
        raise GraphError(f"key grant for segment {self.segment_index} holds no key for node {node_id!r}")

    @property
    def format_version(self) -> int:
        """The envelope version this grant is written in: `ENVELOPE_VERSION` (2) when a key carries an
        inclusion proof, else `PLAIN_ENVELOPE_VERSION` (1), which readers before version 2 open too."""
        return ENVELOPE_VERSION if any(segment.context for segment in self.segments) else PLAIN_ENVELOPE_VERSION

    def payload(self) -> bytes:
        """The canonical JSON payload (docs/privacy.md), ASCII."""
        document = {
            "format": PAYLOAD_FORMAT,
            "version": self.format_version,
            "trace": self.trace_id.hex(),
            "segment": self.segment_index,
            "node": self.node_id,
            "keys": [segment.entry() for segment in self.segments],
        }
        if self.reply_key is not None:
            document["reply"] = self.reply_key.hex()
        return json.dumps(document, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def address_bytes(address: str) -> bytes:
    """The 20 bytes of an `0x`-prefixed hex Ethereum address (any letter case)."""
    if not isinstance(address, str) or not _ADDRESS.match(address):
        raise GraphError(f"auditor address {address!r}: expected 0x and 40 hex digits")
    return bytes.fromhex(address[2:])


def public_key_bytes(private_key: X25519PrivateKey) -> bytes:
    """The raw 32-byte public key of an X25519 private key (what an auditor registers on chain)."""
    return private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def _recipient(public_key: bytes, auditor: str) -> X25519PublicKey:
    if not isinstance(public_key, bytes) or len(public_key) != PUBLIC_KEY_BYTES:
        got = f"{len(public_key)} bytes" if isinstance(public_key, bytes) else type(public_key).__name__
        raise VerificationError(f"auditor {auditor}: encryption key must be 32 bytes (raw X25519), got {got}")
    if public_key == bytes(PUBLIC_KEY_BYTES):
        raise VerificationError(
            f"auditor {auditor} has no encryption key registered (encryptionKeyOf is zero); it cannot receive "
            "segment keys until it calls updateProfile with its X25519 public key"
        )
    return X25519PublicKey.from_public_bytes(public_key)


def envelope_info(trace_root: bytes, segment_index: int, auditor: str, recipient_key: bytes, version: int) -> bytes:
    """The HPKE `info` string of a seat's envelope of format `version` (see the module docstring)."""
    if version not in ENVELOPE_VERSIONS:
        raise GraphError(f"envelope version {version!r}: expected one of {sorted(ENVELOPE_VERSIONS)}")
    if not isinstance(trace_root, bytes) or len(trace_root) != TRACE_ROOT_BYTES:
        raise GraphError(f"trace root: expected {TRACE_ROOT_BYTES} bytes (the session's Merkle root)")
    if isinstance(segment_index, bool) or not isinstance(segment_index, int) or not 0 <= segment_index < 2**256:
        raise GraphError(f"segment index {segment_index!r}: expected a uint256")
    return (
        _INFO_LABEL
        + bytes([version])
        + trace_root
        + segment_index.to_bytes(32, "big")
        + address_bytes(auditor)
        + recipient_key
    )


def seal_envelope(grant: KeyGrant, *, trace_root: bytes, auditor: str, recipient_key: bytes) -> bytes:
    """Wraps `grant` to the X25519 key `recipient_key` that `auditor` registered on chain, for its
    seat in the session whose trace root is `trace_root`, in format `grant.format_version`.

    Raises `GraphError` when the envelope would exceed `MAX_ENVELOPE_BYTES` (no reader would open it).
    """
    public = _recipient(recipient_key, auditor)
    version = grant.format_version
    info = envelope_info(trace_root, grant.segment_index, auditor, recipient_key, version)
    payload = grant.payload()
    size = ENVELOPE_HEADER_BYTES + len(payload) + _TAG_BYTES
    if size > MAX_ENVELOPE_BYTES:
        raise GraphError(
            f"envelope for segment {grant.segment_index} ({grant.node_id!r}), auditor {auditor}: {size:,} bytes "
            f"for {len(grant.segments)} keys, above the {MAX_ENVELOPE_BYTES:,} a reader accepts; the node has too "
            "many parents to deliver in one envelope"
        )
    try:
        sealed = _SUITE.encrypt(payload, public, info=info)
    except ValueError as exc:
        # A low-order point gives an all-zero shared secret, which X25519 refuses.
        raise VerificationError(
            f"auditor {auditor}: encryption key 0x{recipient_key.hex()} is not a usable X25519 key ({exc})"
        ) from None
    return ENVELOPE_MAGIC + bytes([version]) + sealed


def open_envelope(
    private_key: X25519PrivateKey | bytes,
    envelope: bytes,
    *,
    trace_root: bytes,
    segment_index: int,
    auditor: str,
) -> KeyGrant:
    """The keys in an envelope sealed for this auditor's seat on segment `segment_index` of the
    session whose trace root is `trace_root` (all three read from chain).

    `private_key` is the auditor's X25519 key (an object, or its 32 raw bytes). Raises
    `VerificationError` naming what failed: size, magic or version; authentication (the envelope
    is for another key, seat, segment or trace, or was tampered with); a payload that does not
    name this seat's node or carries malformed keys.
    """
    if isinstance(private_key, bytes):
        if len(private_key) != PUBLIC_KEY_BYTES:
            raise VerificationError(f"X25519 private key: expected 32 raw bytes, got {len(private_key)}")
        private_key = X25519PrivateKey.from_private_bytes(private_key)
    where = f"envelope for segment {segment_index}, auditor {auditor}"
    if not isinstance(envelope, bytes):
        raise VerificationError(f"{where}: expected bytes, got {type(envelope).__name__}")
    if len(envelope) < ENVELOPE_HEADER_BYTES + _TAG_BYTES:
        raise VerificationError(f"{where}: {len(envelope)} bytes is truncated; nothing was decrypted")
    if len(envelope) > MAX_ENVELOPE_BYTES:
        raise VerificationError(
            f"{where}: {len(envelope):,} bytes, above {MAX_ENVELOPE_BYTES:,}; nothing was decrypted"
        )
    if envelope[: len(ENVELOPE_MAGIC)] != ENVELOPE_MAGIC:
        raise VerificationError(
            f"{where}: starts with {envelope[:4]!r}, not {ENVELOPE_MAGIC!r}: not a TRUST key envelope"
        )
    version = envelope[len(ENVELOPE_MAGIC)]
    if version not in ENVELOPE_VERSIONS:
        known = " and ".join(str(v) for v in sorted(ENVELOPE_VERSIONS))
        raise VerificationError(f"{where}: format version {version}, this reader knows only {known}")
    info = envelope_info(trace_root, segment_index, auditor, public_key_bytes(private_key), version)
    try:
        payload = _SUITE.decrypt(envelope[len(ENVELOPE_MAGIC) + 1 :], private_key, info=info)
    except (InvalidTag, ValueError):
        raise VerificationError(
            f"{where}: authentication failed: sealed to another key, for another seat, segment or trace, or "
            "tampered with. No key was released"
        ) from None
    return _parse_payload(payload, where, segment_index, version)


def _parse_payload(payload: bytes, where: str, segment_index: int, version: int) -> KeyGrant:
    try:
        data: Any = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise VerificationError(f"{where}: the payload is not JSON") from None
    if not isinstance(data, dict) or set(data) - {"reply"} != _PAYLOAD_FIELDS:
        raise VerificationError(f"{where}: the payload is not a {PAYLOAD_FORMAT} document")
    reply = data.get("reply")
    if reply is not None and (not isinstance(reply, str) or not _HEX_32.match(reply) or reply == "0" * 64):
        raise VerificationError(f"{where}: the reply key is not 64 lowercase hex digits of a public key")
    if data["format"] != PAYLOAD_FORMAT or data["version"] != version or type(data["version"]) is not int:
        raise VerificationError(
            f"{where}: payload format {data['format']!r} version {data['version']!r}, expected "
            f"{PAYLOAD_FORMAT!r} {version} (the envelope's version)"
        )
    if data["segment"] != segment_index:
        raise VerificationError(f"{where}: the payload is for segment {data['segment']!r}, not this seat")
    node_id, trace = data["node"], data["trace"]
    if not isinstance(node_id, str) or not isinstance(trace, str) or not _HEX_32.match(trace):
        raise VerificationError(f"{where}: the payload's node id or trace id is malformed")
    entries = data["keys"]
    if not isinstance(entries, list) or not entries:
        raise VerificationError(f"{where}: the payload holds no keys")
    segments: list[SegmentKey] = []
    for entry in entries:
        try:
            segments.append(SegmentKey.from_entry(entry, allow_proof=version >= ENVELOPE_VERSION))
        except GraphError as exc:
            raise VerificationError(f"{where}: {exc}") from None
    try:
        reply_key = None if reply is None else bytes.fromhex(reply)
        return KeyGrant(bytes.fromhex(trace), segment_index, node_id, tuple(segments), reply_key)
    except GraphError as exc:
        raise VerificationError(f"{where}: {exc}") from None
