"""Which four models answer a question: the arena document's Part I (the auto-router).

- 1.1, `classify_intent`: a regex and keyword classifier over five domains (code, math, creative,
  factual, reasoning), table `INTENT_TRIGGERS`.
- 1.2, `ucb_score`: UCB(m) = gamma_m + c sqrt(ln N / n_m), gamma_m the model's Plackett-Luce strength,
  N the total number of battles, n_m the model's battles, c the exploration constant.
- 1.2, `select_models`: the four-slot stratified selection, every model from a different provider:
    slot 1, the leader: the model of highest strength (the current Plackett-Luce #1);
    slot 2, the challenger: the highest UCB among the rest;
    slot 3, the gray zone: a uniformly random model with fewer impressions than the threshold;
    slot 4, the upset: with probability 0.3 a uniformly random model of the bottom tier, otherwise a
      uniformly random remaining model.

Where the document is vague, and what we chose:

- The classifier's triggers are the table's words plus their obvious inflections (bug/bugs,
  calculate/calculation, story/stories, explain/explained, analyze/analysis, ...), matched on word
  boundaries, case-insensitively. A domain's score is its number of trigger hits in the question; the
  highest score wins, ties go to the domain listed first (code, math, creative, factual, reasoning);
  no hit at all gives "general".
- c: the document names "the exploration constant" without a value. `DEFAULT_EXPLORATION` = sqrt(2),
  UCB1's constant (Auer et al. 2002), which assumes strengths on a [0, 1] scale, as Plackett-Luce
  strengths normalized to sum to 1 are; pass another c for strengths on another scale. A model with
  n_m = 0 has UCB = +infinity: unseen models are explored first.
- N: the total number of battles. When not given it is sum(n_m) / 4 (each battle seats 4 models), and
  at least the largest n_m (n_m <= N always holds for a real count).
- The impression threshold of slot 3 has no value in the document: `DEFAULT_IMPRESSION_THRESHOLD` = 50.
- "Bottom tier" (slot 4): the bottom quartile by strength, the ceil(n / 4) weakest models
  (`BOTTOM_TIER_FRACTION`), at least one; ties broken by model id.
- Distinct providers: a candidate whose provider already holds a slot is skipped. When a slot has no
  candidate left (nobody in the gray zone, no free bottom-tier model), it is filled with the next UCB
  choice and the pick records why (`SlotPick.fallback`). With fewer than 4 providers no selection
  exists: `RankingError`.
- Ties: the leader and the UCB choice break ties by higher strength, then model id; random choices
  draw from the candidates sorted by model id, so a seeded generator gives the same selection.
- Models missing from `battles` or `impressions` have 0 of them (a model never shown); every model
  needs a strength.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import numpy as np

from trust.core.theory.validate import integer_at_least, positive, probability, real
from trust.errors import ParameterError, RankingError

__all__ = [
    "ARENA_SLOTS",
    "BOTTOM_TIER_FRACTION",
    "DEFAULT_EXPLORATION",
    "DEFAULT_IMPRESSION_THRESHOLD",
    "GENERAL_DOMAIN",
    "INTENT_TRIGGERS",
    "UPSET_PROBABILITY",
    "Intent",
    "Selection",
    "SlotPick",
    "classify_intent",
    "select_models",
    "ucb_score",
]

ARENA_SLOTS = 4
"""Part I: every question goes to 4 models from 4 different providers."""

UPSET_PROBABILITY = 0.3
"""1.2, slot 4: the "30% upset" chance of drawing from the bottom tier."""

BOTTOM_TIER_FRACTION = 0.25
"""Slot 4's bottom tier: the weakest quarter of the models (our reading of "bottom tier")."""

DEFAULT_EXPLORATION = math.sqrt(2.0)
"""UCB's c: UCB1's sqrt(2), for strengths on a [0, 1] scale (the document gives no value)."""

DEFAULT_IMPRESSION_THRESHOLD = 50
"""Slot 3: a model shown fewer times than this is in the gray zone (the document gives no value)."""

