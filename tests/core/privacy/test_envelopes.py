"""Key envelopes: RFC 9180 HPKE to the auditor's registered X25519 key, bound to the seat."""

from __future__ import annotations

import json
import re

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from trust.core.privacy.envelopes import (
    ENVELOPE_HEADER_BYTES,
    ENVELOPE_VERSION,
    MAX_ENVELOPE_BYTES,
    PLAIN_ENVELOPE_VERSION,
    KeyGrant,
    SegmentKey,
    open_envelope,
    public_key_bytes,
    seal_envelope,
)
from trust.core.privacy.merkle import MAX_PROOF_HASHES
from trust.errors import GraphError, VerificationError

TRACE_ID = bytes(32 * [7])
ROOT = bytes(32 * [9])
AUDITOR = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
OTHER_AUDITOR = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
CID = "bafkreibpdlpfk3f7zzgafakbsfslatabxbbzivxuzbok6cfghmdqkyh3ta"


def segment_key(node_id: str, index: int, fill: int) -> SegmentKey:
    return SegmentKey(node_id, index, CID, bytes([fill + 100]) * 32, bytes([fill]) * 32)


GRANT = KeyGrant(TRACE_ID, 4, "s3", (segment_key("s3", 4, 3), segment_key("s2", 3, 2), segment_key("g0", 0, 0)))


def devnet_style_key(password: bytes = b"pw") -> tuple[X25519PrivateKey, bytes]:
    """A key made and stored the way `trust.lab.devnet` does (encrypted PKCS#8 PEM), then loaded back."""
    pem = X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(password)
    )
    private = serialization.load_pem_private_key(pem, password)
    assert isinstance(private, X25519PrivateKey)
    return private, public_key_bytes(private)


def _open(private: X25519PrivateKey | bytes, envelope: bytes, **overrides: object) -> KeyGrant:
    context: dict[str, object] = {"trace_root": ROOT, "segment_index": 4, "auditor": AUDITOR}
    context.update(overrides)
    return open_envelope(private, envelope, **context)  # type: ignore[arg-type]


def test_the_seated_auditor_opens_its_envelope() -> None:
    private, public = devnet_style_key()
    envelope = seal_envelope(GRANT, trace_root=ROOT, auditor=AUDITOR, recipient_key=public)
    assert envelope[:5] == b"TREV\x01"
    grant = _open(private, envelope)
    assert grant == GRANT
    # The trace id and the node come inside: the auditor needs only what the chain shows.
    assert grant.trace_id == TRACE_ID and grant.node_id == "s3"
    assert list(grant.keys) == ["s3", "s2", "g0"]
    assert grant.segment("s2") == segment_key("s2", 3, 2) and grant.segment("g0").cid == CID
    with pytest.raises(GraphError, match="holds no key for node 's1'"):
        grant.segment("s1")
    raw = private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    assert _open(raw, envelope) == GRANT
    # The address is bound as 20 bytes: its letter case does not matter.
    assert _open(private, envelope, auditor=AUDITOR.lower()) == GRANT
    # Nothing of the payload shows: no key, no node id, no CID (long enough not to occur by chance).
    assert b"\x03" * 32 not in envelope and b'"node":"s3"' not in envelope and CID.encode() not in envelope


AUTH = "authentication failed: sealed to another key, for another seat, segment or trace, or tampered with"


@pytest.mark.parametrize(
    "overrides",
    [
        {"trace_root": bytes(32)},
        {"segment_index": 5},
        {"auditor": OTHER_AUDITOR},
    ],
)
def test_an_envelope_opens_only_for_its_own_seat(overrides: dict[str, object]) -> None:
    private, public = devnet_style_key()
    envelope = seal_envelope(GRANT, trace_root=ROOT, auditor=AUDITOR, recipient_key=public)
    with pytest.raises(VerificationError, match=AUTH):
        _open(private, envelope, **overrides)


def test_another_auditors_private_key_cannot_open_it() -> None:
    _, public = devnet_style_key()
    other, _ = devnet_style_key()
    envelope = seal_envelope(GRANT, trace_root=ROOT, auditor=AUDITOR, recipient_key=public)
    with pytest.raises(VerificationError, match=AUTH):
        _open(other, envelope)


