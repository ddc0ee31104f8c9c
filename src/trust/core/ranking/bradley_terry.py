"""Bradley-Terry ratings by maximum likelihood: weighted, with ties and a home advantage.

What it implements:

- The Bradley-Terry model of the swarm document, eq. 6: P(i beats j) = pi_i / (pi_i + pi_j) =
  1 / (1 + exp(-(theta_i - theta_j))) with theta = log pi, fitted by maximizing the
  log-likelihood of eq. 9 (sum over pairs of w_ij log P(i beats j) + (n_ij - w_ij) log P(j beats i)).
- The reputation-weighted likelihood of eq. 13: each comparison's log-likelihood term is scaled by
  the reputation R_a of the judge a that made it. Here a match's contribution is scaled by
  `Match.weight` (a count, as in a win table) times `weights[match.judge]` when `weights` is given.
- Ties, which eqs. 6-13 do not model: `ties="davidson"` (Davidson 1970: P(i beats j) = pi_i / D,
  P(tie) = nu sqrt(pi_i pi_j) / D, D = pi_i + pi_j + nu sqrt(pi_i pi_j), nu >= 0 fitted jointly as
  log nu; when the data hold no tie, nu is not fitted and the model is eq. 6 itself) or
  `ties="half"` (a tie is half a win for each side: the log-likelihood term of eq. 13 with
  y = 1/2, the win-rate convention; a pseudo-likelihood, as the model gives ties no probability).
- A home advantage (Agresti 2002, sec. 10.6; BradleyTerry2's `home.advantage`): P(i beats j | i at
  home) = exp(theta_i + eta) / (exp(theta_i + eta) + exp(theta_j)), eta fitted when
  `home_advantage=True`. With it off, a match's `home` field is ignored (a neutral site).

How: the negative log-likelihood is convex in (theta, eta, log nu) (a log-sum-exp of linear
functions), so a Newton-type method finds the global optimum. Matches are first collapsed into one
row per (pair, home side) with the weights of each outcome summed; gradients and Hessian-vector
products are then `np.bincount` scatters over integer item indexes, O(rows) each, and scipy's
`trust-ncg` (Newton with conjugate-gradient steps) solves it. 100k matches among 1,000 items fit in well under a second.

Identifiability: the ratings are defined up to an additive constant; the fit pins `reference` at
0. The default reference is the first item in sorted order, which is what R's BradleyTerry2 does
(its reference category is the first factor level, and R sorts factor levels), so the baseball
figures below compare without a shift. Before fitting, `identifiability.require_mle` checks that
the maximum-likelihood estimate exists (the beat graph, loser -> winner, is strongly connected).
`prior > 0` adds the Gaussian prior theta ~ N(0, 1/prior) (penalty prior * sum(theta^2) / 2; choix's
`opt_pairwise(alpha=a)` penalizes a * sum(theta^2), i.e. prior = 2a), which makes every data set fit
(the maximum a posteriori estimate always exists) and skips the existence check. The reported
log-likelihood is never penalized.

Reproduced (tests/core/ranking/test_bradley_terry.py): Agresti's 1987 AL East baseball fit (Table
10.11): with Baltimore at 0 the sorted log-abilities 0.68, 1.11, 1.25, 1.29, 1.44, 1.58, and with a
home-advantage term eta = 0.302; `choix.opt_pairwise` on random data to 1e-5.

Where the document is vague or silent, and what we chose:
- eq. 13 does not say what R_a is on a scale: only ratios matter (scaling every weight by c
  scales the log-likelihood by c and leaves the estimate unchanged), so any non-negative weights
  are accepted; a judge weight of 0 drops that judge's matches.
- eq. 9 assumes the maximum exists; we check it first (see `identifiability`).
- ties and home advantage are not in the document; both are the standard extensions above.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import expit

from trust.core.ranking.identifiability import StrengthFit, require_mle
from trust.core.ranking.records import Match, item_universe
from trust.errors import ParameterError, RankingError

__all__ = [
    "DEFAULT_MAX_ITER",
    "DEFAULT_TOL",
    "BradleyTerryFit",
    "MatchProbabilities",
    "TieModel",
    "fit_bradley_terry",
]

TieModel = Literal["davidson", "half"]
_TIE_MODELS: tuple[str, ...] = ("davidson", "half")

# Stop when the gradient's 2-norm of the scaled objective (the negative log-likelihood divided by
# the average comparison weight per item, so its Hessian diagonal is O(1)) falls below this.
DEFAULT_TOL = 1e-9
# Newton (trust-region) iterations; a convex fit like this one needs a few dozen at most.
DEFAULT_MAX_ITER = 200
# With no prior the likelihood is flat along theta + c: the objective adds
# GAUGE_CURVATURE * (mean theta)^2 * n / 2, which leaves the maximizer's differences unchanged,
# makes the Hessian non-singular, and keeps the iterates centred (they are re-pinned at the end).
GAUGE_CURVATURE = 1.0
# Newton steps taken after the trust-region run when its gradient is still above `tol`: next to
# the optimum the decrease of the objective is below the rounding of its value, so the
# trust-region test (actual vs predicted decrease) rejects steps that the gradient shows are good.
POLISH_STEPS = 3
# Relative residual of the conjugate-gradient solve of one polishing Newton step.
POLISH_CG_RTOL = 1e-12

_REMEDY = (
    "Add comparisons that these items lose (or win) against the others, rate each group on its "
    "own, or fit with prior > 0 (a Gaussian prior on the log-strengths)."
)


@dataclass(frozen=True, slots=True)
class MatchProbabilities:
    """The model's probabilities for one match: a wins, a tie, b wins (they sum to 1)."""

    win: float
    tie: float
    loss: float


