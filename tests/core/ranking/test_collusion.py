"""Collusion detection (swarm document 5.3.2, eq. 17-19): hand calculations, a planted colluding pair
among random rankers, and the round weights' closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.core.ranking.collusion import (
    DEFAULT_PENALTY,
    TAU_COLLUSION_FACTOR,
    adjusted_weight,
    collusion_stats,
    expected_rate,
    round_weight,
    round_weights,
    top_half_size,
)
from trust.errors import ParameterError, RankingError

Z = 4.5


def test_top_half_of_odd_and_even_rankings() -> None:
    assert [top_half_size(n) for n in (1, 2, 3, 4, 5, 9)] == [1, 1, 2, 2, 3, 5]


@pytest.mark.parametrize("n", [4, 6, 10, 50])
def test_the_documents_expectation_is_exact_for_an_even_number_of_participants(n: int) -> None:
    assert expected_rate(n) == pytest.approx(n / (2 * (n - 1)))
    assert top_half_size(n - 1) / (n - 1) == pytest.approx(expected_rate(n))


def test_eq17_by_hand() -> None:
    rounds = [
        {"a": ["b", "c", "d"], "b": ["a", "d", "c"], "c": ["d", "a", "b"]},  # top half: 2 of 3
        {"a": ["c", "b"], "b": ["c", "a"]},  # top half: 1 of 2
    ]
    stats = collusion_stats(rounds)
    assert stats.nodes == ("a", "b", "c", "d")
    assert stats.rate("a", "b") == pytest.approx(1 / 2)  # top half in round 1, not in round 2
    assert stats.rate("a", "c") == pytest.approx(2 / 2)
    assert stats.rate("b", "a") == pytest.approx(1 / 2)
    assert stats.rate("c", "a") == pytest.approx(1.0)
    assert stats.rate("b", "c") == pytest.approx(1 / 2)
    assert math.isnan(stats.rate("d", "a"))  # d never ranked
    assert math.isnan(stats.rate("c", "c"))
    expected = stats.expected[stats.index("a"), stats.index("b")]
    assert expected == pytest.approx((2 / 3 + 1 / 2) / 2)  # the two rounds' top-half shares
    assert stats.joint[stats.index("a"), stats.index("d")] == 1


def test_eq17_refuses_self_rankings_and_repeats() -> None:
    with pytest.raises(RankingError, match="round 2: node 'a' ranked its own response"):
        collusion_stats([{"a": ["b", "c"]}, {"a": ["a", "b"]}])
    with pytest.raises(RankingError, match="ranks 'b' twice"):
        collusion_stats([{"a": ["b", "c", "b"]}])
    with pytest.raises(RankingError, match="no rankings"):
        collusion_stats([{"a": []}])
    with pytest.raises(RankingError, match="'zz'"):
        collusion_stats([{"a": ["b", "c"]}]).index("zz")


def _rounds_with_a_colluding_pair(
    rng: np.random.Generator, nodes: list[str], rounds: int
) -> list[dict[str, list[str]]]:
    """Every node ranks the others at random, except 'n0' and 'n1', who always put each other first."""
    out = []
    for _ in range(rounds):
        rankings = {}
        for node in nodes:
            others = [other for other in nodes if other != node]
            order = [others[i] for i in rng.permutation(len(others))]
            partner = {"n0": "n1", "n1": "n0"}.get(node)
            if partner is not None:
                order.remove(partner)
                order.insert(0, partner)
            rankings[node] = order
        out.append(rankings)
    return out


def test_a_planted_colluding_pair_is_found_and_down_weighted() -> None:
    nodes = [f"n{i}" for i in range(10)]
    rounds = 300
    stats = collusion_stats(_rounds_with_a_colluding_pair(np.random.default_rng(20240502), nodes, rounds))
    e = expected_rate(10)  # 10 participants, each ranking 9: 5/9 exactly
    assert np.allclose(stats.expected[~np.eye(10, dtype=bool)], e)
    assert stats.rate("n0", "n1") == 1.0 and stats.rate("n1", "n0") == 1.0

    honest = [i for i in range(10) if nodes[i] not in ("n0", "n1")]
    rates = stats.rates
    bound = Z * math.sqrt(e * (1 - e) / rounds)
    for i in honest:
        for j in range(10):
            if i != j:
                assert abs(rates[i, j] - e) <= bound, (nodes[i], nodes[j], rates[i, j])
    honest_rates = [rates[i, j] for i in honest for j in range(10) if i != j]
    assert abs(np.mean(honest_rates) - e) <= Z * math.sqrt(e * (1 - e) / (rounds * len(honest_rates)))

    weights = {node: 1.0 for node in nodes}
    adjusted = stats.adjusted_weights(weights)
    i0, i1 = stats.index("n0"), stats.index("n1")
    cut = math.exp(-DEFAULT_PENALTY * (1.0 - TAU_COLLUSION_FACTOR * e))  # e^-5: about 0.7% of the weight
    assert adjusted[i0, i1] == pytest.approx(cut) and adjusted[i1, i0] == pytest.approx(cut)
    honest_weights = [adjusted[i, j] for i in honest for j in range(10) if i != j]
    assert min(honest_weights) > 0.3 and np.mean(honest_weights) > 0.95


def test_matrix_and_scalar_eq18_agree() -> None:
    rng = np.random.default_rng(3)
    nodes = [f"n{i}" for i in range(6)]
    stats = collusion_stats(_rounds_with_a_colluding_pair(rng, nodes, 40))
    weights = {node: float(w) for node, w in zip(nodes, rng.uniform(0.5, 2.0, 6), strict=True)}
    matrix = stats.adjusted_weights(weights, penalty=12.0, tau_factor=1.1)
    for i, ranker in enumerate(nodes):
        for j, author in enumerate(nodes):
            if i != j:
                rate, expected = stats.rate(ranker, author), float(stats.expected[i, j])
                assert matrix[i, j] == pytest.approx(adjusted_weight(weights[author], rate, expected, 12.0, 1.1))
    with pytest.raises(RankingError, match="'n5'"):
        stats.adjusted_weights({node: 1.0 for node in nodes[:5]})


def test_eq18_by_hand() -> None:
    assert adjusted_weight(2.0, 0.9, 0.5) == pytest.approx(2.0 * math.exp(-15 * (0.9 - 0.6)))
    assert adjusted_weight(2.0, 0.55, 0.5) == 2.0  # below tau: no penalty
    assert adjusted_weight(1.0, 1.0, 0.5, penalty=0.0) == 1.0
    with pytest.raises(ParameterError):
        adjusted_weight(1.0, 1.5, 0.5)
    with pytest.raises(ParameterError, match="penalty"):
        adjusted_weight(1.0, 0.9, 0.5, penalty=-1.0)


def test_eq19_by_hand() -> None:
    assert round_weight(10, 10) == 1.0
    assert round_weight(5, 10) == pytest.approx(math.exp(-1.5 * math.log(2)))
    assert round_weight(20, 10) == pytest.approx(round_weight(5, 10))  # too many and too few alike
    assert round_weights([5, 10, 20], 10).tolist() == pytest.approx([0.5**1.5, 1.0, 0.5**1.5])
    with pytest.raises(ParameterError, match="n_actual"):
        round_weight(0, 10)
    with pytest.raises(ParameterError):
        round_weights([3, -1], 10)


@given(
    st.floats(min_value=0.5, max_value=1e4),
    st.floats(min_value=0.5, max_value=1e4),
    st.floats(min_value=0.0, max_value=3.0),
)
def test_eq19_is_the_ratio_of_the_smaller_to_the_larger_count(n: float, n_bar: float, gamma: float) -> None:
    assert round_weight(n, n_bar, gamma) == pytest.approx((min(n, n_bar) / max(n, n_bar)) ** gamma, rel=1e-9)
