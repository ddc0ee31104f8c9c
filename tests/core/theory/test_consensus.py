"""Lemma 4.1, Prop. 4.1 and 4.2 against brute force and independent formulas."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.core.theory.consensus import (
    SegmentClass,
    TraceModel,
    majority_error_bound,
    majority_error_exact,
    pass_probability,
    quorum,
)
from trust.errors import ParameterError


def brute_force_pass(k: int, epsilon: float, rho: float, q: int) -> float:
    """Enumerates every seat's (adversarial, correct) state: 4^k outcomes."""
    total = 0.0
    for states in itertools.product(("bad", "right", "wrong"), repeat=k):
        p = 1.0
        for state in states:
            p *= rho if state == "bad" else (1 - rho) * (1 - epsilon if state == "right" else epsilon)
        if states.count("right") >= q:
            total += p
    return total


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 7),
    st.floats(0, 1),
    st.floats(0, 1),
    st.sampled_from([0.5, 0.6, 0.66, 2 / 3, 0.75, 1.0]),
)
def test_lemma_4_1_equals_enumerating_every_seat(k: int, epsilon: float, rho: float, tau: float) -> None:
    assert pass_probability(k, epsilon, rho, tau) == pytest.approx(
        brute_force_pass(k, epsilon, rho, quorum(k, tau)), abs=1e-12
    )


def test_the_papers_example_gives_0_3907_not_0_847() -> None:
    # k_H = 5, epsilon_H = 0.30, rho_H = 0.10, tau = 0.66 (sec. 4.2.2): q_H = 4.
    expected = 0.9**5 * (5 * 0.7**4 * 0.3 + 0.7**5) + 5 * 0.1 * 0.9**4 * 0.7**4
    assert pass_probability(5, 0.30, 0.10, 0.66) == pytest.approx(expected, abs=1e-15)
    assert pass_probability(5, 0.30, 0.10, 0.66) == pytest.approx(0.3906734328, abs=1e-10)


def test_quorum_reads_tau_as_the_decimal_it_was_written_as() -> None:
    assert 0.55 * 100 > 55  # the binary float overshoots ...
    assert quorum(100, 0.55) == 55  # ... the quorum does not
    assert quorum(50, 0.66) == 33
    assert [quorum(k, 0.66) for k in (1, 3, 5, 7, 21)] == [1, 2, 4, 5, 14]
    assert quorum(3, 2 / 3) == 2 and quorum(5, 1.0) == 5


def test_edge_cases_of_pass_probability() -> None:
    assert pass_probability(3, 0.0, 0.0, 0.66) == 1.0  # deterministic checkers always pass a valid segment
    assert pass_probability(3, 1.0, 0.0, 0.66) == 0.0
    assert pass_probability(5, 0.0, 1.0, 0.66) == 0.0  # every seat adversarial
    # With rho > 1 - tau, growing the committee hurts: adversaries alone block the quorum.
    assert pass_probability(101, 0.0, 0.5, 0.66) < pass_probability(5, 0.0, 0.5, 0.66)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: pass_probability(0, 0.1, 0.0, 0.66), "k"),
        (lambda: pass_probability(3, 1.5, 0.0, 0.66), "epsilon"),
        (lambda: pass_probability(3, 0.1, -0.1, 0.66), "rho"),
        (lambda: pass_probability(3, 0.1, 0.0, 0.0), "tau"),
        (lambda: pass_probability(3, 0.1, 0.0, 1.2), "tau"),
        (lambda: pass_probability(3, math.nan, 0.0, 0.66), "epsilon"),
        (lambda: pass_probability(3, 0.1, math.inf, 0.66), "rho"),
        (lambda: pass_probability(2.5, 0.1, 0.0, 0.66), "k"),  # type: ignore[arg-type]
        (lambda: TraceModel((SegmentClass("H", 5, 0.3),), 0.66, 1.0), "beta"),
        (lambda: TraceModel((SegmentClass("H", 5, 0.3),), 0.66, 0.0), "beta"),
        (lambda: SegmentClass("H", 5, 0.3, weight=0), "weight"),
        (lambda: majority_error_bound(7, 0.5), "epsilon"),
    ],
)
def test_bad_input_names_the_parameter(call: object, name: str) -> None:
    with pytest.raises(ParameterError, match=name):
        call()  # type: ignore[operator]