GENERAL_DOMAIN = "general"
"""The intent of a question that no trigger matches."""

INTENT_TRIGGERS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "code": (
            r"code[sd]?",
            r"coding",
            r"programming",
            r"programs?",
            r"programmers?",
            r"bugs?",
            r"debug(?:s|ged|ging)?",
            r"apis?",
            r"functions?",
            r"implementations?",
            r"implement(?:s|ed|ing)?",
        ),
        "math": (
            r"calculat(?:e|es|ed|ing|ion|ions)",
            r"equations?",
            r"proofs?",
            r"prove[sdn]?",
            r"integrals?",
            r"integrat(?:e|es|ed|ing|ion)",
            r"probabilit(?:y|ies)",
        ),
        "creative": (
            r"stor(?:y|ies)",
            r"poetry",
            r"poems?",
            r"creative(?:ly)?",
            r"continuations?",
            r"novels?",
        ),
        "factual": (
            r"what\s+(?:is|are|was|were)",
            r"what['\u2019]s",
            r"explain(?:s|ed|ing)?",
            r"explanations?",
            r"history",
            r"historical(?:ly)?",
            r"science",
            r"scientific",
            r"principles?",
        ),
        "reasoning": (
            r"analy(?:sis|ses|ze|zes|zed|zing|se|sed|sing)",
            r"comparisons?",
            r"compar(?:e|es|ed|ing)",
            r"logic(?:al|ally)?",
            r"reasoning",
            r"arguments?",
        ),
    }
)
"""1.1's table with inflections, in tie-breaking order (regular expressions, matched as whole words)."""

_INTENT_PATTERNS = {
    domain: re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE) for domain, words in INTENT_TRIGGERS.items()
}


@dataclass(frozen=True, slots=True)
class Intent:
    """A question's domain and every domain's number of trigger hits."""

    domain: str
    scores: Mapping[str, int]


def classify_intent(question: str) -> Intent:
    """1.1: the domain with the most trigger hits (ties: table order), "general" when none hits."""
    scores = {domain: len(pattern.findall(question)) for domain, pattern in _INTENT_PATTERNS.items()}
    best = max(scores.values())
    domain = next(name for name, score in scores.items() if score == best) if best > 0 else GENERAL_DOMAIN
    return Intent(domain=domain, scores=MappingProxyType(scores))


def ucb_score(strength: float, total_battles: float, battles: int, exploration: float = DEFAULT_EXPLORATION) -> float:
    """1.2: UCB(m) = gamma_m + c sqrt(ln N / n_m); +infinity for a model with no battles."""
    strength = real("strength", strength)
    battles = integer_at_least("battles", battles, 0)
    exploration = real("exploration", exploration)
    if exploration < 0:
        raise ParameterError(f"exploration = {exploration}: the exploration constant c must be >= 0")
    if battles == 0:
        return math.inf
    total = real("total_battles", total_battles)
    if total < battles:
        raise ParameterError(f"total_battles = {total} is below the model's {battles} battles: N counts every battle")
    return strength + exploration * math.sqrt(math.log(total) / battles)


SlotRule = Literal["leader", "ucb", "gray_zone", "upset", "random"]


@dataclass(frozen=True, slots=True)
class SlotPick:
    """One slot's model: `rule` is the rule that picked it; `fallback` says why the slot's own rule
    had no candidate (the pick is then the next UCB choice, `rule` "ucb"), None when it had one."""

    slot: int
    model: str
    provider: str
    rule: SlotRule
    fallback: str | None = None


@dataclass(frozen=True, slots=True)
class Selection:
    """The four picks in slot order, and whether slot 4's 30% upset draw came up."""

    picks: tuple[SlotPick, ...]
    upset_drawn: bool

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(pick.model for pick in self.picks)


Rng = random.Random | np.random.Generator


