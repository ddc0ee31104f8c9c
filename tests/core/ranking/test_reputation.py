"""The swarm reputation of section 4.5 (eq. 10, 11, 12, 14): hand calculations, closed forms, the
documented tie rules, and the Vicuna80 judges' agreement with the human consensus."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.ranking.pairwise_data import DATA, needs_data
from trust.core.ranking.records import Match, read_judgments
from trust.core.ranking.reputation import (
    INITIAL_REPUTATION,
    R_MAX,
    R_MIN,
    TIE_AGREEMENT,
    ReputationParams,
    SwarmReputation,
    capped_update,
    ranking_agreement,
    update_generation,
    update_ranking,
    update_round,
)
from trust.errors import ParameterError, RankingError

# Published human-majority win rates of the five answer models (PRD notebook; data README).
HUMAN_WIN_RATES = {
    "gpt4": 0.821875,
    "claude": 0.6890625,
    "vicuna-13b": 0.3890625,
    "gpt35": 0.3140625,
    "bard": 0.2859375,
}


def test_eq10_combines_the_two_averages() -> None:
    reputation = SwarmReputation(ranking=0.8, generation=0.4)
    assert reputation.combined(0.25) == pytest.approx(0.25 * 0.8 + 0.75 * 0.4)
    assert reputation.combined(1.0) == 0.8
    assert reputation.combined(0.0) == 0.4
    assert SwarmReputation().combined() == INITIAL_REPUTATION


def test_eq11_agreement_by_hand() -> None:
    strengths = {"a": 3.0, "b": 2.0, "c": 1.0}
    comparisons = [
        Match("a", "b", 1.0),  # a better, consensus agrees: 1
        Match("b", "c", 0.0),  # c better, consensus says b: 0
        Match("c", "a", 0.5),  # tie: TIE_AGREEMENT
        Match("c", "b", 0.0),  # b better (result 0 = second better): 1
    ]
    assert ranking_agreement(comparisons, strengths) == pytest.approx((1 + 0 + TIE_AGREEMENT + 1) / 4)


def test_eq11_equal_strengths_are_left_out() -> None:
    strengths = {"a": 2.0, "b": 2.0, "c": 1.0}
    # (a, b) has no consensus order: it counts neither way, so one agreeing comparison gives 1.
    assert ranking_agreement([Match("a", "b", 1.0), Match("a", "c", 1.0)], strengths) == 1.0
    assert ranking_agreement([Match("a", "b", 0.0), Match("a", "c", 1.0)], strengths) == 1.0
    assert ranking_agreement([Match("a", "b", 1.0)], strengths) is None
    assert ranking_agreement([], strengths) is None


def test_an_abstaining_node_scores_what_a_coin_flip_does() -> None:
    strengths = {"a": 3.0, "b": 2.0, "c": 1.0}
    ties = [Match("a", "b", 0.5), Match("b", "c", 0.5), Match("a", "c", 0.5)]
    assert ranking_agreement(ties, strengths) == 0.5


@given(
    # Strengths a hundredth apart at least: two floats one ulp apart can share a logarithm, and then
    # the log scale has a tie the linear scale does not (a flaky counterexample, not a property).
    st.lists(st.integers(1, 10_000).map(lambda k: k / 100), min_size=4, max_size=4, unique=True),
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0])),
        min_size=1,
        max_size=30,
    ),
)
def test_eq11_reads_only_the_order_of_the_strengths(pis: list[float], raw: list[tuple[int, int, float]]) -> None:
    names = ["a", "b", "c", "d"]
    comparisons = [Match(names[i], names[j], result) for i, j, result in raw if i != j]
    pi = dict(zip(names, pis, strict=True))
    log_pi = {name: math.log(value) for name, value in pi.items()}
    expected = None
    if comparisons:
        scores = []
        for match in comparisons:
            consensus = math.copysign(1.0, pi[match.a] - pi[match.b])
            scores.append(TIE_AGREEMENT if match.tie else float(math.copysign(1.0, match.result - 0.5) == consensus))
        expected = sum(scores) / len(scores)
    assert ranking_agreement(comparisons, pi) == pytest.approx(expected)
    assert ranking_agreement(comparisons, log_pi) == pytest.approx(expected)


def test_eq11_unknown_response_is_named() -> None:
    with pytest.raises(RankingError, match="'zeta'"):
        ranking_agreement([Match("a", "zeta", 1.0)], {"a": 1.0})
    with pytest.raises(ParameterError, match="strength of 'a'"):
        ranking_agreement([Match("a", "b", 1.0)], {"a": math.nan, "b": 1.0})


def test_eq11_and_eq12_ema_steps() -> None:
    params = ReputationParams(beta=0.9)
    start = SwarmReputation(ranking=0.5, generation=0.5)
    assert update_ranking(start, 1.0, params).ranking == pytest.approx(0.55)
    assert update_ranking(start, 0.0, params).ranking == pytest.approx(0.45)
    assert update_ranking(start, None, params) is start
    assert update_generation(start, True, params).generation == pytest.approx(0.55)
    assert update_generation(start, False, params).generation == pytest.approx(0.45)
    # the other average is untouched, and the input value is not mutated
    assert update_generation(start, True, params).ranking == 0.5
    assert start == SwarmReputation(0.5, 0.5)


def test_ema_closed_form_after_many_rounds() -> None:
    # With constant evidence a, R_t = a + beta^t (R_0 - a).
    params = ReputationParams(beta=0.8)
    reputation = SwarmReputation(ranking=0.1, generation=0.9)
    for _ in range(25):
        reputation = update_ranking(reputation, 0.7, params)
        reputation = update_generation(reputation, False, params)
    assert reputation.ranking == pytest.approx(0.7 + 0.8**25 * (0.1 - 0.7))
    assert reputation.generation == pytest.approx(0.8**25 * 0.9)


def test_a_round_updates_both() -> None:
    strengths = {"a": 3.0, "b": 2.0, "c": 1.0}
    after = update_round(SwarmReputation(0.5, 0.5), [Match("a", "b", 1.0), Match("c", "b", 1.0)], strengths, True)
    assert after.ranking == pytest.approx(0.9 * 0.5 + 0.1 * 0.5)  # one of two comparisons agrees
    assert after.generation == pytest.approx(0.55)


def test_eq14_branches() -> None:
    params = ReputationParams(r_min=0.1, r_max=0.9, delta_up=0.05, delta_down=0.2, decay=0.1, threshold=0.6)
    assert capped_update(0.5, 0.61, params) == pytest.approx(0.55)
    assert capped_update(0.88, 0.99, params) == 0.9  # capped at R_max
    assert capped_update(0.5, 0.59, params) == pytest.approx(0.3)
    assert capped_update(0.2, 0.0, params) == 0.1  # floored at R_min
    assert capped_update(0.5, 0.6, params) == 0.5  # exactly at the threshold: unchanged
    assert capped_update(0.5, None, params) == pytest.approx(0.45)  # inactive
    # inactivity decays below R_min: eq. 14 floors only the below-threshold branch
    decayed = 0.5
    for _ in range(30):
        decayed = capped_update(decayed, None, params)
    assert decayed == pytest.approx(0.5 * 0.9**30) and decayed < params.r_min


def test_slashing_below_q() -> None:
    params = ReputationParams(delta_down=0.1, threshold=0.5, slash_below=0.25)
    assert capped_update(0.4, 0.2, params) == pytest.approx(0.3)
    assert capped_update(0.3, 0.2, params) == 0.0  # 0.2 < Q: slashed to 0
    assert capped_update(0.3, 0.2, ReputationParams(delta_down=0.1)) == pytest.approx(0.2)


@given(
    st.floats(min_value=R_MIN, max_value=R_MAX),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_eq14_active_updates_stay_in_range_and_are_monotone(reputation: float, low: float, high: float) -> None:
    low, high = min(low, high), max(low, high)
    after_low, after_high = capped_update(reputation, low), capped_update(reputation, high)
    assert R_MIN <= after_low <= after_high <= R_MAX


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("alpha", 1.5, "alpha"),
        ("alpha", -0.1, "alpha"),
        ("beta", 2.0, "beta"),
        ("beta", math.nan, "beta"),
        ("decay", 1.1, "decay"),
        ("delta_up", -0.1, "delta_up"),
        ("delta_down", -1.0, "delta_down"),
    ],
)
def test_parameters_out_of_domain(field: str, value: float, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        ReputationParams(**{field: value})


def test_floor_above_cap_is_refused() -> None:
    with pytest.raises(ParameterError, match="r_min = 0.8 exceeds r_max = 0.2"):
        ReputationParams(r_min=0.8, r_max=0.2)
    with pytest.raises(ParameterError, match="ranking"):
        SwarmReputation(ranking=1.2)
    with pytest.raises(ParameterError, match="performance"):
        capped_update(0.5, 1.5)
    with pytest.raises(ParameterError, match="agreement"):
        update_ranking(SwarmReputation(), -0.1)


@needs_data
def test_vicuna80_judges_against_the_human_consensus() -> None:
    """Each LLM judge is a node; its comparisons of the other models' answers (its own excluded, as
    4.2.3 requires) are scored against the published human-majority order. The vectorized value must
    equal a plain count, and every judge must beat chance."""
    judgments = read_judgments(DATA / "vicuna80_judgments.jsonl")
    for judge in ("gpt4", "claude", "gpt35", "vicuna-13b", "bard"):
        own_excluded = [j for j in judgments if j.judge == judge and judge not in (j.first, j.second)]
        assert len(own_excluded) == 960  # 12 ordered pairs of the 4 others x 80 questions
        agree = ties = 0
        for j in own_excluded:
            consensus_first_better = HUMAN_WIN_RATES[j.first] > HUMAN_WIN_RATES[j.second]
            if j.score == 3:
                ties += 1
            elif (j.score == 1) == consensus_first_better:
                agree += 1
        expected = (agree + TIE_AGREEMENT * ties) / len(own_excluded)
        value = ranking_agreement([j.as_match() for j in own_excluded], HUMAN_WIN_RATES)
        assert value == pytest.approx(expected)
        assert value is not None and value > 0.55, judge


def test_agreement_over_a_hundred_thousand_comparisons() -> None:
    rng = np.random.default_rng(7)
    names = [f"r{i}" for i in range(50)]
    strengths = {name: float(value) for name, value in zip(names, rng.normal(size=50), strict=True)}
    first, second = rng.integers(0, 50, 100_000), rng.integers(1, 50, 100_000)
    second = (first + second) % 50  # never equal to first
    truth = np.array([strengths[names[i]] > strengths[names[j]] for i, j in zip(first, second, strict=True)])
    flip = rng.random(100_000) < 0.2  # a node that errs 20% of the time
    results = np.where(truth ^ flip, 1.0, 0.0)
    comparisons = [Match(names[i], names[j], r) for i, j, r in zip(first, second, results, strict=True)]
    assert ranking_agreement(comparisons, strengths) == pytest.approx(1.0 - flip.mean())
