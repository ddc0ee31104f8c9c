"""Collusion detection and abnormal-participation weights: the swarm document's section 5.3.2 (eq. 17,
18 and 19).

- eq. 17: c_ij = (# rounds node i ranked node j's response in its top half) / (# rounds both took
  part) (`collusion_stats`, read back as `CollusionStats.rates`). Under random rankings
  E[c_ij] ~ N / (2 (N - 1)) for N participants (`expected_rate`).
- eq. 18: w_ij^adjusted = w_j exp(-lambda max(0, c_ij - tau_collusion)) with tau_collusion =
  1.2 E[c_ij] (`adjusted_weight`, `CollusionStats.adjusted_weights`); lambda is "typically 10-20":
  `DEFAULT_PENALTY` = 15.
- eq. 19: w_round = exp(-gamma |log(n_actual / n_bar)|) (`round_weight`, `round_weights`); gamma is
  "typically 1-2": `DEFAULT_ROUND_GAMMA` = 1.5. Equivalently (min(n, n_bar) / max(n, n_bar))^gamma.

Where the document is vague, and what we chose:

- "Top half" of a ranking of n responses: its first ceil(n / 2) places, so the middle response of an
  odd count is in the top half. This is the reading under which the document's E[c_ij] holds: a node
  ranks the N - 1 responses of the others, and for even N the top ceil((N - 1) / 2) = N / 2 places
  give E[c_ij] = (N / 2) / (N - 1) = N / (2 (N - 1)) exactly. For odd N the exact expectation is 1/2.
- "Rounds both participated": rounds in which i submitted a ranking that holds j's response; a round
  where i did not rank j says nothing about i's support for j.
- E[c_ij] in tau_collusion: rounds differ in size, so we use the exact expectation under random
  rankings for the rounds i and j shared, the mean over those rounds of ceil(n_t / 2) / n_t
  (`CollusionStats.expected`), rather than one N / (2 (N - 1)) for all.
- The indices of eq. 18: w_ij^adjusted scales w_j, node j's weight, by c_ij, how often i put j in its
  top half. We read it as the weight of j's verdicts on i's response: j's say over i is cut when i
  has been favouring j (a quid pro quo). A colluding pair favours each other, so both directions are
  cut. A pair that never shared a round (c_ij undefined) is not penalized.
- eq. 19's n_bar is "the historical average": the caller passes it (this module keeps no history).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from trust.core.theory.validate import integer_at_least, positive, real
from trust.errors import ParameterError, RankingError

__all__ = [
    "DEFAULT_PENALTY",
    "DEFAULT_ROUND_GAMMA",
    "TAU_COLLUSION_FACTOR",
    "CollusionStats",
    "adjusted_weight",
    "collusion_stats",
    "expected_rate",
    "round_weight",
    "round_weights",
    "top_half_size",
]

DEFAULT_PENALTY = 15.0
"""eq. 18's lambda, "typically 10-20": the middle of that range."""

TAU_COLLUSION_FACTOR = 1.2
"""eq. 18's tau_collusion = 1.2 E[c_ij] ("typically")."""

DEFAULT_ROUND_GAMMA = 1.5
"""eq. 19's gamma, "typically 1-2": the middle of that range."""


def top_half_size(n_ranked: int) -> int:
    """How many places of a ranking of `n_ranked` responses are its top half: ceil(n / 2)."""
    return math.ceil(integer_at_least("n_ranked", n_ranked, 1) / 2)


def expected_rate(n_participants: int) -> float:
    """The document's E[c_ij] ~ N / (2 (N - 1)) for N participants (exact for even N; see the module)."""
    n = integer_at_least("n_participants", n_participants, 2)
    return n / (2.0 * (n - 1))


@dataclass(frozen=True, slots=True)
class CollusionStats:
    """eq. 17's counts over a set of rounds, indexed by `nodes` (sorted): entry [i, j] is about ranker
    i and the author j of a ranked response.

    `top_half[i, j]`: rounds where i ranked j in its top half; `joint[i, j]`: rounds where i ranked j;
    `expected_count[i, j]`: the sum over those rounds of ceil(n_t / 2) / n_t (n_t = the length of i's
    ranking), the expected top-half count under random rankings. The arrays are read-only.
    """

    nodes: tuple[str, ...]
    top_half: np.ndarray
    joint: np.ndarray
    expected_count: np.ndarray

    def index(self, node: str) -> int:
        try:
            return self.nodes.index(node)
        except ValueError:
            raise RankingError(f"node {node!r} took part in none of the rounds") from None

    @property
    def rates(self) -> np.ndarray:
        """c_ij (eq. 17); NaN where i never ranked j."""
        return np.where(self.joint > 0, self.top_half / np.maximum(self.joint, 1), np.nan)

    @property
    def expected(self) -> np.ndarray:
        """E[c_ij] under random rankings of the rounds i and j shared; NaN where they shared none."""
        return np.where(self.joint > 0, self.expected_count / np.maximum(self.joint, 1), np.nan)

    def rate(self, ranker: str, author: str) -> float:
        """c_ij for ranker i and author j; NaN when i never ranked j."""
        return float(self.rates[self.index(ranker), self.index(author)])

    def adjusted_weights(
        self,
        weights: Mapping[str, float],
        penalty: float = DEFAULT_PENALTY,
        tau_factor: float = TAU_COLLUSION_FACTOR,
    ) -> np.ndarray:
        """eq. 18 for every pair: [i, j] = w_j exp(-lambda max(0, c_ij - tau_factor E[c_ij])), the weight
        of j's verdicts on i's response; no penalty where c_ij is undefined. Every node needs a weight."""
        missing = [node for node in self.nodes if node not in weights]
        if missing:
            raise RankingError(f"no reputation weight for node(s) {', '.join(map(repr, missing))}")
        w = np.array([real(f"weight of {node!r}", weights[node]) for node in self.nodes])
        if (w < 0).any():
            raise ParameterError("reputation weights must be >= 0")
        penalty = _non_negative("penalty", penalty)
        tau = positive("tau_factor", tau_factor) * self.expected
        excess = np.nan_to_num(np.maximum(0.0, self.rates - tau), nan=0.0)
        return w[np.newaxis, :] * np.exp(-penalty * excess)