@dataclass(frozen=True, slots=True)
class BradleyTerryFit(StrengthFit):
    """A fitted Bradley-Terry model (`StrengthFit`: the log-strengths, the reference at 0, the
    weighted log-likelihood of eq. 13 without the prior).

    `home_advantage` is eta (log-odds added to the home side) or None when not fitted;
    `tie_parameter` is Davidson's nu or None when no tie was modelled. `iterations` are the Newton
    iterations (trust-region and polishing); `converged` says whether it met `tol`.
    """

    home_advantage: float | None
    tie_parameter: float | None
    ties: TieModel

    def probability(self, a: str, b: str, home: Literal["a", "b"] | None = None) -> MatchProbabilities:
        """The model's outcome probabilities when `a` meets `b`, `home` naming the home side.

        Without a fitted tie parameter `tie` is 0 (the "half" convention predicts no ties).
        """
        theta_a, theta_b = self.thetas((a, b))
        if a == b:
            raise RankingError(f"a match needs two different items, got {a!r} twice")
        if home not in (None, "a", "b"):
            raise ParameterError(f"home is 'a', 'b' or None, got {home!r}")
        eta = 0.0
        if home is not None:
            if self.home_advantage is None:
                raise ParameterError(
                    f"home={home!r}, but this fit has no home advantage; "
                    "fit with home_advantage=True, or pass home=None"
                )
            eta = self.home_advantage if home == "a" else -self.home_advantage
        d = float(theta_a - theta_b) + eta
        if self.tie_parameter is None:
            win = float(expit(d))
            return MatchProbabilities(win, 0.0, 1.0 - win)
        # Davidson, divided through by sqrt(pi_a pi_b): D = e^(d/2) + e^(-d/2) + nu.
        terms = np.array([d / 2, math.log(self.tie_parameter) if self.tie_parameter > 0 else -np.inf, -d / 2])
        probabilities = np.exp(terms - np.logaddexp.reduce(terms))
        return MatchProbabilities(float(probabilities[0]), float(probabilities[1]), float(probabilities[2]))


