"""Plackett-Luce by Hunter's MM: Hunter's NASCAR data against choix, top-k rankings against choix's
top-1 fit, two-item rankings against Bradley-Terry, hand calculations, the MM ascent property,
the Gamma prior against a direct optimizer, and the refusals."""

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
from trust.core.ranking.plackett_luce import fit_plackett_luce, rankings_from_matches
from trust.core.ranking.records import Match, Ranking, read_rankings
from trust.errors import ParameterError, RankingError


def _nascar() -> list[Ranking]:
    return read_rankings(DATA / "nascar2002.txt")


def _centered(fit_values: dict[str, float], names: list[str]) -> np.ndarray:
    array = np.array([fit_values[name] for name in names])
    return array - array.mean()


def _random_rankings(
    rng: np.random.Generator, n_items: int, n_rankings: int, *, top_k: bool
) -> tuple[list[str], list[Ranking]]:
    """Rankings of random subsets drawn from a Plackett-Luce model; with `top_k`, a random number
    of the last places are reported only as 'below the rest'."""
    names = [f"d{k:02d}" for k in range(n_items)]
    gamma = np.exp(rng.normal(0.0, 1.0, n_items))
    rankings = []
    for _ in range(n_rankings):
        size = int(rng.integers(2, min(n_items, 8) + 1))
        subset = list(rng.choice(n_items, size=size, replace=False))
        order = []
        while subset:
            weights = gamma[subset] / gamma[subset].sum()
            order.append(subset.pop(int(rng.choice(len(subset), p=weights))))
        ranked = int(rng.integers(1, size)) if top_k else size
        rankings.append(Ranking(tuple(names[k] for k in order[:ranked]), tuple(names[k] for k in order[ranked:])))
    return names, rankings


# ------------------------------------------------------------------------------------ NASCAR 2002


@needs_data
def test_nascar_has_a_maximum_likelihood_estimate() -> None:
    """Hunter (2004) removed the drivers who finished last in every race they entered (no MLE);
    the file holds the 83 who remain: each finished ahead of someone, and the beat graph of the
    36 races is strongly connected, so the MLE exists without a prior."""
    rankings = _nascar()
    drivers = sorted({driver for ranking in rankings for driver in ranking.ranked})
    assert len(rankings) == 36 and len(drivers) == 83
    beat_someone = {driver for ranking in rankings for driver in ranking.ranked[:-1]}
    assert beat_someone == set(drivers)
    index = {driver: k for k, driver in enumerate(drivers)}
    losers = [index[r.ranked[k + 1]] for r in rankings for k in range(len(r.ranked) - 1)]
    winners = [index[r.ranked[k]] for r in rankings for k in range(len(r.ranked) - 1)]
    assert beat_graph_split(drivers, np.array(losers), np.array(winners)).connected


@needs_data
def test_nascar_matches_choix() -> None:
    rankings = _nascar()
    fit = fit_plackett_luce(rankings, tol=1e-12)
    names = list(fit.items)
    index = {name: k for k, name in enumerate(names)}
    data = [tuple(index[driver] for driver in ranking.ranked) for ranking in rankings]
    reference = choix.ilsr_rankings(len(names), data, alpha=0.0, max_iter=1_000, tol=1e-12)
    assert np.max(np.abs(_centered(fit.ratings(), names) - (reference - reference.mean()))) < 1e-6
    assert fit.log_likelihood == pytest.approx(choix.log_likelihood_rankings(data, reference), rel=1e-9)
    assert fit.converged and fit.reference == "1" and fit.ratings()["1"] == 0.0


@needs_data
def test_a_driver_who_always_finished_last_has_no_estimate() -> None:
    """Hunter's reason for removing drivers: one placed last in every race he entered (here a
    44th finisher in race 1) would have log-strength minus infinity."""
    rankings = _nascar()
    first = rankings[0]
    added = [Ranking((*first.ranked, "last"), key=first.key), *rankings[1:]]
    with pytest.raises(RankingError, match=r"Plackett-Luce.*never won: last\b.*prior > 0"):
        fit_plackett_luce(added)
    fit = fit_plackett_luce(added, prior=0.1)
    ratings = fit.ratings()
    assert min(ratings, key=ratings.__getitem__) == "last" and math.isfinite(ratings["last"])


# ------------------------------------------------------------------------ other implementations


def test_top_k_rankings_match_choix_top1() -> None:
    """A top-k ranking is k choices, each of one item from those not yet placed (the unranked
    included): exactly choix's top-1 data."""
    rng = np.random.default_rng(404)
    names, rankings = _random_rankings(rng, 12, 600, top_k=True)
    fit = fit_plackett_luce(rankings, tol=1e-12)
    index = {name: k for k, name in enumerate(names)}
    top1 = []
    for ranking in rankings:
        remaining = [index[item] for item in ranking.items]
        for item in ranking.ranked:
            remaining.remove(index[item])
            top1.append((index[item], tuple(remaining)))
    reference = choix.ilsr_top1(len(names), top1, alpha=0.0, max_iter=1_000, tol=1e-12)
    assert np.max(np.abs(_centered(fit.ratings(), names) - (reference - reference.mean()))) < 1e-6
    assert fit.log_likelihood == pytest.approx(choix.log_likelihood_top1(top1, reference), rel=1e-9)