def _non_negative(name: str, value: float) -> float:
    number = real(name, value)
    if number < 0:
        raise ParameterError(f"{name} = {value!r}: must be >= 0")
    return number


def collusion_stats(rounds: Iterable[Mapping[str, Sequence[str]]]) -> CollusionStats:
    """eq. 17's counts from per-round rankings: each round maps a ranker's node id to the authors of
    the responses it ranked, best first (its own response excluded, as 4.2.3 requires).

    Raises `RankingError` for a ranker that ranks its own response, an author listed twice in one
    ranking, or no rankings at all.
    """
    rankers: list[str] = []
    authors: list[str] = []
    in_top: list[bool] = []
    share: list[float] = []
    for number, round_rankings in enumerate(rounds, start=1):
        for ranker, ranking in round_rankings.items():
            ranked = list(ranking)
            if not ranked:
                continue
            if ranker in ranked:
                raise RankingError(f"round {number}: node {ranker!r} ranked its own response (4.2.3 forbids it)")
            repeated = sorted(name for name, count in Counter(ranked).items() if count > 1)
            if repeated:
                raise RankingError(f"round {number}: node {ranker!r} ranks {', '.join(map(repr, repeated))} twice")
            half = top_half_size(len(ranked))
            rankers.extend([ranker] * len(ranked))
            authors.extend(ranked)
            in_top.extend(place < half for place in range(len(ranked)))
            share.extend([half / len(ranked)] * len(ranked))
    if not rankers:
        raise RankingError("no rankings: collusion rates need at least one round with a ranking")
    nodes = tuple(sorted(set(rankers) | set(authors)))
    position = {node: index for index, node in enumerate(nodes)}
    rows = np.fromiter((position[name] for name in rankers), dtype=np.intp, count=len(rankers))
    cols = np.fromiter((position[name] for name in authors), dtype=np.intp, count=len(authors))
    shape = (len(nodes), len(nodes))
    top_half, joint, expected = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    np.add.at(top_half, (rows, cols), np.asarray(in_top, dtype=float))
    np.add.at(joint, (rows, cols), 1.0)
    np.add.at(expected, (rows, cols), np.asarray(share))
    for array in (top_half, joint, expected):
        array.setflags(write=False)
    return CollusionStats(nodes=nodes, top_half=top_half, joint=joint, expected_count=expected)


def adjusted_weight(
    weight: float,
    rate: float,
    expected: float,
    penalty: float = DEFAULT_PENALTY,
    tau_factor: float = TAU_COLLUSION_FACTOR,
) -> float:
    """eq. 18 for one pair: w_j exp(-lambda max(0, c_ij - tau_factor E[c_ij]))."""
    weight = _non_negative("weight", weight)
    rate, expected = real("rate", rate), real("expected", expected)
    if not 0.0 <= rate <= 1.0 or not 0.0 <= expected <= 1.0:
        raise ParameterError(f"rate = {rate} and expected = {expected} are fractions of rounds, in [0, 1]")
    tau = positive("tau_factor", tau_factor) * expected
    return weight * math.exp(-_non_negative("penalty", penalty) * max(0.0, rate - tau))


def round_weight(n_actual: float, n_bar: float, gamma: float = DEFAULT_ROUND_GAMMA) -> float:
    """eq. 19: exp(-gamma |log(n_actual / n_bar)|), 1 for a round of the usual size, smaller the further
    its participant count strays from the historical average `n_bar` (either way)."""
    n_actual, n_bar = positive("n_actual", n_actual), positive("n_bar", n_bar)
    return math.exp(-_non_negative("gamma", gamma) * abs(math.log(n_actual / n_bar)))


def round_weights(
    n_actual: Sequence[float] | np.ndarray, n_bar: float, gamma: float = DEFAULT_ROUND_GAMMA
) -> np.ndarray:
    """eq. 19 over many rounds' participant counts at once."""
    counts = np.asarray(n_actual, dtype=float)
    if not np.all(np.isfinite(counts)) or (counts <= 0).any():
        raise ParameterError("participant counts must be finite and > 0")
    n_bar = positive("n_bar", n_bar)
    return np.exp(-_non_negative("gamma", gamma) * np.abs(np.log(counts / n_bar)))