def test_tampered_truncated_and_foreign_envelopes_are_refused() -> None:
    private, public = devnet_style_key()
    envelope = seal_envelope(GRANT, trace_root=ROOT, auditor=AUDITOR, recipient_key=public)
    for position in (5, ENVELOPE_HEADER_BYTES, len(envelope) - 1):
        tampered = bytearray(envelope)
        tampered[position] ^= 0x01
        with pytest.raises(VerificationError, match=AUTH):
            _open(private, bytes(tampered))
    with pytest.raises(VerificationError, match="is truncated"):
        _open(private, envelope[:40])
    with pytest.raises(VerificationError, match=AUTH):
        _open(private, envelope[:-1])
    with pytest.raises(VerificationError, match="not a TRUST key envelope"):
        _open(private, b"TRSG" + envelope[4:])
    with pytest.raises(VerificationError, match="format version 9"):
        _open(private, envelope[:4] + b"\x09" + envelope[5:])
    with pytest.raises(VerificationError, match="above"):
        _open(private, envelope + bytes(300_000))


def test_an_unregistered_or_unusable_recipient_key_is_refused() -> None:
    with pytest.raises(VerificationError, match="has no encryption key registered"):
        seal_envelope(GRANT, trace_root=ROOT, auditor=AUDITOR, recipient_key=bytes(32))
    with pytest.raises(VerificationError, match="must be 32 bytes"):
        seal_envelope(GRANT, trace_root=ROOT, auditor=AUDITOR, recipient_key=b"\x01" * 31)
    # u = 1 is a point of small order: the shared secret would be all zeros.
    low_order = (1).to_bytes(32, "little")
    with pytest.raises(VerificationError, match="not a usable X25519 key"):
        seal_envelope(GRANT, trace_root=ROOT, auditor=AUDITOR, recipient_key=low_order)
    with pytest.raises(GraphError, match="auditor address"):
        seal_envelope(GRANT, trace_root=ROOT, auditor="0x1234", recipient_key=devnet_style_key()[1])


def test_a_grant_must_hold_its_own_nodes_key_first_and_each_node_once() -> None:
    with pytest.raises(GraphError, match="the trace id must be 32 bytes"):
        KeyGrant(b"\x07" * 16, 0, "s3", (segment_key("s3", 0, 0),))
    with pytest.raises(GraphError, match="the first segment key must be its own node's"):
        KeyGrant(TRACE_ID, 0, "s3", (segment_key("s2", 1, 0),))
    with pytest.raises(GraphError, match="the first segment key must be its own node's"):
        KeyGrant(TRACE_ID, 0, "s3", ())
    with pytest.raises(GraphError, match="names segment 2, not 0"):
        KeyGrant(TRACE_ID, 0, "s3", (segment_key("s3", 2, 0),))
    with pytest.raises(GraphError, match="a node appears twice"):
        KeyGrant(TRACE_ID, 0, "s3", (segment_key("s3", 0, 0), segment_key("s3", 1, 0)))
    with pytest.raises(GraphError, match="a segment appears twice"):
        KeyGrant(TRACE_ID, 0, "s3", (segment_key("s3", 0, 0), segment_key("s2", 0, 0)))