def test_two_item_rankings_are_bradley_terry() -> None:
    rng = np.random.default_rng(31)
    names = [f"m{k}" for k in range(25)]
    theta = rng.normal(0.0, 1.0, len(names))
    matches = []
    for _ in range(1_500):
        i, j = rng.choice(len(names), size=2, replace=False)
        won = rng.random() < 1 / (1 + math.exp(theta[j] - theta[i]))
        matches.append(Match(names[i], names[j], 1.0 if won else 0.0, weight=float(rng.integers(1, 4))))
    pl = fit_plackett_luce(matches, tol=1e-12)  # Matches are read as rankings of two
    bt = fit_bradley_terry(matches)
    assert pl.items == bt.items and pl.reference == bt.reference
    assert np.allclose(pl.log_strengths, bt.log_strengths, atol=1e-7)
    assert pl.log_likelihood == pytest.approx(bt.log_likelihood, rel=1e-10)


# ------------------------------------------------------------------------------ hand calculations


def test_top1_choices_from_one_set_give_strengths_proportional_to_counts() -> None:
    """Choosing from {a, b, c} the MLE is gamma proportional to the choice counts: a twice, b and
    c once each gives log-strengths 0, -log 2, -log 2 with a as reference."""
    rankings = [
        Ranking(("a",), ("b", "c")),
        Ranking(("a",), ("c", "b")),
        Ranking(("b",), ("a", "c")),
        Ranking(("c",), ("a", "b")),
    ]
    fit = fit_plackett_luce(rankings, tol=1e-13)
    assert fit.ratings() == pytest.approx({"a": 0.0, "b": -math.log(2), "c": -math.log(2)}, abs=1e-10)
    assert fit.log_likelihood == pytest.approx(2 * math.log(1 / 2) + 2 * math.log(1 / 4), abs=1e-10)
    assert fit.probability_first(["a", "b", "c"]) == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.25}, abs=1e-9)
    assert fit.probability_first(["b", "c"]) == pytest.approx({"b": 0.5, "c": 0.5}, abs=1e-9)


def test_one_unranked_item_is_a_full_ranking() -> None:
    rng = np.random.default_rng(8)
    _, rankings = _random_rankings(rng, 8, 200, top_k=False)
    as_top_k = [Ranking(r.ranked[:-1], (r.ranked[-1],), r.weight) for r in rankings]
    full, top_k = fit_plackett_luce(rankings, tol=1e-12), fit_plackett_luce(as_top_k, tol=1e-12)
    assert np.allclose(full.log_strengths, top_k.log_strengths, atol=1e-10)
    assert full.log_likelihood == pytest.approx(top_k.log_likelihood, rel=1e-12)


def test_weights_count_rankings() -> None:
    rng = np.random.default_rng(9)
    _, rankings = _random_rankings(rng, 8, 150, top_k=True)
    counts = rng.integers(1, 4, len(rankings))
    weighted = [Ranking(r.ranked, r.unranked, float(c)) for r, c in zip(rankings, counts, strict=True)]
    repeated = [r for r, c in zip(rankings, counts, strict=True) for _ in range(int(c))]
    a, b = fit_plackett_luce(weighted, tol=1e-12), fit_plackett_luce(repeated, tol=1e-12)
    assert np.allclose(a.log_strengths, b.log_strengths, atol=1e-9)
    assert a.log_likelihood == pytest.approx(b.log_likelihood, rel=1e-10)


def test_gamma_prior_is_the_map_estimate() -> None:
    """With prior = lam the fit maximizes loglik + sum(lam * log gamma - lam * gamma), the log
    posterior under a Gamma(1 + lam, lam) prior on each gamma (its mode in gamma, as Caron &
    Doucet's EM computes it), here written in theta = log gamma; a generic optimizer on choix's
    log-likelihood finds the same point."""
    rng = np.random.default_rng(12)
    names, rankings = _random_rankings(rng, 6, 40, top_k=False)
    prior = 0.7
    fit = fit_plackett_luce(rankings, prior=prior, tol=1e-13)
    index = {name: k for k, name in enumerate(names)}
    data = [tuple(index[item] for item in ranking.ranked) for ranking in rankings]

    def negative_posterior(theta: np.ndarray) -> float:
        return -(choix.log_likelihood_rankings(data, theta) + float(np.sum(prior * theta - prior * np.exp(theta))))

    direct = minimize(negative_posterior, np.zeros(len(names)), method="BFGS", options={"gtol": 1e-10})
    ours = np.array([fit.ratings()[name] for name in names])
    assert np.allclose(ours, direct.x - direct.x[index[fit.reference]], atol=1e-5)


