"""Bradley-Terry by maximum likelihood: Agresti's published baseball fit, choix on random data,
hand-calculated Davidson ties, the likelihood equations, weights (eq. 13) and the refusals."""

from __future__ import annotations

import math

import choix
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings
from scipy.optimize import minimize

from tests.core.ranking.pairwise_data import DATA, needs_data
from trust.core.ranking.bradley_terry import fit_bradley_terry
from trust.core.ranking.identifiability import beat_graph_split
from trust.core.ranking.records import Match, read_comparisons
from trust.errors import ParameterError, RankingError


def _random_matches(
    rng: np.random.Generator, n_items: int, n_matches: int, *, judges: int = 0
) -> tuple[list[str], list[Match]]:
    """Matches drawn from a Bradley-Terry model with normal log-strengths (no ties)."""
    names = [f"item{k:03d}" for k in range(n_items)]
    theta = rng.normal(0.0, 1.0, n_items)
    a = rng.integers(0, n_items, n_matches)
    b = rng.integers(0, n_items - 1, n_matches)
    b = np.where(b >= a, b + 1, b)
    a_won = rng.random(n_matches) < 1 / (1 + np.exp(-(theta[a] - theta[b])))
    matches = [
        Match(names[i], names[j], 1.0 if won else 0.0, judge=f"judge{k % judges}" if judges else None)
        for k, (i, j, won) in enumerate(zip(a, b, a_won, strict=True))
    ]
    return names, matches


def _baseball() -> list[Match]:
    """Agresti's 1987 AL East table: each row is the home team's wins and the away team's."""
    matches = read_comparisons(DATA / "baseball_1987_al_east.csv")
    assert all(isinstance(match, Match) for match in matches)
    return [match for match in matches if isinstance(match, Match)]


def _centered(values: dict[str, float], names: list[str]) -> np.ndarray:
    array = np.array([values[name] for name in names])
    return array - array.mean()


# ------------------------------------------------------------------------------- published figures


@needs_data
def test_agresti_baseball_log_abilities_with_baltimore_at_zero() -> None:
    """Agresti (2002) Table 10.11 / BradleyTerry2's baseball example: 0.68, 1.11, ..., 1.58."""
    matches = _baseball()
    fit = fit_bradley_terry(matches)  # the default reference is the first in sorted order
    assert fit.reference == "Baltimore" and fit.ratings()["Baltimore"] == 0.0
    others = sorted(value for item, value in fit.ratings().items() if item != "Baltimore")
    assert [round(value, 2) for value in others] == [0.68, 1.11, 1.25, 1.29, 1.44, 1.58]
    assert fit.converged and fit.home_advantage is None and fit.tie_parameter is None


@needs_data
def test_agresti_baseball_home_advantage() -> None:
    matches = _baseball()
    fit = fit_bradley_terry(matches, home_advantage=True, reference="Baltimore")
    assert fit.home_advantage is not None and round(fit.home_advantage, 3) == 0.302
    assert fit.converged
    # The home-advantage model fits at least as well (it nests the plain one).
    assert fit.log_likelihood > fit_bradley_terry(matches).log_likelihood
    # Probabilities are those of the model: Milwaukee at home against Toronto.
    theta = fit.ratings()
    expected = 1 / (1 + math.exp(-(theta["Milwaukee"] + fit.home_advantage - theta["Toronto"])))
    assert fit.probability("Milwaukee", "Toronto", home="a").win == pytest.approx(expected, abs=1e-12)
    assert fit.probability("Toronto", "Milwaukee", home="b").loss == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------------ independent implementations


def test_matches_choix_on_random_data() -> None:
    rng = np.random.default_rng(20240601)
    names, matches = _random_matches(rng, 50, 2_000)
    fit = fit_bradley_terry(matches)
    index = {name: k for k, name in enumerate(names)}
    data = [(index[m.winner], index[m.loser]) for m in matches if m.winner and m.loser]
    reference = choix.ilsr_pairwise(len(names), data, alpha=0.0, max_iter=1_000, tol=1e-12)
    ours = _centered(fit.ratings(), names)
    assert np.max(np.abs(ours - (reference - reference.mean()))) < 1e-5
    assert fit.log_likelihood == pytest.approx(choix.log_likelihood_pairwise(data, reference), rel=1e-9)
    assert fit.converged


