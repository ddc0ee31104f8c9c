"""Peer Rank against the PRD notebook's published figures on the Vicuna80 judgments (data README),
and its rules on small hand-made judgments."""

from __future__ import annotations

import itertools

import pytest

from tests.core.ranking.pairwise_data import DATA, needs_data
from trust.core.ranking.peer_rank import agreement, majority_verdicts, majority_win_rates, peer_rank, win_rates
from trust.core.ranking.records import Judgment, read_judgments
from trust.errors import ParameterError, RankingError

# The data README: win rates of the five answer models (ties count half) and the judges' weights.
GPT4_AS_JUDGE = {"gpt4": 0.85625, "claude": 0.70859, "vicuna-13b": 0.34844, "gpt35": 0.34219, "bard": 0.24453}
HUMAN_MAJORITY = {"gpt4": 0.821875, "claude": 0.6890625, "vicuna-13b": 0.3890625, "gpt35": 0.3140625, "bard": 0.2859375}
ALL_UNWEIGHTED = {"gpt4": 0.74984, "claude": 0.66172, "vicuna-13b": 0.39344, "gpt35": 0.37547, "bard": 0.31953}
PEER_RANK = {"gpt4": 0.80202, "claude": 0.68498, "vicuna-13b": 0.37625, "gpt35": 0.34616, "bard": 0.29058}
WEIGHTS = {"gpt4": 0.4884, "claude": 0.3767, "vicuna-13b": 0.0818, "gpt35": 0.0531, "bard": 0.0}
AGREEMENT = {"gpt4": 0.6425, "gpt35": 0.6206, "claude": 0.6069, "weighted_vote": 0.6731}


@pytest.fixture(scope="module")
def vicuna() -> list[Judgment]:
    return read_judgments(DATA / "vicuna80_judgments.jsonl")


def _close(found: dict[str, float], published: dict[str, float], decimals: int) -> None:
    for name, value in published.items():
        assert found[name] == pytest.approx(value, abs=0.6 * 10**-decimals), name


@needs_data
def test_the_win_rates_of_one_judge_of_all_and_of_the_human_majority(vicuna: list[Judgment]) -> None:
    _close(win_rates(j for j in vicuna if j.judge == "gpt4"), GPT4_AS_JUDGE, 5)
    _close(win_rates(j for j in vicuna if j.judge != "human"), ALL_UNWEIGHTED, 5)
    human_votes = [j for j in vicuna if j.judge == "human"]
    assert majority_win_rates(human_votes, among=HUMAN_MAJORITY) == HUMAN_MAJORITY  # exact: multiples of 1/640
    assert "guanaco-65b" in majority_win_rates(human_votes)  # people ranked more systems than the peers answered


@needs_data
def test_peer_rank_reproduces_the_published_win_rates_weights_and_agreement(vicuna: list[Judgment]) -> None:
    result = peer_rank(vicuna)
    assert result.iterations == 5 and result.basis == "answers"
    _close(result.win_rates, PEER_RANK, 5)
    _close(result.judge_weights, WEIGHTS, 4)
    assert result.judge_weights["bard"] == 0.0 and sum(result.judge_weights.values()) == pytest.approx(1.0)
    _close(result.agreement_with_reference, AGREEMENT, 4)
    _close(result.unweighted_win_rates, ALL_UNWEIGHTED, 5)
    assert result.reference_win_rates == HUMAN_MAJORITY
    # The weighted vote agrees with people more often than any single judge does.
    best_single = max(v for k, v in result.agreement_with_reference.items() if k != "weighted_vote")
    assert result.agreement_with_reference["weighted_vote"] > best_single