def _index(rng: Rng, n: int) -> int:
    return rng.randrange(n) if isinstance(rng, random.Random) else int(rng.integers(n))


def _count(name: str, counts: Mapping[str, int], model: str) -> int:
    return integer_at_least(f"{name} of {model!r}", counts.get(model, 0), 0)


def select_models(
    models: Mapping[str, str],
    strengths: Mapping[str, float],
    battles: Mapping[str, int],
    impressions: Mapping[str, int],
    rng: Rng,
    *,
    total_battles: float | None = None,
    exploration: float = DEFAULT_EXPLORATION,
    impression_threshold: int = DEFAULT_IMPRESSION_THRESHOLD,
    upset_probability: float = UPSET_PROBABILITY,
    bottom_fraction: float = BOTTOM_TIER_FRACTION,
) -> Selection:
    """1.2's four slots over `models` (model -> provider), with the Plackett-Luce `strengths`, each
    model's `battles` and `impressions`, and a seeded `rng` (random.Random or numpy Generator)."""
    names = sorted(models)
    providers = {models[name] for name in names}
    if len(providers) < ARENA_SLOTS:
        raise RankingError(
            f"{len(names)} model(s) from {len(providers)} provider(s) ({', '.join(sorted(providers))}): "
            f"the arena needs models from at least {ARENA_SLOTS} different providers"
        )
    missing = [name for name in names if name not in strengths]
    if missing:
        raise RankingError(f"no Plackett-Luce strength for model(s) {', '.join(map(repr, missing))}")
    strength = {name: real(f"strength of {name!r}", strengths[name]) for name in names}
    played = {name: _count("battles", battles, name) for name in names}
    shown = {name: _count("impressions", impressions, name) for name in names}
    threshold = integer_at_least("impression_threshold", impression_threshold, 0)
    upset_probability = probability("upset_probability", upset_probability)
    bottom_fraction = positive("bottom_fraction", bottom_fraction)
    if bottom_fraction > 1:
        raise ParameterError(f"bottom_fraction = {bottom_fraction}: a share of the models, in (0, 1]")
    if total_battles is None:
        total = max(sum(played.values()) / ARENA_SLOTS, max(played.values()))
    else:
        total = real("total_battles", total_battles)
    ucb = {name: ucb_score(strength[name], total, played[name], exploration) for name in names}

    picks: list[SlotPick] = []

    def free(candidates: list[str]) -> list[str]:
        taken_models = {pick.model for pick in picks}
        taken_providers = {pick.provider for pick in picks}
        return [name for name in candidates if name not in taken_models and models[name] not in taken_providers]

    def best_ucb() -> str:
        return min(free(names), key=lambda name: (-ucb[name], -strength[name], name))

    def take(slot: int, model: str, rule: SlotRule, fallback: str | None = None) -> None:
        picks.append(SlotPick(slot=slot, model=model, provider=models[model], rule=rule, fallback=fallback))

    def take_random(slot: int, candidates: list[str], rule: SlotRule, empty: str) -> None:
        pool = free(candidates)
        if pool:
            take(slot, pool[_index(rng, len(pool))], rule)
        else:
            take(slot, best_ucb(), "ucb", fallback=empty)

    take(1, min(names, key=lambda name: (-strength[name], name)), "leader")
    take(2, best_ucb(), "ucb")
    take_random(
        3,
        [name for name in names if shown[name] < threshold],
        "gray_zone",
        f"no model with fewer than {threshold} impressions from a provider not yet chosen",
    )
    upset = float(rng.random()) < upset_probability
    if upset:
        tier = math.ceil(bottom_fraction * len(names))
        bottom = sorted(names, key=lambda name: (strength[name], name))[:tier]
        take_random(
            4,
            sorted(bottom),
            "upset",
            f"no bottom-tier model (the {tier} weakest) from a provider not yet chosen",
        )
    else:
        take_random(4, names, "random", "no model left from a provider not yet chosen")
    return Selection(picks=tuple(picks), upset_drawn=upset)
