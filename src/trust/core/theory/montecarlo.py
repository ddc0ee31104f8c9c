"""A vectorized Monte Carlo simulator of the paper's section 4 model: seats, segments, traces, payoffs.

It draws the model the way the paper states it, not the way `consensus` and `economics` evaluate it,
so that agreement between the two is evidence that the exact values are right (paper 4.8 asks for
Monte Carlo stress tests of exactly this kind).

- Segment (Lemma 4.1, eq. 4.1-4.2): m ~ Binomial(k, rho) of the k seats are adversarial and vote
  wrong; the k - m honest seats each vote right with probability 1 - epsilon, so the correct votes
  are c ~ Binomial(k - m, 1 - epsilon); the segment passes (B_s = 1) when c >= q = ceil(tau k)
  (`consensus.quorum`). `simulate_segments` checks `consensus.pass_probability`.
- Trace (eq. 4.3-4.5): every class of a `TraceModel` draws its `count` segments per trace, and the
  trace fails when W = sum_s w_s B_s < W_beta, with the tolerance `TraceModel.failure_probability`
  uses (W within 1e-9 max(1, sum w_s) of W_beta counts as reaching it: a weight like 0.3 makes W and
  W_beta differ in the last bit where they are equal in decimal). `simulate_traces` checks
  `TraceModel.failure_probability`; `sweep` does both over the stress grid of paper 4.8 (rho_H in
  [0, 0.30], epsilon_H in [0.20, 0.40]).
- Payoffs (eq. 4.15-4.17): a seat audits N ~ Poisson(lambda T) segments; on each it votes right
  with probability 1 - epsilon_H (never, when malicious) and earns R, or votes wrong and is slashed
  P with probability p_slash(r) (eq. 4.16) at its current reputation r; then r <- (1 - gamma) r +
  gamma 1[right] (eq. 4.15), from r0. `simulate_payoffs` lets the reputation move, whereas the exact
  values of `economics` hold p_slash constant: `honest_loss_exact_log` at p_max and
  `malicious_profit_exact_log` at a given p. Because whether a vote is right does not depend on past
  slashes, the reputation path is the same whatever p_slash does, and a coupling of the slash draws
  brackets the simulated probabilities between the constant-p values at p_min and at p_max (the
  tests check both sides). The expected payoff has a closed form (`expected_payoff`): p_slash is
  linear in r and the vote on segment i is independent of r_i, so E[U] = sum_i Pr[N >= i] x(E[r_i])
  with x the per-segment mean, and E[r_i] approaches its fixed point geometrically.

Every estimate of a probability comes with a Wilson score interval (scipy's `binomtest(...)
.proportion_ci(method="wilson")`, the interval (p + z^2/2n +- z sqrt(p(1 - p)/n + z^2/4n^2)) /
(1 + z^2/n) with z = norm.ppf(1 - (1 - level)/2)), 99% unless `level` says otherwise; it keeps its
coverage at rates near 0 and 1, where a trace failure rate lives.

Pure: numpy and scipy, no I/O; all randomness comes from the `numpy.random.Generator` passed in, so a
seed reproduces a run. Memory stays bounded: traces and segments are drawn in chunks of at most
about 2 million segment draws (16 MB per int64 array).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from trust.core.theory.consensus import SegmentClass, TraceModel, pass_probability, quorum
from trust.core.theory.economics import Economics
from trust.core.theory.validate import integer_at_least, open_unit, positive, probability, tau_value
from trust.errors import ParameterError

__all__ = [
    "DEFAULT_LEVEL",
    "EPSILON_GRID",
    "RHO_GRID",
    "PayoffEstimate",
    "Proportion",
    "SegmentEstimate",
    "Sweep",
    "SweepCell",
    "TraceEstimate",
    "default_trace_model",
    "expected_payoff",
    "proportion",
    "simulate_payoffs",
    "simulate_segments",
    "simulate_traces",
    "sweep",
]

DEFAULT_LEVEL = 0.99
RHO_GRID = np.linspace(0.0, 0.30, 7)
"""Adversarial fractions of the human tier for the stress test of paper 4.8: 0, 0.05, ..., 0.30."""
EPSILON_GRID = np.linspace(0.20, 0.40, 5)
"""Honest human error rates for the stress test of paper 4.8: 0.20, 0.25, ..., 0.40."""

_CHUNK_DRAWS = 2**21  # segment draws per chunk: ~16 MB per int64 array, and cache-friendly
_SWEEP_FIELDS = ("exact_pass", "simulated_pass", "exact_failure", "simulated_failure")


@dataclass(frozen=True, slots=True)
class Proportion:
    """`successes` out of `trials` Bernoulli draws, with the Wilson score interval [low, high] at
    confidence `level`."""

    successes: int
    trials: int
    low: float
    high: float
    level: float

    @property
    def rate(self) -> float:
        return self.successes / self.trials

    def contains(self, value: float) -> bool:
        """Whether `value` (an exact probability, say) lies in the interval."""
        return self.low <= value <= self.high


def proportion(successes: int, trials: int, level: float = DEFAULT_LEVEL) -> Proportion:
    """The rate `successes / trials` and its Wilson score interval at confidence `level`."""
    trials = integer_at_least("trials", trials, 1)
    successes = integer_at_least("successes", successes, 0)
    if successes > trials:
        raise ParameterError(f"successes = {successes}: more than the {trials} trials")
    level = open_unit("level", level)
    interval = stats.binomtest(successes, trials).proportion_ci(confidence_level=level, method="wilson")
    return Proportion(successes, trials, float(interval.low), float(interval.high), level)


@dataclass(frozen=True, slots=True)
class SegmentEstimate:
    """`n` simulated segments of one committee (k seats, error rate epsilon, adversarial fraction rho)
    at quorum q = ceil(tau k), and how many passed."""

    k: int
    epsilon: float
    rho: float
    tau: float
    quorum: int
    passed: Proportion

    @property
    def n(self) -> int:
        return self.passed.trials

    @property
    def rate(self) -> float:
        """The simulated pass rate, the estimate of p_t (Lemma 4.1)."""
        return self.passed.rate


@dataclass(frozen=True)
class TraceEstimate:
    """`n` simulated traces: how many failed (W < W_beta, `failed`) and, for every class holding
    segments (count > 0), how many of its n * count segments passed (`segments`, by class name)."""

    n: int
    threshold: float
    failed: Proportion
    segments: Mapping[str, Proportion]

    @property
    def failure_rate(self) -> float:
        """The simulated trace failure rate, the estimate of Pr[W < W_beta]."""
        return self.failed.rate


@dataclass(frozen=True, slots=True)
class SweepCell:
    """One (rho, epsilon) of the sweep: the class's exact p_t and simulated pass rate, and the exact
    and simulated trace failure probability."""

    rho: float
    epsilon: float
    exact_pass: float
    simulated_pass: Proportion
    exact_failure: float
    simulated_failure: Proportion

    @property
    def agrees(self) -> bool:
        """Both exact values lie in their simulated intervals."""
        return self.simulated_pass.contains(self.exact_pass) and self.simulated_failure.contains(self.exact_failure)


@dataclass(frozen=True)
class Sweep:
    """The stress grid of paper 4.8 for class `cls`: one cell per (rho, epsilon), rho-major, each
    from `n` simulated traces."""

    cls: str
    n: int
    rho_values: tuple[float, ...]
    epsilon_values: tuple[float, ...]
    cells: tuple[SweepCell, ...]

    def cell(self, rho: float, epsilon: float) -> SweepCell:
        """The cell at (rho, epsilon), matched to 1e-12."""
        for c in self.cells:
            if math.isclose(c.rho, rho, abs_tol=1e-12) and math.isclose(c.epsilon, epsilon, abs_tol=1e-12):
                return c
        raise ParameterError(f"(rho, epsilon) = ({rho}, {epsilon}): not a point of the sweep's grid")

    def grid(self, field: str) -> np.ndarray:
        """A (len(rho_values), len(epsilon_values)) array of one field: `exact_pass`, `exact_failure`,
        or the rate of `simulated_pass` / `simulated_failure`."""
        if field not in _SWEEP_FIELDS:
            raise ParameterError(f"field = {field!r}: expected one of {', '.join(_SWEEP_FIELDS)}")
        values = [getattr(c, field) for c in self.cells]
        numbers = [v.rate if isinstance(v, Proportion) else v for v in values]
        return np.array(numbers, dtype=float).reshape(len(self.rho_values), len(self.epsilon_values))


@dataclass(frozen=True, slots=True)
class PayoffEstimate:
    """Cumulative payoffs U(T) of `n_paths` simulated seats over N ~ Poisson(lam_t) segments each.

    `adverse` counts the paths on the wrong side of zero: U <= 0 for an honest seat (Theorem 4.1 (b)),
    U >= 0 for a malicious one (Theorem 4.1 (c)). `mean` is the mean of U and `stderr` its standard
    error; `mean_reputation` the mean reputation after the last segment."""

    malicious: bool
    lam_t: float
    gamma: float
    r0: float
    n_paths: int
    mean: float
    stderr: float
    adverse: Proportion
    mean_reputation: float
    mean_segments: float


def default_trace_model(*, beta: float = 0.65, tau: float = 0.66) -> TraceModel:
    """A small trace of the paper's three tiers (Table 4 error rates, rho_H = 0.10): 8 computational
    segments (k = 3), 10 LLM segments (k = 5, epsilon = 0.05) and 2 human ones (k = 5, epsilon = 0.30),
    all of weight 1."""
    return TraceModel(
        (
            SegmentClass("C", k=3, epsilon=0.0, rho=0.0, weight=1.0, count=8),
            SegmentClass("L", k=5, epsilon=0.05, rho=0.0, weight=1.0, count=10),
            SegmentClass("H", k=5, epsilon=0.30, rho=0.10, weight=1.0, count=2),
        ),
        tau=tau,
        beta=beta,
    )


def simulate_segments(
    k: int, epsilon: float, rho: float, tau: float, n: int, rng: np.random.Generator, *, level: float = DEFAULT_LEVEL
) -> SegmentEstimate:
    """Draws `n` segments of one committee (module docstring) and counts those that pass."""
    k = integer_at_least("k", k, 1)
    epsilon = probability("epsilon", epsilon)
    rho = probability("rho", rho)
    tau = tau_value("tau", tau)
    n = integer_at_least("n", n, 1)
    level = open_unit("level", level)
    _check_rng(rng)
    q = quorum(k, tau)
    passes = 0
    for start in range(0, n, _CHUNK_DRAWS):
        size = min(_CHUNK_DRAWS, n - start)
        passes += int(np.count_nonzero(_segment_passes(k, epsilon, rho, q, (size,), rng)))
    return SegmentEstimate(k, epsilon, rho, tau, q, proportion(passes, n, level))


def simulate_traces(
    model: TraceModel,
    n: int,
    rng: np.random.Generator,
    *,
    chunk: int | None = None,
    level: float = DEFAULT_LEVEL,
    progress: Callable[[int], None] | None = None,
) -> TraceEstimate:
    """Draws `n` traces of `model` and counts those with W < W_beta.

    Each chunk of traces draws, per class, a (traces, count) array of segment outcomes, weighs and sums
    them per trace, and compares with the threshold. `chunk` is the number of traces per chunk (by
    default as many as fit in about 2 million segment draws); `progress`, if given, is called with the
    number of traces done after each chunk."""
    n = integer_at_least("n", n, 1)
    level = open_unit("level", level)
    _check_rng(rng)
    active = [c for c in model.classes if c.count > 0]
    per_trace = sum(c.count for c in active)
    chunk = max(1, _CHUNK_DRAWS // per_trace) if chunk is None else integer_at_least("chunk", chunk, 1)
    quorums = {c.name: quorum(c.k, model.tau) for c in active}
    # The rule of TraceModel.failure_probability: W within the tolerance of W_beta reaches it.
    cutoff = model.threshold - 1e-9 * max(1.0, model.total_weight)
    passes = dict.fromkeys(quorums, 0)
    failures = 0
    done = 0
    while done < n:
        size = min(chunk, n - done)
        weight = np.zeros(size)
        for c in active:
            passed = _segment_passes(c.k, c.epsilon, c.rho, quorums[c.name], (size, c.count), rng)
            per_trace_passes = np.count_nonzero(passed, axis=1)
            passes[c.name] += int(per_trace_passes.sum())
            weight += c.weight * per_trace_passes
        failures += int(np.count_nonzero(weight < cutoff))
        done += size
        if progress is not None:
            progress(done)
    segments = {c.name: proportion(passes[c.name], n * c.count, level) for c in active}
    return TraceEstimate(n, model.threshold, proportion(failures, n, level), segments)


def sweep(
    model: TraceModel,
    rho_values: Sequence[float] | np.ndarray,
    epsilon_values: Sequence[float] | np.ndarray,
    n: int,
    rng: np.random.Generator,
    *,
    cls: str = "H",
    level: float = DEFAULT_LEVEL,
    progress: Callable[[int], None] | None = None,
) -> Sweep:
    """The stress test of paper 4.8: class `cls` of `model` takes every (rho, epsilon) of the grid in
    turn (rho-major), and each cell records the exact p_t (`pass_probability`) and exact trace failure
    probability (`TraceModel.failure_probability`) next to their estimates from `n` simulated traces.

    The class's pass rate is read off the traces' segments (n * count of them), or drawn from `n`
    segments of its own when the class has count 0. `progress`, if given, is called with the number
    of cells done after each cell."""
    n = integer_at_least("n", n, 1)
    level = open_unit("level", level)
    _check_rng(rng)
    names = [c.name for c in model.classes]
    if cls not in names:
        raise ParameterError(f"cls = {cls!r}: the model has no segment class of that name (classes: {names})")
    rhos = _grid("rho_values", rho_values)
    epsilons = _grid("epsilon_values", epsilon_values)
    target = next(c for c in model.classes if c.name == cls)
    cells = []
    for rho in rhos:
        for epsilon in epsilons:
            changed = dataclasses.replace(target, rho=rho, epsilon=epsilon)
            classes = tuple(changed if c.name == cls else c for c in model.classes)
            cell_model = TraceModel(classes, model.tau, model.beta)
            traces = simulate_traces(cell_model, n, rng, level=level)
            if changed.count > 0:
                simulated_pass = traces.segments[cls]
            else:
                simulated_pass = simulate_segments(changed.k, epsilon, rho, model.tau, n, rng, level=level).passed
            cells.append(
                SweepCell(
                    rho=rho,
                    epsilon=epsilon,
                    exact_pass=pass_probability(changed.k, epsilon, rho, model.tau),
                    simulated_pass=simulated_pass,
                    exact_failure=cell_model.failure_probability(),
                    simulated_failure=traces.failed,
                )
            )
            if progress is not None:
                progress(len(cells))
    return Sweep(cls, n, rhos, epsilons, tuple(cells))


def simulate_payoffs(
    economics: Economics,
    lam_t: float,
    n_paths: int,
    rng: np.random.Generator,
    *,
    gamma: float = 0.1,
    r0: float = 0.5,
    malicious: bool = False,
    level: float = DEFAULT_LEVEL,
) -> PayoffEstimate:
    """Simulates `n_paths` seats over N ~ Poisson(lam_t) segments each (module docstring).

    Vectorized across paths: the segment counts are sorted in decreasing order (paths are
    exchangeable), so at segment i the paths still auditing are a prefix of the arrays and each step
    works on views, with no masks. Memory is O(n_paths); time is O(n_paths * lam_t)."""
    lam_t = positive("lambda T", lam_t)
    n_paths = integer_at_least("n_paths", n_paths, 2)
    gamma = tau_value("gamma", gamma)
    r0 = probability("r0", r0)
    level = open_unit("level", level)
    _check_rng(rng)
    reward, penalty, p_min = economics.reward, economics.penalty, economics.p_min
    spread = economics.p_max - economics.p_min
    right = 0.0 if malicious else 1.0 - economics.epsilon_h

    segments = np.sort(rng.poisson(lam_t, n_paths))[::-1]
    # active[i] = how many paths audit an i-th segment (N > i), a prefix of the sorted arrays.
    active = n_paths - np.cumsum(np.bincount(segments))
    payoff = np.zeros(n_paths)
    reputation = np.full(n_paths, r0)
    for a in active[:-1].tolist():
        r = reputation[:a]
        slash = p_min + spread * (1.0 - r)  # eq. 4.16 at the reputation before this vote
        if malicious:
            payoff[:a] -= penalty * (rng.random(a) < slash)
            r *= 1.0 - gamma  # eq. 4.15 with 1[vote right] = 0
        else:
            u = rng.random((2, a))
            correct = u[0] < right
            slashed = ~correct & (u[1] < slash)
            payoff[:a] += reward * correct - penalty * slashed
            r *= 1.0 - gamma
            r += gamma * correct  # eq. 4.15

    adverse = payoff >= 0 if malicious else payoff <= 0
    return PayoffEstimate(
        malicious=malicious,
        lam_t=lam_t,
        gamma=gamma,
        r0=r0,
        n_paths=n_paths,
        mean=float(payoff.mean()),
        stderr=float(payoff.std(ddof=1) / math.sqrt(n_paths)),
        adverse=proportion(int(np.count_nonzero(adverse)), n_paths, level),
        mean_reputation=float(reputation.mean()),
        mean_segments=float(segments.mean()),
    )


def expected_payoff(
    economics: Economics, lam_t: float, *, gamma: float = 0.1, r0: float = 0.5, malicious: bool = False
) -> float:
    """E[U(T)] exactly, for the seat `simulate_payoffs` draws, its reputation moving by eq. 4.15.

    The i-th vote is independent of the reputation r_i it is judged at and the per-segment mean
    x(r) is linear in r (mu_H(r), eq. 4.18, for an honest seat; -P p_slash(r) for a malicious one), so
    E[X_i] = x(E[r_i]); E[r_i] = r* + (r0 - r*) (1 - gamma)^(i - 1) with r* = 1 - epsilon_H (honest) or
    0 (malicious); and sum_i Pr[N >= i] (1 - gamma)^(i - 1) = E[(1 - (1 - gamma)^N) / gamma]
    = (1 - exp(-lam_t gamma)) / gamma for N ~ Poisson(lam_t). Hence
    E[U] = lam_t x(r*) + (x(r0) - x(r*)) (1 - exp(-lam_t gamma)) / gamma."""
    lam_t = positive("lambda T", lam_t)
    gamma = tau_value("gamma", gamma)
    r0 = probability("r0", r0)
    x: Callable[[float], float] = economics.malicious_expected_payoff if malicious else economics.mu_honest
    fixed = 0.0 if malicious else 1.0 - economics.epsilon_h
    return lam_t * x(fixed) + (x(r0) - x(fixed)) * -math.expm1(-lam_t * gamma) / gamma


def _segment_passes(
    k: int, epsilon: float, rho: float, q: int, shape: tuple[int, ...], rng: np.random.Generator
) -> np.ndarray:
    """Boolean outcomes B_s of `shape` segments. A degenerate draw (rho = 0: no adversarial seat;
    epsilon in {0, 1}: honest seats all right or all wrong) is skipped, which makes the computational
    and LLM tiers cheap; the two-stage draw otherwise follows Lemma 4.1's proof."""
    honest: int | np.ndarray = k - rng.binomial(k, rho, size=shape) if rho > 0 else k
    if epsilon == 0.0:
        correct: int | np.ndarray = honest
    elif epsilon == 1.0:
        correct = 0
    else:
        correct = rng.binomial(honest, 1.0 - epsilon, size=shape)
    return np.broadcast_to(np.asarray(correct) >= q, shape)


def _grid(name: str, values: Sequence[float] | np.ndarray) -> tuple[float, ...]:
    points = tuple(probability(f"{name}[{i}]", v) for i, v in enumerate(np.asarray(values, dtype=object).ravel()))
    if not points:
        raise ParameterError(f"{name} is empty: the sweep needs at least one value")
    return points


def _check_rng(rng: object) -> None:
    if not isinstance(rng, np.random.Generator):
        raise ParameterError(f"rng = {rng!r}: expected a numpy.random.Generator (numpy.random.default_rng(seed))")
