"""Plackett-Luce ratings by Hunter's (2004) MM algorithm: full, partial and top-k rankings.

What it implements: the arena document's Part IV, "P(model i wins) = gamma_i / sum_j gamma_j;
EM algorithm iteratively estimates gamma". A ranking is read as a sequence of choices (stages):
the first item is chosen from all the ranking's items with probability gamma_i / sum gamma, the
second from the rest, and so on. The likelihood is maximized by the minorize-maximize (MM)
iteration of Hunter (2004, eq. 30), the EM-like algorithm the document means:

    gamma_i <- w_i / sum_j sum_{stages s of ranking j with i in the choice set} 1 / sum_{k in set} gamma_k

with w_i the number of stages in which i was chosen; a ranking's weight (Ranking.weight)
multiplies both its wins and its terms of the sum. Each iteration never lowers the
log-likelihood (an MM property, tested on random data).

Data it reads (`records.Ranking`):
- a full ranking of some items: `ranked` best first; every item but the last is chosen once
  (Hunter's NASCAR races rank 42 or 43 of the 83 drivers each: a ranking of a subset is full
  for the items it names; drivers absent from a race are not in its choice sets);
- a top-k ranking: `ranked` above `unranked`, items known to place below all ranked ones; they sit
  in every stage's choice set and are never chosen (`Ranking.stages` choices);
- won matches, as rankings of two (`rankings_from_matches`); a tie has no Plackett-Luce
  probability, so it is an error here (Bradley-Terry with `ties="davidson"` models ties). On
  two-item rankings Plackett-Luce is Bradley-Terry (eq. 6) and the fits agree (tested).

How: rankings are bucketed by length (rounded up to a power of two) into padded index arrays
(rankings x length, a dummy item of strength 0 in the padding). Per iteration, suffix sums of
gamma along each row give every stage's denominator, cumulative sums of weight/denominator give
each position's MM sum, and `np.bincount` gathers them per item: O(total ranking length) numpy
work, no Python loop over rankings.

Identifiability: gamma is defined up to a factor (theta = log gamma up to a constant); iterates
are normalized to geometric mean 1 and the result is pinned so that `reference` (default: the
first item in sorted order, as in `bradley_terry`) is at 0. The MLE exists if and only if, in every
split of the items into two groups, some item of each group is ranked above some item of the other
(Hunter 2004, Assumption 1); `identifiability.require_mle` checks it and names the items that
break it. Hunter's NASCAR file as distributed already satisfies it: Hunter dropped the drivers who
placed last in every race they entered (they have no MLE; that is why five of the 36 races list
42 finishers, not 43), leaving 83 drivers who each beat someone. The tests check that the file
passes the check with no prior, that a driver added last in one race is refused by name, and that
the fit matches choix's I-LSR.

`prior > 0` puts the Gamma(1 + prior, prior) prior of Caron & Doucet (2012) on each gamma_i (mode
gamma = 1, i.e. theta = 0), and the iteration becomes their MAP MM update
gamma_i <- (prior + w_i) / (prior + sum ...), the same update as choix's `alpha` regularisation of
`mm_rankings` (choix also renormalizes every iterate, which moves its fixed point off the
posterior mode; we do not). The estimate is the posterior mode in gamma: it maximizes
loglik + prior * sum(log gamma_i - gamma_i) (tested against a generic optimizer). Every item
then has a finite estimate, so the existence check is skipped. The prior fixes the scale of
gamma, so these iterates are not renormalized; the reported ratings are still pinned at the
reference. Note this is a prior on gamma, not the Gaussian prior on theta of
`bradley_terry` (the two agree only at prior = 0).

Where the document is vague, and what we chose: "EM algorithm" is not specified further; Hunter's
MM (which is the EM algorithm of a latent-exponential-times formulation, Caron & Doucet 2012) is the
standard and needs no step size. Its convergence is linear: `tol` bounds the largest change of a
log-strength between iterations, and the distance to the optimum can be larger by the factor
1 / (1 - rate); tests that compare with other implementations iterate to a tight `tol`. The
document does not say what one observation is either: an arena battle shows 4 models and the user
picks one (or orders some), which is a top-1 (top-k) ranking: the picked model(s) in `ranked`, the
rest of the battle in `unranked`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from trust.core.ranking.identifiability import StrengthFit, require_mle
from trust.core.ranking.records import Match, Ranking, item_universe
from trust.errors import ParameterError, RankingError

__all__ = [
    "DEFAULT_MAX_ITER",
    "DEFAULT_TOL",
    "PlackettLuceFit",
    "fit_plackett_luce",
    "rankings_from_matches",
]

# Largest change of any log-strength between two MM iterations that counts as converged.
DEFAULT_TOL = 1e-9
# MM iterations allowed; MM converges linearly, slowly on sparse data.
DEFAULT_MAX_ITER = 10_000

_REMEDY = (
    "Add rankings that place these items below (or above) the others, rate each group on its own, "
    "or fit with prior > 0 (a Gamma prior on the strengths)."
)


@dataclass(frozen=True, slots=True)
class PlackettLuceFit(StrengthFit):
    """A fitted Plackett-Luce model (`StrengthFit`: theta = log gamma, the reference at 0, the
    weighted log-likelihood of the rankings without the prior); `iterations` are MM iterations and
    `converged` says whether the last one moved no log-strength by more than `tol`."""

    def probability_first(self, subset: Iterable[str]) -> dict[str, float]:
        """P(item is chosen first from `subset`) = gamma_i / sum_{j in subset} gamma_j, per item."""
        chosen = tuple(subset)
        if not chosen:
            raise RankingError("probability_first needs at least one item to choose from")
        if len(set(chosen)) != len(chosen):
            raise RankingError(f"the subset names an item twice: {list(chosen)}")
        theta = self.thetas(chosen)
        shares = np.exp(theta - np.logaddexp.reduce(theta))
        return {item: float(share) for item, share in zip(chosen, shares, strict=True)}


def rankings_from_matches(matches: Iterable[Match]) -> list[Ranking]:
    """Each won match as the ranking (winner, loser) with the match's weight.

    A tie has no Plackett-Luce probability: it raises `RankingError` (leave ties out, or fit
    Bradley-Terry with ties="davidson" or "half"). The home side and the judge are not modelled.
    """
    rankings = []
    for number, match in enumerate(matches):
        if match.winner is None or match.loser is None:
            raise RankingError(
                f"match {number} ({match.a} vs {match.b}) is a tie, which Plackett-Luce cannot rate; "
                "leave ties out, or fit Bradley-Terry with ties='davidson' or ties='half'"
            )
        rankings.append(Ranking((match.winner, match.loser), weight=match.weight))
    return rankings


@dataclass(frozen=True, slots=True)
class _Bucket:
    """Rankings of one padded length, position-major (row k holds every ranking's k-th item, so the
    cumulative sums along a ranking run over contiguous rows): item indexes (padding = the dummy
    index n), the stage mask (position k is a stage: its item is chosen from positions k..), and
    the weights."""

    items: NDArray[np.intp]  # (length, rankings)
    stages: NDArray[np.bool_]  # (length, rankings)
    weights: NDArray[np.float64]  # (1, rankings)


def _buckets(rankings: Sequence[Ranking], index: dict[str, int], n: int) -> list[_Bucket]:
    by_width: dict[int, list[Ranking]] = {}
    for ranking in rankings:
        width = 1 << (len(ranking.items) - 1).bit_length()  # the next power of two >= length
        by_width.setdefault(width, []).append(ranking)
    buckets = []
    for width, group in sorted(by_width.items()):
        items = np.full((len(group), width), n, dtype=np.intp)
        stage_counts = np.empty(len(group), dtype=np.intp)
        for row, ranking in enumerate(group):
            names = ranking.items
            items[row, : len(names)] = [index[name] for name in names]
            stage_counts[row] = ranking.stages
        stages = np.arange(width)[:, None] < stage_counts[None, :]
        weights = np.array([[ranking.weight for ranking in group]], dtype=np.float64)
        buckets.append(_Bucket(np.ascontiguousarray(items.T), stages, weights))
    return buckets


def _beat_edges(buckets: Sequence[_Bucket], n: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """loser -> winner edges: each position loses to the one above it, and every unranked item
    to the last ranked one (the transitive closure is every pair a ranking orders)."""
    losers, winners = [], []
    for bucket in buckets:
        width = bucket.items.shape[0]
        stage_counts = bucket.stages.sum(axis=0)
        position = np.arange(1, width)[:, None]
        above = np.minimum(position - 1, stage_counts[None, :] - 1)
        loser = bucket.items[1:]
        winner = np.take_along_axis(bucket.items, above, axis=0)
        real = loser < n
        losers.append(loser[real])
        winners.append(winner[real])
    return np.concatenate(losers), np.concatenate(winners)


def _suffix_sums(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """out[k] = values[k] + values[k + 1] + ... along axis 0. A loop over the (few) positions, each
    a vectorized add over all rankings: numpy's cumsum along a short axis is ~25x slower."""
    out = np.empty_like(values)
    out[-1] = values[-1]
    for k in range(values.shape[0] - 2, -1, -1):
        np.add(out[k + 1], values[k], out=out[k])
    return out


