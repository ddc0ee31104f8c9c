"""The economic layer: the paper's formulas, and the values that hold where its derivation does not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trust.core.theory.economics import Economics
from trust.errors import ParameterError

PAPER = Economics(reward=6, penalty=8, p_min=0.35, p_max=0.5, epsilon_h=0.30, delta=0.2)
LN10 = math.log(10)


def test_the_papers_economic_figures() -> None:
    assert PAPER.e1_bound == pytest.approx(0.3 / 0.7 * 8 * 0.5)  # 1.71
    assert PAPER.alpha == pytest.approx(0.4)
    assert PAPER.e2_bound == pytest.approx(1 / 3)
    assert PAPER.mu_min == pytest.approx(3.0)
    assert PAPER.sigma_h2 == pytest.approx(25.8)
    assert PAPER.sigma_h2_simple == pytest.approx(49.0)
    assert PAPER.malicious_expected_payoff(0.0) == pytest.approx(-4.0)
    assert PAPER.honest_loss_log_bound(1440) == pytest.approx(-12960 / 63.6)
    assert PAPER.malicious_profit_log_bound(1440) == pytest.approx(-3686.4 / 58)


def test_sigma_h2_is_the_supremum_over_reputation() -> None:
    for econ in (PAPER, Economics(1, 20, 0.1, 0.9, 0.45, 0.1), Economics(10, 1, 0.05, 1.0, 0.9, 0.5)):
        grid = max(econ.variance(r) for r in np.linspace(0, 1, 2001))
        assert econ.sigma_h2 == pytest.approx(grid, rel=1e-6)
        assert econ.sigma_h2 >= grid - 1e-12
        # Var X checked against the three-point distribution directly at r = 0.3.
        p = econ.p_slash(0.3)
        values = np.array([econ.reward, 0.0, -econ.penalty])
        probs = np.array([1 - econ.epsilon_h, econ.epsilon_h * (1 - p), econ.epsilon_h * p])
        mean = values @ probs
        assert econ.mu_honest(0.3) == pytest.approx(mean)
        assert econ.variance(0.3) == pytest.approx(((values - mean) ** 2) @ probs)


def test_the_exact_honest_loss_matches_a_simulation_and_exceeds_the_printed_bound() -> None:
    rng = np.random.default_rng(7)
    lam_t, n = 8.0, 1_000_000
    rewarded = rng.poisson(lam_t * 0.7, n)
    slashed = rng.poisson(lam_t * 0.3 * 0.5, n)
    simulated = float(np.mean(6 * rewarded <= 8 * slashed))
    exact = math.exp(PAPER.honest_loss_exact_log(lam_t))
    assert exact == pytest.approx(simulated, abs=4 * math.sqrt(simulated * (1 - simulated) / n))
    assert exact <= math.exp(PAPER.honest_loss_chernoff_log(lam_t))
    # At the paper's 24 hours: exactly 10^-85.41 (checked to 50 digits with mpmath), above the
    # printed bound e^-203.8 = 10^-88.5 and below the valid Chernoff bound 10^-83.75.
    assert PAPER.honest_loss_exact_log(1440) / LN10 == pytest.approx(-85.4097, abs=1e-3)
    assert PAPER.honest_loss_log_bound(1440) < PAPER.honest_loss_exact_log(1440)
    assert PAPER.honest_loss_chernoff_log(1440) / LN10 == pytest.approx(-83.749, abs=1e-3)


def test_malicious_break_even_is_never_being_slashed() -> None:
    assert PAPER.malicious_profit_exact_log(1440) == pytest.approx(-1440 * 0.35)
    assert PAPER.malicious_profit_exact_log(10, p=0.5) == pytest.approx(-5.0)
    assert PAPER.malicious_profit_log_bound(1440) > PAPER.malicious_profit_exact_log(1440)  # valid, loose


def test_when_honest_work_does_not_pay_the_bounds_say_so() -> None:
    losing = Economics(reward=1, penalty=8, p_min=0.35, p_max=0.5, epsilon_h=0.30, delta=0.2)
    assert losing.mu_min < 0 and losing.e1_bound > losing.reward
    assert losing.honest_loss_log_bound(100) == 0.0 and losing.honest_loss_chernoff_log(100) == 0.0
    assert losing.honest_loss_exact_log(100) > math.log(0.5)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"reward": 0}, "R"),
        ({"penalty": -1}, "P"),
        ({"p_min": 1.5}, "p_min"),
        ({"p_max": math.nan}, "p_max"),
        ({"p_min": 0.6}, "p_min < p_max"),
        ({"epsilon_h": 2}, "epsilon_H"),
        ({"delta": 1.0}, "delta"),
        ({"delta": 0}, "delta"),
    ],
)
def test_bad_economics_name_the_parameter(kwargs: dict[str, float], name: str) -> None:
    values = {"reward": 6, "penalty": 8, "p_min": 0.35, "p_max": 0.5, "epsilon_h": 0.3, "delta": 0.2} | kwargs
    with pytest.raises(ParameterError, match=name):
        Economics(**values)
    with pytest.raises(ParameterError, match="lambda T"):
        PAPER.honest_loss_exact_log(0)
    with pytest.raises(ParameterError, match="r = 1.5"):
        PAPER.p_slash(1.5)
