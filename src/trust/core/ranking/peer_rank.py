"""Peer ranking with judge reputation (swarm document 4.5; Li et al. 2023, "PRD: Peer Rank and
Discussion"), and agreement with a reference (human) majority.

The judges are also contestants: every judge answered the same questions, and every judge compared
ordered pairs of answers (the Vicuna80 judgment format, `records.Judgment`). Peer Rank weighs each
judge by how its own answers rank, and ranks the answers by the judges' weighted verdicts, iterated:

1. start with equal weights 1/J;
2. win rates under the weights: an answer model's win rate is the weighted share of its comparisons it
   won, a tie counting half (`win_rates`);
3. the new weights are the judges' own win rates, min-max scaled to [0, 1] (the weakest judge gets 0)
   and normalized to sum 1;
4. repeat from 2, five times (`PEER_RANK_ITERATIONS`, the PRD notebook's count; by then the weights
   move by less than 1e-4), or until the weights move by less than `tolerance`.

This is the swarm document's "reputation-weighted consensus" with R_a (eq. 13) set by the generation
quality of eq. 10 with alpha = 0 (the judge's answers' rank), reached as a fixed point rather than by
EMA steps. The document also allows a judge's weight to come from how its judgments rank
(alpha = 1, ranking accuracy): `basis="judgments"` weighs each judge by its agreement with the current
weighted verdict of the other judges, min-max scaled the same way.

On the Vicuna80 data this reproduces the PRD notebook (data README): win rates .80202, .68498, .37625,
.34616, .29058 for gpt4, claude, vicuna-13b, gpt35, bard, with judge weights .4884, .3767, .0818,
.0531, 0.

Agreement with the human majority (`agreement`): the reference judge's votes on each ordered pair and
question are reduced to their majority, the sign of the mean of -1 (first better), 0 (tie) and +1
(second better); every reference verdict is then counted in both orientations (the pair as shown, and
swapped with its sign flipped, as the PRD notebook's "doubled" human reviews do) against the judge's
verdict on that orientation. The weighted vote is the sign of the weights' sum of the judges' signs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from trust.core.ranking.records import Judgment
from trust.errors import ParameterError, RankingError

__all__ = [
    "HUMAN",
    "PEER_RANK_ITERATIONS",
    "PeerRank",
    "agreement",
    "majority_verdicts",
    "majority_win_rates",
    "peer_rank",
    "win_rates",
]

HUMAN = "human"
"""The reference judge of the Vicuna80 data: its votes are the ground truth, never a peer's."""
PEER_RANK_ITERATIONS = 5
"""The PRD notebook's count of reweighting rounds."""
_MAX_ITERATIONS = 1_000
"""A cap on the rounds when iterating to a tolerance (the map is a contraction in practice)."""

Basis = Literal["answers", "judgments"]
Key = tuple[Any, str, str]
"""(question, first, second): one ordered pair of answers to one question."""


