"""Which pairs of responses a swarm node must compare: the swarm document's section 4.2 (eq. 7 and 8).

- eq. 7: seed_i = SHA256(state_hash || node_id_i) (`assignment_seed`). The state hash is the 32-byte
  digest of the finalized chain state, so the concatenation is unambiguous (a fixed-length prefix);
  the node id is encoded as UTF-8.
- `Sha256Stream`: a deterministic stream of uniform integers from SHA-256 in counter mode: block k is
  SHA256(seed || k as 8 big-endian bytes), read as four 64-bit big-endian words. `below(n)` draws a
  word w and accepts it only when w < 2^64 - (2^64 mod n), then returns w mod n: the accepted range is
  a whole number of copies of [0, n), so every value has the same probability (no modulo bias). A
  plain w mod n would favour the low values; the test with n = 3 * 2^62 (where the bias would be
  1/2 against 1/3) shows the rejection at work.
- `assign_comparisons`: the node's 3N comparisons among the N responses of the round, drawn with
  replacement (the model eq. 8 rests on), never a pair holding the node's own response (4.2.3). Each
  comparison is an ordered pair drawn uniformly from the (N - 1)(N - 2) ordered pairs of the other
  responses: the order is the one the node must present them in (solution 1, solution 2), so the
  position a response is shown in is random too (judges favour a position).
- `verify_assignment`: anyone with the state hash recomputes a node's assignment and compares it with
  what the node submitted (missing, unexpected, and self-comparisons, which 4.2.3 rejects).
- eq. 8: `pair_missed_probability` (exact, as printed), `pair_missed_probability_approx`
  (exp(-6M / (N - 1))), and `pair_missed_probability_excluding_authors`.

Where the document is vague or wrong, and what we chose:

- Eq. 8 as printed, (1 - 1/C(N, 2))^(3NM), lets every node draw from all C(N, 2) pairs. With its own
  response excluded (4.2.3) a node draws from the C(N - 1, 2) pairs of the others, and the two authors
  of a pair can never draw it. When the M nodes include the pair's a authors (a = 0, 1 or 2), the
  exact probability is (1 - 1/C(N - 1, 2))^(3N (M - a)) (`pair_missed_probability_excluding_authors`);
  eq. 8 as printed is exact for nodes that authored no response (pure rankers), and a test checks both
  against simulations of this module's draws.
- The order of the responses: the assignment sorts the response ids, so a verifier gets the same
  pairs whatever order it learnt them in.
- "3N comparisons": N is the number of responses in the round (`COMPARISONS_PER_RESPONSE` * N), the
  reading under which eq. 8's exponent 3NM holds.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from trust.core.theory.validate import integer_at_least
from trust.errors import ParameterError, RankingError

__all__ = [
    "COMPARISONS_PER_RESPONSE",
    "STATE_HASH_BYTES",
    "Assignment",
    "AssignmentCheck",
    "Sha256Stream",
    "assign_comparisons",
    "assignment_seed",
    "pair_missed_probability",
    "pair_missed_probability_approx",
    "pair_missed_probability_excluding_authors",
    "verify_assignment",
]

COMPARISONS_PER_RESPONSE = 3
"""Section 4.1.3 / 4.2.2: each node generates 3N comparisons for N responses."""

STATE_HASH_BYTES = 32
"""The chain state hash of eq. 7 is a 32-byte digest."""

_WORD_BYTES = 8
_WORD_SPACE = 1 << (8 * _WORD_BYTES)
_COUNTER_BYTES = 8


def _state_hash_bytes(state_hash: bytes | str) -> bytes:
    if isinstance(state_hash, str):
        text = state_hash.removeprefix("0x")
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raise ParameterError(
                f"state_hash = {state_hash!r}: expected {STATE_HASH_BYTES} bytes or {2 * STATE_HASH_BYTES} hex digits"
            ) from None
    else:
        raw = bytes(state_hash)
    if len(raw) != STATE_HASH_BYTES:
        raise ParameterError(
            f"state_hash is {len(raw)} bytes; eq. 7 takes the {STATE_HASH_BYTES}-byte hash of the finalized state"
        )
    return raw


def assignment_seed(state_hash: bytes | str, node_id: str) -> bytes:
    """eq. 7: SHA256(state_hash || node_id), the state hash as 32 raw bytes (or 64 hex digits, with or
    without 0x) and the node id as UTF-8. Returns the 32-byte digest."""
    if not node_id:
        raise ParameterError("node_id is empty: eq. 7 seeds each node with its own identifier")
    return hashlib.sha256(_state_hash_bytes(state_hash) + node_id.encode("utf-8")).digest()


class Sha256Stream:
    """Uniform integers from SHA-256 in counter mode over a seed; the same seed gives the same stream.

    Not a value: each draw advances the stream. Block k (from 0) is SHA256(seed || k as 8 big-endian
    bytes), read as four 64-bit big-endian words; `below` rejects the words of the incomplete top
    copy of [0, n).
    """

    __slots__ = ("_block", "_counter", "_offset", "_seed")

    def __init__(self, seed: bytes) -> None:
        if not seed:
            raise ParameterError("seed is empty: pass the eq. 7 seed (32 bytes)")
        self._seed = bytes(seed)
        self._counter = 0
        self._block = b""
        self._offset = 0

    def word(self) -> int:
        """The next 64-bit word, uniform on [0, 2^64)."""
        if self._offset == len(self._block):
            self._block = hashlib.sha256(self._seed + self._counter.to_bytes(_COUNTER_BYTES, "big")).digest()
            self._counter += 1
            self._offset = 0
        start = self._offset
        self._offset += _WORD_BYTES
        return int.from_bytes(self._block[start : self._offset], "big")

    def below(self, n: int) -> int:
        """A uniform integer in [0, n), 1 <= n <= 2^64, by rejection sampling (no modulo bias)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= _WORD_SPACE:
            raise ParameterError(f"n = {n!r}: expected an integer in [1, 2^64]")
        limit = _WORD_SPACE - _WORD_SPACE % n  # the largest multiple of n that fits: [0, limit) is whole copies
        while True:
            value = self.word()
            if value < limit:
                return value % n


