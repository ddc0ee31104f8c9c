"""The arena's cross-validation score (the arena document, Part II, "Four-Dimensional Weighted
Consensus"): every claim extracted from the four models' answers gets

    FinalScore(claim) = W_rank x W_consensus x W_user x W_evidence

and the refined answer is built from the highest-scoring claims; a claim scoring 0 is removed.

- W_rank (2.1, `rank_weight`): the claim's model's Plackett-Luce score mapped through a sigmoid to
  (0.5, 2.0): W_rank = 0.5 + 1.5 sigma((score - 1000) / 200).
- W_consensus (2.2, `consensus_weight`): 1 + 0.5 (overlap - 2) when 3 or more models mention the
  claim independently, 1 otherwise.
- W_user (2.3, `user_weight`): the user's vote and its tags (`UserTag`, table `USER_TAG_EFFECTS`).
- W_evidence (2.4, `evidence_level`, `evidence_weight`): grounded 1.0, plain 0.5, vague 0.0.
- `cross_validate` applies the four to a list of claims and returns them scored, sorted, with the
  removed ones apart.

Where the document is vague or wrong, and what we chose:

- 2.1 prints "W_rank(m) = 0.5 + sigma(score_m - 1000) / 200) x 1.5", with an unbalanced parenthesis,
  "mapped to [0.5, 2.0]", "Rank #1 ~ 1.5, bottom ~ 0.8". The evident intent is 0.5 + 1.5
  sigma((score - 1000) / 200): it spans (0.5, 2.0), is 1.25 at 1000 and rises with the score. (Read
  literally as 0.5 + 1.5 sigma(score - 1000) / 200, it would stay within [0.5, 0.5075].) "#1 ~ 1.5"
  and "bottom ~ 0.8" are examples of what a leaderboard gives, not constants: they are the weights of
  the scores 1000 + 200 logit(2/3) ~ 1138.6 and 1000 + 200 logit(0.2) ~ 722.7.
- 2.3's tags say which part of an answer they touch ("winner unique info", "winner code blocks",
  "winner logic chain", "winner structure", "loser info", ...). Each claim carries a `ClaimKind`
  (info, code, logic, structure) and the tags map to kinds as follows:

      factually rigorous / no hallucination   winner  info       x 2.0
      code / format zero errors               winner  code       x 2.0
      extremely strong logic                  winner  logic      x 1.5
      excellent instruction following         winner  structure  x 1.5
      severe factual hallucination            loser   info       x 0.0
      over-aligned / verbose                  loser   all kinds  x 0.3
      logic break / infinite loop             loser   logic      x 0.2
      format crash / broken code              loser   code       x 0.3

  A winner tag boosts every claim of its kind from the winner's answer ("unique" in the document's
  "winner unique info" is not a separate test: a claim the others share already gets W_consensus).
  Loser tags are given per losing model (the user may flag one loser and not another). Several tags
  on one claim multiply; a claim of a model the user neither chose nor tagged has W_user = 1.
- 2.4 gives no numbers ("highest priority" for exact values, API parameters or agreement with the
  search context; vague claims and uncited theories "forcibly removed"). We use three levels,
  `EVIDENCE_GROUNDED` = 1.0, `EVIDENCE_PLAIN` = 0.5 and `EVIDENCE_VAGUE` = 0.0, and a rule-based
  classifier, in this order:
    1. with a search context: a claim on the context's topic (at least `CONTEXT_TOPIC_MIN` of its
       content words appear there) whose numbers all appear there too, or, without numbers, whose
       content words nearly all appear there (`CONTEXT_ALIGNED_MIN`), is aligned: grounded;
    2. a hedge ("might", "possibly", "some say", "reportedly", "it is believed", "I think", ...) makes
       the claim an uncited theory: vague (removed);
    3. a claim on the context's topic whose numbers the context does not contain is not backed by it:
       plain (an exact value that disagrees with the search is not "highest priority");
    4. exact values (a number with a unit, a decimal or version, a figure of 2+ digits, an amount of
       money) or code identifiers and API parameters (`backticks`, call(), module.attr, snake_case,
       camelCase, --flags, key=value): grounded;
    5. otherwise: plain.
  It reads surface features only: it cannot tell a true value from a made-up one without a context,
  nor a contradiction that reuses the context's numbers.
- overlap counts the models that mention the claim, its own included, so it is at least 1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Literal

from scipy import special

from trust.core.theory.validate import integer_at_least, real
from trust.errors import ParameterError, RankingError

__all__ = [
    "CONSENSUS_MIN_OVERLAP",
    "CONSENSUS_STEP",
    "CONTEXT_ALIGNED_MIN",
    "CONTEXT_TOPIC_MIN",
    "EVIDENCE_GROUNDED",
    "EVIDENCE_PLAIN",
    "EVIDENCE_VAGUE",
    "RANK_SCORE_CENTER",
    "RANK_SCORE_SCALE",
    "RANK_WEIGHT_FLOOR",
    "RANK_WEIGHT_SPAN",
    "USER_TAG_EFFECTS",
    "Claim",
    "ClaimKind",
    "CrossValidation",
    "EvidenceLevel",
    "ScoredClaim",
    "TagEffect",
    "UserSignal",
    "UserTag",
    "consensus_weight",
    "cross_validate",
    "evidence_level",
    "evidence_weight",
    "rank_weight",
    "user_weight",
]

RANK_WEIGHT_FLOOR = 0.5
"""2.1: W_rank's lower end (a model at the very bottom of the leaderboard)."""

