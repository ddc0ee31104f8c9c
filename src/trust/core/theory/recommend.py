"""Parameter recommendation (paper 4.8): the smallest committees, then beta, then (R, P, p_min, p_max).

Given the segment classes of a typical trace (error rate, adversarial fraction, weight, count, and
`k` as the smallest committee allowed), the vote threshold tau, the horizon and the target:

1. Committees. Starting from every class's `k`, move one class at a time to the larger size that
   raises the expected pass weight mu_vote the most per seat added (every larger size up to k_max is
   considered: with q = ceil(tau k) the pass probability can fall before it rises), until S1 holds
   with `safety_factor` (the paper's 2x) at the lowest beta allowed (`beta_min`, 0.55, the bottom of
   Remark 4.1's range). S1's right side does not depend on k, so this is the fewest seats per trace
   that the greedy order finds. When even unanimous committees could not meet S1 (its gap is at
   most (1 - beta) times the total weight), the error says how many segments the trace would need.
2. beta: the largest value on a 0.01 grid up to `beta_max` at which S1 still holds with the factor
   (a higher trace quorum rejects more bad traces).
3. Economics. P is given (it sets the scale; only ratios matter). For each p_max on a grid, R is the
   smallest value with E1 at `safety_factor` (R >= 2 epsilon_H / (1 - epsilon_H) P p_max) and room for
   E2 at the same factor below p_max (p_min = 2 delta / (1 - alpha) <= p_max - `slash_spread`, so
   the slash probability still depends on reputation); the p_max with the smallest R wins. R and
   p_min are rounded up (2 and 3 decimals) so the rounded values still satisfy the conditions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from trust.core.theory.consensus import SegmentClass, TraceModel, human_class, pass_probability
from trust.core.theory.economics import Economics
from trust.core.theory.params import CheckReport, Parameters, check
from trust.core.theory.validate import integer_at_least, open_unit, positive, probability
from trust.errors import ParameterError

__all__ = ["Recommendation", "recommend", "recommend_committees", "recommend_economics"]

_P_MAX_GRID = tuple(round(x, 2) for x in np.arange(0.30, 1.0001, 0.05))


@dataclass(frozen=True)
class Recommendation:
    """The recommended parameters, their check, and the seats one trace costs."""

    parameters: Parameters
    report: CheckReport

    @property
    def seats_per_trace(self) -> int:
        return sum(c.k * c.count for c in self.parameters.trace.classes)


def _s1_factor(trace: TraceModel, lam: float, horizon: float, epsilon_target: float) -> float:
    required = trace.s1_gap_required(lam, horizon, epsilon_target)
    return trace.gap / required if required > 0 else (math.inf if trace.gap > 0 else 0.0)


def recommend_committees(
    classes: Sequence[SegmentClass],
    tau: float,
    *,
    lam: float,
    horizon: float,
    epsilon_target: float,
    safety_factor: float = 2.0,
    beta_min: float = 0.55,
    beta_max: float = 0.95,
    k_max: int = 101,
) -> TraceModel:
    """Steps 1 and 2 of the module docstring: committee sizes, then the largest beta."""
    safety_factor = positive("safety_factor", safety_factor)
    beta_min = open_unit("beta_min", beta_min)
    beta_max = open_unit("beta_max", beta_max)
    k_max = integer_at_least("k_max", k_max, 1)
    if beta_max < beta_min:
        raise ParameterError(f"beta_max = {beta_max} is below beta_min = {beta_min}")
    trace = TraceModel(tuple(classes), tau, beta_min)
    required = safety_factor * trace.s1_gap_required(lam, horizon, epsilon_target)
    best_gap = (1 - beta_min) * trace.total_weight
    if best_gap < required:
        per_segment = trace.total_weight / trace.segments
        needed = math.ceil(trace.segments * (required / best_gap) ** 2)
        raise ParameterError(
            f"S1 cannot hold with factor {safety_factor:g} for this trace: even unanimous committees give a gap of "
            f"{best_gap:.2f} (= (1 - beta) x total weight), S1 needs {required:.2f}; a trace of about {needed} "
            f"segments of weight {per_segment:.3g} would be needed, or a larger epsilon_target or shorter horizon"
        )
    sizes = {c.name: c.k for c in trace.classes}

    def model(ks: dict[str, int], beta: float) -> TraceModel:
        return TraceModel(tuple(replace(c, k=ks[c.name]) for c in trace.classes), tau, beta)

    # p_t for every size up to k_max, once per class: the greedy step looks at every larger size,
    # because with q = ceil(tau k) the pass probability can fall before it rises.
    table = {
        c.name: [0.0] + [pass_probability(k, c.epsilon, c.rho, tau) for k in range(1, k_max + 1)]
        for c in trace.classes
        if c.count
    }
    while model(sizes, beta_min).gap < required:
        best: tuple[float, str, int] | None = None
        for c in trace.classes:
            if c.count == 0:
                continue
            now = table[c.name][sizes[c.name]]
            for k in range(sizes[c.name] + 1, k_max + 1):
                gain = c.weight * (table[c.name][k] - now) / (k - sizes[c.name])
                if gain > 1e-15 and (best is None or gain > best[0]):
                    best = (gain, c.name, k)
        if best is None:
            current = model(sizes, beta_min)
            raise ParameterError(
                f"S1 cannot hold with factor {safety_factor:g}: with committees {sizes} (up to k_max = {k_max}) "
                f"the gap is {current.gap:.2f} and S1 needs {required:.2f}; more seats no longer help "
                f"(pass probabilities {current.pass_probabilities}); lower rho or epsilon, or relax the target"
            )
        sizes[best[1]] = best[2]
    beta = beta_min
    for candidate in np.arange(round(beta_max, 2), beta_min - 1e-9, -0.01):
        candidate = round(float(candidate), 2)
        trial = model(sizes, candidate)
        if trial.gap >= safety_factor * trial.s1_gap_required(lam, horizon, epsilon_target):
            beta = candidate
            break
    return model(sizes, beta)


def recommend_economics(
    epsilon_h: float,
    delta: float,
    penalty: float,
    *,
    safety_factor: float = 2.0,
    slash_spread: float = 0.05,
    p_max_grid: Sequence[float] = _P_MAX_GRID,
) -> Economics:
    """Step 3 of the module docstring: the smallest R, with p_min and p_max, for E1 and E2 at the factor."""
    epsilon_h = probability("epsilon_H", epsilon_h)
    delta = open_unit("delta", delta)
    penalty = positive("P", penalty)
    safety_factor = positive("safety_factor", safety_factor)
    slash_spread = probability("slash_spread", slash_spread)
    if epsilon_h >= 1:
        raise ParameterError("epsilon_H = 1: an auditor who is always wrong cannot be paid to be right (E1)")
    best: Economics | None = None
    for p_max in p_max_grid:
        room = p_max - slash_spread - safety_factor * delta
        if room <= 0:
            continue
        r_e1 = safety_factor * epsilon_h / (1 - epsilon_h) * penalty * p_max
        r_e2 = safety_factor * delta * penalty * p_max / room
        reward = math.ceil(max(r_e1, r_e2, 1e-9) * 100) / 100
        p_min = math.ceil(safety_factor * delta * (reward + penalty * p_max) / reward * 1000) / 1000
        if p_min >= p_max:
            continue
        candidate = Economics(reward, penalty, p_min, p_max, epsilon_h, delta)
        if best is None or candidate.reward < best.reward:
            best = candidate
    if best is None:
        raise ParameterError(
            f"no p_max in {list(p_max_grid)} leaves room for E2 at factor {safety_factor:g}: p_max must exceed "
            f"{safety_factor:g} x delta + {slash_spread} = {safety_factor * delta + slash_spread:.3f}; lower delta"
        )
    return best


def recommend(
    classes: Sequence[SegmentClass],
    tau: float,
    *,
    lam: float,
    horizon: float,
    epsilon_target: float,
    delta: float = 0.2,
    penalty: float = 8.0,
    epsilon_h: float | None = None,
    safety_factor: float = 2.0,
    beta_min: float = 0.55,
    beta_max: float = 0.95,
    k_max: int = 101,
) -> Recommendation:
    """Committees, beta and economics for S1, E1 and E2 with `safety_factor`; `epsilon_h` defaults to
    the error rate of the class named H."""
    trace = recommend_committees(
        classes,
        tau,
        lam=lam,
        horizon=horizon,
        epsilon_target=epsilon_target,
        safety_factor=safety_factor,
        beta_min=beta_min,
        beta_max=beta_max,
        k_max=k_max,
    )
    if epsilon_h is None:
        human = human_class(trace.classes)
        if human is None:
            raise ParameterError("epsilon_H: give it, or name the human segment class 'H'")
        epsilon_h = human.epsilon
    economics = recommend_economics(epsilon_h, delta, penalty, safety_factor=safety_factor)
    parameters = Parameters(trace, economics, lam, horizon, epsilon_target)
    return Recommendation(parameters, check(parameters))
