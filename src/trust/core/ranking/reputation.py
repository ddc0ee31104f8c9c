"""A swarm node's reputation: the swarm document's section 4.5 (eq. 10, 11, 12 and 14) and the
reputation slashing of 5.3.2.

A node earns reputation two ways: its comparisons agree with the consensus (ranking accuracy) and its
own response wins the round (generation quality). `SwarmReputation` holds the two exponential moving
averages; every update is a pure function that returns a new value.

- eq. 10: R = alpha R_ranking + (1 - alpha) R_generation (`SwarmReputation.combined`).
- eq. 11: R_ranking <- beta R_ranking + (1 - beta) a, where a (`ranking_agreement`) is the fraction
  of the node's comparisons (j, k) whose verdict has the sign of pi_j - pi_k under the consensus
  strengths.
- eq. 12: R_generation <- beta R_generation + (1 - beta) 1[node = winner].
- eq. 14: the capped rule (`capped_update`): min(R_max, R + Delta_up) when the round's performance
  exceeds the threshold, max(R_min, R - Delta_down) when it is below, R (1 - delta) when the node was
  inactive. 5.3.2 adds: a reputation that falls below a level Q is slashed to 0 (`slash_below`).

Where the document is vague, and what we chose:

- Ties in eq. 11. The indicator 1[sign(c) = sign(pi_j - pi_k)] read literally gives a tie verdict
  ("Uncertain?", which the ranking template allows) 0 against any strict consensus order: a node
  that honestly says "Uncertain" would then score below one that guesses at random (1/2 expected).
  We count a tie verdict as half an agreement (the convention of win rates with ties, and of the
  Vicuna80 scores), so abstaining is worth exactly what a coin flip is. A comparison whose two
  consensus strengths are equal (relative difference within `STRENGTH_TIE_RTOL`) has no consensus
  order to agree with: it is left out of both the count and |C_i|. A round where no comparison is
  left has no agreement (`None`) and leaves R_ranking unchanged (the node did not rank, as an inactive
  node would not).
- The strengths may be pi (positive) or log pi: sign(pi_j - pi_k) is the same for any increasing
  transform, so `ranking_agreement` only reads their order.
- eq. 14 does not say what "performance" is, what the threshold is, nor what happens exactly at the
  threshold. Performance is any score in [0, 1] (the round's eq. 11 agreement is the natural one);
  the default threshold 1/2 is what random comparisons score. At exactly the threshold the performance
  neither "exceeds" nor is "below" it: R is unchanged.
- Inactive decay in eq. 14 is R (1 - delta) with no floor; the document floors only the below-threshold
  branch at R_min. We follow it: a long-inactive node decays towards 0, below R_min, which is what
  "decay for inactive nodes to ensure continued participation" asks for.
- The document gives no values for alpha, beta, R_min, R_max, Delta_up, Delta_down, delta or the
  threshold. Figure 3 plots reputations in [0, 1], so R_MIN = 0 and R_MAX = 1; the other defaults
  are ours and named below (`DEFAULT_*`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from trust.core.ranking.records import Match
from trust.core.theory.validate import probability, real
from trust.errors import ParameterError, RankingError

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_BETA",
    "DEFAULT_DECAY",
    "DEFAULT_DELTA_DOWN",
    "DEFAULT_DELTA_UP",
    "DEFAULT_PARAMS",
    "DEFAULT_PERFORMANCE_THRESHOLD",
    "INITIAL_REPUTATION",
    "R_MAX",
    "R_MIN",
    "STRENGTH_TIE_RTOL",
    "TIE_AGREEMENT",
    "ReputationParams",
    "SwarmReputation",
    "capped_update",
    "ranking_agreement",
    "update_generation",
    "update_ranking",
    "update_round",
]

DEFAULT_ALPHA = 0.5
"""eq. 10's alpha: evaluation and generation count equally (the document gives no value)."""

DEFAULT_BETA = 0.9
"""eq. 11-12's EMA retention beta: a round's evidence enters with weight 0.1, so the average remembers
about 1 / (1 - beta) = 10 rounds (the document gives no value)."""

