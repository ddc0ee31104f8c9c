"""Stationarity detection for cyclic interactions (paper section 2.2.6).

A Coder <-> Reviewer loop is unrolled in time in the CIG, so the loop shows up as one agent producing
nearly the same output turn after turn. We compare each agent's consecutive outputs; a similarity
above tau_stat (`AuditSettings.tau_stat`, 0.95) means the swarm is stuck and a divergence directive
is due. "Exceeds the threshold" is read strictly: similarity > tau_stat.

Similarity is behind the `Similarity` protocol. The core ships `LexicalSimilarity`, a cosine over
character n-gram counts (no model, no I/O, deterministic); the sentence-embedding model
(all-MiniLM-L6-v2) is an adapter outside the core, `trust.adapters.llm.embeddings.MiniLmSimilarity`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from trust.core.graphs.cig import Cig, Role
from trust.errors import GraphError

__all__ = ["LexicalSimilarity", "Similarity", "StationaryPair", "detect_stationarity", "is_stationary"]


@runtime_checkable
class Similarity(Protocol):
    """Semantic similarity of two texts, in [0, 1] (1: the same meaning)."""

    def similarity(self, first: str, second: str) -> float: ...


_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class LexicalSimilarity:
    """Cosine similarity of character `n`-gram counts of the lower-cased, space-normalised texts.

    Identical texts score 1.0, texts without a common n-gram 0.0; reordering whole sentences
    changes little, which suits loop detection (an agent repeating itself in other order). Texts are
    cut to `max_chars` characters so that one call stays cheap. Two empty texts are identical (1.0).
    """

    n: int = 3
    max_chars: int = 20_000

    def __post_init__(self) -> None:
        if self.n < 1 or self.max_chars < 1:
            raise GraphError(f"lexical similarity n={self.n}, max_chars={self.max_chars}: both must be >= 1")

    def _grams(self, text: str) -> Counter[str]:
        normal = _SPACE.sub(" ", text[: self.max_chars].lower()).strip()
        if len(normal) < self.n:
            return Counter([normal]) if normal else Counter()
        return Counter(normal[i : i + self.n] for i in range(len(normal) - self.n + 1))

    def similarity(self, first: str, second: str) -> float:
        a, b = self._grams(first), self._grams(second)
        if not a and not b:
            return 1.0
        if not a or not b:
            return 0.0
        if len(a) > len(b):
            a, b = b, a
        dot = sum(count * b[gram] for gram, count in a.items() if gram in b)
        norm = math.sqrt(sum(c * c for c in a.values())) * math.sqrt(sum(c * c for c in b.values()))
        return min(1.0, dot / norm)


@dataclass(frozen=True, slots=True)
class StationaryPair:
    """Two consecutive turns of `agent` whose outputs are nearly the same."""

    agent: str
    earlier: str
    later: str
    similarity: float


def _check_tau(tau_stat: float) -> None:
    if isinstance(tau_stat, bool) or not isinstance(tau_stat, int | float) or not 0 < tau_stat <= 1:
        raise GraphError(f"tau_stat {tau_stat!r}: expected a threshold in (0, 1] (AuditSettings.tau_stat)")


def is_stationary(first: str, second: str, similarity: Similarity, *, tau_stat: float) -> bool:
    """Whether two outputs are the same for loop purposes: similarity > tau_stat."""
    _check_tau(tau_stat)
    return _score(similarity, first, second) > tau_stat


def _score(similarity: Similarity, first: str, second: str) -> float:
    value = similarity.similarity(first, second)
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise GraphError(f"similarity returned {value!r}: expected a number in [0, 1]")
    return min(1.0, max(0.0, float(value)))


def detect_stationarity(
    cig: Cig,
    similarity: Similarity,
    *,
    tau_stat: float,
    skip_roles: Collection[Role] = (),
) -> tuple[StationaryPair, ...]:
    """Every pair of consecutive turns of the same agent whose outputs are more similar than
    tau_stat, in time order. Agents whose role is in `skip_roles` are not compared (a terminal that
    prints "exitcode: 0" twice may be legitimately repetitive). One comparison per turn: O(V)."""
    _check_tau(tau_stat)
    last: dict[str, tuple[str, str]] = {}
    found: list[StationaryPair] = []
    for turn in cig.turns():
        if turn.role in skip_roles:
            continue
        previous = last.get(turn.agent)
        if previous is not None:
            score = _score(similarity, previous[1], turn.output)
            if score > tau_stat:
                found.append(StationaryPair(turn.agent, previous[0], turn.id, score))
        last[turn.agent] = (turn.id, turn.output)
    return tuple(found)