@dataclass(frozen=True, slots=True)
class Assignment:
    """A node's comparisons for one round: `pairs` in the order drawn, each (solution 1, solution 2)."""

    node_id: str
    seed: bytes
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class AssignmentCheck:
    """A node's submitted comparisons against its recomputed assignment, as multisets of ordered pairs.

    `missing`: assigned but not submitted (each as often as it is missing); `unexpected`: submitted but
    not assigned; `self_comparisons`: submitted pairs holding the node's own response (4.2.3: the
    submission is rejected and the node penalized). Every tuple is sorted.
    """

    assignment: Assignment
    missing: tuple[tuple[str, str], ...]
    unexpected: tuple[tuple[str, str], ...]
    self_comparisons: tuple[tuple[str, str], ...]

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.self_comparisons)


def _others(responses: Sequence[str], own_response: str | None) -> list[str]:
    ids = list(responses)
    repeated = sorted(name for name, count in Counter(ids).items() if count > 1)
    if repeated:
        raise RankingError(f"response id(s) listed twice: {', '.join(map(repr, repeated))}")
    if own_response is not None and own_response not in ids:
        raise RankingError(f"own_response {own_response!r} is not among the round's {len(ids)} responses")
    others = sorted(name for name in ids if name != own_response)
    if len(others) < 2:
        raise RankingError(
            f"a node needs at least 2 responses other than its own to compare, the round has {len(others)}"
        )
    return others


