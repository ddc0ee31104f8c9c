"""Judge anomaly detection (judge ranking document, section 4, "Anomaly Detection").

The document's table, with its thresholds as constants:

| anomaly | rule | constants |
|---|---|---|
| collusion | more than 10 votes for one contestant in the judge's last 50 | `COLLUSION_WINDOW`, `COLLUSION_MAX_VOTES` |
| position bias | more than 80% of the votes for the response shown as A, or as B | `POSITION_BIAS_MAX_SHARE` |
| audit disagreement | less than 50% agreement with the auditor's verdicts | `AUDIT_AGREEMENT_MIN` |

`detect` reads a judge's recent votes (`PastVote`: the contestant voted for and the label it was
shown under) and its tallies, and returns `AnomalyFlags`: each collusion flag names the contestant
and its count, the position-bias flag names the side and its share, the audit flag gives the rate.
Flags are evidence for a human or a governance process to look at; nothing here changes a
credibility score (the document gives no penalty for an anomaly).

Where the document is vague, and what we chose:

- Strict inequalities as written: exactly 10 votes for one contestant in 50 is not collusion, 11 is;
  exactly 80% on one label is not bias, 81% is; exactly 50% audit agreement is fine. Shares are
  compared as exact fractions, so 80/100 never rounds over the line.
- Position bias has no window in the document (only collusion says "in 50"): it is measured over
  every vote the tallies cover (the credibility book passes the judge's all-time label counts).
  Ties are votes for neither label: they count in the denominator, so a judge who ties often is
  not biased towards a side. Collusion counts votes for a contestant, so ties do not count there.
- Minimum samples the document does not give, without which every judge is flagged on its first
  vote (one vote is 100% for one label; one overturned audit is 0% agreement):
  `POSITION_BIAS_MIN_VOTES = 10` and `AUDIT_AGREEMENT_MIN_AUDITS = 4`. At these sizes an honest judge
  is rarely flagged by chance: a judge picking labels at random exceeds 80% on one side in 10 votes
  (9 or 10 alike) with probability 2 x 11/1024 = 2.1%, and a judge agreeing with the auditor 80% of
  the time falls below 50% in 4 audits (0 or 1 agreements) with probability 0.2^4 + 4 x 0.8 x 0.2^3
  = 2.7%. Collusion needs no minimum: its rule is a count, and 11 votes already say something.
- Several contestants can each pass 10 votes in 50 (up to four), so collusion is a tuple of flags.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from trust.errors import ParameterError

__all__ = [
    "AUDIT_AGREEMENT_MIN",
    "AUDIT_AGREEMENT_MIN_AUDITS",
    "COLLUSION_MAX_VOTES",
    "COLLUSION_WINDOW",
    "POSITION_BIAS_MAX_SHARE",
    "POSITION_BIAS_MIN_VOTES",
    "AnomalyFlags",
    "Collusion",
    "Label",
    "LowAuditAgreement",
    "PastVote",
    "PositionBias",
    "detect",
]

Label = Literal["A", "B"]
"""The position a response was shown in to one judge (label randomization swaps them per judge)."""

COLLUSION_WINDOW = 50
"""The judge's most recent votes the collusion rule reads ("in 50")."""
COLLUSION_MAX_VOTES = 10
"""Votes for one contestant within the window that are still fine; one more is flagged (">10")."""
POSITION_BIAS_MAX_SHARE = Fraction(80, 100)
"""The largest share of votes on one label (A or B) that is not position bias (">80%")."""
POSITION_BIAS_MIN_VOTES = 10
"""Votes needed before position bias is judged (not in the document; see the module docstring)."""
AUDIT_AGREEMENT_MIN = Fraction(50, 100)
"""The lowest agreement with the auditor that is not flagged ("<50%" is flagged)."""
AUDIT_AGREEMENT_MIN_AUDITS = 4
"""Audits needed before audit agreement is judged (not in the document; see the module docstring)."""


@dataclass(frozen=True, slots=True)
class PastVote:
    """One vote in a judge's history: the contestant it voted for and the label that contestant was
    shown under to this judge; both None for a tie."""

    contestant: str | None
    label: Label | None

    def __post_init__(self) -> None:
        if self.label not in (None, "A", "B"):
            raise ParameterError(f"a vote's label is 'A', 'B' or None (a tie), got {self.label!r}")
        if (self.contestant is None) != (self.label is None):
            raise ParameterError(
                f"a tie has neither contestant nor label, a vote has both; got {self.contestant!r}, {self.label!r}"
            )


