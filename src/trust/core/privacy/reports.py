"""Audit reports: what a seat found, sealed to the provider's reply key after the seat revealed.

The chain carries one boolean per seat; the provider needs each seat's reasons to localize root
causes (paper Algorithm 1) and to refine the trace: the critique, the error type, the expected
value, the score, and how long the evaluation took. A report carries them from the auditor to the
provider, and to nobody else: it is sealed to the per-session X25519 *reply key* the provider put
into every key grant (`KeyGrant.reply_key`), stored on IPFS, and its CID announced on chain
(`SegmentKeys.publishReports`) once the seat's vote is revealed, so a report never tells a vote
before the commit window has closed.

Sealing is RFC 9180 HPKE exactly as for key envelopes (`trust.core.privacy.envelopes`): base mode,
single shot, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM. Report format, version 1:

    offset  size  field
    0       4     magic b"TRRP"
    4       1     format version (1)
    5       32    enc: the sender's ephemeral X25519 public key (HPKE)
    37      n+16  AES-256-GCM ciphertext of the n-byte payload, then the tag (HPKE)

HPKE `info` (binds the report to its seat; the provider recomputes it from what it reads on chain):

    b"trust.report" || version || trace root (32) || session id (uint256, big-endian)
    || segment index (uint256) || round (uint8) || seat index (uint8) || auditor address (20)
    || recipient public key (32)

A report copied to another seat, round, segment, session or trace, or claimed by another auditor,
fails to open. Anyone can upload a blob and announce it for their own seat; only the holder of the
seat's wallet can announce it (the contract checks the seat), and only the reply key's holder can
read it.

Payload: canonical JSON, ASCII, no whitespace, keys in this order (any other spelling of the same
document is refused, so one report has one encoding):

    {"format":"trust.report","version":1,"session":<int>,"segment":<int>,"round":<int>,"seat":<int>,
     "auditor":"0x<40 lowercase hex>","tier":<1|2|3>,"vote":"pass"|"fail"|"not_applicable",
     "score":<float in [0, 1]>,"critique":"<text>","error_type":"<ErrorType>"|null,
     "expected":"<text>"|null,"started_at":<float>,"finished_at":<float>}

`score`, `started_at` and `finished_at` are JSON numbers with a fraction or exponent (Python's
float repr); times are unix seconds of the evaluation's wall clock. The critique holds at most
`MAX_CRITIQUE_BYTES` of UTF-8, `expected` at most `MAX_EXPECTED_BYTES`; a whole report at most
`MAX_REPORT_BYTES` (which fits the worst case of both, JSON-escaped). `clip_text` shortens a longer
critique before sealing.

Pure: no I/O. HPKE draws its ephemeral key inside `cryptography`, so a report is not reproducible
byte for byte; tests check round trips and rejections.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hpke
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from trust.core.graphs.refinement import ErrorType
from trust.core.privacy.envelopes import PUBLIC_KEY_BYTES, TRACE_ROOT_BYTES, address_bytes, public_key_bytes
from trust.errors import GraphError, ParameterError, VerificationError

__all__ = [
    "MAX_CRITIQUE_BYTES",
    "MAX_EXPECTED_BYTES",
    "MAX_REPORT_BYTES",
    "REPORT_FORMAT",
    "REPORT_HEADER_BYTES",
    "REPORT_MAGIC",
    "REPORT_VERSION",
    "VOTES",
    "AuditReport",
    "clip_text",
    "open_report",
    "report_info",
    "seal_report",
]

REPORT_MAGIC = b"TRRP"
REPORT_VERSION = 1
REPORT_FORMAT = "trust.report"
REPORT_HEADER_BYTES = len(REPORT_MAGIC) + 1 + PUBLIC_KEY_BYTES
MAX_CRITIQUE_BYTES = 8 * 1024
"""Longest critique, in UTF-8 bytes: a page of text; the tier-2 judge writes at most 300 characters."""
MAX_EXPECTED_BYTES = 1024
"""Longest expected value, in UTF-8 bytes (a number, an expression, a short answer)."""
MAX_REPORT_BYTES = 64 * 1024
"""Largest report blob: the worst JSON escaping of both texts (six bytes per byte of control
characters) plus the other fields, the header and the tag fit under it."""
VOTES: tuple[str, ...] = ("pass", "fail", "not_applicable")
"""The votes a report may carry (`trust.auditors.base.Outcome` values). Only a revealed seat
reports, so in practice pass or fail."""

_UINT8 = 2**8
_UINT256 = 2**256
_TIERS = (1, 2, 3)
_TAG_BYTES = 16
_INFO_LABEL = b"trust.report"
_SUITE = hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM)
_ADDRESS = re.compile(r"^0x[0-9a-f]{40}$")
_FIELDS = (
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
)
_ERROR_TYPES = frozenset(e.value for e in ErrorType)
_ELLIPSIS = "..."

Vote = Literal["pass", "fail", "not_applicable"]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class AuditReport:
    """One seat's findings on its segment, as its auditor reports them to the provider.

    `session_id`, `segment_index`, `round` and `seat_index` name the seat on chain (round and seat
    are uint8 there), `auditor` its 0x address. `vote` is what the seat voted ("pass" or "fail"
    for a revealed seat), `score` the auditor's confidence in [0, 1], `critique` its reasons,
    `error_type` the kind of mistake (an `ErrorType` value, only with a "fail" vote) and
    `expected` the correct value where the auditor knows it. `tier` is the seat's auditor tier;
    `started_at` and `finished_at` bound the evaluation in unix seconds of the auditor's clock.
    """

    session_id: int
    segment_index: int
    round: int
    seat_index: int
    auditor: str
    vote: Vote
    score: float
    critique: str
    error_type: str | None
    expected: str | None
    tier: int
    started_at: float
    finished_at: float

    def __post_init__(self) -> None:
        seat = f"report of seat {self.seat_index!r} on segment {self.segment_index!r}"
        for name, bound in (("session_id", _UINT256), ("segment_index", _UINT256), ("round", _UINT8)):
            value = getattr(self, name)
            if not _is_int(value) or not 0 <= value < bound:
                raise ParameterError(f"{seat}: {name} {value!r} is not an integer in [0, {bound})")
        if not _is_int(self.seat_index) or not 0 <= self.seat_index < _UINT8:
            raise ParameterError(f"{seat}: the seat index is not an integer in [0, 256)")
        if not isinstance(self.auditor, str) or not _ADDRESS.match(self.auditor.lower()):
            raise ParameterError(f"{seat}: auditor {self.auditor!r} is not 0x and 40 hex digits")
        if self.vote not in VOTES:
            raise ParameterError(f"{seat}: vote {self.vote!r} is not one of {', '.join(VOTES)}")
        if not _is_int(self.tier) or self.tier not in _TIERS:
            raise ParameterError(f"{seat}: tier {self.tier!r} is not 1, 2 or 3")
        if not isinstance(self.score, float) or not 0.0 <= self.score <= 1.0:
            raise ParameterError(f"{seat}: score {self.score!r} is not a float in [0, 1]")
        self._check_text("critique", self.critique, MAX_CRITIQUE_BYTES, seat)
        if self.expected is not None:
            self._check_text("expected", self.expected, MAX_EXPECTED_BYTES, seat)
        if self.error_type is not None:
            if self.error_type not in _ERROR_TYPES:
                raise ParameterError(
                    f"{seat}: error type {self.error_type!r} is not one of {', '.join(sorted(_ERROR_TYPES))}"
                )
            if self.vote != "fail":
                raise ParameterError(f"{seat}: only a fail vote names an error type (the vote is {self.vote!r})")
        for name in ("started_at", "finished_at"):
            value = getattr(self, name)
            if not isinstance(value, float) or not math.isfinite(value) or value < 0:
                raise ParameterError(f"{seat}: {name} {value!r} is not a finite float of unix seconds")
        if self.finished_at < self.started_at:
            raise ParameterError(
                f"{seat}: the evaluation finished at {self.finished_at} before it started at {self.started_at}"
            )

    @staticmethod
    def _check_text(name: str, value: object, limit: int, seat: str) -> None:
        if not isinstance(value, str):
            raise ParameterError(f"{seat}: {name} is {type(value).__name__}, not text")
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise ParameterError(f"{seat}: {name} holds a lone surrogate, which is not UTF-8") from None
        if size > limit:
            raise ParameterError(
                f"{seat}: {name} is {size:,} bytes of UTF-8, above {limit:,}; shorten it (clip_text) first"
            )

    def payload(self) -> bytes:
        """The canonical JSON payload (see the module docstring)."""
        document = {
            "format": REPORT_FORMAT,
            "version": REPORT_VERSION,
            "session": self.session_id,
            "segment": self.segment_index,
            "round": self.round,
            "seat": self.seat_index,
            "auditor": self.auditor.lower(),
            "tier": self.tier,
            "vote": self.vote,
            "score": self.score,
            "critique": self.critique,
            "error_type": self.error_type,
            "expected": self.expected,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }
        return json.dumps(document, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")


def clip_text(text: str, max_bytes: int = MAX_CRITIQUE_BYTES) -> str:
    """`text` cut to at most `max_bytes` of UTF-8 on a character boundary, ending in "..." when cut.

    Lone surrogates (not UTF-8) become "?", so the result always encodes."""
    if max_bytes < len(_ELLIPSIS):
        raise ParameterError(f"max_bytes must be at least {len(_ELLIPSIS)}, got {max_bytes}")
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) <= max_bytes:
        return encoded.decode("utf-8")
    return encoded[: max_bytes - len(_ELLIPSIS)].decode("utf-8", errors="ignore") + _ELLIPSIS


def report_info(
    trace_root: bytes,
    session_id: int,
    segment_index: int,
    round: int,
    seat_index: int,
    auditor: str,
    recipient_key: bytes,
) -> bytes:
    """The HPKE `info` string of a seat's report (see the module docstring)."""
    if not isinstance(trace_root, bytes) or len(trace_root) != TRACE_ROOT_BYTES:
        raise ParameterError(f"trace root: expected {TRACE_ROOT_BYTES} bytes (the session's Merkle root)")
    for name, value, bound in (
        ("session id", session_id, _UINT256),
        ("segment index", segment_index, _UINT256),
        ("round", round, _UINT8),
        ("seat index", seat_index, _UINT8),
    ):
        if not _is_int(value) or not 0 <= value < bound:
            raise ParameterError(f"{name} {value!r}: expected an integer in [0, {bound})")
    return (
        _INFO_LABEL
        + bytes([REPORT_VERSION])
        + trace_root
        + session_id.to_bytes(32, "big")
        + segment_index.to_bytes(32, "big")
        + bytes([round, seat_index])
        + address_bytes(auditor)
        + recipient_key
    )