R_MIN = 0.0
"""eq. 14's floor R_min: Figure 3 plots reputations on [0, 1]."""

R_MAX = 1.0
"""eq. 14's cap R_max: Figure 3 plots reputations on [0, 1]."""

DEFAULT_DELTA_UP = 0.05
"""eq. 14's Delta_up: 20 good rounds take a node from 0 to the cap (our choice)."""

DEFAULT_DELTA_DOWN = 0.1
"""eq. 14's Delta_down: losing is twice as fast as earning, so a node cannot farm reputation by
alternating good and bad rounds (our choice)."""

DEFAULT_DECAY = 0.01
"""eq. 14's inactivity decay delta: an idle node keeps (0.99)^t of its reputation, half after about 69
idle rounds (our choice)."""

DEFAULT_PERFORMANCE_THRESHOLD = 0.5
"""eq. 14's threshold: the agreement that random comparisons score in expectation (our choice)."""

INITIAL_REPUTATION = 0.5
"""A new node's R_ranking and R_generation: the middle of [R_MIN, R_MAX], neither trusted nor
distrusted (our choice; the document gives none)."""

TIE_AGREEMENT = 0.5
"""What a tie verdict counts in eq. 11's sum: half an agreement (see the module docstring)."""

STRENGTH_TIE_RTOL = 1e-9
"""Two consensus strengths closer than this (relative) are equal: the consensus does not order them."""


@dataclass(frozen=True, slots=True)
class ReputationParams:
    """The constants of eq. 10-14, checked on construction (a `ParameterError` names the bad one).

    `slash_below` is 5.3.2's level Q: after the capped rule, a reputation below it is slashed to 0
    (the node must redo its test calibration). None (the default) disables slashing: the document
    gives no value for Q.
    """

    alpha: float = DEFAULT_ALPHA
    beta: float = DEFAULT_BETA
    r_min: float = R_MIN
    r_max: float = R_MAX
    delta_up: float = DEFAULT_DELTA_UP
    delta_down: float = DEFAULT_DELTA_DOWN
    decay: float = DEFAULT_DECAY
    threshold: float = DEFAULT_PERFORMANCE_THRESHOLD
    slash_below: float | None = None

    def __post_init__(self) -> None:
        probability("alpha", self.alpha)
        probability("beta", self.beta)
        probability("decay", self.decay)
        r_min, r_max = real("r_min", self.r_min), real("r_max", self.r_max)
        if r_min > r_max:
            raise ParameterError(f"r_min = {r_min} exceeds r_max = {r_max}: the floor must not be above the cap")
        for name in ("delta_up", "delta_down"):
            if real(name, getattr(self, name)) < 0:
                raise ParameterError(f"{name} = {getattr(self, name)!r}: a step must be >= 0")
        real("threshold", self.threshold)
        if self.slash_below is not None:
            real("slash_below", self.slash_below)


DEFAULT_PARAMS = ReputationParams()
"""The documented defaults above, as one value."""


@dataclass(frozen=True, slots=True)
class SwarmReputation:
    """A node's two moving averages: `ranking` (eq. 11) and `generation` (eq. 12), each in [0, 1]."""

    ranking: float = INITIAL_REPUTATION
    generation: float = INITIAL_REPUTATION

    def __post_init__(self) -> None:
        probability("ranking", self.ranking)
        probability("generation", self.generation)

    def combined(self, alpha: float = DEFAULT_ALPHA) -> float:
        """eq. 10: alpha R_ranking + (1 - alpha) R_generation."""
        alpha = probability("alpha", alpha)
        return alpha * self.ranking + (1.0 - alpha) * self.generation