def test_prior_is_choix_penalized_fit() -> None:
    """prior * sum(theta^2) / 2 is choix.opt_pairwise's alpha * sum(theta^2) with alpha = prior / 2."""
    rng = np.random.default_rng(7)
    names, matches = _random_matches(rng, 20, 300)
    prior = 0.8
    fit = fit_bradley_terry(matches, prior=prior)
    index = {name: k for k, name in enumerate(names)}
    data = [(index[m.winner], index[m.loser]) for m in matches if m.winner and m.loser]
    reference = choix.opt_pairwise(len(names), data, alpha=prior / 2, tol=1e-12)
    assert np.max(np.abs(_centered(fit.ratings(), names) - (reference - reference.mean()))) < 1e-5


def test_integer_weights_equal_repeated_matches_and_scale_does_not_matter() -> None:
    rng = np.random.default_rng(11)
    names, matches = _random_matches(rng, 15, 400, judges=3)
    judge_weights = {"judge0": 1.0, "judge1": 2.0, "judge2": 3.0}
    counts = rng.integers(1, 4, len(matches))
    weighted = [Match(m.a, m.b, m.result, weight=float(c), judge=m.judge) for m, c in zip(matches, counts, strict=True)]
    repeated = [
        m for m, c in zip(matches, counts, strict=True) for _ in range(int(c) * int(judge_weights[m.judge or ""]))
    ]
    fit = fit_bradley_terry(weighted, weights=judge_weights)
    plain = fit_bradley_terry(repeated)
    assert np.allclose(fit.log_strengths, plain.log_strengths, atol=1e-8)
    assert fit.log_likelihood == pytest.approx(plain.log_likelihood, rel=1e-10)

    scaled = fit_bradley_terry(weighted, weights={judge: 3.7 * w for judge, w in judge_weights.items()})
    assert np.allclose(scaled.log_strengths, fit.log_strengths, atol=1e-8)
    assert scaled.log_likelihood == pytest.approx(3.7 * fit.log_likelihood, rel=1e-10)


def test_a_judge_of_weight_zero_is_left_out() -> None:
    rng = np.random.default_rng(5)
    names, matches = _random_matches(rng, 10, 300, judges=2)
    kept = [m for m in matches if m.judge == "judge0"]
    with_zero = fit_bradley_terry(matches, weights={"judge0": 1.0, "judge1": 0.0}, items=names)
    only_kept = fit_bradley_terry(kept, items=names)
    assert np.allclose(with_zero.log_strengths, only_kept.log_strengths, atol=1e-8)