def seal_report(report: AuditReport, *, trace_root: bytes, recipient_key: bytes) -> bytes:
    """Seals `report` to the provider's reply key `recipient_key` (32 raw bytes, `KeyGrant.reply_key`)
    for the session whose trace root is `trace_root`."""
    seat = f"report of seat {report.seat_index} on segment {report.segment_index}"
    if not isinstance(recipient_key, bytes) or len(recipient_key) != PUBLIC_KEY_BYTES:
        raise VerificationError(f"{seat}: the reply key must be {PUBLIC_KEY_BYTES} raw bytes of an X25519 key")
    info = report_info(
        trace_root,
        report.session_id,
        report.segment_index,
        report.round,
        report.seat_index,
        report.auditor,
        recipient_key,
    )
    try:
        sealed = _SUITE.encrypt(report.payload(), X25519PublicKey.from_public_bytes(recipient_key), info=info)
    except ValueError as exc:
        # A low-order point gives an all-zero shared secret, which X25519 refuses.
        raise VerificationError(
            f"{seat}: reply key 0x{recipient_key.hex()} is not a usable X25519 key ({exc})"
        ) from None
    return REPORT_MAGIC + bytes([REPORT_VERSION]) + sealed


def open_report(
    blob: bytes,
    *,
    private_key: X25519PrivateKey | bytes,
    trace_root: bytes,
    session_id: int,
    segment_index: int,
    round: int,
    seat_index: int,
    auditor: str,
) -> AuditReport:
    """The report of one seat, opened with the provider's reply key (an object or its 32 raw bytes).

    The seat (session, segment, round, index) and `auditor` are what the chain announced the
    report for (`ReportPublished`), `trace_root` the session's. Raises `VerificationError` naming
    the seat: a blob that is too small or too large, of another format or version; one sealed to
    another key or for another seat, round, segment, session, trace or auditor, or tampered with;
    a payload that is not the canonical document, names another seat, or holds a field out of its
    domain or above its size cap.
    """
    where = f"report of seat {seat_index} on segment {segment_index}, round {round}, session {session_id} ({auditor})"
    if isinstance(private_key, bytes):
        if len(private_key) != PUBLIC_KEY_BYTES:
            raise VerificationError(f"{where}: the reply key must be 32 raw bytes, got {len(private_key)}")
        private_key = X25519PrivateKey.from_private_bytes(private_key)
    if not isinstance(blob, bytes):
        raise VerificationError(f"{where}: expected bytes, got {type(blob).__name__}")
    if len(blob) < REPORT_HEADER_BYTES + _TAG_BYTES:
        raise VerificationError(f"{where}: {len(blob)} bytes is truncated; nothing was decrypted")
    if len(blob) > MAX_REPORT_BYTES:
        raise VerificationError(f"{where}: {len(blob):,} bytes, above {MAX_REPORT_BYTES:,}; nothing was decrypted")
    if blob[: len(REPORT_MAGIC)] != REPORT_MAGIC:
        raise VerificationError(f"{where}: starts with {blob[:4]!r}, not {REPORT_MAGIC!r}: not a TRUST audit report")
    if blob[len(REPORT_MAGIC)] != REPORT_VERSION:
        raise VerificationError(f"{where}: format version {blob[4]}, this reader knows only {REPORT_VERSION}")
    try:
        info = report_info(
            trace_root, session_id, segment_index, round, seat_index, auditor, public_key_bytes(private_key)
        )
    except (ParameterError, GraphError) as exc:
        raise VerificationError(f"{where}: {exc}") from None
    try:
        payload = _SUITE.decrypt(blob[len(REPORT_MAGIC) + 1 :], private_key, info=info)
    except (InvalidTag, ValueError):
        raise VerificationError(
            f"{where}: authentication failed: sealed to another reply key, for another seat, round, segment, "
            "session, trace or auditor, or tampered with"
        ) from None
    report = _parse_payload(payload, where)
    expected = (session_id, segment_index, round, seat_index, auditor.lower())
    found = (report.session_id, report.segment_index, report.round, report.seat_index, report.auditor.lower())
    if found != expected:
        raise VerificationError(f"{where}: the payload names (session, segment, round, seat, auditor) {found}")
    return AuditReport(
        session_id,
        segment_index,
        round,
        seat_index,
        auditor,
        report.vote,
        report.score,
        report.critique,
        report.error_type,
        report.expected,
        report.tier,
        report.started_at,
        report.finished_at,
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_payload(payload: bytes, where: str) -> AuditReport:
    try:
        data: Any = json.loads(payload.decode("ascii"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError):
        raise VerificationError(f"{where}: the payload is not ASCII JSON") from None
    if not isinstance(data, dict) or tuple(data) != _FIELDS:
        raise VerificationError(f"{where}: the payload is not a {REPORT_FORMAT} document with fields {_FIELDS}")
    if data["format"] != REPORT_FORMAT or data["version"] != REPORT_VERSION or not _is_int(data["version"]):
        raise VerificationError(f"{where}: payload format {data['format']!r} version {data['version']!r}")
    try:
        report = AuditReport(
            data["session"],
            data["segment"],
            data["round"],
            data["seat"],
            data["auditor"],
            cast(Vote, data["vote"]),
            data["score"],
            data["critique"],
            data["error_type"],
            data["expected"],
            data["tier"],
            data["started_at"],
            data["finished_at"],
        )
    except ParameterError as exc:
        raise VerificationError(f"{where}: {exc}") from None
    if report.payload() != payload:
        raise VerificationError(f"{where}: the payload is not in canonical form (key order, spacing, number forms)")
    return report
