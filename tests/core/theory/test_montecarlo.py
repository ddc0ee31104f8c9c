"""The Monte Carlo simulator against the exact values of consensus.py and economics.py.

Every comparison uses a fixed seed and a 99.9% Wilson interval (or 4 standard errors for a mean;
the sweep's 70 intervals share the 0.1% between them), so a run is reproducible and a correct
formula fails a check with probability about 1e-3 per check.
Each test also shows that the check has power: a nearby wrong value falls outside the interval.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy import stats

from trust.core.theory import montecarlo
from trust.core.theory.consensus import SegmentClass, TraceModel, pass_probability, quorum
from trust.core.theory.economics import Economics
from trust.core.theory.montecarlo import (
    EPSILON_GRID,
    RHO_GRID,
    default_trace_model,
    expected_payoff,
    proportion,
    simulate_payoffs,
    simulate_segments,
    simulate_traces,
    sweep,
)
from trust.errors import ParameterError

LEVEL = 0.999
PAPER = Economics(reward=6, penalty=8, p_min=0.35, p_max=0.5, epsilon_h=0.30, delta=0.2)  # paper 4.7


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_every_exported_name_exists() -> None:
    assert len(montecarlo.__all__) == len(set(montecarlo.__all__))
    assert all(hasattr(montecarlo, name) for name in montecarlo.__all__)


# --- Wilson intervals -------------------------------------------------------------------------


@pytest.mark.parametrize(("successes", "trials", "level"), [(7, 50, 0.99), (0, 100, 0.999), (100, 100, 0.95)])
def test_proportion_is_the_wilson_score_interval(successes: int, trials: int, level: float) -> None:
    z = stats.norm.ppf(1 - (1 - level) / 2)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z / (1 + z * z / trials) * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    interval = proportion(successes, trials, level)
    assert interval.rate == p and interval.level == level
    assert interval.low == pytest.approx(max(centre - half, 0.0), abs=1e-12)
    assert interval.high == pytest.approx(min(centre + half, 1.0), abs=1e-12)


# --- segments (Lemma 4.1) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "epsilon", "rho", "tau"),
    [
        (5, 0.30, 0.10, 0.66),  # the paper's human tier, q = 4
        (5, 0.05, 0.0, 0.66),  # the LLM tier
        (7, 0.30, 0.30, 0.5),
        (21, 0.30, 0.10, 0.66),
        (50, 0.20, 0.05, 0.66),  # q = 33, where a binary tau would give 34
        (101, 0.40, 0.20, 0.66),
        (1, 0.50, 0.20, 1.0),
    ],
)
def test_segment_pass_rate_matches_lemma_4_1(k: int, epsilon: float, rho: float, tau: float) -> None:
    exact = pass_probability(k, epsilon, rho, tau)
    estimate = simulate_segments(k, epsilon, rho, tau, 200_000, rng(k), level=LEVEL)
    assert estimate.n == 200_000 and estimate.quorum == quorum(k, tau)
    assert estimate.passed.contains(exact), (exact, estimate.passed)
    assert estimate.passed.high - estimate.passed.low < 0.008  # tight enough to catch a real error


def test_segment_interval_excludes_nearby_wrong_values() -> None:
    estimate = simulate_segments(5, 0.30, 0.10, 0.66, 200_000, rng(1), level=LEVEL)
    exact = pass_probability(5, 0.30, 0.10, 0.66)  # 0.3907
    assert estimate.passed.contains(exact)
    assert not estimate.passed.contains(0.847)  # the value paper 4.2.2 prints for these parameters
    assert not estimate.passed.contains(pass_probability(5, 0.30, 0.0, 0.66))  # adversaries ignored
    assert not estimate.passed.contains(float(stats.binom.sf(2, 5, 0.63)))  # q = 3 instead of 4


@pytest.mark.parametrize(
    ("k", "epsilon", "rho", "rate"), [(3, 0.0, 0.0, 1.0), (5, 1.0, 0.0, 0.0), (5, 0.2, 1.0, 0.0), (4, 0.0, 0.5, None)]
)
def test_degenerate_committees(k: int, epsilon: float, rho: float, rate: float | None) -> None:
    estimate = simulate_segments(k, epsilon, rho, 0.66, 50_000, rng(2), level=LEVEL)
    if rate is not None:
        assert estimate.rate == rate == pass_probability(k, epsilon, rho, 0.66)
    else:  # epsilon = 0: passes iff at most k - q = 1 of 4 seats is adversarial
        assert estimate.passed.contains(pass_probability(k, epsilon, rho, 0.66))


def test_a_seed_reproduces_a_run() -> None:
    first = simulate_segments(5, 0.3, 0.1, 0.66, 10_000, rng(9))
    assert first == simulate_segments(5, 0.3, 0.1, 0.66, 10_000, rng(9))
    assert simulate_traces(default_trace_model(beta=0.9), 5_000, rng(9)).failed == (
        simulate_traces(default_trace_model(beta=0.9), 5_000, rng(9)).failed
    )


# --- traces (Prop. 4.1, exact failure) --------------------------------------------------------


def test_trace_failure_matches_the_exact_probability() -> None:
    model = default_trace_model(beta=0.9)  # W_beta = 18 of 20: fails ~8.6% of the time
    exact = model.failure_probability()
    assert 0.01 < exact < 0.2
    done: list[int] = []
    estimate = simulate_traces(model, 200_000, rng(4), chunk=30_000, level=LEVEL, progress=done.append)
    assert estimate.n == 200_000 and estimate.threshold == model.threshold
    assert estimate.failed.contains(exact), (exact, estimate.failed)
    assert not estimate.failed.contains(default_trace_model(beta=0.85).failure_probability())
    assert done == [30_000 * i for i in range(1, 7)] + [200_000]
    assert set(estimate.segments) == {"C", "L", "H"}
    for c in model.classes:
        segments = estimate.segments[c.name]
        assert segments.trials == 200_000 * c.count
        assert segments.contains(model.pass_probabilities[c.name]), (c.name, segments)


def test_unequal_weights_and_an_empty_class() -> None:
    model = TraceModel(
        (
            SegmentClass("A", k=3, epsilon=0.2, rho=0.05, weight=0.5, count=6),
            SegmentClass("B", k=7, epsilon=0.3, rho=0.1, weight=2.5, count=3),
            SegmentClass("Z", k=3, epsilon=0.0, weight=9.0, count=0),
        ),
        tau=0.66,
        beta=0.4,
    )
    exact = model.failure_probability()
    assert 0.01 < exact < 0.3
    estimate = simulate_traces(model, 100_000, rng(5), level=LEVEL)
    assert estimate.failed.contains(exact), (exact, estimate.failed)
    assert set(estimate.segments) == {"A", "B"}


def test_a_weight_sum_equal_to_the_threshold_passes_as_in_the_exact_value() -> None:
    # W = 0.3 and W_beta = 0.75 * 0.4 = 0.30000000000000004 in binary: equal in decimal, so the trace passes.
    model = TraceModel(
        (SegmentClass("pass", k=1, epsilon=0.0, weight=0.3), SegmentClass("fail", k=1, epsilon=1.0, weight=0.1)),
        tau=1.0,
        beta=0.75,
    )
    assert 0.3 < model.threshold
    assert model.failure_probability() == 0.0
    assert simulate_traces(model, 1_000, rng(6)).failed.successes == 0


def test_one_trace_per_chunk_gives_the_same_counts_shape() -> None:
    calls: list[int] = []
    estimate = simulate_traces(default_trace_model(), 5, rng(7), chunk=1, progress=calls.append)
    assert calls == [1, 2, 3, 4, 5] and estimate.failed.trials == 5
    assert estimate.segments["C"].successes == 5 * 8  # epsilon = rho = 0: every computational segment passes


# --- the stress sweep (paper 4.8) -------------------------------------------------------------


def test_sweep_covers_the_grid_and_every_exact_value_lies_in_its_interval() -> None:
    assert RHO_GRID[0] == 0.0 and RHO_GRID[-1] == pytest.approx(0.30) and len(RHO_GRID) == 7
    assert EPSILON_GRID[0] == pytest.approx(0.20) and EPSILON_GRID[-1] == pytest.approx(0.40) and len(EPSILON_GRID) == 5
    model = default_trace_model(beta=0.9)
    family = 1 - (1 - LEVEL) / 70  # Bonferroni: all 70 intervals hold together with probability 99.9%
    cells_done: list[int] = []
    result = sweep(model, RHO_GRID, EPSILON_GRID, 20_000, rng(8), level=family, progress=cells_done.append)
    assert result.cls == "H" and result.n == 20_000 and cells_done == list(range(1, 36))
    assert [(c.rho, c.epsilon) for c in result.cells] == list(itertools.product(RHO_GRID, EPSILON_GRID))
    for cell in result.cells:
        assert cell.exact_pass == pass_probability(5, cell.epsilon, cell.rho, 0.66)
        assert cell.simulated_pass.trials == 20_000 * 2
        assert cell.agrees, cell
    failure = result.grid("exact_failure")
    assert failure.shape == (7, 5)
    assert np.all(np.diff(failure, axis=0) > 0) and np.all(np.diff(failure, axis=1) > 0)  # worse with rho, epsilon
    assert result.grid("simulated_pass")[0, 0] == result.cell(0.0, 0.2).simulated_pass.rate
    # The base model's own (rho, epsilon) = (0.10, 0.30) is a grid point with its exact values.
    base = result.cell(0.10, 0.30)
    assert base.exact_failure == pytest.approx(model.failure_probability())


def test_sweep_of_a_class_without_segments_draws_its_own() -> None:
    base = default_trace_model()
    model = TraceModel(
        (*base.classes, SegmentClass("X", k=7, epsilon=0.3, rho=0.1, count=0)), tau=base.tau, beta=base.beta
    )
    result = sweep(model, [0.1], [0.3], 50_000, rng(10), cls="X", level=LEVEL)
    (cell,) = result.cells
    assert cell.simulated_pass.trials == 50_000 and cell.agrees
    assert cell.exact_failure == pytest.approx(base.failure_probability())


# --- payoffs (eq. 4.15-4.18, Theorem 4.1 (b), (c)) --------------------------------------------


def _slash(economics: Economics, r: np.ndarray) -> np.ndarray:
    return economics.p_min + (economics.p_max - economics.p_min) * (1 - r)


def series_honest(economics: Economics, lam_t: float, gamma: float, r0: float) -> tuple[float, float]:
    """E[U_hon] summed term by term, independently of `expected_payoff`'s closed form:
    sum_i Pr[N >= i] mu_H(E[r_i]) with E[r_i] = (1 - eps) + (r0 - (1 - eps)) (1 - gamma)^(i - 1); and
    the mean final reputation, E[(1 - eps) + (r0 - (1 - eps)) (1 - gamma)^N] by the Poisson generating
    function."""
    i = np.arange(1, int(lam_t + 20 * math.sqrt(lam_t) + 50))
    stay = 1 - economics.epsilon_h
    mean_r = stay + (r0 - stay) * (1 - gamma) ** (i - 1)
    mu = stay * economics.reward - economics.epsilon_h * economics.penalty * _slash(economics, mean_r)
    return float(np.dot(stats.poisson.sf(i - 1, lam_t), mu)), stay + (r0 - stay) * math.exp(-lam_t * gamma)


@pytest.mark.parametrize(("gamma", "r0", "lam_t"), [(0.1, 0.5, 1440.0), (1.0, 0.0, 5.0), (0.01, 1.0, 40.0)])
def test_expected_payoff_closed_form(gamma: float, r0: float, lam_t: float) -> None:
    assert expected_payoff(PAPER, lam_t, gamma=gamma, r0=r0) == pytest.approx(
        series_honest(PAPER, lam_t, gamma, r0)[0], rel=1e-9
    )
    # gamma = 1: r_i = 1[vote i - 1 right], so E[U] = Pr[N >= 1] mu(r0) + E[(N - 1)^+] mu(1 - eps).
    at_once = -math.expm1(-lam_t) * PAPER.mu_honest(r0) + (lam_t - 1 + math.exp(-lam_t)) * PAPER.mu_honest(0.7)
    assert expected_payoff(PAPER, lam_t, gamma=1.0, r0=r0) == pytest.approx(at_once, rel=1e-12)
    # Malicious: r_i = r0 (1 - gamma)^(i - 1), each segment costs P p_slash(r_i) in expectation.
    i = np.arange(1, int(lam_t + 20 * math.sqrt(lam_t) + 50))
    slash = _slash(PAPER, r0 * (1 - gamma) ** (i - 1))
    series = -PAPER.penalty * float(np.dot(stats.poisson.sf(i - 1, lam_t), slash))
    assert expected_payoff(PAPER, lam_t, gamma=gamma, r0=r0, malicious=True) == pytest.approx(series, rel=1e-9)


def test_honest_payoff_at_the_papers_calibration() -> None:
    lam_t, gamma, r0 = 1440.0, 0.1, 0.5  # lambda = 60 per hour over T = 24 hours
    estimate = simulate_payoffs(PAPER, lam_t, 10_000, rng(11), gamma=gamma, r0=r0, level=LEVEL)
    mean, reputation = series_honest(PAPER, lam_t, gamma, r0)
    assert abs(estimate.mean - mean) < 4 * estimate.stderr, (estimate.mean, mean, estimate.stderr)
    assert abs(estimate.mean_reputation - reputation) < 0.02
    assert estimate.adverse.successes == 0  # Pr[U_hon <= 0] is below 1e-88 (4.45)
    assert estimate.mean_segments == pytest.approx(lam_t, rel=0.01)
    # Power: the worst-reputation mean lam_t mu_min (4.19) is far outside.
    assert abs(estimate.mean - lam_t * PAPER.mu_min) > 40 * estimate.stderr


@pytest.mark.parametrize(("gamma", "r0"), [(1.0, 0.0), (0.5, 1.0), (0.01, 0.2)])
def test_honest_mean_follows_the_reputation(gamma: float, r0: float) -> None:
    economics = Economics(reward=2, penalty=10, p_min=0.1, p_max=0.9, epsilon_h=0.3, delta=0.2)
    lam_t = 40.0
    estimate = simulate_payoffs(economics, lam_t, 40_000, rng(12), gamma=gamma, r0=r0, level=LEVEL)
    mean, reputation = series_honest(economics, lam_t, gamma, r0)
    assert mean == pytest.approx(expected_payoff(economics, lam_t, gamma=gamma, r0=r0), rel=1e-9)
    assert abs(estimate.mean - mean) < 4 * estimate.stderr, (estimate.mean, mean, estimate.stderr)
    assert abs(estimate.mean_reputation - reputation) < 0.02


def test_nearly_constant_slashing_gives_lambda_t_mu() -> None:
    economics = Economics(reward=6, penalty=8, p_min=0.499, p_max=0.5, epsilon_h=0.3, delta=0.2)
    estimate = simulate_payoffs(economics, 100.0, 20_000, rng(13))
    assert abs(estimate.mean - 100.0 * economics.mu_honest(0.5)) < 4 * estimate.stderr


@pytest.mark.parametrize(("gamma", "r0"), [(0.1, 0.5), (1.0, 0.0), (0.5, 1.0)])
def test_honest_loss_lies_between_the_constant_slashing_values(gamma: float, r0: float) -> None:
    # Pr[U_hon <= 0] with a moving reputation lies between the exact values at p_slash = p_min and p_max.
    lam_t = 5.0
    economics = Economics(reward=1, penalty=8, p_min=0.2, p_max=0.8, epsilon_h=0.3, delta=0.2)
    at_p_min = dataclasses.replace(economics, p_min=0.1, p_max=0.2)  # honest_loss_exact_log works at p_max
    low, high = math.exp(at_p_min.honest_loss_exact_log(lam_t)), math.exp(economics.honest_loss_exact_log(lam_t))
    assert high - low > 0.4
    estimate = simulate_payoffs(economics, lam_t, 50_000, rng(14), gamma=gamma, r0=r0, level=LEVEL)
    assert estimate.adverse.high >= low and estimate.adverse.low <= high, (low, estimate.adverse, high)
    assert estimate.adverse.low > low + 0.05 and estimate.adverse.high < high - 0.05  # strictly inside


def test_honest_loss_at_constant_worst_slashing_matches_the_exact_value() -> None:
    # p_min ~ p_max makes p_slash all but constant, so the exact value at p_max applies.
    economics = Economics(reward=1, penalty=8, p_min=0.7999, p_max=0.8, epsilon_h=0.3, delta=0.2)
    estimate = simulate_payoffs(economics, 5.0, 100_000, rng(15), level=LEVEL)
    assert estimate.adverse.contains(math.exp(economics.honest_loss_exact_log(5.0))), estimate.adverse


@pytest.mark.parametrize(("gamma", "r0"), [(0.1, 0.5), (0.3, 1.0), (1.0, 1.0)])
def test_malicious_profit_probability(gamma: float, r0: float) -> None:
    # A malicious seat never earns R: U_mal >= 0 iff it is never slashed. Its reputation only falls,
    # r_i = r0 (1 - gamma)^(i - 1), so Pr = sum_n Pr[N = n] prod_{i <= n} (1 - p_slash(r_i)).
    lam_t = 5.0
    economics = Economics(reward=6, penalty=8, p_min=0.1, p_max=0.6, epsilon_h=0.3, delta=0.2)
    estimate = simulate_payoffs(economics, lam_t, 50_000, rng(16), gamma=gamma, r0=r0, malicious=True, level=LEVEL)
    n = np.arange(0, 80)
    slash = _slash(economics, r0 * (1 - gamma) ** n)  # slash[i - 1] is p_slash on the i-th segment
    never = np.concatenate(([1.0], np.cumprod(1 - slash)))[: len(n)]
    exact = float(np.dot(stats.poisson.pmf(n, lam_t), never))
    assert estimate.adverse.contains(exact), (exact, estimate.adverse)
    # The constant-p values of economics.py bracket it: exp(-lam_t p_max) <= Pr <= exp(-lam_t p_min).
    assert math.exp(-lam_t * economics.p_max) <= exact <= math.exp(economics.malicious_profit_exact_log(lam_t))
    assert estimate.adverse.high >= math.exp(-lam_t * economics.p_max)
    assert estimate.adverse.low <= math.exp(economics.malicious_profit_exact_log(lam_t))
    expected = -economics.penalty * float(np.dot(stats.poisson.sf(n, lam_t), slash))
    assert expected == pytest.approx(expected_payoff(economics, lam_t, gamma=gamma, r0=r0, malicious=True), rel=1e-9)
    assert abs(estimate.mean - expected) < 4 * estimate.stderr, (estimate.mean, expected)
    assert abs(estimate.mean_reputation - r0 * math.exp(-lam_t * gamma)) < 0.02


def test_malicious_mean_at_the_papers_calibration() -> None:
    # From r0 = 0 the reputation stays 0: every segment costs P p_max in expectation (E[X_mal] = -4.0, paper 4.7).
    estimate = simulate_payoffs(PAPER, 1440.0, 10_000, rng(17), r0=0.0, malicious=True)
    assert abs(estimate.mean - 1440.0 * PAPER.malicious_expected_payoff(0.0)) < 4 * estimate.stderr
    assert estimate.adverse.successes == 0 and estimate.mean_reputation == 0.0


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: simulate_segments(5, 0.3, 0.1, 0.66, 0, rng(0)), "n"),
        (lambda: simulate_segments(5, 1.3, 0.1, 0.66, 10, rng(0)), "epsilon"),
        (lambda: simulate_segments(5, 0.3, 0.1, 0.66, 10, rng(0), level=1.0), "level"),
        (lambda: simulate_segments(5, 0.3, 0.1, 0.66, 10, 42), "rng"),  # type: ignore[arg-type]
        (lambda: simulate_traces(default_trace_model(), 0, rng(0)), "n"),
        (lambda: simulate_traces(default_trace_model(), 10, rng(0), chunk=0), "chunk"),
        (lambda: sweep(default_trace_model(), RHO_GRID, EPSILON_GRID, 0, rng(0)), "n"),
        (lambda: sweep(default_trace_model(), RHO_GRID, EPSILON_GRID, 10, rng(0), cls="Q"), "cls"),
        (lambda: sweep(default_trace_model(), [0.1, 1.5], EPSILON_GRID, 10, rng(0)), r"rho_values\[1\]"),
        (lambda: sweep(default_trace_model(), RHO_GRID, [], 10, rng(0)), "epsilon_values"),
        (lambda: simulate_payoffs(PAPER, 10.0, 0, rng(0)), "n_paths"),
        (lambda: simulate_payoffs(PAPER, 0.0, 10, rng(0)), "lambda T"),
        (lambda: simulate_payoffs(PAPER, 10.0, 10, rng(0), gamma=0.0), "gamma"),
        (lambda: simulate_payoffs(PAPER, 10.0, 10, rng(0), r0=1.2), "r0"),
        (lambda: proportion(5, 0), "trials"),
        (lambda: proportion(6, 5), "successes"),
    ],
)
def test_bad_input_names_the_parameter(call: object, name: str) -> None:
    with pytest.raises(ParameterError, match=rf"^{name} "):
        call()  # type: ignore[operator]


def test_sweep_lookup_of_a_point_off_the_grid() -> None:
    result = sweep(default_trace_model(), [0.1], [0.3], 10, rng(0))
    with pytest.raises(ParameterError, match="not a point"):
        result.cell(0.2, 0.3)
    with pytest.raises(ParameterError, match="field"):
        result.grid("nonsense")