@settings(max_examples=40, deadline=None)
@given(
    extra=st.lists(
        st.tuples(st.integers(0, 4), st.integers(0, 4), st.sampled_from([0.0, 0.5, 1.0]), st.integers(1, 5)),
        max_size=30,
    ),
    ties=st.sampled_from(["half", "davidson"]),
)
def test_estimate_solves_the_likelihood_equations(extra: list[tuple[int, int, float, int]], ties: str) -> None:
    """At the MLE each item's observed score equals its expected score (Zermelo's equations), and
    with Davidson ties the expected number of ties equals the observed one."""
    names = ["p", "q", "r", "s", "t"]
    # A cycle of wins each way guarantees the MLE exists; the random matches sit on top.
    base = [Match(names[k], names[(k + 1) % 5], 1.0) for k in range(5)]
    base += [Match(names[k], names[(k + 1) % 5], 0.0) for k in range(5)]
    extra_matches = [Match(names[i], names[j], r, weight=float(w)) for i, j, r, w in extra if i != j]
    matches = base + extra_matches
    fit = fit_bradley_terry(matches, ties=ties)  # type: ignore[arg-type]
    observed = dict.fromkeys(names, 0.0)
    expected = dict.fromkeys(names, 0.0)
    ties_seen = ties_expected = 0.0
    for match in matches:
        p = fit.probability(match.a, match.b)
        if fit.tie_parameter is None:  # "half", or no tie in the data: the score is win + tie / 2
            observed[match.a] += match.weight * match.result
            observed[match.b] += match.weight * (1 - match.result)
            expected[match.a] += match.weight * p.win
            expected[match.b] += match.weight * p.loss
        else:  # Davidson: the sufficient statistic is wins - losses (ties count 0)
            observed[match.a] += match.weight * (2 * match.result - 1)
            observed[match.b] -= match.weight * (2 * match.result - 1)
            expected[match.a] += match.weight * (p.win - p.loss)
            expected[match.b] -= match.weight * (p.win - p.loss)
            ties_seen += match.weight * match.tie
            ties_expected += match.weight * p.tie
    for name in names:
        assert observed[name] == pytest.approx(expected[name], abs=1e-6)
    assert ties_seen == pytest.approx(ties_expected, abs=1e-6)
    assert fit.converged


# ------------------------------------------------------------------------------------------- ties


def test_davidson_on_two_items_is_the_empirical_frequencies() -> None:
    """Two items, two free parameters (theta difference, nu), three outcomes: the model is
    saturated, so the MLE reproduces the frequencies: 3 wins, 2 ties, 1 loss of 6 give
    exp(d) = 3 / 1 and nu = (2 / 1) * exp(-d / 2) = 2 / sqrt(3)."""
    matches = [Match("x", "y", 1.0, weight=3.0), Match("x", "y", 0.5, weight=2.0), Match("y", "x", 1.0)]
    fit = fit_bradley_terry(matches, ties="davidson", reference="y")
    assert fit.ratings()["x"] == pytest.approx(math.log(3), abs=1e-8)
    assert fit.tie_parameter == pytest.approx(2 / math.sqrt(3), abs=1e-8)
    p = fit.probability("x", "y")
    assert (p.win, p.tie, p.loss) == pytest.approx((3 / 6, 2 / 6, 1 / 6), abs=1e-8)
    expected_ll = 3 * math.log(3 / 6) + 2 * math.log(2 / 6) + math.log(1 / 6)
    assert fit.log_likelihood == pytest.approx(expected_ll, abs=1e-9)


def test_half_ties_count_half_a_win() -> None:
    """3 wins, 2 ties, 1 loss is a score of 4 of 6: p = 2/3, so theta_x - theta_y = log 2."""
    matches = [Match("x", "y", 1.0, weight=3.0), Match("x", "y", 0.5, weight=2.0), Match("y", "x", 1.0)]
    fit = fit_bradley_terry(matches, ties="half", reference="y")
    assert fit.ratings()["x"] == pytest.approx(math.log(2), abs=1e-8)
    assert fit.tie_parameter is None and fit.probability("x", "y").tie == 0.0