@dataclass(frozen=True, slots=True)
class _Rows:
    """Matches collapsed to one row per (a, b, home sign) with a < b; weights per outcome."""

    a: NDArray[np.intp]
    b: NDArray[np.intp]
    home: NDArray[np.float64]  # +1 a at home, -1 b at home, 0 neutral
    wins_a: NDArray[np.float64]
    wins_b: NDArray[np.float64]
    ties: NDArray[np.float64]


def _collapse(
    n: int,
    a: NDArray[np.intp],
    b: NDArray[np.intp],
    home: NDArray[np.int8],
    result: NDArray[np.float64],
    weight: NDArray[np.float64],
) -> _Rows:
    swap = a > b
    first, second = np.where(swap, b, a), np.where(swap, a, b)
    side = np.where(swap, -home, home).astype(np.int64)
    score = np.where(swap, 1.0 - result, result)  # the first item's score
    key = (first.astype(np.int64) * n + second) * 3 + (side + 1)
    keys, row = np.unique(key, return_inverse=True)
    rows = keys.size

    def total(outcome: float) -> NDArray[np.float64]:
        return np.bincount(row, weight * (score == outcome), minlength=rows).astype(np.float64)

    wins_a, wins_b, ties = total(1.0), total(0.0), total(0.5)
    pair, side_code = np.divmod(keys, 3)
    return _Rows(
        (pair // n).astype(np.intp),
        (pair % n).astype(np.intp),
        (side_code - 1).astype(np.float64),
        wins_a,
        wins_b,
        ties,
    )


class _Objective:
    """The scaled negative log-likelihood in x = (theta_0..theta_{n-1}[, eta][, log nu]).

    Keeps the per-row curvature of the last point evaluated, since `trust-ncg` asks for many
    Hessian-vector products at the same point.
    """

    def __init__(self, n: int, rows: _Rows, *, home: bool, davidson: bool, prior: float, scale: float) -> None:
        self.n, self.rows, self.home, self.davidson = n, rows, home, davidson
        self.prior, self.scale = prior, scale
        self.eta_index = n if home else None
        self.lam_index = n + int(home) if davidson else None
        self.size = n + int(home) + int(davidson)
        self.total = rows.wins_a + rows.wins_b + rows.ties
        self._curvature_at: NDArray[np.float64] | None = None
        self._h_dd = self._h_dl = self._h_ll = np.zeros(0)

    def _differences(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        d = x[self.rows.a] - x[self.rows.b]
        if self.eta_index is not None:
            d = d + self.rows.home * x[self.eta_index]
        return d

    def _davidson_terms(
        self, x: NDArray[np.float64], d: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """log Z and the outcome probabilities (a, tie, b) of every row."""
        assert self.lam_index is not None
        lam = x[self.lam_index]
        half = d / 2
        log_z = np.logaddexp(np.logaddexp(half, -half), lam)
        return log_z, np.exp(half - log_z), np.exp(lam - log_z), np.exp(-half - log_z)

    def log_likelihood(self, x: NDArray[np.float64]) -> float:
        d = self._differences(x)
        rows = self.rows
        if self.lam_index is None:
            # "half" ties (or none): W_a log p + W_b log(1-p) + T (log p + log(1-p)) / 2.
            scored = rows.wins_a + rows.ties / 2
            return float(np.sum(scored * d - self.total * np.logaddexp(0.0, d)))
        log_z = self._davidson_terms(x, d)[0]
        lam = x[self.lam_index]
        return float(np.sum((rows.wins_a - rows.wins_b) * d / 2 + rows.ties * lam - self.total * log_z))

    def _penalty(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        if self.prior > 0:
            return self.prior * float(theta @ theta) / 2, self.prior * theta
        mean = float(theta.mean())
        # GAUGE_CURVATURE * n * mean^2 / 2 in scaled units; converted to unscaled here.
        weight = GAUGE_CURVATURE / self.scale
        return weight * self.n * mean * mean / 2, np.full(self.n, weight * mean)

    def value_and_gradient(self, x: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        rows, n = self.rows, self.n
        d = self._differences(x)
        gradient = np.zeros(self.size)
        if self.lam_index is None:
            scored = rows.wins_a + rows.ties / 2
            value = -float(np.sum(scored * d - self.total * np.logaddexp(0.0, d)))
            g_d = scored - self.total * expit(d)  # d loglik / d d
        else:
            log_z, p_a, p_t, p_b = self._davidson_terms(x, d)
            lam = x[self.lam_index]
            value = -float(np.sum((rows.wins_a - rows.wins_b) * d / 2 + rows.ties * lam - self.total * log_z))
            g_d = ((rows.wins_a - rows.wins_b) - self.total * (p_a - p_b)) / 2
            gradient[self.lam_index] = -float(np.sum(rows.ties - self.total * p_t))
        gradient[:n] = -(np.bincount(rows.a, g_d, minlength=n) - np.bincount(rows.b, g_d, minlength=n))
        if self.eta_index is not None:
            gradient[self.eta_index] = -float(rows.home @ g_d)
        penalty, penalty_gradient = self._penalty(x[:n])
        gradient[:n] += penalty_gradient
        return self.scale * (value + penalty), self.scale * gradient

    def _curvature(self, x: NDArray[np.float64]) -> None:
        if self._curvature_at is not None and np.array_equal(self._curvature_at, x):
            return
        d = self._differences(x)
        if self.lam_index is None:
            p = expit(d)
            self._h_dd = self.total * p * (1 - p)
        else:
            _, p_a, p_t, p_b = self._davidson_terms(x, d)
            # Covariance of the outcome features (a: (1/2, 0), b: (-1/2, 0), tie: (0, 1)).
            mean_u = (p_a - p_b) / 2
            self._h_dd = self.total * ((p_a + p_b) / 4 - mean_u * mean_u)
            self._h_dl = self.total * (-mean_u * p_t)
            self._h_ll = self.total * (p_t - p_t * p_t)
        self._curvature_at = x.copy()

    def hessian_product(self, x: NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
        self._curvature(x)
        rows, n = self.rows, self.n
        dv = v[rows.a] - v[rows.b]
        if self.eta_index is not None:
            dv = dv + rows.home * v[self.eta_index]
        q = self._h_dd * dv
        product = np.zeros(self.size)
        if self.lam_index is not None:
            v_lam = v[self.lam_index]
            q = q + self._h_dl * v_lam
            product[self.lam_index] = float(self._h_dl @ dv + self._h_ll.sum() * v_lam)
        product[:n] = np.bincount(rows.a, q, minlength=n) - np.bincount(rows.b, q, minlength=n)
        if self.eta_index is not None:
            product[self.eta_index] = float(rows.home @ q)
        if self.prior > 0:
            product[:n] += self.prior * v[:n]
        else:
            product[:n] += GAUGE_CURVATURE / self.scale * float(v[:n].mean())
        return self.scale * product


def _match_weights(matches: Sequence[Match], weights: Mapping[str, float] | None) -> NDArray[np.float64]:
    """Match.weight times the judge's weight (eq. 13's R_a) when `weights` is given."""
    base = np.fromiter((match.weight for match in matches), dtype=np.float64, count=len(matches))
    if weights is None:
        return base
    for judge, value in weights.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value >= 0):
            raise ParameterError(f"weights[{judge!r}] is a judge's weight, a finite number >= 0; got {value!r}")
    factors = np.empty(len(matches))
    for k, match in enumerate(matches):
        if match.judge is None:
            raise RankingError(
                f"match {k} ({match.a} vs {match.b}) names no judge, so `weights` cannot weight it; "
                "set Match.judge on every match, or fit without weights"
            )
        if match.judge not in weights:
            raise RankingError(
                f"match {k} ({match.a} vs {match.b}) was judged by {match.judge!r}, who has no weight in `weights` "
                f"({len(weights)} judges weighted); give every judge a weight (0 leaves their matches out)"
            )
        factors[k] = weights[match.judge]
    return base * factors


def _check_parameters(ties: str, prior: float, tol: float, max_iter: int) -> None:
    if ties not in _TIE_MODELS:
        raise ParameterError(f"ties is one of {', '.join(map(repr, _TIE_MODELS))}, got {ties!r}")
    if not (math.isfinite(prior) and prior >= 0):
        raise ParameterError(f"prior is the precision of a Gaussian prior, a finite number >= 0; got {prior!r}")
    if not (math.isfinite(tol) and tol > 0):
        raise ParameterError(f"tol is a gradient tolerance > 0, got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ParameterError(f"max_iter is a whole number >= 1, got {max_iter!r}")


def fit_bradley_terry(
    matches: Sequence[Match],
    *,
    ties: TieModel = "davidson",
    home_advantage: bool = False,
    weights: Mapping[str, float] | None = None,
    reference: str | None = None,
    items: Sequence[str] | None = None,
    prior: float = 0.0,
    tol: float = DEFAULT_TOL,
    max_iter: int = DEFAULT_MAX_ITER,
) -> BradleyTerryFit:
    """Maximum-likelihood Bradley-Terry ratings of the items in `matches` (eqs. 6, 9 and 13).

    `weights` maps judge -> reputation weight (eq. 13's R_a); each match then counts
    Match.weight * weights[match.judge] times. `items` fixes the universe and its order (default:
    every item the matches name, sorted); an item of `items` that no match names has no MLE, so it
    needs `prior > 0`. `reference` is pinned at 0 (default: the first item in sorted order, as
    R's BradleyTerry2). `tol` is the gradient tolerance of the scaled objective, `max_iter` the
    Newton iterations allowed; a fit that runs out of them comes back with `converged=False`.

    Raises `RankingError` for no matches (or all of weight 0), unknown items, a judge without a
    weight, data whose MLE does not exist (naming the items), ties only under "davidson", and a
    home advantage that cannot be estimated; `ParameterError` for arguments out of their domain.
    """
    _check_parameters(ties, prior, tol, max_iter)
    if not matches:
        raise RankingError("no matches to rate: fit_bradley_terry needs at least one match")
    universe = item_universe(matches, items)
    if reference is None:
        reference = min(universe)
    elif reference not in universe:
        raise RankingError(f"the reference {reference!r} is not among the {len(universe)} items rated")
    n = len(universe)
    index = {item: k for k, item in enumerate(universe)}
    weight = _match_weights(matches, weights)
    a = np.fromiter((index[match.a] for match in matches), dtype=np.intp, count=len(matches))
    b = np.fromiter((index[match.b] for match in matches), dtype=np.intp, count=len(matches))
    result = np.fromiter((match.result for match in matches), dtype=np.float64, count=len(matches))
    sides = {None: 0, "a": 1, "b": -1}
    home = np.fromiter((sides[match.home] for match in matches), dtype=np.int8, count=len(matches))
    kept = weight > 0
    if not kept.any():
        raise RankingError(f"all {len(matches)} matches have weight 0: nothing to rate")
    rows = _collapse(n, a[kept], b[kept], home[kept], result[kept], weight[kept])

    if prior == 0:
        a_won, b_won, tied = rows.wins_a > 0, rows.wins_b > 0, rows.ties > 0
        losers = np.concatenate([rows.b[a_won], rows.a[b_won], rows.a[tied], rows.b[tied]])
        winners = np.concatenate([rows.a[a_won], rows.b[b_won], rows.b[tied], rows.a[tied]])
        require_mle(universe, losers, winners, model="Bradley-Terry", remedy=_REMEDY)

    tie_weight = float(rows.ties.sum())
    decisive_weight = float(rows.wins_a.sum() + rows.wins_b.sum())
    davidson = ties == "davidson" and tie_weight > 0
    if davidson and decisive_weight == 0:
        raise RankingError(
            "every match is a tie, so Davidson's tie parameter has no finite estimate; "
            "fit with ties='half' (ties as half wins) or add decided matches"
        )
    if home_advantage:
        _check_home(rows, ties)

    total_weight = float((rows.wins_a + rows.wins_b + rows.ties).sum())
    scale = n / (2 * total_weight)  # 1 / the average comparison weight per item
    objective = _Objective(n, rows, home=home_advantage, davidson=davidson, prior=prior, scale=scale)
    start = np.zeros(objective.size)
    if objective.lam_index is not None:
        tie_share = tie_weight / total_weight  # P(tie) = nu / (2 + nu) between equals
        start[objective.lam_index] = math.log(2 * tie_share / (1 - tie_share))
    solution = minimize(
        objective.value_and_gradient,
        start,
        jac=True,
        hessp=objective.hessian_product,
        method="trust-ncg",
        options={"gtol": tol, "maxiter": max_iter},
    )
    x, gradient_norm, polish_steps = _polish(objective, np.asarray(solution.x, dtype=np.float64), tol)
    theta = x[:n] - x[index[reference]]
    return BradleyTerryFit(
        items=universe,
        log_strengths=tuple(float(t) for t in theta),
        reference=reference,
        home_advantage=None if objective.eta_index is None else float(x[objective.eta_index]),
        tie_parameter=None if objective.lam_index is None else float(np.exp(x[objective.lam_index])),
        ties=ties,
        prior=float(prior),
        log_likelihood=objective.log_likelihood(x),
        iterations=int(solution.nit) + polish_steps,
        converged=gradient_norm <= tol,
    )


def _polish(objective: _Objective, x: NDArray[np.float64], tol: float) -> tuple[NDArray[np.float64], float, int]:
    """Up to POLISH_STEPS Newton steps, each kept only if it lowers the gradient's norm (a test that,
    unlike comparing objective values, still resolves progress at the optimum). Returns the point,
    its gradient norm and the steps kept."""
    gradient = objective.value_and_gradient(x)[1]
    norm = float(np.linalg.norm(gradient))
    steps = 0
    for _ in range(POLISH_STEPS):
        if norm <= tol:
            break
        hessian = LinearOperator(
            (objective.size, objective.size),
            matvec=lambda v, at=x: objective.hessian_product(at, np.asarray(v, dtype=np.float64).ravel()),
            dtype=np.float64,
        )
        step, _ = cg(hessian, -gradient, rtol=POLISH_CG_RTOL, maxiter=10 * objective.size)
        candidate = x + step
        candidate_gradient = objective.value_and_gradient(candidate)[1]
        candidate_norm = float(np.linalg.norm(candidate_gradient))
        if not candidate_norm < norm:
            break
        x, gradient, norm = candidate, candidate_gradient, candidate_norm
        steps += 1
    return x, norm, steps


def _check_home(rows: _Rows, ties: str) -> None:
    """The home advantage has a finite estimate only if the home side both won and failed to win."""
    at_home = rows.home != 0
    if not at_home.any():
        raise RankingError(
            "home_advantage=True, but no match names a home side (Match.home is None everywhere); "
            "set Match.home, or fit with home_advantage=False"
        )
    home_is_a = rows.home > 0
    home_won = np.where(home_is_a, rows.wins_a, rows.wins_b)[at_home].sum()
    home_lost = np.where(home_is_a, rows.wins_b, rows.wins_a)[at_home].sum()
    home_tied = rows.ties[at_home].sum()  # a tie bounds eta both ways, under either tie model
    if home_won + home_tied == 0 or home_lost + home_tied == 0:
        outcome = "lost" if home_won + home_tied == 0 else "won"
        raise RankingError(
            f"the home side {outcome} every match that names one, so the home advantage has no finite "
            f"estimate (ties={ties!r}); add matches the home side {'won' if outcome == 'lost' else 'lost'}, "
            "or fit with home_advantage=False"
        )