RANK_WEIGHT_SPAN = 1.5
"""2.1: the sigmoid's multiplier; W_rank's upper end is RANK_WEIGHT_FLOOR + RANK_WEIGHT_SPAN = 2.0."""

RANK_SCORE_CENTER = 1000.0
"""2.1: the score at which W_rank is the middle of its range (1.25)."""

RANK_SCORE_SCALE = 200.0
"""2.1: score points per unit of the sigmoid's argument."""

CONSENSUS_MIN_OVERLAP = 3
"""2.2: a claim mentioned independently by this many models or more is boosted."""

CONSENSUS_STEP = 0.5
"""2.2: the boost per model beyond two: 1.5 for 3 models, 2.0 for 4."""

EVIDENCE_GROUNDED = 1.0
"""2.4 (our value): exact values, API parameters, or agreement with the search context."""

EVIDENCE_PLAIN = 0.5
"""2.4 (our value): a plain statement, neither grounded nor hedged."""

EVIDENCE_VAGUE = 0.0
"""2.4: vague claims and uncited theories are removed."""

CONTEXT_TOPIC_MIN = 0.5
"""Share of a claim's content words found in the search context for the claim to be on its topic."""

CONTEXT_ALIGNED_MIN = 0.8
"""Share of a claim's content words found in the search context for a claim without numbers to be
aligned with it."""


class ClaimKind(StrEnum):
    """Which part of an answer a claim is, as 2.3's tags name them."""

    INFO = "info"
    CODE = "code"
    LOGIC = "logic"
    STRUCTURE = "structure"


class UserTag(StrEnum):
    """2.3's tags: four the user gives the winner, four a loser."""

    FACTUALLY_RIGOROUS = "factually_rigorous"
    CODE_ZERO_ERRORS = "code_zero_errors"
    STRONG_LOGIC = "strong_logic"
    INSTRUCTION_FOLLOWING = "instruction_following"
    SEVERE_HALLUCINATION = "severe_hallucination"
    OVER_ALIGNED = "over_aligned"
    LOGIC_BREAK = "logic_break"
    FORMAT_CRASH = "format_crash"


@dataclass(frozen=True, slots=True)
class TagEffect:
    """One row of 2.3's table: whose claims (`side`), of which kinds, and the multiplier."""

    side: Literal["winner", "loser"]
    modifier: float
    kinds: frozenset[ClaimKind]


_ALL_KINDS = frozenset(ClaimKind)