def ranking_agreement(comparisons: Iterable[Match], strengths: Mapping[str, float]) -> float | None:
    """The fraction in eq. 11: how many of the node's comparisons agree with the consensus order.

    Each comparison is a `Match` of two responses, `a` and `b`, with the node's verdict as `result`
    (1: a better, 0: b better, 0.5: tie or "Uncertain?"); `strengths` are the consensus strengths
    (pi or log pi: only their order is read). A comparison agrees when the verdict's sign is the sign
    of pi_a - pi_b and counts 1; a tie verdict counts `TIE_AGREEMENT`; a comparison of equal
    strengths is left out. The comparisons' weights are ignored: eq. 11 averages over C_i.

    Returns None when no comparison is left (the node ranked nothing the consensus orders).
    Raises `RankingError` for a response with no strength, `ParameterError` for a non-finite strength.
    """
    pairs = [(match.a, match.b, match.result) for match in comparisons]
    if not pairs:
        return None
    missing = sorted({name for a, b, _ in pairs for name in (a, b) if name not in strengths})
    if missing:
        raise RankingError(
            f"no consensus strength for response(s) {', '.join(map(repr, missing))}: "
            "pass the strengths of every response the node compared"
        )
    first = np.array([real(f"strength of {a!r}", strengths[a]) for a, _, _ in pairs])
    second = np.array([real(f"strength of {b!r}", strengths[b]) for _, b, _ in pairs])
    verdict = np.array([result for _, _, result in pairs]) - 0.5  # > 0: a better, < 0: b better, 0: tie
    ordered = ~np.isclose(first, second, rtol=STRENGTH_TIE_RTOL, atol=0.0)
    if not ordered.any():
        return None
    consensus = np.sign(first - second)[ordered]
    verdict = verdict[ordered]
    score = np.where(verdict == 0.0, TIE_AGREEMENT, (np.sign(verdict) == consensus).astype(float))
    return float(score.mean())


def _ema(previous: float, evidence: float, beta: float) -> float:
    return beta * previous + (1.0 - beta) * evidence


def update_ranking(
    reputation: SwarmReputation, agreement: float | None, params: ReputationParams = DEFAULT_PARAMS
) -> SwarmReputation:
    """eq. 11: R_ranking <- beta R_ranking + (1 - beta) agreement; None (nothing ranked) keeps it."""
    if agreement is None:
        return reputation
    agreement = probability("agreement", agreement)
    return replace(reputation, ranking=_ema(reputation.ranking, agreement, params.beta))


def update_generation(
    reputation: SwarmReputation, won: bool, params: ReputationParams = DEFAULT_PARAMS
) -> SwarmReputation:
    """eq. 12: R_generation <- beta R_generation + (1 - beta) 1[the node's response won the round]."""
    return replace(reputation, generation=_ema(reputation.generation, 1.0 if won else 0.0, params.beta))


def update_round(
    reputation: SwarmReputation,
    comparisons: Iterable[Match],
    strengths: Mapping[str, float],
    won: bool,
    params: ReputationParams = DEFAULT_PARAMS,
) -> SwarmReputation:
    """One consensus round: eq. 11 on the node's comparisons, then eq. 12 on whether it won."""
    updated = update_ranking(reputation, ranking_agreement(comparisons, strengths), params)
    return update_generation(updated, won, params)


def capped_update(reputation: float, performance: float | None, params: ReputationParams = DEFAULT_PARAMS) -> float:
    """eq. 14 (and 5.3.2's slashing): the next reputation after a round.

    `performance` is the round's score in [0, 1] (for example the eq. 11 agreement), or None when the
    node was inactive. Above the threshold: min(R_max, R + Delta_up); below: max(R_min, R - Delta_down);
    exactly at it: R unchanged; inactive: R (1 - delta). Then, with `params.slash_below` = Q set, a
    result below Q is slashed to 0.
    """
    current = real("reputation", reputation)
    if performance is None:
        updated = current * (1.0 - params.decay)
    else:
        score = probability("performance", performance)
        if score > params.threshold:
            updated = min(params.r_max, current + params.delta_up)
        elif score < params.threshold:
            updated = max(params.r_min, current - params.delta_down)
        else:
            updated = current
    if params.slash_below is not None and updated < params.slash_below:
        return 0.0
    return updated
