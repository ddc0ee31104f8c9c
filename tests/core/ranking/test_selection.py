"""Model selection (arena document Part I): the intent classifier, UCB, and the four-slot rules with
distinct providers, fallbacks and the 30% upset rate."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from trust.core.ranking.selection import (
    GENERAL_DOMAIN,
    UPSET_PROBABILITY,
    classify_intent,
    select_models,
    ucb_score,
)
from trust.errors import ParameterError, RankingError


@pytest.mark.parametrize(
    ("question", "domain"),
    [
        ("Why does my Python function raise a KeyError? I think it's a bug in how I call the API.", "code"),
        ("How do I implement a trie in Rust?", "code"),
        ("Calculate the integral of x^2 sin(x) from 0 to pi.", "math"),
        ("What is the probability of two sixes in three rolls?", "math"),  # math 1, factual 1: table order
        ("Prove that the square root of 2 is irrational.", "math"),
        ("Write a short story about a lighthouse keeper, in the voice of a noir novel.", "creative"),
        ("Compose poetry about autumn rain.", "creative"),
        ("What is the principle behind a heat pump?", "factual"),
        ("Explain the history of the printing press.", "factual"),
        ("Give an analysis of both arguments and a comparison of their logic.", "reasoning"),
        ("Compare the reasoning of the two court rulings.", "reasoning"),
        ("Hello! How are you today?", GENERAL_DOMAIN),
        ("The decoder in my storyboard app is probably fine.", GENERAL_DOMAIN),  # no whole-word trigger
    ],
)
def test_classify_intent(question: str, domain: str) -> None:
    assert classify_intent(question).domain == domain


def test_intent_scores_count_hits() -> None:
    intent = classify_intent("Explain this function: the bug, the bugs, the BUG.")
    assert intent.scores["code"] == 4 and intent.scores["factual"] == 1
    assert intent.domain == "code"
    tie = classify_intent("Explain this function.")
    assert tie.scores["code"] == tie.scores["factual"] == 1 and tie.domain == "code"


def test_ucb_by_hand() -> None:
    assert ucb_score(0.4, 100, 10) == pytest.approx(0.4 + math.sqrt(2) * math.sqrt(math.log(100) / 10))
    assert ucb_score(0.4, 100, 10, exploration=0.0) == 0.4
    assert ucb_score(0.0, 0, 0) == math.inf
    assert ucb_score(0.9, 1, 1) == 0.9  # ln 1 = 0
    with pytest.raises(ParameterError, match="below the model's 12 battles"):
        ucb_score(0.4, 10, 12)
    with pytest.raises(ParameterError, match="exploration"):
        ucb_score(0.4, 10, 2, exploration=-1.0)


# Eight models from eight providers; strengths as Plackett-Luce gammas that sum to 1.
MODELS = {f"m{i}": f"p{i}" for i in range(8)}
STRENGTHS = {"m0": 0.30, "m1": 0.20, "m2": 0.15, "m3": 0.12, "m4": 0.10, "m5": 0.07, "m6": 0.04, "m7": 0.02}
BATTLES = {"m0": 400, "m1": 380, "m2": 20, "m3": 300, "m4": 250, "m5": 200, "m6": 150, "m7": 100}
IMPRESSIONS = {"m0": 900, "m1": 850, "m2": 60, "m3": 700, "m4": 10, "m5": 600, "m6": 20, "m7": 500}


def _ucb(model: str, total: float) -> float:
    return ucb_score(STRENGTHS[model], total, BATTLES[model])


def test_the_four_slot_rules() -> None:
    total = sum(BATTLES.values()) / 4
    for seed in range(200):
        selection = select_models(MODELS, STRENGTHS, BATTLES, IMPRESSIONS, random.Random(seed))
        leader, challenger, gray, fourth = selection.picks
        assert (leader.slot, leader.model, leader.rule) == (1, "m0", "leader")
        best = max((m for m in MODELS if m != "m0"), key=lambda m: _ucb(m, total))
        assert (challenger.model, challenger.rule) == (best, "ucb") == ("m2", "ucb")  # few battles: high bonus
        assert gray.rule == "gray_zone" and IMPRESSIONS[gray.model] < 50 and gray.model in {"m4", "m6"}
        if selection.upset_drawn:
            assert fourth.rule == "upset" and fourth.model in {"m6", "m7"}  # the bottom quartile
        else:
            assert fourth.rule == "random"
        assert len(set(selection.models)) == 4 and all(pick.fallback is None for pick in selection.picks)


def test_providers_are_distinct() -> None:
    # Two providers own most of the models; the leader's provider also has the next-best UCB.
    models = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B", "c1": "C", "d1": "D", "d2": "D"}
    strengths = {"a1": 0.4, "a2": 0.3, "a3": 0.01, "b1": 0.1, "b2": 0.05, "c1": 0.08, "d1": 0.03, "d2": 0.03}
    battles = {"a1": 100, "a2": 1, "a3": 0, "b1": 50, "b2": 40, "c1": 30, "d1": 20, "d2": 10}
    impressions = {"a2": 3, "a3": 0}
    for seed in range(300):
        selection = select_models(models, strengths, battles, impressions, np.random.default_rng(seed))
        providers = [pick.provider for pick in selection.picks]
        assert sorted(providers) == ["A", "B", "C", "D"]
        assert selection.picks[0].model == "a1"
        assert selection.picks[1].model not in {"a2", "a3"}  # their UCB is highest, their provider taken


def test_ucb_explores_unseen_models_first() -> None:
    battles = {**BATTLES, "m7": 0, "m5": 0}
    selection = select_models(MODELS, STRENGTHS, battles, IMPRESSIONS, random.Random(1))
    assert selection.picks[1].model == "m5"  # both unseen (UCB = inf): the stronger one first


def test_empty_gray_zone_falls_back_to_the_next_ucb_choice() -> None:
    crowded = {model: 1000 for model in MODELS}
    selection = select_models(MODELS, STRENGTHS, BATTLES, crowded, random.Random(5))
    gray = selection.picks[2]
    assert gray.rule == "ucb" and gray.fallback is not None and "fewer than 50 impressions" in gray.fallback
    total = sum(BATTLES.values()) / 4
    rest = [m for m in MODELS if m not in {"m0", "m2"}]
    assert gray.model == max(rest, key=lambda m: _ucb(m, total))


def test_bottom_tier_taken_by_a_provider_falls_back() -> None:
    # The two weakest models share the leader's provider: an upset has no free bottom-tier candidate.
    models = {**MODELS, "m6": "p0", "m7": "p0"}
    seen_upset = False
    for seed in range(60):
        selection = select_models(models, STRENGTHS, BATTLES, IMPRESSIONS, random.Random(seed))
        fourth = selection.picks[3]
        if selection.upset_drawn:
            seen_upset = True
            assert fourth.rule == "ucb" and fourth.fallback is not None and "bottom-tier" in fourth.fallback
        assert fourth.provider != "p0"
    assert seen_upset


@pytest.mark.parametrize("make_rng", [random.Random, np.random.default_rng])
def test_the_upset_rate_is_thirty_percent(make_rng: type) -> None:
    draws = 4000
    upsets = sum(
        select_models(MODELS, STRENGTHS, BATTLES, IMPRESSIONS, make_rng(seed)).upset_drawn for seed in range(draws)
    )
    sigma = math.sqrt(UPSET_PROBABILITY * (1 - UPSET_PROBABILITY) / draws)
    assert abs(upsets / draws - UPSET_PROBABILITY) <= 5 * sigma


def test_the_random_slots_spread_over_their_candidates() -> None:
    fourth = [
        select_models(MODELS, STRENGTHS, BATTLES, IMPRESSIONS, random.Random(seed)).picks[3].model
        for seed in range(3000)
    ]
    assert {"m6", "m7"} <= set(fourth)  # upsets reach both weakest
    assert len(set(fourth)) >= 5  # non-upset draws reach the other remaining models


def test_selection_is_reproducible_from_the_seed() -> None:
    first = select_models(MODELS, STRENGTHS, BATTLES, IMPRESSIONS, random.Random(42))
    assert first == select_models(MODELS, STRENGTHS, BATTLES, IMPRESSIONS, random.Random(42))


def test_refusals() -> None:
    three = {"a": "A", "b": "B", "c": "C", "d": "C"}
    with pytest.raises(RankingError, match="3 provider"):
        select_models(three, dict.fromkeys(three, 0.1), {}, {}, random.Random(0))
    with pytest.raises(RankingError, match="'m7'"):
        select_models(MODELS, {m: s for m, s in STRENGTHS.items() if m != "m7"}, BATTLES, IMPRESSIONS, random.Random(0))
    with pytest.raises(ParameterError, match="battles of 'm1'"):
        select_models(MODELS, STRENGTHS, {**BATTLES, "m1": -1}, IMPRESSIONS, random.Random(0))
    with pytest.raises(ParameterError, match="upset_probability"):
        select_models(MODELS, STRENGTHS, BATTLES, IMPRESSIONS, random.Random(0), upset_probability=1.3)