USER_TAG_EFFECTS: Mapping[UserTag, TagEffect] = MappingProxyType(
    {
        UserTag.FACTUALLY_RIGOROUS: TagEffect("winner", 2.0, frozenset({ClaimKind.INFO})),
        UserTag.CODE_ZERO_ERRORS: TagEffect("winner", 2.0, frozenset({ClaimKind.CODE})),
        UserTag.STRONG_LOGIC: TagEffect("winner", 1.5, frozenset({ClaimKind.LOGIC})),
        UserTag.INSTRUCTION_FOLLOWING: TagEffect("winner", 1.5, frozenset({ClaimKind.STRUCTURE})),
        UserTag.SEVERE_HALLUCINATION: TagEffect("loser", 0.0, frozenset({ClaimKind.INFO})),
        UserTag.OVER_ALIGNED: TagEffect("loser", 0.3, _ALL_KINDS),
        UserTag.LOGIC_BREAK: TagEffect("loser", 0.2, frozenset({ClaimKind.LOGIC})),
        UserTag.FORMAT_CRASH: TagEffect("loser", 0.3, frozenset({ClaimKind.CODE})),
    }
)
"""2.3's table, with the claim kinds each tag touches (see the module docstring)."""


class EvidenceLevel(StrEnum):
    """2.4's three levels; `evidence_weight` gives each its W_evidence."""

    GROUNDED = "grounded"
    PLAIN = "plain"
    VAGUE = "vague"


_EVIDENCE_WEIGHTS = {
    EvidenceLevel.GROUNDED: EVIDENCE_GROUNDED,
    EvidenceLevel.PLAIN: EVIDENCE_PLAIN,
    EvidenceLevel.VAGUE: EVIDENCE_VAGUE,
}


def _kind(value: str) -> ClaimKind:
    try:
        return ClaimKind(value)
    except ValueError:
        raise ParameterError(f"claim kind {value!r}: expected one of {', '.join(ClaimKind)}") from None


def _tag(value: str) -> UserTag:
    try:
        return UserTag(value)
    except ValueError:
        raise ParameterError(f"user tag {value!r}: expected one of {', '.join(UserTag)}") from None


@dataclass(frozen=True, slots=True)
class Claim:
    """One claim of one model's answer: its `text`, the `model` that made it, its `kind`, and `overlap`,
    the number of models (this one included) that mention it independently."""

    text: str
    model: str
    kind: ClaimKind = ClaimKind.INFO
    overlap: int = 1

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise RankingError(f"a claim of model {self.model!r} has no text")
        _kind(self.kind)
        integer_at_least("overlap", self.overlap, 1)