def test_davidson_against_a_direct_likelihood_on_three_items() -> None:
    """The joint fit of theta and nu equals a generic optimizer on Davidson's formula written out."""
    rng = np.random.default_rng(3)
    names = ["a", "b", "c"]
    outcomes = rng.choice([1.0, 0.5, 0.0], size=60, p=[0.45, 0.25, 0.3])
    pairs = [(names[k % 3], names[(k + 1 + k // 3 % 2) % 3]) for k in range(60)]
    matches = [Match(x, y, r) for (x, y), r in zip(pairs, outcomes, strict=True) if x != y]

    def negative_log_likelihood(params: np.ndarray) -> float:
        pi = dict(zip(names, np.exp([0.0, params[0], params[1]]), strict=True))
        nu = math.exp(params[2])
        total = 0.0
        for m in matches:
            denominator = pi[m.a] + pi[m.b] + nu * math.sqrt(pi[m.a] * pi[m.b])
            numerator = {1.0: pi[m.a], 0.0: pi[m.b], 0.5: nu * math.sqrt(pi[m.a] * pi[m.b])}[m.result]
            total -= math.log(numerator / denominator)
        return total

    direct = minimize(
        negative_log_likelihood, np.zeros(3), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12}
    )
    fit = fit_bradley_terry(matches, ties="davidson")
    assert fit.ratings()["b"] == pytest.approx(direct.x[0], abs=1e-5)
    assert fit.ratings()["c"] == pytest.approx(direct.x[1], abs=1e-5)
    assert fit.tie_parameter == pytest.approx(math.exp(direct.x[2]), abs=1e-5)
    assert fit.log_likelihood == pytest.approx(-direct.fun, abs=1e-8)


def test_no_ties_means_no_tie_parameter() -> None:
    rng = np.random.default_rng(2)
    _, matches = _random_matches(rng, 6, 200)
    davidson, half = fit_bradley_terry(matches, ties="davidson"), fit_bradley_terry(matches, ties="half")
    assert davidson.tie_parameter is None
    assert np.allclose(davidson.log_strengths, half.log_strengths, atol=1e-10)


def test_all_ties_under_davidson_is_refused() -> None:
    matches = [Match("x", "y", 0.5), Match("y", "z", 0.5), Match("z", "x", 0.5)]
    with pytest.raises(RankingError, match="every match is a tie.*ties='half'"):
        fit_bradley_terry(matches, ties="davidson")
    fit = fit_bradley_terry(matches, ties="half")
    assert fit.log_strengths == pytest.approx((0.0, 0.0, 0.0), abs=1e-9)


# --------------------------------------------------------------------------- identifiability, errors


def test_an_item_that_never_lost_is_named() -> None:
    matches = [Match("a", "b", 1.0), Match("b", "c", 1.0), Match("c", "b", 1.0), Match("a", "c", 1.0)]
    with pytest.raises(RankingError, match=r"never lost: a\b.*prior > 0"):
        fit_bradley_terry(matches)
    # With a prior the fit exists, and the unbeaten item is rated highest.
    fit = fit_bradley_terry(matches, prior=1.0)
    assert max(fit.ratings(), key=fit.ratings().__getitem__) == "a"
    assert all(math.isfinite(value) for value in fit.log_strengths)


def test_an_item_that_never_won_and_split_groups_are_named() -> None:
    never_won = [Match("a", "b", 1.0), Match("b", "a", 1.0), Match("a", "z", 1.0), Match("b", "z", 1.0)]
    with pytest.raises(RankingError, match=r"never won: z\b"):
        fit_bradley_terry(never_won)
    two_groups = [
        Match("a", "b", 1.0),
        Match("b", "a", 1.0),
        Match("c", "d", 1.0),
        Match("d", "c", 1.0),
        Match("a", "c", 1.0),
    ]
    with pytest.raises(RankingError, match=r"\{a, b\} never lost.*\{c, d\} never beat"):
        fit_bradley_terry(two_groups)
    split = beat_graph_split(["a", "b", "c", "d"], np.array([1, 0, 3, 2, 2]), np.array([0, 1, 2, 3, 0]))
    assert split.components == (("a", "b"), ("c", "d")) and not split.connected


def test_an_item_without_matches_needs_a_prior() -> None:
    matches = [Match("a", "b", 1.0), Match("b", "a", 1.0)]
    with pytest.raises(RankingError, match="never compared: c"):
        fit_bradley_terry(matches, items=["a", "b", "c"])
    fit = fit_bradley_terry(matches, items=["c", "b", "a"], prior=0.5)
    assert fit.items == ("c", "b", "a") and fit.reference == "a"
    assert fit.ratings() == pytest.approx({"c": 0.0, "b": 0.0, "a": 0.0}, abs=1e-9)


def test_a_tie_connects_both_ways() -> None:
    matches = [Match("a", "b", 0.5), Match("b", "c", 1.0), Match("c", "b", 1.0), Match("a", "c", 0.5)]
    fit = fit_bradley_terry(matches)
    assert fit.converged and fit.tie_parameter is not None


def test_bad_input_is_refused() -> None:
    matches = [Match("a", "b", 1.0, judge="j1"), Match("b", "a", 1.0, judge="j2")]
    with pytest.raises(RankingError, match="no matches"):
        fit_bradley_terry([])
    with pytest.raises(RankingError, match="reference 'zed' is not among the 2 items"):
        fit_bradley_terry(matches, reference="zed")
    with pytest.raises(RankingError, match="judged by 'j2', who has no weight"):
        fit_bradley_terry(matches, weights={"j1": 1.0})
    with pytest.raises(RankingError, match="names no judge"):
        fit_bradley_terry([Match("a", "b", 1.0), Match("b", "a", 1.0)], weights={"j1": 1.0})
    with pytest.raises(ParameterError, match=r"weights\['j1'\].*got -1"):
        fit_bradley_terry(matches, weights={"j1": -1.0, "j2": 1.0})
    with pytest.raises(ParameterError, match="prior.*got -0.1"):
        fit_bradley_terry(matches, prior=-0.1)
    with pytest.raises(ParameterError, match="ties is one of"):
        fit_bradley_terry(matches, ties="ignore")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="tol"):
        fit_bradley_terry(matches, tol=0.0)
    with pytest.raises(ParameterError, match="max_iter"):
        fit_bradley_terry(matches, max_iter=0)
    with pytest.raises(RankingError, match="unknown item.*b"):
        fit_bradley_terry(matches, items=["a"])
    with pytest.raises(ParameterError, match="items names a more than once"):
        fit_bradley_terry(matches, items=["a", "b", "a"])
    with pytest.raises(RankingError, match="weight 0"):
        fit_bradley_terry([Match("a", "b", 1.0, weight=0.0)])


def test_home_advantage_needs_home_matches_both_won_and_lost() -> None:
    neutral = [Match("a", "b", 1.0), Match("b", "a", 1.0)]
    with pytest.raises(RankingError, match="no match names a home side"):
        fit_bradley_terry(neutral, home_advantage=True)
    home_always_wins = [Match("a", "b", 1.0, home="a"), Match("a", "b", 0.0, home="b")]
    with pytest.raises(RankingError, match="home side won every match"):
        fit_bradley_terry(home_always_wins, home_advantage=True)


def test_probability_refuses_what_the_fit_cannot_answer() -> None:
    fit = fit_bradley_terry([Match("a", "b", 1.0), Match("b", "a", 1.0), Match("a", "b", 1.0)])
    assert fit.probability("a", "b").win == pytest.approx(2 / 3, abs=1e-9)
    with pytest.raises(ParameterError, match="no home advantage"):
        fit.probability("a", "b", home="a")
    with pytest.raises(RankingError, match="unknown item.*c"):
        fit.probability("a", "c")


# ------------------------------------------------------------------------------------------- scale


def test_a_hundred_thousand_matches_among_a_thousand_items() -> None:
    """The size the leaderboard must handle: converges to the solution of the likelihood
    equations (each item's wins equal its expected wins), checked vectorized."""
    rng = np.random.default_rng(99)
    names, matches = _random_matches(rng, 1_000, 100_000)
    fit = fit_bradley_terry(matches)
    assert fit.converged and fit.iterations < 50
    theta = np.array(fit.log_strengths)
    index = {name: k for k, name in enumerate(names)}
    winners = np.array([index[m.winner or ""] for m in matches])
    losers = np.array([index[m.loser or ""] for m in matches])
    p_win = 1 / (1 + np.exp(-(theta[winners] - theta[losers])))
    wins = np.bincount(winners, minlength=len(names)).astype(float)
    expected = np.bincount(winners, p_win, minlength=len(names)) + np.bincount(losers, 1 - p_win, minlength=len(names))
    assert np.max(np.abs(wins - expected)) < 1e-4