def win_rates(judgments: Iterable[Judgment], weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """Each answer model's share of its comparisons won (a tie counts half), every judgment weighted
    by its judge's weight (1 without `weights`; a judge missing from `weights` weighs 0)."""
    won: dict[str, float] = defaultdict(float)
    seen: dict[str, float] = defaultdict(float)
    for j in judgments:
        weight = 1.0 if weights is None else weights.get(j.judge, 0.0)
        won[j.first] += weight * j.result
        won[j.second] += weight * (1.0 - j.result)
        seen[j.first] += weight
        seen[j.second] += weight
    return {item: won[item] / seen[item] for item in sorted(seen) if seen[item] > 0}


def _min_max(values: Mapping[str, float]) -> dict[str, float]:
    """Scaled to [0, 1] by min and max, then normalized to sum 1 (equal when all are equal)."""
    names = sorted(values)
    array = np.array([values[n] for n in names], dtype=float)
    spread = float(array.max() - array.min())
    if spread <= 0.0:
        return {n: 1.0 / len(names) for n in names}
    scaled = (array - array.min()) / spread
    return {n: float(x) for n, x in zip(names, scaled / scaled.sum(), strict=True)}


def majority_verdicts(judgments: Iterable[Judgment]) -> dict[Key, int]:
    """Per (question, first, second): the sign of the mean of the votes' signs (-1 first better,
    0 tie, +1 second better); several votes of one judge on one pair are reduced the same way."""
    votes: dict[Key, list[int]] = defaultdict(list)
    for j in judgments:
        votes[(j.question_id, j.first, j.second)].append(j.sign)
    return {key: int(np.sign(np.mean(signs))) for key, signs in votes.items()}


def majority_win_rates(judgments: Iterable[Judgment], among: Iterable[str] | None = None) -> dict[str, float]:
    """Win rates over the majority verdicts (`majority_verdicts`): one outcome per ordered pair and
    question however many votes it had (the data README's "human majority" win rates, taken `among`
    the five answer models only: the human votes also rank systems no peer answered)."""
    keep = None if among is None else set(among)
    outcomes = {-1: 1, 1: 2, 0: 3}
    return win_rates(
        Judgment("majority", first, second, question, None, outcomes[sign])
        for (question, first, second), sign in majority_verdicts(judgments).items()
        if keep is None or (first in keep and second in keep)
    )


def _weighted_verdicts(by_judge: Mapping[str, Mapping[Key, int]], weights: Mapping[str, float]) -> dict[Key, int]:
    total: dict[Key, float] = defaultdict(float)
    for judge, verdicts in by_judge.items():
        for key, sign in verdicts.items():
            total[key] += weights.get(judge, 0.0) * sign
    return {key: int(np.sign(value)) for key, value in total.items()}


def _agreement_rate(verdicts: Mapping[Key, int], reference: Mapping[Key, int]) -> float | None:
    """Both orientations of every reference verdict against `verdicts` (see the module docstring)."""
    hits = total = 0
    for (question, first, second), sign in reference.items():
        for key, expected in (((question, first, second), sign), ((question, second, first), -sign)):
            if key in verdicts:
                total += 1
                hits += verdicts[key] == expected
    return hits / total if total else None


def agreement(
    judgments: Sequence[Judgment], weights: Mapping[str, float] | None = None, *, reference: str = HUMAN
) -> dict[str, float]:
    """Each judge's agreement with the reference judge's majority, and, with `weights`, the weighted
    vote's under the key "weighted_vote". Judges with no verdict on a referenced pair are left out."""
    reference_verdicts = majority_verdicts(j for j in judgments if j.judge == reference)
    if not reference_verdicts:
        raise RankingError(f"no votes of the reference judge {reference!r} to agree with")
    by_judge = _verdicts_by_judge(judgments, reference)
    rates = {judge: _agreement_rate(verdicts, reference_verdicts) for judge, verdicts in by_judge.items()}
    if weights is not None:
        rates["weighted_vote"] = _agreement_rate(_weighted_verdicts(by_judge, weights), reference_verdicts)
    return {judge: rate for judge, rate in rates.items() if rate is not None}


def _verdicts_by_judge(judgments: Iterable[Judgment], reference: str) -> dict[str, dict[Key, int]]:
    grouped: dict[str, list[Judgment]] = defaultdict(list)
    for j in judgments:
        if j.judge != reference:
            grouped[j.judge].append(j)
    return {judge: majority_verdicts(grouped[judge]) for judge in sorted(grouped)}


@dataclass(frozen=True, slots=True)
class PeerRank:
    """Peer Rank's result: the weighted win rates, the judges' weights, and how they got there."""

    win_rates: dict[str, float]
    judge_weights: dict[str, float]
    unweighted_win_rates: dict[str, float]
    iterations: int
    weight_history: tuple[dict[str, float], ...]
    """The weights after each round."""
    agreement_with_reference: dict[str, float]
    """Per judge, and "weighted_vote"; empty when the data has no reference votes."""
    reference_win_rates: dict[str, float]
    """The reference majority's win rates among the peers' answer models (empty without reference votes)."""
    basis: Basis

    def to_json(self) -> dict[str, Any]:
        def rounded(values: Mapping[str, float]) -> dict[str, float]:
            # Full floats, best first: rounding here would round twice for anyone who rounds again.
            return dict(sorted(values.items(), key=lambda kv: -kv[1]))

        return {
            "win_rates": rounded(self.win_rates),
            "judge_weights": rounded(self.judge_weights),
            "agreement_with_human_majority": rounded(self.agreement_with_reference),
            "unweighted_win_rates": rounded(self.unweighted_win_rates),
            "human_majority_win_rates": rounded(self.reference_win_rates),
            "iterations": self.iterations,
            "basis": self.basis,
        }


def peer_rank(
    judgments: Sequence[Judgment],
    *,
    iterations: int = PEER_RANK_ITERATIONS,
    tolerance: float | None = None,
    basis: Basis = "answers",
    reference: str = HUMAN,
) -> PeerRank:
    """Peer Rank over the judgments of every judge but `reference` (see the module docstring).

    `iterations` rounds are run, or, with `tolerance`, rounds until no weight moves by more than it
    (at most 1,000). Every judge must also be an answer model (its weight is its answers' rank)
    with `basis="answers"`.
    """
    if iterations < 1:
        raise ParameterError(f"iterations must be >= 1, got {iterations}")
    if tolerance is not None and not tolerance > 0:
        raise ParameterError(f"tolerance must be > 0, got {tolerance}")
    if basis not in ("answers", "judgments"):
        raise ParameterError(f"basis is 'answers' or 'judgments', got {basis!r}")
    peers = [j for j in judgments if j.judge != reference]
    if not peers:
        raise RankingError(f"no judgments by any judge other than {reference!r}")
    judges = sorted({j.judge for j in peers})
    answered = {j.first for j in peers} | {j.second for j in peers}
    if basis == "answers" and (missing := [judge for judge in judges if judge not in answered]):
        raise RankingError(
            f"judge(s) {', '.join(missing)} never answered, so their answers cannot rank them; "
            "Peer Rank needs every judge to be a contestant (or weigh judges by their judgments)"
        )
    by_judge = _verdicts_by_judge(peers, reference) if basis == "judgments" else {}
    weights = {judge: 1.0 / len(judges) for judge in judges}
    history = []
    rounds = iterations if tolerance is None else _MAX_ITERATIONS
    for _ in range(rounds):
        rates = win_rates(peers, weights)
        if basis == "answers":
            new = _min_max({judge: rates[judge] for judge in judges})
        else:
            new = _min_max(_judgment_quality(by_judge, weights))
        moved = max(abs(new[j] - weights[j]) for j in judges)
        weights = new
        history.append(new)
        if tolerance is not None and moved < tolerance:
            break
    reference_votes = [j for j in judgments if j.judge == reference]
    return PeerRank(
        win_rates=win_rates(peers, weights),
        judge_weights=weights,
        unweighted_win_rates=win_rates(peers),
        iterations=len(history),
        weight_history=tuple(history),
        agreement_with_reference=agreement(judgments, weights, reference=reference) if reference_votes else {},
        reference_win_rates=majority_win_rates(reference_votes, among=answered) if reference_votes else {},
        basis=basis,
    )


def _judgment_quality(by_judge: Mapping[str, Mapping[Key, int]], weights: Mapping[str, float]) -> dict[str, float]:
    """Each judge's agreement with the weighted verdict of the other judges (leave-one-out, so a
    heavy judge does not agree with itself)."""
    quality = {}
    for judge, verdicts in by_judge.items():
        others = {k: v for k, v in by_judge.items() if k != judge}
        consensus = _weighted_verdicts(others, weights)
        shared = [key for key in verdicts if key in consensus]
        quality[judge] = sum(verdicts[k] == consensus[k] for k in shared) / len(shared) if shared else 0.0
    return quality