# ----------------------------------------------------------------------------------- MM property


ranking_records = st.lists(
    st.tuples(st.permutations(range(5)), st.integers(2, 5), st.integers(0, 3), st.integers(1, 3)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(records=ranking_records)
def test_each_mm_iteration_raises_the_log_likelihood(records: list[tuple[list[int], int, int, int]]) -> None:
    """Minorize-maximize never goes down: the fit after k iterations is at least as likely as the
    fit after k - 1 (checked on random full, partial and top-k rankings)."""
    names = ["v", "w", "x", "y", "z"]
    # A cycle of two-item rankings each way guarantees the MLE exists.
    rankings = [Ranking((names[k], names[(k + 1) % 5])) for k in range(5)]
    rankings += [Ranking((names[(k + 1) % 5], names[k])) for k in range(5)]
    for order, size, unranked, weight in records:
        chosen = [names[k] for k in order[:size]]
        unranked = min(unranked, size - 1)
        rankings.append(Ranking(tuple(chosen[: size - unranked]), tuple(chosen[size - unranked :]), float(weight)))
    previous = -math.inf
    for iterations in range(1, 16):
        fit = fit_plackett_luce(rankings, max_iter=iterations, tol=1e-15)
        assert fit.log_likelihood >= previous - 1e-12 * abs(previous if math.isfinite(previous) else 0.0)
        previous = fit.log_likelihood
        if fit.converged:
            break


# ------------------------------------------------------------------------------------------ errors


def test_bad_input_is_refused() -> None:
    rankings = [Ranking(("a", "b")), Ranking(("b", "a"))]
    with pytest.raises(RankingError, match="no rankings"):
        fit_plackett_luce([])
    with pytest.raises(RankingError, match="reference 'q' is not among the 2 items"):
        fit_plackett_luce(rankings, reference="q")
    with pytest.raises(ParameterError, match="prior.*got -1"):
        fit_plackett_luce(rankings, prior=-1.0)
    with pytest.raises(ParameterError, match="tol"):
        fit_plackett_luce(rankings, tol=-1e-9)
    with pytest.raises(ParameterError, match="max_iter"):
        fit_plackett_luce(rankings, max_iter=0)
    with pytest.raises(RankingError, match="unknown item.*b"):
        fit_plackett_luce(rankings, items=["a"])
    with pytest.raises(RankingError, match="weight 0"):
        fit_plackett_luce([Ranking(("a", "b"), weight=0.0)])
    with pytest.raises(RankingError, match=r"match 1 \(a vs b\) is a tie.*ties='davidson'"):
        fit_plackett_luce([Match("a", "b", 1.0), Match("a", "b", 0.5)])
    with pytest.raises(RankingError, match=r"never lost: a\b"):
        fit_plackett_luce([Ranking(("a", "b", "c")), Ranking(("a", "c", "b"))])
    with pytest.raises(RankingError, match="never compared: z"):
        fit_plackett_luce(rankings, items=["a", "b", "z"])
    fit = fit_plackett_luce(rankings)
    with pytest.raises(RankingError, match="unknown item.*q"):
        fit.probability_first(["a", "q"])
    with pytest.raises(RankingError, match="at least one item"):
        fit.probability_first([])


def test_rankings_from_matches_keeps_winner_first_and_weight() -> None:
    rankings = rankings_from_matches([Match("a", "b", 0.0, weight=2.5), Match("c", "a", 1.0)])
    assert rankings == [Ranking(("b", "a"), weight=2.5), Ranking(("c", "a"))]


def test_a_hundred_thousand_pairwise_rankings_among_a_thousand_items() -> None:
    """The leaderboard's size: MM converges and agrees with the Bradley-Terry Newton fit."""
    rng = np.random.default_rng(1)
    n, m = 1_000, 100_000
    theta = rng.normal(0.0, 1.0, n)
    a = rng.integers(0, n, m)
    b = rng.integers(0, n - 1, m)
    b = np.where(b >= a, b + 1, b)
    a_won = rng.random(m) < 1 / (1 + np.exp(theta[b] - theta[a]))
    names = [f"i{k:04d}" for k in range(n)]
    matches = [Match(names[i], names[j], 1.0 if w else 0.0) for i, j, w in zip(a, b, a_won, strict=True)]
    pl, bt = fit_plackett_luce(matches), fit_bradley_terry(matches)
    assert pl.converged and bt.converged
    assert np.max(np.abs(np.array(pl.log_strengths) - np.array(bt.log_strengths))) < 1e-6