def _prefix_sums(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """out[k] = values[0] + ... + values[k] along axis 0 (see `_suffix_sums`)."""
    out = np.empty_like(values)
    out[0] = values[0]
    for k in range(1, values.shape[0]):
        np.add(out[k - 1], values[k], out=out[k])
    return out


class _MM:
    """Hunter's MM iteration over the buckets; gamma carries a trailing dummy of strength 0."""

    def __init__(self, n: int, buckets: Sequence[_Bucket], prior: float) -> None:
        self.n, self.buckets, self.prior = n, buckets, prior
        self.wins = np.zeros(n + 1)
        for bucket in buckets:
            chosen = np.broadcast_to(bucket.weights, bucket.items.shape)[bucket.stages]
            self.wins += np.bincount(bucket.items[bucket.stages], chosen, minlength=n + 1)
        self.wins = self.wins[:n]

    @staticmethod
    def _denominators(bucket: _Bucket, gamma: NDArray[np.float64]) -> NDArray[np.float64]:
        """Every position's choice-set total: the suffix sum of gamma along the row."""
        strengths = gamma[bucket.items]
        return _suffix_sums(strengths)

    def step(self, gamma: NDArray[np.float64]) -> NDArray[np.float64]:
        """One MM update; `gamma` has length n + 1 (the dummy last, 0)."""
        sums = np.zeros(self.n + 1)
        for bucket in self.buckets:
            denominators = self._denominators(bucket, gamma)
            inverse = np.where(bucket.stages, bucket.weights / np.where(bucket.stages, denominators, 1.0), 0.0)
            sums += np.bincount(bucket.items.ravel(), _prefix_sums(inverse).ravel(), minlength=self.n + 1)
        updated = np.zeros(self.n + 1)
        updated[: self.n] = (self.prior + self.wins) / (self.prior + sums[: self.n])
        return updated

    def log_likelihood(self, gamma: NDArray[np.float64]) -> float:
        total = 0.0
        for bucket in self.buckets:
            denominators = self._denominators(bucket, gamma)
            strengths = gamma[bucket.items]
            terms = np.log(np.where(bucket.stages, strengths, 1.0)) - np.log(np.where(bucket.stages, denominators, 1.0))
            total += float(np.sum(bucket.weights * terms))
        return total


def fit_plackett_luce(
    rankings: Sequence[Ranking | Match],
    *,
    reference: str | None = None,
    items: Sequence[str] | None = None,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
    prior: float = 0.0,
) -> PlackettLuceFit:
    """Maximum-likelihood (or, with `prior > 0`, MAP) Plackett-Luce ratings by Hunter's MM.

    `rankings` may mix `Ranking`s and won `Match`es (read as two-item rankings, see
    `rankings_from_matches`). `items` fixes the universe and its order (default: every item named,
    sorted); `reference` is pinned at 0 (default: the first item in sorted order). The iteration
    stops when no log-strength moves by more than `tol`, or after `max_iter` iterations with
    `converged=False`.

    Raises `RankingError` for no rankings (or all of weight 0), unknown items, ties among the
    matches, and data whose MLE does not exist (naming the items); `ParameterError` for arguments
    out of their domain.
    """
    if not (math.isfinite(prior) and prior >= 0):
        raise ParameterError(f"prior is the Gamma prior's strength, a finite number >= 0; got {prior!r}")
    if not (math.isfinite(tol) and tol > 0):
        raise ParameterError(f"tol is the largest log-strength change that counts as converged, > 0; got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ParameterError(f"max_iter is a whole number >= 1, got {max_iter!r}")
    if not rankings:
        raise RankingError("no rankings to rate: fit_plackett_luce needs at least one ranking")
    matches = [record for record in rankings if isinstance(record, Match)]
    converted = iter(rankings_from_matches(matches))
    records = [next(converted) if isinstance(record, Match) else record for record in rankings]
    universe = item_universe(records, items)
    if reference is None:
        reference = min(universe)
    elif reference not in universe:
        raise RankingError(f"the reference {reference!r} is not among the {len(universe)} items rated")
    kept = [ranking for ranking in records if ranking.weight > 0]
    if not kept:
        raise RankingError(f"all {len(records)} rankings have weight 0: nothing to rate")
    n = len(universe)
    index = {item: k for k, item in enumerate(universe)}
    buckets = _buckets(kept, index, n)
    if prior == 0:
        losers, winners = _beat_edges(buckets, n)
        require_mle(universe, losers, winners, model="Plackett-Luce", remedy=_REMEDY)

    mm = _MM(n, buckets, prior)
    gamma = np.zeros(n + 1)
    gamma[:n] = 1.0
    theta = np.zeros(n)
    converged = False
    iterations = 0
    while iterations < max_iter:
        gamma = mm.step(gamma)
        iterations += 1
        updated = np.log(gamma[:n])
        if prior == 0:  # the likelihood does not see the scale: keep the geometric mean at 1
            updated -= updated.mean()
            gamma[:n] = np.exp(updated)
        change = float(np.max(np.abs(updated - theta)))
        theta = updated
        if change <= tol:
            converged = True
            break
    pinned = theta - theta[index[reference]]
    return PlackettLuceFit(
        items=universe,
        log_strengths=tuple(float(t) for t in pinned),
        reference=reference,
        prior=float(prior),
        log_likelihood=mm.log_likelihood(gamma),
        iterations=iterations,
        converged=converged,
    )
