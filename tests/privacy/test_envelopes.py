"""Key envelopes: RFC 9180 HPKE to the auditor's registered X25519 key, bound to the seat."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from trust.errors import GraphError, VerificationError
from trust.privacy.envelopes import (
    ENVELOPE_HEADER_BYTES,
    KeyGrant,
    open_envelope,
    public_key_bytes,
    seal_envelope,
)

TRACE = bytes(32 * [7])
AUDITOR = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
OTHER_AUDITOR = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
GRANT = KeyGrant(4, "s3", {"s3": b"\x03" * 32, "s2": b"\x02" * 32, "g0": b"\x00" * 32})


def devnet_style_key(password: bytes = b"pw") -> tuple[X25519PrivateKey, bytes]:
    """A key made and stored the way `trust.devnet` does (encrypted PKCS#8 PEM), then loaded back."""
    pem = X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(password)
    )
    private = serialization.load_pem_private_key(pem, password)
    assert isinstance(private, X25519PrivateKey)
    return private, public_key_bytes(private)


def _open(private: X25519PrivateKey | bytes, envelope: bytes, **overrides: object) -> KeyGrant:
    context: dict[str, object] = {"trace_id": TRACE, "segment_index": 4, "node_id": "s3", "auditor": AUDITOR}
    context.update(overrides)
    return open_envelope(private, envelope, **context)  # type: ignore[arg-type]


def test_the_seated_auditor_opens_its_envelope() -> None:
    private, public = devnet_style_key()
    envelope = seal_envelope(GRANT, trace_id=TRACE, auditor=AUDITOR, recipient_key=public)
    assert envelope[:5] == b"TREV\x01"
    grant = _open(private, envelope)
    assert grant == GRANT
    assert list(grant.keys) == ["s3", "s2", "g0"]
    raw = private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    assert _open(raw, envelope) == GRANT
    # The address is bound as 20 bytes: its letter case does not matter.
    assert _open(private, envelope, auditor=AUDITOR.lower()) == GRANT
    assert b"\x03" * 32 not in envelope and b"s3" not in envelope[ENVELOPE_HEADER_BYTES:]


AUTH = "authentication failed: sealed to another key, for another seat, segment or trace, or tampered with"


@pytest.mark.parametrize(
    "overrides",
    [
        {"trace_id": bytes(32)},
        {"segment_index": 5},
        {"node_id": "s2"},
        {"auditor": OTHER_AUDITOR},
    ],
)
def test_an_envelope_opens_only_for_its_own_seat(overrides: dict[str, object]) -> None:
    private, public = devnet_style_key()
    envelope = seal_envelope(GRANT, trace_id=TRACE, auditor=AUDITOR, recipient_key=public)
    with pytest.raises(VerificationError, match=AUTH):
        _open(private, envelope, **overrides)


def test_another_auditors_private_key_cannot_open_it() -> None:
    _, public = devnet_style_key()
    other, _ = devnet_style_key()
    envelope = seal_envelope(GRANT, trace_id=TRACE, auditor=AUDITOR, recipient_key=public)
    with pytest.raises(VerificationError, match=AUTH):
        _open(other, envelope)


def test_tampered_truncated_and_foreign_envelopes_are_refused() -> None:
    private, public = devnet_style_key()
    envelope = seal_envelope(GRANT, trace_id=TRACE, auditor=AUDITOR, recipient_key=public)
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
        seal_envelope(GRANT, trace_id=TRACE, auditor=AUDITOR, recipient_key=bytes(32))
    with pytest.raises(VerificationError, match="must be 32 bytes"):
        seal_envelope(GRANT, trace_id=TRACE, auditor=AUDITOR, recipient_key=b"\x01" * 31)
    # u = 1 is a point of small order: the shared secret would be all zeros.
    low_order = (1).to_bytes(32, "little")
    with pytest.raises(VerificationError, match="not a usable X25519 key"):
        seal_envelope(GRANT, trace_id=TRACE, auditor=AUDITOR, recipient_key=low_order)
    with pytest.raises(GraphError, match="auditor address"):
        seal_envelope(GRANT, trace_id=TRACE, auditor="0x1234", recipient_key=devnet_style_key()[1])


def test_a_grant_must_hold_its_own_nodes_key() -> None:
    with pytest.raises(GraphError, match="holds no key for its own node 's3'"):
        KeyGrant(0, "s3", {"s2": b"\x00" * 32})
    with pytest.raises(GraphError, match="is not 32 bytes"):
        KeyGrant(0, "s3", {"s3": b"\x00" * 16})