@dataclass(frozen=True, slots=True)
class Collusion:
    """`votes` of the judge's last `window` votes went to `contestant` (more than `COLLUSION_MAX_VOTES`)."""

    contestant: str
    votes: int
    window: int


@dataclass(frozen=True, slots=True)
class PositionBias:
    """`share` (0..1) of the judge's `votes` went to the response shown as `side`."""

    side: Label
    share: float
    votes: int


@dataclass(frozen=True, slots=True)
class LowAuditAgreement:
    """The judge agreed with the auditor in `rate` (0..1) of its `audits` audited matches."""

    rate: float
    audits: int


@dataclass(frozen=True, slots=True)
class AnomalyFlags:
    """Every anomaly found for one judge; empty (falsy) when none was."""

    collusion: tuple[Collusion, ...] = ()
    position_bias: PositionBias | None = None
    audit_agreement: LowAuditAgreement | None = None

    def __bool__(self) -> bool:
        return bool(self.collusion) or self.position_bias is not None or self.audit_agreement is not None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values: {"collusion": [{contestant, votes, window}], "position_bias": {side,
        share, votes} or null, "audit_agreement": {rate, audits} or null}."""
        bias, audit = self.position_bias, self.audit_agreement
        return {
            "collusion": [{"contestant": c.contestant, "votes": c.votes, "window": c.window} for c in self.collusion],
            "position_bias": None if bias is None else {"side": bias.side, "share": bias.share, "votes": bias.votes},
            "audit_agreement": None if audit is None else {"rate": audit.rate, "audits": audit.audits},
        }


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParameterError(f"{name} is a count (an integer >= 0), got {value!r}")
    return value


def detect(
    recent: Sequence[PastVote],
    *,
    votes: int | None = None,
    label_a: int | None = None,
    label_b: int | None = None,
    audits: int = 0,
    audits_agreed: int = 0,
) -> AnomalyFlags:
    """The anomalies of one judge.

    `recent`: the judge's votes, oldest first; collusion reads the last `COLLUSION_WINDOW` of them.
    `votes`, `label_a`, `label_b`: the judge's tallies for position bias (all its votes, and those
    for the response shown as A and as B); give all three or none, in which case they are counted
    from `recent`. `audits`, `audits_agreed`: audited matches the judge voted in, and how many of its
    votes matched the auditor's verdict.
    """
    given = [x is not None for x in (votes, label_a, label_b)]
    if any(given) and not all(given):
        raise ParameterError("give all of votes, label_a and label_b, or none of them (then recent is counted)")
    if votes is None or label_a is None or label_b is None:
        votes = len(recent)
        label_a = sum(1 for v in recent if v.label == "A")
        label_b = sum(1 for v in recent if v.label == "B")
    votes, label_a, label_b = _count("votes", votes), _count("label_a", label_a), _count("label_b", label_b)
    audits, audits_agreed = _count("audits", audits), _count("audits_agreed", audits_agreed)
    if label_a + label_b > votes:
        raise ParameterError(f"label_a + label_b ({label_a} + {label_b}) exceeds votes ({votes})")
    if audits_agreed > audits:
        raise ParameterError(f"audits_agreed ({audits_agreed}) exceeds audits ({audits})")

    window = list(recent[-COLLUSION_WINDOW:])
    counts = Counter(v.contestant for v in window if v.contestant is not None)
    collusion = tuple(
        Collusion(contestant, count, len(window))
        for contestant, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        if count > COLLUSION_MAX_VOTES
    )

    bias = None
    if votes >= POSITION_BIAS_MIN_VOTES:
        sides: tuple[tuple[Label, int], ...] = (("A", label_a), ("B", label_b))
        for side, count in sides:
            if Fraction(count, votes) > POSITION_BIAS_MAX_SHARE:
                bias = PositionBias(side, count / votes, votes)

    low_audit = None
    if audits >= AUDIT_AGREEMENT_MIN_AUDITS and Fraction(audits_agreed, audits) < AUDIT_AGREEMENT_MIN:
        low_audit = LowAuditAgreement(audits_agreed / audits, audits)
    return AnomalyFlags(collusion, bias, low_audit)