def test_a_segment_key_checks_its_fields() -> None:
    with pytest.raises(GraphError, match="the key is not 32 bytes"):
        SegmentKey("s3", 0, CID, b"\x01" * 32, b"\x00" * 16)
    with pytest.raises(GraphError, match="ciphertext digest is not 32 bytes"):
        SegmentKey("s3", 0, CID, b"\x01" * 31, b"\x00" * 32)
    with pytest.raises(GraphError, match="not-a-cid"):
        SegmentKey("s3", 0, "not-a-cid", b"\x01" * 32, b"\x00" * 32)
    with pytest.raises(GraphError, match="is not a non-negative integer"):
        SegmentKey("s3", -1, CID, b"\x01" * 32, b"\x00" * 32)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"node": "s3", "segment": 4, "cid": CID, "digest": "00" * 32}, "is not {node, segment, cid, digest, key}"),
        ({"node": "s3", "segment": "4", "cid": CID, "digest": "00" * 32, "key": "01" * 32}, "wrong type"),
        ({"node": "s3", "segment": 4, "cid": CID, "digest": "00" * 31, "key": "01" * 32}, "digest of node 's3'"),
        ({"node": "s3", "segment": 4, "cid": CID, "digest": "00" * 32, "key": "0A" * 32}, "key of node 's3'"),
        ({"node": "s3", "segment": 4, "cid": "Qm1", "digest": "00" * 32, "key": "01" * 32}, "Qm1"),
        ({"node": "s2", "segment": 4, "cid": CID, "digest": "00" * 32, "key": "01" * 32}, "its own node's"),
    ],
)
def test_a_malformed_payload_is_refused_after_authentication(entry: dict[str, object], message: str) -> None:
    """The sender is authenticated, but the payload is still checked field by field before use."""
    private, public = devnet_style_key()
    document = {"format": "trust.keys", "version": 1, "trace": "07" * 32, "segment": 4, "node": "s3", "keys": [entry]}
    forged = KeyGrant.__new__(KeyGrant)
    object.__setattr__(forged, "trace_id", TRACE_ID)
    object.__setattr__(forged, "segment_index", 4)
    object.__setattr__(forged, "node_id", "s3")
    object.__setattr__(forged, "segments", ())
    payload = json.dumps(document).encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(KeyGrant, "payload", lambda self: payload)
        envelope = seal_envelope(forged, trace_root=ROOT, auditor=AUDITOR, recipient_key=public)
    with pytest.raises(VerificationError, match=re.escape(message)):
        _open(private, envelope)


# ---------------------------------------------------------------- context-only keys (format version 2)

PROOF = (b"\x21" * 32, b"\x22" * 32, b"\x23" * 32)


def context_key(node_id: str, index: int, fill: int, proof: tuple[bytes, ...] = PROOF) -> SegmentKey:
    return SegmentKey(node_id, index, CID, bytes([fill + 100]) * 32, bytes([fill]) * 32, proof)


CONTEXT_GRANT = KeyGrant(TRACE_ID, 4, "s3", (segment_key("s3", 4, 3), context_key("u0", 6, 6)))


def _sealed_payload(document: dict[str, object], version: int, public: bytes) -> bytes:
    """An envelope of `version` around `document`, sealed for the seat of segment 4 as a provider would."""
    forged = KeyGrant.__new__(KeyGrant)
    for name, value in (("trace_id", TRACE_ID), ("segment_index", 4), ("node_id", "s3"), ("segments", ())):
        object.__setattr__(forged, name, value)
    payload = json.dumps(document).encode()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(KeyGrant, "payload", lambda self: payload)
        patch.setattr(KeyGrant, "format_version", version)
        return seal_envelope(forged, trace_root=ROOT, auditor=AUDITOR, recipient_key=public)


def test_a_grant_with_a_context_key_is_written_as_version_2_and_reads_back() -> None:
    private, public = devnet_style_key()
    envelope = seal_envelope(CONTEXT_GRANT, trace_root=ROOT, auditor=AUDITOR, recipient_key=public)
    assert envelope[:5] == b"TREV\x02" and CONTEXT_GRANT.format_version == ENVELOPE_VERSION == 2
    grant = _open(private, envelope)
    assert grant == CONTEXT_GRANT
    assert grant.segment("u0").proof == PROOF and grant.segment("u0").context
    assert grant.segment("s3").proof is None and not grant.segment("s3").context
    # Without a context key the grant is written exactly as before: version 1, which older readers open.
    assert GRANT.format_version == PLAIN_ENVELOPE_VERSION == 1
    assert "proof" not in GRANT.payload().decode() and b'"version":1' in GRANT.payload()
    # The version is bound into HPKE's info: relabelling it fails authentication.
    with pytest.raises(VerificationError, match=AUTH):
        _open(private, envelope[:4] + b"\x01" + envelope[5:])


