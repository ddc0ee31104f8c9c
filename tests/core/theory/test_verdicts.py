"""The three-way split of a committee round (i.i.d. and drawn from a finite pool) and the exact trace
pass probability, against brute-force enumeration and the toolkit's existing formulas."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.core.theory.consensus import (
    SegmentClass,
    TraceModel,
    VerdictProbabilities,
    pass_probability,
    quorum,
    trace_pass_probability,
    verdict_probabilities,
    verdict_probabilities_drawn,
)
from trust.errors import ParameterError

TAUS = [0.51, 0.6, 0.66, 2 / 3, 0.75, 1.0]


def brute_force_iid(k: int, epsilon: float, rho: float, tau: float) -> tuple[float, float]:
    """(correct, wrong) by enumerating every seat's state: adversarial, honest right, honest wrong."""
    q = quorum(k, tau)
    correct = wrong = 0.0
    for states in itertools.product(("bad", "right", "err"), repeat=k):
        p = 1.0
        for state in states:
            p *= rho if state == "bad" else (1 - rho) * (1 - epsilon if state == "right" else epsilon)
        right_votes = states.count("right")
        correct += p if right_votes >= q else 0.0
        wrong += p if k - right_votes >= q else 0.0
    return correct, wrong


def brute_force_drawn(k: int, epsilon: float, pool: int, adversaries: int, tau: float) -> tuple[float, float]:
    """(correct, wrong) by enumerating every sequence of k draws with replacement from the pool and
    every honest member's error (a member votes once, for all the units it won)."""
    q = quorum(k, tau)
    correct = wrong = 0.0
    for errors in itertools.product((False, True), repeat=pool - adversaries):
        p_errors = math.prod(epsilon if e else 1 - epsilon for e in errors)
        for order in itertools.product(range(pool), repeat=k):
            p = p_errors / pool**k
            wrong_votes = sum(1 for m in order if m < adversaries or errors[m - adversaries])
            correct += p if k - wrong_votes >= q else 0.0
            wrong += p if wrong_votes >= q else 0.0
    return correct, wrong


def _sums_to_one(v: VerdictProbabilities) -> None:
    assert min(v.correct, v.wrong, v.undetermined) >= 0
    assert v.correct + v.wrong + v.undetermined == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 6), st.floats(0, 1), st.floats(0, 1), st.sampled_from(TAUS))
def test_iid_split_equals_enumeration_and_lemma_4_1(k: int, epsilon: float, rho: float, tau: float) -> None:
    split = verdict_probabilities(k, epsilon, rho, tau)
    correct, wrong = brute_force_iid(k, epsilon, rho, tau)
    assert split.correct == pytest.approx(correct, abs=1e-12)
    assert split.wrong == pytest.approx(wrong, abs=1e-12)
    assert split.correct == pytest.approx(pass_probability(k, epsilon, rho, tau), abs=1e-12)
    _sums_to_one(split)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda k: st.tuples(st.just(k), st.integers(1, 5)).flatmap(
            lambda kp: st.tuples(st.just(kp[0]), st.just(kp[1]), st.integers(0, kp[1]))
        )
    ),
    st.floats(0, 1),
    st.sampled_from(TAUS),
)
def test_drawn_split_equals_enumerating_every_committee(
    sizes: tuple[int, int, int], epsilon: float, tau: float
) -> None:
    k, pool, adversaries = sizes
    split = verdict_probabilities_drawn(k, epsilon, pool, adversaries, tau)
    correct, wrong = brute_force_drawn(k, epsilon, pool, adversaries, tau)
    assert split.correct == pytest.approx(correct, abs=1e-12)
    assert split.wrong == pytest.approx(wrong, abs=1e-12)
    _sums_to_one(split)


def test_drawn_values_of_the_byzantine_benchmark() -> None:
    # k = 4, q = 3: m <= 1 adversarial units is correct, m = 2 undetermined, m >= 3 wrong, with m
    # Binomial(4, 3/10): draws with replacement are eq. 3.4's i.i.d. seats when epsilon = 0.
    split = verdict_probabilities_drawn(4, 0.0, 10, 3, 0.66)
    pmf = [math.comb(4, m) * 0.3**m * 0.7 ** (4 - m) for m in range(5)]
    assert (split.correct, split.wrong, split.undetermined) == pytest.approx((pmf[0] + pmf[1], pmf[3] + pmf[4], pmf[2]))
    assert split.as_dict() == pytest.approx(verdict_probabilities(4, 0.0, 0.3, 0.66).as_dict())