def test_prop_4_2_figures_and_the_exact_error_they_bound() -> None:
    assert majority_error_bound(7, 0.30) == pytest.approx(math.exp(-0.56))
    assert majority_error_bound(21, 0.30) == pytest.approx(math.exp(-1.68))
    # Pr[Binomial(7, 0.7) <= 3] by hand.
    exact_7 = sum(math.comb(7, c) * 0.7**c * 0.3 ** (7 - c) for c in range(4))
    assert majority_error_exact(7, 0.30) == pytest.approx(exact_7)
    for k in (1, 2, 7, 21, 51):
        assert majority_error_exact(k, 0.30) <= majority_error_bound(k, 0.30)


def small_trace(beta: float = 0.7) -> TraceModel:
    return TraceModel(
        (
            SegmentClass("C", 3, 0.0, 0.0, 1.0, 3),
            SegmentClass("L", 3, 0.1, 0.0, 2.0, 2),
            SegmentClass("H", 5, 0.3, 0.1, 1.5, 2),
        ),
        0.66,
        beta,
    )


def test_trace_failure_equals_enumerating_every_segment_outcome() -> None:
    trace = small_trace()
    p = trace.pass_probabilities
    segments = [(c.weight, p[c.name]) for c in trace.classes for _ in range(c.count)]
    fail = 0.0
    for outcome in itertools.product((0, 1), repeat=len(segments)):
        prob = math.prod(pp if b else 1 - pp for b, (_, pp) in zip(outcome, segments, strict=True))
        if sum(w * b for b, (w, _) in zip(outcome, segments, strict=True)) < trace.threshold:
            fail += prob
    assert trace.failure_probability() == pytest.approx(fail, abs=1e-14)
    assert trace.mu_vote == pytest.approx(sum(w * pp for w, pp in segments))
    assert trace.variance == pytest.approx(sum(w * w * pp * (1 - pp) for w, pp in segments))
    assert trace.sigma_max2 == pytest.approx(sum(w * w for w, _ in segments))


@pytest.mark.parametrize("beta", [0.45, 0.5, 0.6, 0.7])
def test_hoeffding_and_chernoff_bound_the_exact_failure(beta: float) -> None:
    trace = small_trace(beta)
    exact = trace.failure_probability()
    chernoff = trace.chernoff_bound()
    assert exact <= chernoff.bound + 1e-15
    assert exact <= math.exp(trace.hoeffding_log_bound()) + 1e-15
    if trace.gap > 0:
        assert chernoff.lam > 0 and chernoff.bound < 1
        # The optimum: no other lambda gives a smaller bound.
        for factor in (0.5, 0.9, 1.1, 2.0):
            other = TraceModel(trace.classes, trace.tau, trace.beta)
            assert chernoff.log_bound <= _chernoff_at(other, chernoff.lam * factor) + 1e-9


def _chernoff_at(trace: TraceModel, lam: float) -> float:
    p = trace.pass_probabilities
    return lam * trace.threshold + sum(
        c.count * math.log(p[c.name] * math.exp(-lam * c.weight) + 1 - p[c.name]) for c in trace.classes
    )


def test_s1_gap_is_what_makes_hoeffding_meet_the_per_trace_target() -> None:
    trace = small_trace()
    required = trace.s1_gap_required(60, 24, 1e-6)
    assert required == pytest.approx(math.sqrt(trace.sigma_max2 / 2 * math.log(1440 / 1e-6)))
    # At exactly the required gap, the Hoeffding bound equals epsilon_target / (lambda T).
    assert math.exp(-2 * required**2 / trace.sigma_max2) == pytest.approx(1e-6 / 1440)
    with pytest.raises(ParameterError, match="epsilon_target"):
        trace.s1_gap_required(60, 24, 1.0)


@pytest.mark.parametrize(
    ("k", "epsilon", "rho", "tau"), [(5, 0.3, 0.1, 0.66), (101, 0.2, 0.05, 0.66), (3000, 0.3, 0.02, 0.6)]
)
def test_lemma_4_1_is_one_binomial_and_stays_finite_for_large_committees(
    k: int, epsilon: float, rho: float, tau: float
) -> None:
    from scipy import stats

    single = float(stats.binom.sf(quorum(k, tau) - 1, k, (1 - rho) * (1 - epsilon)))
    assert pass_probability(k, epsilon, rho, tau) == pytest.approx(single, rel=1e-9, abs=1e-300)
    big = TraceModel((SegmentClass("L", 3, 0.05, 0.0, 1.0, 5000),), 0.66, 0.97)
    assert 0 < big.failure_probability() < 1