def test_a_segment_key_entry_round_trips_and_is_read_strictly() -> None:
    for key in (segment_key("s3", 4, 3), context_key("u0", 6, 6)):
        assert SegmentKey.from_entry(key.entry()) == key
        assert SegmentKey.from_entry(json.loads(json.dumps(key.entry()))) == key
    with pytest.raises(GraphError, match=re.escape("is not {node, segment, cid, digest, key}")):
        SegmentKey.from_entry(context_key("u0", 6, 6).entry(), allow_proof=False)
    with pytest.raises(GraphError, match="not a list of 1 to 32 hashes"):
        SegmentKey.from_entry({**context_key("u0", 6, 6).entry(), "proof": []})
    with pytest.raises(GraphError, match="not a list of 1 to 32 hashes"):
        SegmentKey.from_entry({**context_key("u0", 6, 6).entry(), "proof": ["AB" * 32]})
    with pytest.raises(GraphError, match="not a list of 1 to 32 hashes"):
        SegmentKey.from_entry({**context_key("u0", 6, 6).entry(), "proof": ["ab" * 32] * 33})
    with pytest.raises(GraphError, match="a tuple of 1 to 32 hashes"):
        context_key("u0", 6, 6, proof=())
    with pytest.raises(GraphError, match="must be a 32-byte hash"):
        context_key("u0", 6, 6, proof=(b"\x01" * 31,))


def test_the_seats_own_key_never_carries_a_proof() -> None:
    with pytest.raises(GraphError, match="own node's key carries an inclusion proof"):
        KeyGrant(TRACE_ID, 6, "u0", (context_key("u0", 6, 6),))


@pytest.mark.parametrize(
    ("version", "document", "message"),
    [
        # A proof is a version-2 field: a version-1 payload that carries one is refused.
        (1, {"version": 1, "keys": [segment_key("s3", 4, 3).entry(), context_key("u0", 6, 6).entry()]}, "key entry"),
        # The payload's version must be the header's.
        (2, {"version": 1, "keys": [segment_key("s3", 4, 3).entry(), context_key("u0", 6, 6).entry()]}, "version 1"),
        (1, {"version": 2, "keys": [segment_key("s3", 4, 3).entry()]}, "expected 'trust.keys' 1"),
        (1, {"version": True, "keys": [segment_key("s3", 4, 3).entry()]}, "version True"),
        # The seat's own entry with a proof.
        (2, {"version": 2, "keys": [context_key("s3", 4, 3).entry()]}, "own node's key carries an inclusion proof"),
        (2, {"version": 2, "keys": [segment_key("s3", 4, 3).entry(), {"proof": ["ab" * 32]}]}, "key entry"),
    ],
)
def test_a_malformed_version_2_payload_is_refused(version: int, document: dict[str, object], message: str) -> None:
    private, public = devnet_style_key()
    full = {"format": "trust.keys", "trace": "07" * 32, "segment": 4, "node": "s3", **document}
    envelope = _sealed_payload(full, version, public)
    assert envelope[4] == version
    with pytest.raises(VerificationError, match=re.escape(message)):
        _open(private, envelope)


def test_a_grant_too_large_for_one_envelope_is_refused_when_sealing() -> None:
    _, public = devnet_style_key()
    deepest = tuple(bytes([i]) * 32 for i in range(MAX_PROOF_HASHES))
    parents = tuple(context_key(f"u{i}", 5 + i, i % 200, deepest) for i in range(120))
    grant = KeyGrant(TRACE_ID, 4, "s3", (segment_key("s3", 4, 3), *parents))
    assert len(grant.payload()) > MAX_ENVELOPE_BYTES
    with pytest.raises(GraphError, match="above the 262,144 a reader accepts"):
        seal_envelope(grant, trace_root=ROOT, auditor=AUDITOR, recipient_key=public)
    # A realistic grant: a turn with 20 context parents in a tree of 8,192 leaves (13-hash proofs).
    deep = tuple(bytes([i]) * 32 for i in range(13))
    typical = KeyGrant(
        TRACE_ID, 4, "s3", (segment_key("s3", 4, 3), *(context_key(f"u{i}", 5 + i, i, deep) for i in range(20)))
    )
    assert len(seal_envelope(typical, trace_root=ROOT, auditor=AUDITOR, recipient_key=public)) < 32 * 1024