@pytest.mark.parametrize("rho", [0.1, 0.2, 0.3])
def test_drawn_tends_to_iid_as_the_pool_grows(rho: float) -> None:
    # Honest errors: a member errs once for all its units, so a small pool (members often win
    # several draws) differs from the i.i.d. model; a large one does not.
    iid = verdict_probabilities(5, 0.1, rho, 0.66)
    small = verdict_probabilities_drawn(5, 0.1, 5, round(5 * rho), 0.66)
    large = verdict_probabilities_drawn(5, 0.1, 2_000, round(2_000 * rho), 0.66)
    for field in ("correct", "wrong", "undetermined"):
        assert getattr(large, field) == pytest.approx(getattr(iid, field), abs=1e-3)
    assert max(abs(small.as_dict()[f] - iid.as_dict()[f]) for f in iid.as_dict()) > 1e-3


def test_bad_splits_name_the_parameter() -> None:
    with pytest.raises(ParameterError, match="tau = 0.5: a verdict split needs tau > 1/2"):
        verdict_probabilities(3, 0.0, 0.1, 0.5)
    with pytest.raises(ParameterError, match="pool = 0"):
        verdict_probabilities_drawn(4, 0.0, 0, 0, 0.66)
    with pytest.raises(ParameterError, match="adversaries = 11: more than the pool of 10"):
        verdict_probabilities_drawn(4, 0.0, 10, 11, 0.66)
    with pytest.raises(ParameterError, match="rho"):
        verdict_probabilities(3, 0.0, 1.5, 0.66)


def brute_force_trace(p: list[float], beta: float, weights: list[int], critical: list[bool]) -> float:
    total = 0.0
    needed = beta * sum(weights) - 1e-9
    for passed in itertools.product((False, True), repeat=len(p)):
        if any(flag and not ok for flag, ok in zip(critical, passed, strict=True)):
            continue
        weight = sum(w for w, ok in zip(weights, passed, strict=True) if ok)
        if weight >= needed:
            total += math.prod(ps if ok else 1 - ps for ps, ok in zip(p, passed, strict=True))
    return total


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 8).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(0, 1), min_size=n, max_size=n),
            st.lists(st.integers(1, 4), min_size=n, max_size=n),
            st.lists(st.booleans(), min_size=n, max_size=n),
        )
    ),
    st.sampled_from([0.3, 0.5, 0.55, 0.65, 0.75, 0.9]),
)
def test_trace_pass_probability_equals_enumeration(
    segments: tuple[list[float], list[int], list[bool]], beta: float
) -> None:
    p, weights, critical = segments
    assert trace_pass_probability(p, beta, weights=weights, critical=critical) == pytest.approx(
        brute_force_trace(p, beta, weights, critical), abs=1e-12
    )


def test_trace_pass_probability_agrees_with_trace_model() -> None:
    classes = (SegmentClass("T1", 3, 0.05, 0.1, 1.0, 12), SegmentClass("T2", 5, 0.2, 0.1, 2.0, 6))
    model = TraceModel(classes, tau=0.66, beta=0.65)
    p = [model.pass_probabilities["T1"]] * 12 + [model.pass_probabilities["T2"]] * 6
    weights = [1] * 12 + [2] * 6
    assert trace_pass_probability(p, 0.65, weights=weights) == pytest.approx(1 - model.failure_probability(), abs=1e-12)


def test_bad_traces_name_the_parameter() -> None:
    with pytest.raises(ParameterError, match="empty"):
        trace_pass_probability([], 0.65)
    with pytest.raises(ParameterError, match="3 pass probabilities, 2 weights"):
        trace_pass_probability([0.5, 0.5, 0.5], 0.65, weights=[1, 1])
    with pytest.raises(ParameterError, match=r"weights\[1\]"):
        trace_pass_probability([0.5, 0.5], 0.65, weights=[1, 0])
    with pytest.raises(ParameterError, match=r"pass_probabilities\[0\]"):
        trace_pass_probability([1.5], 0.65)
    with pytest.raises(ParameterError, match="beta"):
        trace_pass_probability([0.5], 1.0)
