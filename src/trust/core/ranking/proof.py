"""The arena's "Proof of Truth" (the arena document, Part III): a SHA-256 hash of each cross-validation
and a hash chain over them, so that a changed, dropped or reordered record is detected.

- `proof_hash(battle)`: SHA-256 over the fields Part III lists: battle_id, question, the four
  responses M1..M4, weights_applied, user_signal, refined_answer and timestamp.
- The chain: link_0 = SHA256(b"") (`GENESIS_LINK`), link_i = SHA256(link_(i-1) || proof_hash_i) over
  the raw 32-byte digests (`chain_link`). Each `ProofRecord` carries its battle, its proof hash and its
  link; `append_record` extends a chain, `build_chain` makes one.
- `verify_chain(records)` replays the chain and reports the first bad index.

Where the document is vague or wrong, and what we chose:

- Part III prints proof_hash = SHA256(battle_id + question + M1..M4 responses + weights_applied +
  user_signal + refined_answer + timestamp). Plain concatenation is ambiguous: "ab" + "c" and
  "a" + "bc" hash the same, so a record could be altered (text moved from the question to a response)
  without changing its hash. We hash the canonical JSON of the fields instead: one object with the
  keys battle_id, question, responses (a list of 4), weights_applied, user_signal, refined_answer and
  timestamp, keys sorted, no whitespace (separators "," and ":"), non-ASCII written as UTF-8
  (ensure_ascii off), NaN and infinities refused, encoded as UTF-8. Numbers are written as Python's
  json writes them (shortest repr of a float, so 1.0 stays "1.0"): a verifier in another language must
  write floats the same way, or the caller can pass weights as strings or integers.
- The example hash the document prints, e3b0c442...b855, is SHA-256 of the empty string: we use it as
  the chain's genesis link.
- The document hashes each record on its own. A record's hash alone cannot show that a record was
  dropped or that two were swapped; the chain can. Dropping the last records leaves a shorter chain
  that is still consistent: compare its head with a head anchored elsewhere (on chain, in a log),
  `verify_chain(records, expected_head=...)`.
- The timestamp is the caller's (this pure module reads no clock): any non-empty string, ISO 8601 UTC
  by convention ("2026-05-02T12:00:00Z").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from trust.errors import ParameterError

__all__ = [
    "ARENA_RESPONSES",
    "GENESIS_LINK",
    "Battle",
    "ChainCheck",
    "ProofRecord",
    "append_record",
    "build_chain",
    "canonical_json",
    "chain_link",
    "proof_hash",
    "verify_chain",
]

ARENA_RESPONSES = 4
"""Part I: each question goes to 4 models (M1..M4), so a proof covers 4 responses."""

GENESIS_LINK = hashlib.sha256(b"").hexdigest()
"""link_0: SHA-256 of the empty string, e3b0c442...b855 (the hash Part III prints)."""

_DIGEST_HEX = 64


def canonical_json(value: Any) -> bytes:
    """`value` as canonical JSON: keys sorted, no whitespace, UTF-8, no NaN or infinity."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ParameterError(
            f"a proof field is not canonical JSON ({exc}): use str, numbers, lists and dicts"
        ) from None
    return text.encode("utf-8")


@dataclass(frozen=True, slots=True)
class Battle:
    """What one cross-validation attests: the fields Part III lists. `weights_applied` and
    `user_signal` are JSON values (for example `CrossValidation.weights_applied()` and
    `UserSignal.as_dict()`)."""

    battle_id: str
    question: str
    responses: tuple[str, ...]
    weights_applied: Any
    user_signal: Any
    refined_answer: str
    timestamp: str

    def __post_init__(self) -> None:
        if len(self.responses) != ARENA_RESPONSES:
            raise ParameterError(
                f"battle {self.battle_id!r} has {len(self.responses)} responses; "
                f"a proof covers the {ARENA_RESPONSES} responses M1..M4"
            )
        if not self.battle_id:
            raise ParameterError("battle_id is empty: every proof names its battle")
        if not self.timestamp:
            raise ParameterError(f"battle {self.battle_id!r} has no timestamp: pass the time of the cross-validation")

    def payload(self) -> bytes:
        """The bytes `proof_hash` hashes: the canonical JSON of the fields."""
        return canonical_json(
            {
                "battle_id": self.battle_id,
                "question": self.question,
                "responses": list(self.responses),
                "weights_applied": self.weights_applied,
                "user_signal": self.user_signal,
                "refined_answer": self.refined_answer,
                "timestamp": self.timestamp,
            }
        )


def proof_hash(battle: Battle) -> str:
    """Part III's proof_hash (over canonical JSON, see the module docstring), as 64 hex digits."""
    return hashlib.sha256(battle.payload()).hexdigest()


def _digest(name: str, value: str) -> bytes:
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = b""
    if len(value) != _DIGEST_HEX or len(raw) != _DIGEST_HEX // 2:
        raise ParameterError(f"{name} = {value!r}: expected a SHA-256 digest as {_DIGEST_HEX} hex digits")
    return raw


def chain_link(previous_link: str, record_hash: str) -> str:
    """link_i = SHA256(link_(i-1) || proof_hash_i), over the two raw 32-byte digests (hex in and out)."""
    return hashlib.sha256(_digest("previous_link", previous_link) + _digest("proof_hash", record_hash)).hexdigest()


@dataclass(frozen=True, slots=True)
class ProofRecord:
    """One link of the chain: the battle, its proof hash and its link."""

    battle: Battle
    proof_hash: str
    link: str


def append_record(previous: ProofRecord | None, battle: Battle) -> ProofRecord:
    """The record of `battle` after `previous` (None: the first record, after the genesis link)."""
    record_hash = proof_hash(battle)
    previous_link = GENESIS_LINK if previous is None else previous.link
    return ProofRecord(battle=battle, proof_hash=record_hash, link=chain_link(previous_link, record_hash))


def build_chain(battles: Iterable[Battle]) -> list[ProofRecord]:
    """The chain of `battles`, in order."""
    records: list[ProofRecord] = []
    for battle in battles:
        records.append(append_record(records[-1] if records else None, battle))
    return records


@dataclass(frozen=True, slots=True)
class ChainCheck:
    """The result of `verify_chain`: `first_bad` is the index of the first record that fails (or
    len(records) when the chain is consistent but does not end at the expected head), None when all
    hold; `problem` says what failed."""

    first_bad: int | None
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.first_bad is None


def verify_chain(records: Sequence[ProofRecord], expected_head: str | None = None) -> ChainCheck:
    """Replay the chain from the genesis link: each record's proof hash must match its fields, and its
    link must follow from the previous link; with `expected_head`, the last link must equal it."""
    previous = GENESIS_LINK
    for index, record in enumerate(records):
        recomputed = proof_hash(record.battle)
        if recomputed != record.proof_hash:
            return ChainCheck(
                index,
                f"record {index} (battle {record.battle.battle_id!r}): its fields hash to {recomputed}, "
                f"not the stored proof_hash {record.proof_hash}: a field was changed",
            )
        expected = chain_link(previous, record.proof_hash)
        if expected != record.link:
            return ChainCheck(
                index,
                f"record {index} (battle {record.battle.battle_id!r}): link {record.link} does not follow from the "
                f"previous link {previous} (expected {expected}): a record was dropped, inserted or moved before it",
            )
        previous = record.link
    if expected_head is not None and previous != expected_head:
        return ChainCheck(
            len(records),
            f"the chain of {len(records)} record(s) ends at {previous}, not at the anchored head {expected_head}: "
            "records are missing at its end (or the head belongs to another chain)",
        )
    return ChainCheck(None, None)