@dataclass(frozen=True, slots=True)
class UserSignal:
    """The user's vote: the `winner` (None when the user voted no winner), the tags given the winner,
    and the tags given each losing model."""

    winner: str | None = None
    winner_tags: frozenset[UserTag] = frozenset()
    loser_tags: Mapping[str, frozenset[UserTag]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for tag in self.winner_tags:
            if USER_TAG_EFFECTS[_tag(tag)].side != "winner":
                raise ParameterError(f"tag {tag!s} marks a losing answer; give it in loser_tags")
        if self.winner_tags and self.winner is None:
            raise ParameterError("winner_tags given but no winner: name the model the user chose")
        for model, tags in self.loser_tags.items():
            if model == self.winner:
                raise ParameterError(f"model {model!r} is the winner and cannot carry loser tags")
            for tag in tags:
                if USER_TAG_EFFECTS[_tag(tag)].side != "loser":
                    raise ParameterError(f"tag {tag!s} (on {model!r}) marks the winning answer; give it in winner_tags")

    def as_dict(self) -> dict[str, Any]:
        """The signal as JSON-ready values (sorted), as the proof record stores it."""
        return {
            "winner": self.winner,
            "winner_tags": sorted(str(tag) for tag in self.winner_tags),
            "loser_tags": {model: sorted(str(tag) for tag in tags) for model, tags in sorted(self.loser_tags.items())},
        }


@dataclass(frozen=True, slots=True)
class ScoredClaim:
    """A claim with its four weights and FinalScore, their product."""

    claim: Claim
    w_rank: float
    w_consensus: float
    w_user: float
    w_evidence: float
    evidence: EvidenceLevel

    @property
    def final(self) -> float:
        return self.w_rank * self.w_consensus * self.w_user * self.w_evidence

    @property
    def removed(self) -> bool:
        return self.final == 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready values: the proof record's `weights_applied` entry for this claim."""
        return {
            "text": self.claim.text,
            "model": self.claim.model,
            "kind": str(self.claim.kind),
            "overlap": self.claim.overlap,
            "w_rank": self.w_rank,
            "w_consensus": self.w_consensus,
            "w_user": self.w_user,
            "w_evidence": self.w_evidence,
            "evidence": str(self.evidence),
            "final": self.final,
        }


@dataclass(frozen=True, slots=True)
class CrossValidation:
    """`kept`: the claims with FinalScore > 0, highest first (ties in input order); `removed`: those
    scoring 0 (vague, or cut by a loser tag), in input order."""

    kept: tuple[ScoredClaim, ...]
    removed: tuple[ScoredClaim, ...]

    def weights_applied(self) -> list[dict[str, Any]]:
        """Every claim's weights, kept then removed, as JSON-ready values (the proof's weights_applied)."""
        return [scored.as_dict() for scored in self.kept + self.removed]


def rank_weight(score: float) -> float:
    """2.1: W_rank = 0.5 + 1.5 sigma((score - 1000) / 200), in (0.5, 2.0), 1.25 at 1000."""
    score = real("score", score)
    return RANK_WEIGHT_FLOOR + RANK_WEIGHT_SPAN * float(special.expit((score - RANK_SCORE_CENTER) / RANK_SCORE_SCALE))


def consensus_weight(overlap: int) -> float:
    """2.2: 1 + 0.5 (overlap - 2) when overlap >= 3, else 1."""
    overlap = integer_at_least("overlap", overlap, 1)
    if overlap < CONSENSUS_MIN_OVERLAP:
        return 1.0
    return 1.0 + CONSENSUS_STEP * (overlap - (CONSENSUS_MIN_OVERLAP - 1))


def user_weight(claim: Claim, signal: UserSignal | None) -> float:
    """2.3: the product of the modifiers of the tags on the claim's model that touch its kind."""
    if signal is None:
        return 1.0
    if claim.model == signal.winner:
        tags = signal.winner_tags
    else:
        tags = signal.loser_tags.get(claim.model, frozenset())
    weight = 1.0
    for tag in tags:
        effect = USER_TAG_EFFECTS[_tag(tag)]
        if claim.kind in effect.kinds:
            weight *= effect.modifier
    return weight


_UNITS = (
    r"%|‰|°[CFK]?|[kMGTPµmun]?(?:s|Hz|B|b|bps|W|V|A|J|g|m|l|L|Pa)|sec(?:onds?)?|min(?:utes?)?|hours?|hrs?|days?|"
    r"weeks?|months?|years?|bytes?|bits?|[KMGT]iB|kcal|cal|mph|px|pt|em|rem|ft|mi|lbs?|oz|x|times|"
    r"percent|degrees?|meters?|metres?|kilometers?|kilometres?|kilograms?|grams?|liters?|litres?|USD|EUR|GBP"
)
_VALUE = re.compile(
    rf"[$€£¥]\s?\d|\b\d+(?:[.,]\d+)+\b|\b\d{{2,}}\b|\b\d+(?:\.\d+)?\s?(?:{_UNITS})(?![A-Za-z])",
)
_IDENTIFIER = re.compile(
    r"`[^`\n]+`"  # `anything in backticks`
    r"|\b[A-Za-z_][\w.]*\((?!s\))"  # call(  module.call(  (not the plural "model(s)")
    r"|\b[A-Za-z_]\w+\.[A-Za-z_]\w+"  # module.attr, file.ext (e.g / i.e have one-letter parts)
    r"|\b[a-z][a-z0-9]*_[a-z0-9_]+\b"  # snake_case
    r"|\b[a-z]{2,}[A-Z][A-Za-z0-9]*\b"  # camelCase
    r"|(?<![\w-])--[a-z][\w-]+"  # --flag
    r"|\b\w+=\S+"  # key=value
)
_HEDGE = re.compile(
    r"\b(?:might|maybe|perhaps|possibly|probably|presumably|likely|reportedly|allegedly|supposedly|"
    r"rumou?red|arguably|apparently|seemingly|purportedly|"
    r"some\s+(?:say|says|believe|claim|argue|think|people|sources|experts|researchers)|"
    r"many\s+(?:believe|say|think|claim)|"
    r"it\s+is\s+(?:said|believed|thought|rumou?red|claimed|possible)|"
    r"(?:i|we)\s+(?:think|believe|guess|suppose|assume)|"
    r"it\s+seems|seems\s+to|could\s+(?:be|have)|may\s+(?:be|have)|in\s+theory)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z][a-z'-]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_STOPWORDS = frozenset(
    "the and for are but not you all any can had her was one our out has him his how its may new now old see two "
    "who did get let put say she too use that with have this will your from they been were said each which their "
    "there what about would these other into than then them some could when more also only such very most over "
    "after where while does just like being those because between".split()
)


def _content_words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if len(word) >= 3 and word not in _STOPWORDS}