@needs_data
def test_five_rounds_are_already_the_fixed_point(vicuna: list[Judgment]) -> None:
    five = peer_rank(vicuna)
    fixed = peer_rank(vicuna, tolerance=1e-12)
    assert fixed.iterations > 5
    for name in five.judge_weights:
        assert five.judge_weights[name] == pytest.approx(fixed.judge_weights[name], abs=1e-4)
    moves = [max(abs(a[k] - b[k]) for k in a) for a, b in itertools.pairwise(fixed.weight_history)]
    assert all(later <= earlier for earlier, later in itertools.pairwise(moves))  # a contraction


@needs_data
def test_weighing_judges_by_their_judgments_also_puts_gpt4_first(vicuna: list[Judgment]) -> None:
    result = peer_rank(vicuna, basis="judgments")
    assert max(result.judge_weights, key=result.judge_weights.__getitem__) == "gpt4"
    assert min(result.judge_weights.values()) == 0.0
    assert sorted(result.win_rates, key=result.win_rates.__getitem__, reverse=True)[:2] == ["gpt4", "claude"]


def _j(judge: str, first: str, second: str, score: int, question: int = 1) -> Judgment:
    return Judgment(judge, first, second, question, None, score)


def test_a_tie_counts_half_and_weights_scale_each_judge() -> None:
    judgments = [_j("x", "p", "q", 1), _j("y", "p", "q", 2), _j("x", "q", "p", 3)]
    assert win_rates(judgments) == {"p": pytest.approx(1.5 / 3), "q": pytest.approx(1.5 / 3)}
    assert win_rates(judgments, {"x": 1.0, "y": 0.0}) == {"p": 0.75, "q": 0.25}
    assert win_rates(judgments, {"x": 1.0, "y": 3.0}) == {"p": pytest.approx(1.5 / 5), "q": pytest.approx(3.5 / 5)}


def test_a_majority_is_the_sign_of_the_mean_vote() -> None:
    votes = [
        _j("h", "p", "q", 1),
        _j("h", "p", "q", 1),
        _j("h", "p", "q", 2),
        _j("h", "q", "p", 1),
        _j("h", "q", "p", 2),
    ]
    assert majority_verdicts(votes) == {(1, "p", "q"): -1, (1, "q", "p"): 0}


def test_agreement_counts_both_orientations_of_each_reference_verdict() -> None:
    judgments = [
        _j("human", "p", "q", 1),  # p better
        _j("a", "p", "q", 1),  # agrees as shown
        _j("a", "q", "p", 1),  # swapped: says q better, disagrees
        _j("b", "p", "q", 1),
        _j("b", "q", "p", 2),  # swapped: p better, agrees
    ]
    rates = agreement(judgments, {"a": 0.9, "b": 0.1})
    assert rates["a"] == 0.5 and rates["b"] == 1.0
    assert rates["weighted_vote"] == 0.5  # a outweighs b on the swapped pair


def test_peer_rank_weights_judges_by_their_own_answers() -> None:
    # p's answers win everything, r's lose everything: p's verdicts end up counting most.
    judgments = []
    for question in range(4):
        for judge in ("p", "q", "r"):
            judgments += [_j(judge, "p", "q", 1, question), _j(judge, "q", "r", 1, question)]
            judgments.append(_j(judge, "p", "r", 1 if judge != "r" else 2, question))
    result = peer_rank(judgments)
    assert result.judge_weights["r"] == 0.0 and result.judge_weights["p"] > result.judge_weights["q"]
    assert result.agreement_with_reference == {}


def test_bad_arguments_and_data_are_refused() -> None:
    judgments = [_j("x", "p", "q", 1)]
    with pytest.raises(RankingError, match="x never answered"):
        peer_rank(judgments)
    with pytest.raises(ParameterError, match="iterations"):
        peer_rank(judgments, iterations=0)
    with pytest.raises(ParameterError, match="tolerance"):
        peer_rank(judgments, tolerance=0.0)
    with pytest.raises(RankingError, match="no judgments"):
        peer_rank([_j("human", "p", "q", 1)])
    with pytest.raises(RankingError, match="reference judge"):
        agreement(judgments)
