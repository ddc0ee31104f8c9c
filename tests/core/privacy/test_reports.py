"""Audit reports: a seat's findings sealed to the provider's reply key (RFC 9180 HPKE), bound to the seat;
and the reply key carried in key grants."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from cryptography.hazmat.primitives import hpke
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.core.cid import unixfs_cid
from trust.core.decompose.rules import from_steps
from trust.core.privacy import Seat, grant_for, open_envelope, plan_envelopes, public_key_bytes, seal_envelope
from trust.core.privacy.envelopes import KeyGrant, SegmentKey
from trust.core.privacy.reports import (
    MAX_CRITIQUE_BYTES,
    MAX_EXPECTED_BYTES,
    MAX_REPORT_BYTES,
    REPORT_HEADER_BYTES,
    AuditReport,
    clip_text,
    open_report,
    report_info,
    seal_report,
)
from trust.errors import GraphError, ParameterError, VerificationError

ROOT = bytes(32 * [9])
TRACE_ID = bytes(32 * [7])
AUDITOR = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
OTHER_AUDITOR = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
SEAT = {"session_id": 5, "segment_index": 3, "round": 1, "seat_index": 2, "auditor": AUDITOR}
REPORT = AuditReport(
    session_id=5,
    segment_index=3,
    round=1,
    seat_index=2,
    auditor=AUDITOR,
    vote="fail",
    score=0.0,
    critique="[factual] wrong product: 17 * 23 = 409, but 17 * 23 = 391",
    error_type="factual",
    expected="391",
    tier=1,
    started_at=1_700_000_000.25,
    finished_at=1_700_000_001.5,
)
_SUITE = hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM)


@pytest.fixture(scope="module")
def reply() -> X25519PrivateKey:
    return X25519PrivateKey.generate()


def _seal(report: AuditReport, reply: X25519PrivateKey) -> bytes:
    return seal_report(report, trace_root=ROOT, recipient_key=public_key_bytes(reply))


def _open(blob: bytes, reply: X25519PrivateKey | bytes, **overrides: object) -> AuditReport:
    context: dict[str, object] = {"trace_root": ROOT, **SEAT}
    context.update(overrides)
    return open_report(blob, private_key=reply, **context)  # type: ignore[arg-type]


def _seal_payload(payload: bytes, reply: X25519PrivateKey, **seat: object) -> bytes:
    """A report blob around any payload, sealed correctly for the seat (what a buggy or hostile
    sender can produce): only the payload checks can refuse it."""
    where: dict[str, object] = {**SEAT, **seat}
    info = report_info(ROOT, recipient_key=public_key_bytes(reply), **where)  # type: ignore[arg-type]
    return b"TRRP\x01" + _SUITE.encrypt(payload, reply.public_key(), info=info)


# ------------------------------------------------------------------ round trips


def test_the_provider_opens_the_report_of_a_seat(reply: X25519PrivateKey) -> None:
    blob = _seal(REPORT, reply)
    assert blob[:5] == b"TRRP\x01" and len(blob) < 1024
    assert _open(blob, reply) == REPORT
    # The raw private key works as well as the object, and the auditor's letter case does not matter.
    raw = reply.private_bytes_raw()
    assert _open(blob, raw, auditor=AUDITOR.lower()).critique == REPORT.critique
    assert _open(blob, raw, auditor=AUDITOR.lower()).auditor == AUDITOR.lower()
    # The payload is the canonical document, in this order.
    document = json.loads(REPORT.payload())
    assert list(document) == [
        "format",
        "version",
        "session",
        "segment",
        "round",
        "seat",
        "auditor",
        "tier",
        "vote",
        "score",
        "critique",
        "error_type",
        "expected",
        "started_at",
        "finished_at",
    ]
    assert document["auditor"] == AUDITOR.lower() and document["score"] == 0.0


def test_a_passing_report_without_error_type_or_expected_value(reply: X25519PrivateKey) -> None:
    passing = dataclasses.replace(REPORT, vote="pass", score=1.0, critique="holds", error_type=None, expected=None)
    assert _open(_seal(passing, reply), reply) == passing
    abstaining = dataclasses.replace(passing, vote="not_applicable", score=0.5, critique="no claim to check")
    assert _open(_seal(abstaining, reply), reply).vote == "not_applicable"


@settings(max_examples=60, deadline=None)
@given(
    critique=st.text(max_size=300).map(clip_text),
    expected=st.none() | st.text(max_size=100).map(lambda t: clip_text(t, MAX_EXPECTED_BYTES)),
    score=st.floats(0.0, 1.0),
    started=st.floats(0.0, 2e9),
    took=st.floats(0.0, 1e4),
    seat=st.tuples(st.integers(0, 2**256 - 1), st.integers(0, 2**256 - 1), st.integers(0, 255), st.integers(0, 255)),
)
def test_any_report_round_trips(
    critique: str, expected: str | None, score: float, started: float, took: float, seat: tuple[int, int, int, int]
) -> None:
    reply = X25519PrivateKey.generate()
    session_id, segment_index, round_id, seat_index = seat
    report = AuditReport(
        session_id, segment_index, round_id, seat_index, OTHER_AUDITOR, "pass", score, critique, None, expected, 2,
        started, started + took,
    )  # fmt: skip
    blob = _seal(report, reply)
    opened = _open(
        blob,
        reply,
        session_id=session_id,
        segment_index=segment_index,
        round=round_id,
        seat_index=seat_index,
        auditor=OTHER_AUDITOR,
    )
    assert opened == report


# ------------------------------------------------------------------ bindings


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("trace_root", bytes(32 * [8])),
        ("session_id", 6),
        ("segment_index", 4),
        ("round", 0),
        ("seat_index", 1),
        ("auditor", OTHER_AUDITOR),
    ],
)
def test_a_report_opens_only_for_its_own_seat(reply: X25519PrivateKey, field: str, value: object) -> None:
    blob = _seal(REPORT, reply)
    named = {**SEAT, field: value}
    where = (
        f"report of seat {named['seat_index']} on segment {named['segment_index']}, round {named['round']}, "
        f"session {named['session_id']}"
    )
    with pytest.raises(VerificationError, match=re.escape(where) + ".*authentication failed"):
        _open(blob, reply, **{field: value})


def test_a_report_opens_only_with_the_reply_key_it_was_sealed_to(reply: X25519PrivateKey) -> None:
    blob = _seal(REPORT, reply)
    with pytest.raises(VerificationError, match="authentication failed: sealed to another reply key"):
        _open(blob, X25519PrivateKey.generate())


def test_a_payload_naming_another_seat_is_refused_even_when_sealed_for_this_one(reply: X25519PrivateKey) -> None:
    other = dataclasses.replace(REPORT, seat_index=0)
    with pytest.raises(VerificationError, match=r"report of seat 2 .*the payload names .* \(5, 3, 1, 0, "):
        _open(_seal_payload(other.payload(), reply), reply)


# ------------------------------------------------------------------ tampering and format


def test_every_flipped_byte_is_detected(reply: X25519PrivateKey) -> None:
    blob = _seal(REPORT, reply)
    for position in range(len(blob)):
        tampered = bytearray(blob)
        tampered[position] ^= 0x01
        with pytest.raises(VerificationError, match="report of seat 2"):
            _open(bytes(tampered), reply)


def test_truncated_oversized_foreign_and_future_blobs_are_refused(reply: X25519PrivateKey) -> None:
    blob = _seal(REPORT, reply)
    with pytest.raises(VerificationError, match="is truncated"):
        _open(blob[: REPORT_HEADER_BYTES + 15], reply)
    with pytest.raises(VerificationError, match="authentication failed"):
        _open(blob[:-1], reply)
    with pytest.raises(VerificationError, match=f"above {MAX_REPORT_BYTES:,}; nothing was decrypted"):
        _open(blob + bytes(MAX_REPORT_BYTES), reply)
    with pytest.raises(VerificationError, match="not a TRUST audit report"):
        _open(b"TREV" + blob[4:], reply)
    with pytest.raises(VerificationError, match="format version 2, this reader knows only 1"):
        _open(blob[:4] + b"\x02" + blob[5:], reply)
    with pytest.raises(VerificationError, match="expected bytes"):
        _open(bytearray(blob), reply)  # type: ignore[arg-type]


def _document(**changes: object) -> dict[str, object]:
    document: dict[str, object] = json.loads(REPORT.payload())
    document.update(changes)
    return document


def _compact(document: object) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode("ascii")


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (json.dumps(_document()).encode(), "not in canonical form"),  # spaces after separators
        (_compact(dict(reversed(list(_document().items())))), "is not a trust.report document"),
        (_compact(_document(score=0)), "score 0 is not a float"),
        (_compact(_document(session=True)), "session_id True is not an integer"),
        (_compact(_document(score=1.5)), r"score 1.5 is not a float in \[0, 1\]"),
        (REPORT.payload().replace(b'"score":0.0', b'"score":NaN'), "not ASCII JSON"),
        (REPORT.payload().replace(b'"score":0.0', b'"score":0.00'), "not in canonical form"),
        (REPORT.payload().replace(b'"started_at":1700000000.25', b'"started_at":1.70000000025e9'), "canonical"),
        (REPORT.payload()[:-1] + b',"extra":1}', "is not a trust.report document"),
        (REPORT.payload()[:-1] + b',"finished_at":2e9}', "not in canonical form"),  # a duplicate key
        (_compact(_document(format="trust.keys")), "payload format 'trust.keys' version 1"),
        (_compact(_document(version=2)), "payload format 'trust.report' version 2"),
        (_compact(_document(auditor=AUDITOR)), "not in canonical form"),  # mixed case
        (_compact(_document(vote="maybe")), "vote 'maybe' is not one of pass, fail, not_applicable"),
        (_compact(_document(error_type="typo")), "error type 'typo' is not one of"),
        (_compact(_document(vote="pass")), "only a fail vote names an error type"),
        (_compact(_document(tier=4)), "tier 4 is not 1, 2 or 3"),
        (_compact(_document(finished_at=1.0)), "finished at 1.0 before it started"),
        (_compact(_document(critique=None)), "critique is NoneType, not text"),
        (_compact(_document(critique="x" * (MAX_CRITIQUE_BYTES + 1))), "critique is 8,193 bytes of UTF-8"),
        (_compact(_document(expected="9" * (MAX_EXPECTED_BYTES + 1))), "expected is 1,025 bytes of UTF-8"),
        ("caf\u00e9".encode(), "not ASCII JSON"),
        (b"[1, 2]", "is not a trust.report document"),
    ],
)
def test_a_payload_other_than_the_canonical_document_is_refused(
    reply: X25519PrivateKey, payload: bytes, message: str
) -> None:
    with pytest.raises(VerificationError, match=r"report of seat 2 on segment 3, round 1, session 5 .*" + message):
        _open(_seal_payload(payload, reply), reply)


# ------------------------------------------------------------------ size caps and fields


def test_the_critique_cap_and_clip_text() -> None:
    long = "\u00e9" * MAX_CRITIQUE_BYTES  # two bytes each in UTF-8
    with pytest.raises(ParameterError, match="critique is 16,384 bytes of UTF-8, above 8,192; shorten it"):
        dataclasses.replace(REPORT, critique=long)
    clipped = clip_text(long)
    assert len(clipped.encode()) <= MAX_CRITIQUE_BYTES and clipped.endswith("...")
    assert clipped[:-3] == "\u00e9" * ((MAX_CRITIQUE_BYTES - 3) // 2)  # cut on a character boundary
    assert clip_text("short") == "short"
    assert clip_text("a\ud800b") == "a?b"  # a lone surrogate is not UTF-8
    with pytest.raises(ParameterError, match="lone surrogate"):
        dataclasses.replace(REPORT, critique="a\ud800b")
    with pytest.raises(ParameterError, match="max_bytes must be at least 3"):
        clip_text("abc", 2)


def test_the_largest_report_fits_the_blob_cap(reply: X25519PrivateKey) -> None:
    # Control characters cost six bytes each in JSON: the worst case of both texts at their caps.
    worst = dataclasses.replace(REPORT, critique="\x01" * MAX_CRITIQUE_BYTES, expected="\x02" * MAX_EXPECTED_BYTES)
    blob = _seal(worst, reply)
    assert len(blob) <= MAX_REPORT_BYTES
    assert _open(blob, reply) == worst


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"vote": "yes"}, "vote 'yes'"),
        ({"score": 1}, "score 1 is not a float"),
        ({"score": -0.1}, "score -0.1"),
        ({"error_type": "logical", "vote": "pass"}, "only a fail vote names an error type"),
        ({"round": 256}, r"round 256 is not an integer in \[0, 256\)"),
        ({"seat_index": -1}, "the seat index is not an integer"),
        ({"session_id": 2**256}, "session_id"),
        ({"auditor": "alice"}, "auditor 'alice' is not 0x and 40 hex digits"),
        ({"tier": 0}, "tier 0"),
        ({"started_at": float("inf")}, "started_at inf is not a finite float"),
        ({"finished_at": 1.0}, "finished at 1.0 before it started"),
        ({"expected": 391}, "expected is int, not text"),
    ],
)
def test_a_report_field_out_of_its_domain_is_refused(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        dataclasses.replace(REPORT, **changes)  # type: ignore[arg-type]


def test_sealing_refuses_a_reply_key_that_is_not_one(reply: X25519PrivateKey) -> None:
    with pytest.raises(VerificationError, match="the reply key must be 32 raw bytes"):
        seal_report(REPORT, trace_root=ROOT, recipient_key=b"\x01" * 31)
    with pytest.raises(VerificationError, match="is not a usable X25519 key"):
        seal_report(REPORT, trace_root=ROOT, recipient_key=bytes(32))  # a low-order point
    with pytest.raises(ParameterError, match="trace root: expected 32 bytes"):
        seal_report(REPORT, trace_root=b"\x01", recipient_key=public_key_bytes(reply))
    with pytest.raises(VerificationError, match="the reply key must be 32 raw bytes, got 3"):
        _open(_seal(REPORT, reply), b"abc")


# ------------------------------------------------------------------ the reply key in key grants


def _segment(node_id: str, index: int) -> SegmentKey:
    return SegmentKey(node_id, index, unixfs_cid(node_id.encode()), bytes([index + 1]) * 32, bytes([index]) * 32)


def test_a_grant_carries_the_reply_key_or_none() -> None:
    auditor = X25519PrivateKey.generate()
    reply_key = public_key_bytes(X25519PrivateKey.generate())
    segments = (_segment("s1", 1), _segment("g0", 0))
    with_reply = KeyGrant(TRACE_ID, 1, "s1", segments, reply_key)
    without = KeyGrant(TRACE_ID, 1, "s1", segments)
    assert without.reply_key is None
    assert json.loads(with_reply.payload())["reply"] == reply_key.hex()
    assert "reply" not in json.loads(without.payload())  # the version-1 payload of before
    for grant in (with_reply, without):
        envelope = seal_envelope(grant, trace_root=ROOT, auditor=AUDITOR, recipient_key=public_key_bytes(auditor))
        opened = open_envelope(auditor, envelope, trace_root=ROOT, segment_index=1, auditor=AUDITOR)
        assert opened == grant and opened.reply_key == grant.reply_key
    for bad in (b"\x01" * 31, bytes(32), "ab" * 32):
        with pytest.raises(GraphError, match="the reply key must be 32 raw bytes"):
            KeyGrant(TRACE_ID, 1, "s1", segments, bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("reply_value", ["AB" * 32, "ab" * 31, "00" * 32, 7])
def test_an_envelope_with_a_malformed_reply_key_is_refused(reply_value: object) -> None:
    auditor = X25519PrivateKey.generate()
    grant = KeyGrant(TRACE_ID, 1, "s1", (_segment("s1", 1), _segment("g0", 0)))
    document = json.loads(grant.payload())
    document["reply"] = reply_value
    payload = _compact(document)
    info = b"trust.envelope\x01" + ROOT + (1).to_bytes(32, "big") + bytes.fromhex(AUDITOR[2:])
    info += public_key_bytes(auditor)
    envelope = b"TREV\x01" + _SUITE.encrypt(payload, auditor.public_key(), info=info)
    with pytest.raises(VerificationError, match="the reply key is not 64 lowercase hex digits"):
        open_envelope(auditor, envelope, trace_root=ROOT, segment_index=1, auditor=AUDITOR)


def test_grant_for_and_plan_envelopes_pass_the_reply_key_through() -> None:
    hdag = from_steps("What is 17 * 23?", ["17 * 23 = 391"])
    segments = [_segment(node.id, i) for i, node in enumerate(hdag.nodes())]
    by_node = {s.node_id: s for s in segments}
    reply_key = public_key_bytes(X25519PrivateKey.generate())
    assert grant_for(hdag, "s1", TRACE_ID, by_node, reply_key=reply_key).reply_key == reply_key
    assert grant_for(hdag, "s1", TRACE_ID, by_node).reply_key is None
    seats = [Seat(i, AUDITOR, public_key_bytes(X25519PrivateKey.generate())) for i in range(len(segments))][:1]
    (plan,) = plan_envelopes(hdag, TRACE_ID, segments, seats, reply_key=reply_key)
    assert plan.grant.reply_key == reply_key
    (plain,) = plan_envelopes(hdag, TRACE_ID, segments, seats)
    assert plain.grant.reply_key is None