def assign_comparisons(
    state_hash: bytes | str,
    node_id: str,
    responses: Sequence[str],
    own_response: str | None = None,
    per_response: int = COMPARISONS_PER_RESPONSE,
) -> Assignment:
    """The node's `per_response` * N comparisons among the N `responses` (ids), never one holding
    `own_response` (the response the node generated, if any), seeded by eq. 7.

    Each pair is drawn uniformly, with replacement, from the ordered pairs of distinct responses other
    than the node's own: the index r in [0, m (m - 1)) over the m others gives first = r // (m - 1),
    second = r % (m - 1), shifted past first.
    """
    per_response = integer_at_least("per_response", per_response, 1)
    others = _others(responses, own_response)
    seed = assignment_seed(state_hash, node_id)
    stream = Sha256Stream(seed)
    m = len(others)
    pairs: list[tuple[str, str]] = []
    for _ in range(per_response * len(responses)):
        index = stream.below(m * (m - 1))
        first, second = divmod(index, m - 1)
        if second >= first:
            second += 1
        pairs.append((others[first], others[second]))
    return Assignment(node_id=node_id, seed=seed, pairs=tuple(pairs))


def verify_assignment(
    state_hash: bytes | str,
    node_id: str,
    responses: Sequence[str],
    submitted: Sequence[tuple[str, str]],
    own_response: str | None = None,
    per_response: int = COMPARISONS_PER_RESPONSE,
) -> AssignmentCheck:
    """Recompute the node's assignment (eq. 7) and compare the `submitted` ordered pairs with it."""
    assignment = assign_comparisons(state_hash, node_id, responses, own_response, per_response)
    given = Counter((a, b) for a, b in submitted)
    expected = Counter(assignment.pairs)
    return AssignmentCheck(
        assignment=assignment,
        missing=tuple(sorted((expected - given).elements())),
        unexpected=tuple(sorted((given - expected).elements())),
        self_comparisons=tuple(
            sorted(pair for pair in given.elements() if own_response is not None and own_response in pair)
        ),
    )


def _check_sizes(n_responses: int, n_nodes: int, per_response: int) -> tuple[int, int, int]:
    return (
        integer_at_least("n_responses", n_responses, 2),
        integer_at_least("n_nodes", n_nodes, 0),
        integer_at_least("per_response", per_response, 1),
    )


def pair_missed_probability(n_responses: int, n_nodes: int, per_response: int = COMPARISONS_PER_RESPONSE) -> float:
    """eq. 8 as printed: (1 - 1/C(N, 2))^(3NM), the probability that a given pair is never drawn when
    each of M nodes draws 3N pairs uniformly from all C(N, 2) pairs (nodes that authored none)."""
    n, m, k = _check_sizes(n_responses, n_nodes, per_response)
    pairs = math.comb(n, 2)
    return math.exp(k * n * m * math.log1p(-1.0 / pairs)) if pairs > 1 else float(m == 0)


def pair_missed_probability_approx(
    n_responses: int, n_nodes: int, per_response: int = COMPARISONS_PER_RESPONSE
) -> float:
    """eq. 8's approximation exp(-6M / (N - 1)) (for 3 comparisons per response: exp(-2 k M / (N - 1)))."""
    n, m, k = _check_sizes(n_responses, n_nodes, per_response)
    return math.exp(-2.0 * k * m / (n - 1))


def pair_missed_probability_excluding_authors(
    n_responses: int, n_nodes: int, authors_among_nodes: int = 2, per_response: int = COMPARISONS_PER_RESPONSE
) -> float:
    """eq. 8 with 4.2.3's exclusion: each node draws from the C(N - 1, 2) pairs without its own response,
    and the `authors_among_nodes` (0, 1 or 2) nodes that wrote one of the pair's responses never draw it:
    (1 - 1/C(N - 1, 2))^(3N (M - a))."""
    n, m, k = _check_sizes(n_responses, n_nodes, per_response)
    authors = integer_at_least("authors_among_nodes", authors_among_nodes, 0)
    if authors > 2 or authors > m:
        raise ParameterError(
            f"authors_among_nodes = {authors}: a pair has at most 2 authors, and at most n_nodes = {m} of them draw"
        )
    if n < 3:
        raise ParameterError(f"n_responses = {n}: a node needs 2 responses other than its own, so N >= 3")
    pairs = math.comb(n - 1, 2)
    drawers = m - authors
    return math.exp(k * n * drawers * math.log1p(-1.0 / pairs)) if pairs > 1 else float(drawers == 0)