def _numbers(text: str) -> set[str]:
    return {number.replace(",", "") for number in _NUMBER.findall(text)}


def _context_agreement(text: str, context: str) -> bool | None:
    """True: aligned with the context; False: on its topic but with numbers it lacks; None: off topic."""
    words = _content_words(text)
    if not words:
        return None
    share = len(words & _content_words(context)) / len(words)
    if share < CONTEXT_TOPIC_MIN:
        return None
    numbers = _numbers(text)
    if numbers:
        return numbers <= _numbers(context)
    return True if share >= CONTEXT_ALIGNED_MIN else None


def evidence_level(claim_text: str, search_context: str | None = None) -> EvidenceLevel:
    """2.4's level of one claim, by the rules of the module docstring (context first, then hedges,
    then exact values and identifiers)."""
    agreement = _context_agreement(claim_text, search_context) if search_context else None
    if agreement is True:
        return EvidenceLevel.GROUNDED
    if _HEDGE.search(claim_text):
        return EvidenceLevel.VAGUE
    if agreement is False:
        return EvidenceLevel.PLAIN
    if _VALUE.search(claim_text) or _IDENTIFIER.search(claim_text):
        return EvidenceLevel.GROUNDED
    return EvidenceLevel.PLAIN


def evidence_weight(level: EvidenceLevel) -> float:
    """W_evidence of a level: `EVIDENCE_GROUNDED`, `EVIDENCE_PLAIN` or `EVIDENCE_VAGUE`."""
    return _EVIDENCE_WEIGHTS[EvidenceLevel(level)]


def cross_validate(
    claims: Iterable[Claim],
    model_scores: Mapping[str, float],
    user_signal: UserSignal | None = None,
    search_context: str | None = None,
) -> CrossValidation:
    """Score every claim (FinalScore = W_rank x W_consensus x W_user x W_evidence) and sort them.

    `model_scores` are the models' Plackett-Luce scores on the leaderboard's scale (centred on 1000);
    every claim's model needs one (`RankingError` names those missing).
    """
    items = list(claims)
    missing = sorted({claim.model for claim in items} - set(model_scores))
    if missing:
        raise RankingError(
            f"no leaderboard score for model(s) {', '.join(map(repr, missing))}: "
            "W_rank needs the score of every claim's model"
        )
    scored = []
    for claim in items:
        level = evidence_level(claim.text, search_context)
        scored.append(
            ScoredClaim(
                claim=claim,
                w_rank=rank_weight(model_scores[claim.model]),
                w_consensus=consensus_weight(claim.overlap),
                w_user=user_weight(claim, user_signal),
                w_evidence=evidence_weight(level),
                evidence=level,
            )
        )
    kept = sorted((item for item in scored if not item.removed), key=lambda item: -item.final)
    removed = tuple(item for item in scored if item.removed)
    return CrossValidation(kept=tuple(kept), removed=removed)
