"""The economic layer (paper 3.3, 4.4, Theorem 4.1 (b), (c)): payoffs, conditions E1 and E2, tail bounds.

A seat's payoff on one segment is X in {R, 0, -P} (eq. 4.17): R for a vote that agrees with the
consensus, and for a wrong vote -P with probability p_slash(r) = p_min + (p_max - p_min)(1 - r)
(eq. 4.16), else 0. An honest seat is wrong with probability epsilon_H; a malicious seat always is.

What the module computes, and which of it is the paper's and which is ours:

- The paper's quantities, exactly as printed: mu_H(r) (4.18), mu_min (4.19/4.23), sigma_H^2 as the
  supremum over r of Var X (4.21, on [p_min, p_max]: a concave quadratic in p_slash, maximized at
  its vertex clipped to the interval), the loose (R + P)^2 / 4, E1, E2 with alpha, and the
  honest-loss and malicious-profit bounds (4.41, 4.42) with b = R (4.20).
- Values a reader can rely on, because the printed derivation of (4.41) does not hold as written
  (docs/theory.md gives the details): (4.35) bounds a lower tail with E[exp(+theta Y)], the MGF of
  the wrong sign; b = R bounds Y from above, while the lower tail needs the bound on -Y, which is
  P + mu; and (4.36) -> (4.37) replaces exp(lambda T (e^g - 1)) by the smaller exp(lambda T g).
  * `honest_loss_chernoff`: min over theta of exp(lambda T (E[e^{-theta X}] - 1)), the exact
    Chernoff bound of the compound Poisson sum U = X_1 + ... + X_{N_T}, at the worst reputation
    (p_slash = p_max; U is stochastically smaller the larger p_slash is).
  * `honest_loss_exact`: Pr[U <= 0] itself at p_slash = p_max. By Poisson thinning the rewarded and
    the slashed votes are independent Poisson counts N_R ~ Poisson(lambda T (1 - epsilon)) and
    N_S ~ Poisson(lambda T epsilon p_max), and U <= 0 iff R N_R <= P N_S.
  * `malicious_profit_exact`: a malicious seat never earns R, so U_mal >= 0 iff it is never
    slashed: exp(-lambda T p) at a constant p_slash = p, at most exp(-lambda T p_min) however its
    reputation moves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from trust.core.theory.validate import open_unit, positive, probability
from trust.errors import ParameterError

__all__ = ["Economics"]


@dataclass(frozen=True, slots=True)
class Economics:
    """Reward R, penalty P, slash probabilities, the honest human error rate and the design constant delta."""

    reward: float
    penalty: float
    p_min: float
    p_max: float
    epsilon_h: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "reward", positive("R", self.reward))
        object.__setattr__(self, "penalty", positive("P", self.penalty))
        object.__setattr__(self, "p_min", probability("p_min", self.p_min))
        object.__setattr__(self, "p_max", probability("p_max", self.p_max))
        object.__setattr__(self, "epsilon_h", probability("epsilon_H", self.epsilon_h))
        object.__setattr__(self, "delta", open_unit("delta", self.delta))
        if not 0 < self.p_min < self.p_max <= 1:
            raise ParameterError(f"p_min = {self.p_min}, p_max = {self.p_max}: need 0 < p_min < p_max <= 1 (eq. 4.16)")

    # --- the paper's quantities -------------------------------------------------------------

    def p_slash(self, r: float) -> float:
        """eq. 4.16."""
        r = probability("r", r)
        return self.p_min + (self.p_max - self.p_min) * (1.0 - r)

    def mu_honest(self, r: float) -> float:
        """eq. 4.18: an honest seat's expected payoff at reputation r."""
        return self._mu(self.p_slash(r))

    @property
    def mu_min(self) -> float:
        """eq. 4.19 / 4.23: the expected payoff at the worst reputation (r = 0, p_slash = p_max)."""
        return self._mu(self.p_max)

    def variance(self, r: float) -> float:
        """Var X for an honest seat at reputation r (the bracket of eq. 4.21)."""
        return self._variance(self.p_slash(r))

    @property
    def sigma_h2(self) -> float:
        """eq. 4.21: sup over r in [0, 1] of Var X, i.e. over p_slash in [p_min, p_max]."""
        e, big_p = self.epsilon_h, self.penalty
        if e == 0:
            return self._variance(self.p_max)
        vertex = (big_p + 2 * (1 - e) * self.reward) / (2 * e * big_p)  # dVar/dp = e P (P + 2 mu(p)) = 0
        return self._variance(min(max(vertex, self.p_min), self.p_max))

    @property
    def sigma_h2_simple(self) -> float:
        """The looser bound after eq. 4.21: (R + P)^2 / 4."""
        return (self.reward + self.penalty) ** 2 / 4

    @property
    def b(self) -> float:
        """eq. 4.20: the range bound the paper uses, b = R."""
        return self.reward

    @property
    def alpha(self) -> float:
        """alpha of E2: P p_max / (R + P p_max)."""
        slash = self.penalty * self.p_max
        return slash / (self.reward + slash)

    @property
    def e1_bound(self) -> float:
        """E1 asks R > epsilon_H / (1 - epsilon_H) * P * p_max; this is the right side."""
        if self.epsilon_h >= 1:
            return math.inf
        return self.epsilon_h / (1 - self.epsilon_h) * self.penalty * self.p_max

    @property
    def e2_bound(self) -> float:
        """E2 asks p_min >= delta / (1 - alpha); this is the right side."""
        return self.delta / (1 - self.alpha)

    def honest_loss_log_bound(self, lam_t: float) -> float:
        """ln of the printed (4.41): -lambda T mu_min^2 / (2 sigma_H^2 + 2/3 b mu_min)."""
        return self._printed_tail(lam_t, self.mu_min)

    def malicious_profit_log_bound(self, lam_t: float) -> float:
        """ln of the printed (4.42): -lambda T (delta P)^2 / (2 sigma_H^2 + 2/3 b delta P)."""
        return self._printed_tail(lam_t, self.delta * self.penalty)

    def malicious_expected_payoff(self, r: float = 0.0) -> float:
        """E[X_mal] = -P p_slash(r); the paper's -4.0 (sec. 4.7) is r = 0."""
        return -self.penalty * self.p_slash(r)

    # --- values that hold -------------------------------------------------------------------

    def honest_loss_chernoff_log(self, lam_t: float) -> float:
        """ln of min over theta > 0 of exp(lambda T (E[exp(-theta X)] - 1)) at p_slash = p_max:
        a valid Chernoff bound on Pr[U_hon(T) <= 0] for the compound Poisson sum."""
        lam_t = positive("lambda T", lam_t)
        if self.mu_min <= 0:
            return 0.0
        e, big_r, big_p, p = self.epsilon_h, self.reward, self.penalty, self.p_max

        def log_mgf_minus_one(theta: float) -> float:
            mgf = (1 - e) * math.exp(-theta * big_r) + e * (1 - p) + e * p * math.exp(theta * big_p)
            return lam_t * (mgf - 1.0)

        upper = 50.0 / big_p
        result = optimize.minimize_scalar(log_mgf_minus_one, bounds=(0.0, upper), method="bounded")
        return min(float(result.fun), 0.0)

    def honest_loss_exact_log(self, lam_t: float, p: float | None = None) -> float:
        """ln Pr[U_hon(T) <= 0] at a constant slash probability p (default p_max, the worst
        reputation): Pr[R N_R <= P N_S]."""
        lam_t = positive("lambda T", lam_t)
        p = self.p_max if p is None else probability("p", p)
        rewarded = lam_t * (1 - self.epsilon_h)
        slashed = lam_t * self.epsilon_h * p
        if slashed == 0:
            return -rewarded  # U <= 0 only when no vote is rewarded
        top = int(2 * (slashed + rewarded * self.reward / self.penalty) + 60 * math.sqrt(slashed + rewarded) + 200)
        n_s = np.arange(top + 1)
        most_rewards = np.floor(self.penalty * n_s / self.reward + 1e-9)
        terms = stats.poisson.logpmf(n_s, slashed) + stats.poisson.logcdf(most_rewards, rewarded)
        return float(min(special.logsumexp(terms), 0.0))

    def malicious_profit_exact_log(self, lam_t: float, p: float | None = None) -> float:
        """ln Pr[U_mal(T) >= 0] = -lambda T p at a constant slash probability p (default p_min, the
        largest value whatever the reputation does)."""
        lam_t = positive("lambda T", lam_t)
        p = self.p_min if p is None else probability("p", p)
        return -lam_t * p

    # --- helpers ----------------------------------------------------------------------------

    def _mu(self, p: float) -> float:
        return (1 - self.epsilon_h) * self.reward - self.epsilon_h * self.penalty * p

    def _variance(self, p: float) -> float:
        second = (1 - self.epsilon_h) * self.reward**2 + self.epsilon_h * p * self.penalty**2
        return second - self._mu(p) ** 2

    def _printed_tail(self, lam_t: float, gap: float) -> float:
        lam_t = positive("lambda T", lam_t)
        if gap <= 0:
            return 0.0
        return -lam_t * gap**2 / (2 * self.sigma_h2 + (2 / 3) * self.b * gap)
