"""Judge credibility, label randomization, audits, honeypots, eligibility and judge selection
(judge ranking document, sections 2 and 3; the anomaly rules of section 4 are in `anomalies`, the
plagiarism fingerprint in `fingerprint`).

The document gives no numbered equations; its tables are the specification, and every value in
them is a constant here, named after it:

| document | constant |
|---|---|
| starting score 100, threshold 50, floor 30 | `START`, `THRESHOLD`, `FLOOR` |
| agree +1, disagree -1 | `AGREE`, `DISAGREE` |
| disagree with audit -10, fail honeypot -20 | `AUDIT_OVERTURNED`, `HONEYPOT_FAILED` |
| 3 judges per match, 10% audited, 5% honeypots | `JUDGES_PER_MATCH`, `AUDIT_RATE`, `HONEYPOT_RATE` |
| qualified, account 7+ days, 5+ arena matches, pool of 10 | `MIN_ACCOUNT_AGE_DAYS`, `MIN_ARENA_MATCHES`, `MIN_POOL` |

Randomness is seeded and verifiable, never global: every draw is a SHA-256 of a domain tag, the
seed and the draw's inputs, so anyone holding the seed recomputes it. The seed must be fixed before
the matches it decides are known (a committed value, a future block hash); a seed chosen afterwards
could be ground until the audits miss a friend.

- `schedule(seed, match_id)` -> `MatchDraw`: u in [0, 1) from the first 53 bits of the hash decides
  the match's kind: honeypot if u < 0.05, audited if 0.05 <= u < 0.15, ordinary otherwise, so 5% of
  matches are honeypots and 10% audited, and a match is never both.
- `shown_swapped(seed, match_id, judge)`: one bit of another hash; the judge sees the responses in
  the order b, a ("ba") when it is set, half of the time, independently per judge.
  `label_of(choice, shown)` and `choice_of(label, shown)` map between a vote for a contestant and
  the label (A = shown first) it was shown under.
- `select_judges(pool, match, seed)`: the three eligible, active judges whose hash of (seed, match,
  judge name) is smallest: a uniform random 3-subset, reproducible from the seed.

`CredibilityBook` is the one mutable object: a ledger of every judge's standing (credibility,
counters, the last 50 votes) that `process(match)` updates in place, returning a frozen
`MatchOutcome` that lists every change and its reason; `state(judge)` hands out a frozen
`JudgeState` snapshot. A ledger fits the arena (one match after another, thousands of judges)
better than a pure fold that copies an immutable map or state per vote, and it replays 100k votes
in about a second; every value it hands out is frozen.

One match, as the book scores it (`JudgedMatch`: contestants a and b, the votes, and the auditor's
verdict when the match was audited, or the robotic side when it is a honeypot):

1. a match whose two responses share a plagiarism fingerprint is skipped: nothing changes;
2. a honeypot: every judge voting for the robotic response loses 20; nothing else changes;
3. otherwise the consensus is the option (a, b or tie) holding a strict majority of the votes
   cast: 2 of 3, with more judges more than half; without one nobody's credibility moves;
4. with a consensus: agree +1, disagree -1; if the match was audited and the auditor's verdict
   differs from the consensus (the audit overturns it), every judge who voted with the consensus
   gets -10 instead of +1, and every judge who voted the auditor's verdict gets +1;
5. the floor of 30 applies after every change; a judge is active while its credibility is >= 50.

Where the document is vague or silent, and what we chose:

- Consensus options: a tie is a vote like the others; three judges voting a, b and tie reach no
  consensus. The document's "2 out of 3" generalizes to "more than half of the votes cast".
- Overturned audits: the document penalizes "all judges who voted with the (wrong) consensus" by
  -10 ("voted wrong when Opus overruled") and calls the audit the "supreme court". A dissenter whose
  vote the audit upheld voted right: charging it the ordinary -1 for disagreeing with a consensus
  the supreme court overturned would punish the only correct judge, so it gets +1. A dissenter who
  voted neither the consensus nor the verdict (a tie, say) disagreed with both: -1. The -10 replaces
  the +1, it is not added to it. A confirming audit changes nothing beyond +1/-1.
- Audits without a consensus: the document's penalties are defined against the consensus, so
  nobody's credibility moves; the audit still counts for each judge's audit agreement (its vote
  against the auditor's), which the anomaly rule reads.
- Honeypots: a tie is not a vote for the robotic response, so it passes. Passing changes nothing
  (the document gives no reward). Honeypot votes are tests, not judgments: they enter neither the
  consensus, the vote counts, the vote history nor the Elo ratings.
- Reactivation: the book scores every vote it is given, including a judge below 50 (whose
  agreements can lift it back to 50, active again). Keeping inactive judges out of matches is the
  selection's job (`select_judges` draws only active judges), so in a live arena an excluded judge
  stays excluded; a replay of recorded votes still scores them all. `JudgeState.lowest` keeps the
  lowest credibility a judge ever had, so a replay shows who would have been excluded.
- No ceiling: the document gives a floor and no cap, so a judge that keeps agreeing keeps rising
  (on the Vicuna80 replay the best judge ends near 1000 after 1600 matches). Credibility ranks judges
  and gates the pool at 50; nothing here weights votes by it, so the scale does no harm.
- Eligibility: a judge never judges a match involving a contestant its owner owns, nor one it is
  itself a contestant in. The pool size the document requires ("need at least 10 active judges")
  counts judges meeting the requirements and active, independent of the match; a smaller pool is
  flagged (`Selection.pool_short`), not refused. Fewer than 3 eligible active judges for a match is
  the document's "API fallback": the selection names no judge and says so (`api_fallback`).
- "SHA-256(seed || match_id)": plain concatenation is ambiguous ("ab" + "c" = "a" + "bc"), so each
  field is hashed with an 8-byte big-endian length prefix, after a domain tag that keeps the
  schedule, the label bits and the judge draw independent of each other. An integer seed is its
  decimal text.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from trust.core.ranking.anomalies import COLLUSION_WINDOW, AnomalyFlags, Label, PastVote, detect
from trust.core.ranking.fingerprint import is_plagiarized
from trust.errors import ParameterError, RankingError

__all__ = [
    "AGREE",
    "AUDIT_OVERTURNED",
    "AUDIT_RATE",
    "DISAGREE",
    "FLOOR",
    "HISTORY_LENGTH",
    "HONEYPOT_FAILED",
    "HONEYPOT_RATE",
    "JUDGES_PER_MATCH",
    "MIN_ACCOUNT_AGE_DAYS",
    "MIN_ARENA_MATCHES",
    "MIN_POOL",
    "START",
    "THRESHOLD",
    "ArenaMatch",
    "Choice",
    "CredibilityBook",
    "CredibilityChange",
    "JudgeProfile",
    "JudgeState",
    "JudgedMatch",
    "MatchDraw",
    "MatchKind",
    "MatchOutcome",
    "Order",
    "Reason",
    "Seed",
    "Selection",
    "Side",
    "Vote",
    "choice_of",
    "consensus",
    "eligible",
    "ineligibility",
    "label_of",
    "schedule",
    "select_judges",
    "shown_order",
    "shown_swapped",
]

Choice = Literal["a", "b", "tie"]
"""A vote or verdict on a match: contestant a is better, b is, or neither."""
Side = Literal["a", "b"]
"""One of the two contestants of a match."""
Order = Literal["ab", "ba"]
"""The order a judge saw the responses in: "ab" shows a as label A, "ba" shows b as label A."""
Seed = bytes | str | int
"""The randomness seed: bytes as given, text as UTF-8, an integer as its decimal text."""

START = 100
"""Every judge's credibility at the start ("Starting Score")."""
THRESHOLD = 50
"""The lowest credibility of an active judge; below it the judge leaves the pool."""
FLOOR = 30
"""Credibility never drops below this."""
AGREE = 1
"""Change for a vote with the consensus."""
DISAGREE = -1
"""Change for a vote against the consensus."""
AUDIT_OVERTURNED = -10
"""Change (instead of AGREE) for a vote with a consensus the audit overturned."""
HONEYPOT_FAILED = -20
"""Change for a vote for the obviously robotic response of a honeypot."""
JUDGES_PER_MATCH = 3
"""Judges drawn for each match."""
AUDIT_RATE = 0.10
"""Share of matches an external auditor reviews."""
HONEYPOT_RATE = 0.05
"""Share of matches that are honeypots (a real response against a robotic one)."""
MIN_POOL = 10
"""Active judges the pool needs; fewer is flagged."""
MIN_ACCOUNT_AGE_DAYS = 7
"""A judge's account must be at least this old, in days."""
MIN_ARENA_MATCHES = 5
"""A judge must have competed in at least this many arena matches."""
HISTORY_LENGTH = COLLUSION_WINDOW
"""Votes each judge's history keeps: the collusion window, the longest the anomaly rules read."""

_CHOICES: tuple[Choice, ...] = ("a", "b", "tie")
_SIDES: tuple[Side, ...] = ("a", "b")
_ORDERS: tuple[Order, ...] = ("ab", "ba")
_LABELS: dict[tuple[Choice, Order], Label | None] = {
    ("a", "ab"): "A",
    ("b", "ab"): "B",
    ("a", "ba"): "B",
    ("b", "ba"): "A",
    ("tie", "ab"): None,
    ("tie", "ba"): None,
}
"""The label each choice was shown under, per shown order (a tie has none)."""
_U_BITS = 53
"""Bits of the hash that make u: a double holds 53 bits exactly, so u < 1 always."""
_TAG_SCHEDULE = "trust.ranking.credibility/schedule/v1"
_TAG_LABELS = "trust.ranking.credibility/labels/v1"
_TAG_SELECT = "trust.ranking.credibility/select/v1"


# ------------------------------------------------------------------------------------- randomness


def _field(value: Seed) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value).encode("ascii")
    raise ParameterError(f"a seed or draw input is bytes, text or an integer, got {value!r}")


def _digest(tag: str, *fields: Seed) -> bytes:
    """SHA-256 over the tag and the fields, each prefixed by its 8-byte big-endian length."""
    hasher = hashlib.sha256()
    for value in (tag, *fields):
        data = _field(value)
        hasher.update(len(data).to_bytes(8, "big"))
        hasher.update(data)
    return hasher.digest()


class MatchKind(StrEnum):
    """What a match is for: an ordinary match, one the external auditor reviews, or a honeypot."""

    ORDINARY = "ordinary"
    AUDITED = "audited"
    HONEYPOT = "honeypot"


@dataclass(frozen=True, slots=True)
class MatchDraw:
    """The seeded draw of one match: `u` in [0, 1) and the kind it gives; `digest` is the SHA-256
    (hex) it came from, for anyone checking the draw."""

    match_id: str
    u: float
    kind: MatchKind
    digest: str

    @property
    def audited(self) -> bool:
        return self.kind is MatchKind.AUDITED

    @property
    def honeypot(self) -> bool:
        return self.kind is MatchKind.HONEYPOT


def _rate(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0.0 <= value <= 1.0):
        raise ParameterError(f"{name} is a probability in [0, 1], got {value!r}")
    return float(value)


def schedule(
    seed: Seed, match_id: str, *, honeypot_rate: float = HONEYPOT_RATE, audit_rate: float = AUDIT_RATE
) -> MatchDraw:
    """The kind of match `match_id` under `seed`: honeypot if u < honeypot_rate, audited if
    honeypot_rate <= u < honeypot_rate + audit_rate, ordinary otherwise."""
    honeypot_rate, audit_rate = _rate("honeypot_rate", honeypot_rate), _rate("audit_rate", audit_rate)
    if honeypot_rate + audit_rate > 1.0:
        raise ParameterError(
            f"honeypot_rate + audit_rate is at most 1 (a match has one kind), got {honeypot_rate} + {audit_rate}"
        )
    digest = _digest(_TAG_SCHEDULE, seed, match_id)
    u = (int.from_bytes(digest[:8], "big") >> (64 - _U_BITS)) / 2.0**_U_BITS
    if u < honeypot_rate:
        kind = MatchKind.HONEYPOT
    elif u < honeypot_rate + audit_rate:
        kind = MatchKind.AUDITED
    else:
        kind = MatchKind.ORDINARY
    return MatchDraw(match_id, u, kind, digest.hex())


def shown_swapped(seed: Seed, match_id: str, judge: str) -> bool:
    """True when `judge` sees match `match_id` with the responses swapped (b shown as label A):
    the lowest bit of a seeded hash, so half of the time, independently per judge and match."""
    return bool(_digest(_TAG_LABELS, seed, match_id, judge)[0] & 1)


def shown_order(seed: Seed, match_id: str, judge: str) -> Order:
    """The order `judge` sees the responses of `match_id` in: "ba" when swapped, else "ab"."""
    return "ba" if shown_swapped(seed, match_id, judge) else "ab"


def _order(shown: str) -> Order:
    if shown == "ab":
        return "ab"
    if shown == "ba":
        return "ba"
    raise ParameterError(f"the shown order is 'ab' or 'ba', got {shown!r}")


def label_of(choice: Choice, shown: Order) -> Label | None:
    """The label (A = shown first) of the contestant a vote chose; None for a tie."""
    if choice not in _CHOICES:
        raise ParameterError(f"a choice is 'a', 'b' or 'tie', got {choice!r}")
    return _LABELS[choice, _order(shown)]


def choice_of(label: Label | None, shown: Order) -> Choice:
    """The contestant behind a label the judge voted for (None, a tie, stays a tie)."""
    if label is None:
        return "tie"
    if label not in ("A", "B"):
        raise ParameterError(f"a label is 'A', 'B' or None (a tie), got {label!r}")
    is_a = label == "A"
    if _order(shown) == "ba":
        is_a = not is_a
    return "a" if is_a else "b"


# ---------------------------------------------------------------------------------- matches, votes


@dataclass(frozen=True, slots=True)
class Vote:
    """One judge's vote on a match, for a contestant (`choice`), and the order it saw them in."""

    judge: str
    choice: Choice
    shown: Order = "ab"

    def __post_init__(self) -> None:
        if not isinstance(self.judge, str) or not self.judge:
            raise RankingError(f"a vote names its judge, got {self.judge!r}")
        if self.choice not in _CHOICES:
            raise RankingError(f"a vote is 'a', 'b' or 'tie', got {self.choice!r} from {self.judge!r}")
        if self.shown not in _ORDERS:
            raise RankingError(f"a vote's shown order is 'ab' or 'ba', got {self.shown!r} from {self.judge!r}")

    @property
    def label(self) -> Label | None:
        """The label the chosen contestant was shown under (None for a tie)."""
        return label_of(self.choice, self.shown)


@dataclass(frozen=True, slots=True)
class JudgedMatch:
    """One match with its votes, as the credibility book scores it.

    `audit` is the auditor's verdict when the match was audited (None otherwise); `honeypot` is the
    side holding the robotic response when the match is a honeypot. A match is one or the other, or
    neither. `response_a`/`response_b` are the texts, when known, for the plagiarism check.
    """

    match_id: str
    a: str
    b: str
    votes: tuple[Vote, ...]
    audit: Choice | None = None
    honeypot: Side | None = None
    response_a: str | None = None
    response_b: str | None = None

    def __post_init__(self) -> None:
        if self.a == self.b:
            raise RankingError(f"match {self.match_id!r} needs two different contestants, got {self.a!r} twice")
        if not self.votes:
            raise RankingError(f"match {self.match_id!r} has no votes")
        judges = Counter(vote.judge for vote in self.votes)
        repeated = sorted(judge for judge, count in judges.items() if count > 1)
        if repeated:
            raise RankingError(f"match {self.match_id!r}: judge(s) {', '.join(repeated)} voted more than once")
        if self.audit not in (None, *_CHOICES):
            raise RankingError(f"match {self.match_id!r}: the audit verdict is 'a', 'b', 'tie' or None")
        if self.honeypot not in (None, *_SIDES):
            raise RankingError(f"match {self.match_id!r}: the honeypot side is 'a', 'b' or None")
        if self.audit is not None and self.honeypot is not None:
            raise RankingError(f"match {self.match_id!r} is both audited and a honeypot; a match is one kind")

    @property
    def kind(self) -> MatchKind:
        if self.honeypot is not None:
            return MatchKind.HONEYPOT
        return MatchKind.AUDITED if self.audit is not None else MatchKind.ORDINARY

    def contestant(self, choice: Choice) -> str | None:
        """The contestant a choice names (None for a tie)."""
        return None if choice == "tie" else (self.a if choice == "a" else self.b)


def consensus(votes: Sequence[Vote] | Sequence[Choice]) -> Choice | None:
    """The option holding a strict majority of the votes cast (more than half), or None."""
    counts: dict[Choice, int] = {}
    for vote in votes:
        choice = vote.choice if isinstance(vote, Vote) else vote
        counts[choice] = counts.get(choice, 0) + 1
    if not counts:
        return None
    best = max(counts, key=counts.__getitem__)
    return best if 2 * counts[best] > len(votes) else None


# ------------------------------------------------------------------------------------ credibility


class Reason(StrEnum):
    """Why a judge's credibility changed (or did not) in one match."""

    AGREED = "agreed"
    """Voted with the consensus: AGREE."""
    DISAGREED = "disagreed"
    """Voted against the consensus (and, if audited, against the auditor): DISAGREE."""
    OVERTURNED = "overturned"
    """Voted with a consensus the audit overturned: AUDIT_OVERTURNED."""
    UPHELD = "upheld"
    """Dissented from the consensus with the verdict the audit reached: AGREE."""
    NO_CONSENSUS = "no_consensus"
    """No option held a majority: no change."""
    HONEYPOT_FAILED = "honeypot_failed"
    """Voted for a honeypot's robotic response: HONEYPOT_FAILED."""
    HONEYPOT_PASSED = "honeypot_passed"
    """Did not vote for the robotic response: no change."""


_DELTAS: dict[Reason, int] = {
    Reason.AGREED: AGREE,
    Reason.DISAGREED: DISAGREE,
    Reason.OVERTURNED: AUDIT_OVERTURNED,
    Reason.UPHELD: AGREE,
    Reason.NO_CONSENSUS: 0,
    Reason.HONEYPOT_FAILED: HONEYPOT_FAILED,
    Reason.HONEYPOT_PASSED: 0,
}


@dataclass(frozen=True, slots=True)
class JudgeState:
    """One judge's standing: credibility (>= FLOOR), its counters and its last HISTORY_LENGTH votes.

    `votes` counts the votes of scored matches (honeypots and skipped matches excluded);
    `consensus_votes` those of matches that reached a consensus, `agreements` those that matched it;
    `audits`/`audits_agreed` the audited matches voted in and the votes that matched the auditor;
    `label_a`/`label_b` the votes for the response shown as A and as B (position bias);
    `lowest` the lowest credibility the judge ever had.
    """

    judge: str
    credibility: int = START
    votes: int = 0
    consensus_votes: int = 0
    agreements: int = 0
    audits: int = 0
    audits_agreed: int = 0
    honeypots: int = 0
    honeypots_failed: int = 0
    label_a: int = 0
    label_b: int = 0
    lowest: int = START
    history: tuple[PastVote, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.credibility, bool) or not isinstance(self.credibility, int) or self.credibility < FLOOR:
            raise ParameterError(f"{self.judge}: credibility is an integer >= {FLOOR}, got {self.credibility!r}")
        if len(self.history) > HISTORY_LENGTH:
            raise ParameterError(f"{self.judge}: the history keeps at most {HISTORY_LENGTH} votes")

    @property
    def active(self) -> bool:
        """Whether the judge may be drawn: credibility >= THRESHOLD."""
        return self.credibility >= THRESHOLD

    @property
    def agreement_rate(self) -> float | None:
        """Share of its votes in matches with a consensus that matched the consensus (None: no such vote)."""
        return self.agreements / self.consensus_votes if self.consensus_votes else None

    @property
    def audit_agreement_rate(self) -> float | None:
        """Share of its audited votes that matched the auditor's verdict (None: never audited)."""
        return self.audits_agreed / self.audits if self.audits else None

    def anomalies(self) -> AnomalyFlags:
        """The anomaly rules of section 4 over this judge's history and tallies."""
        return detect(
            self.history,
            votes=self.votes,
            label_a=self.label_a,
            label_b=self.label_b,
            audits=self.audits,
            audits_agreed=self.audits_agreed,
        )


@dataclass(frozen=True, slots=True)
class CredibilityChange:
    """One judge's credibility before and after one match, and why. `after - before` can be smaller
    in size than the reason's change when the floor cut it."""

    judge: str
    before: int
    after: int
    reason: Reason

    @property
    def delta(self) -> int:
        return self.after - self.before


@dataclass(frozen=True, slots=True)
class MatchOutcome:
    """What one match did. `consensus` is the majority of the votes (None: none, or a honeypot or a
    skipped match); `verdict` the final outcome (the auditor's verdict when audited, else the
    consensus); `overturned` whether the audit disagreed with the consensus."""

    match_id: str
    kind: MatchKind
    skipped: bool
    consensus: Choice | None
    verdict: Choice | None
    overturned: bool
    changes: tuple[CredibilityChange, ...]


class _Ledger:
    """One judge's running standing inside the book: the fields of `JudgeState`, mutable, with the
    history in a bounded deque. Updating it in place is what keeps a replay of 100k votes near a
    second (rebuilding a frozen state per vote took twice as long); `snapshot` hands out the frozen
    view."""

    __slots__ = (
        "judge",
        "credibility",
        "votes",
        "consensus_votes",
        "agreements",
        "audits",
        "audits_agreed",
        "honeypots",
        "honeypots_failed",
        "label_a",
        "label_b",
        "lowest",
        "history",
    )

    def __init__(self, state: JudgeState) -> None:
        self.judge = state.judge
        self.credibility = state.credibility
        self.votes = state.votes
        self.consensus_votes = state.consensus_votes
        self.agreements = state.agreements
        self.audits = state.audits
        self.audits_agreed = state.audits_agreed
        self.honeypots = state.honeypots
        self.honeypots_failed = state.honeypots_failed
        self.label_a = state.label_a
        self.label_b = state.label_b
        self.lowest = state.lowest
        self.history: deque[PastVote] = deque(state.history, maxlen=HISTORY_LENGTH)

    def snapshot(self) -> JudgeState:
        return JudgeState(
            self.judge,
            self.credibility,
            self.votes,
            self.consensus_votes,
            self.agreements,
            self.audits,
            self.audits_agreed,
            self.honeypots,
            self.honeypots_failed,
            self.label_a,
            self.label_b,
            self.lowest,
            tuple(self.history),
        )

    def credit(self, reason: Reason) -> CredibilityChange:
        """Applies the reason's change, floored at FLOOR."""
        before = self.credibility
        self.credibility = max(FLOOR, before + _DELTAS[reason])
        self.lowest = min(self.lowest, self.credibility)
        return CredibilityChange(self.judge, before, self.credibility, reason)


class CredibilityBook:
    """The ledger of every judge's standing; `process` scores one match after another, `state`
    hands out a judge's frozen `JudgeState`.

    Judges appear on their first vote at START (or come in through `states`). Not thread-safe: one
    book follows one ordered stream of matches.
    """

    __slots__ = ("_ledgers",)

    def __init__(self, states: Iterable[JudgeState] = ()) -> None:
        self._ledgers: dict[str, _Ledger] = {}
        for state in states:
            if state.judge in self._ledgers:
                raise ParameterError(f"judge {state.judge!r} is given twice")
            self._ledgers[state.judge] = _Ledger(state)

    def __len__(self) -> int:
        return len(self._ledgers)

    def __contains__(self, judge: object) -> bool:
        return judge in self._ledgers

    def __iter__(self) -> Iterator[JudgeState]:
        """Every known judge's state, in the order the book first saw them."""
        return iter([ledger.snapshot() for ledger in self._ledgers.values()])

    def state(self, judge: str) -> JudgeState:
        """The judge's standing; a judge the book has not seen is at START."""
        ledger = self._ledgers.get(judge)
        return JudgeState(judge) if ledger is None else ledger.snapshot()

    def scores(self) -> dict[str, int]:
        """Every known judge's credibility (a copy)."""
        return {judge: ledger.credibility for judge, ledger in self._ledgers.items()}

    def _ledger(self, judge: str) -> _Ledger:
        ledger = self._ledgers.get(judge)
        if ledger is None:
            ledger = self._ledgers[judge] = _Ledger(JudgeState(judge))
        return ledger

    def process(self, match: JudgedMatch) -> MatchOutcome:
        """Scores one match (the rules of the module docstring) and returns what changed."""
        if is_plagiarized(match):
            return MatchOutcome(match.match_id, match.kind, True, None, None, False, ())
        if match.honeypot is not None:
            return self._honeypot(match, match.honeypot)
        agreed = consensus(match.votes)
        audit = match.audit
        overturned = agreed is not None and audit is not None and audit != agreed
        changes = []
        for vote in match.votes:
            choice = vote.choice
            if agreed is None:
                reason = Reason.NO_CONSENSUS
            elif choice == agreed:
                reason = Reason.OVERTURNED if overturned else Reason.AGREED
            elif overturned and choice == audit:
                reason = Reason.UPHELD
            else:
                reason = Reason.DISAGREED
            label = _LABELS[choice, vote.shown]
            ledger = self._ledger(vote.judge)
            ledger.votes += 1
            if agreed is not None:
                ledger.consensus_votes += 1
                ledger.agreements += choice == agreed
            if audit is not None:
                ledger.audits += 1
                ledger.audits_agreed += choice == audit
            ledger.label_a += label == "A"
            ledger.label_b += label == "B"
            ledger.history.append(PastVote(match.contestant(choice), label))
            changes.append(ledger.credit(reason))
        verdict = audit if audit is not None else agreed
        return MatchOutcome(match.match_id, match.kind, False, agreed, verdict, overturned, tuple(changes))

    def _honeypot(self, match: JudgedMatch, robotic: Side) -> MatchOutcome:
        changes = []
        for vote in match.votes:
            ledger = self._ledger(vote.judge)
            failed = vote.choice == robotic
            ledger.honeypots += 1
            ledger.honeypots_failed += failed
            changes.append(ledger.credit(Reason.HONEYPOT_FAILED if failed else Reason.HONEYPOT_PASSED))
        return MatchOutcome(match.match_id, MatchKind.HONEYPOT, False, None, None, False, tuple(changes))


# ------------------------------------------------------------------------- eligibility, selection


@dataclass(frozen=True, slots=True)
class JudgeProfile:
    """What eligibility reads about a judge bot: its owner (the account), whether it passed the
    initial Turing test, the account's age in days and its arena matches played."""

    name: str
    owner: str
    qualified: bool
    account_age_days: float
    arena_matches: int

    def __post_init__(self) -> None:
        if not (math.isfinite(self.account_age_days) and self.account_age_days >= 0):
            raise ParameterError(f"{self.name}: account_age_days is finite and >= 0, got {self.account_age_days!r}")
        if isinstance(self.arena_matches, bool) or not isinstance(self.arena_matches, int) or self.arena_matches < 0:
            raise ParameterError(f"{self.name}: arena_matches is an integer >= 0, got {self.arena_matches!r}")


@dataclass(frozen=True, slots=True)
class ArenaMatch:
    """A match to draw judges for: its id, its two contestants and their owners (when known)."""

    match_id: str
    a: str
    b: str
    owner_a: str | None = None
    owner_b: str | None = None


def ineligibility(profile: JudgeProfile, match: ArenaMatch | None = None) -> tuple[str, ...]:
    """Every reason `profile` may not judge (`match`, when given); empty when it may."""
    reasons = []
    if not profile.qualified:
        reasons.append("has not passed the initial Turing test")
    if profile.account_age_days < MIN_ACCOUNT_AGE_DAYS:
        reasons.append(f"account is {profile.account_age_days:g} days old (needs {MIN_ACCOUNT_AGE_DAYS})")
    if profile.arena_matches < MIN_ARENA_MATCHES:
        reasons.append(f"played {profile.arena_matches} arena matches (needs {MIN_ARENA_MATCHES})")
    if match is not None:
        if profile.name in (match.a, match.b):
            reasons.append(f"is a contestant of match {match.match_id}")
        if profile.owner in (match.owner_a, match.owner_b):
            reasons.append(f"its owner {profile.owner} owns a contestant of match {match.match_id}")
    return tuple(reasons)


def eligible(profile: JudgeProfile, match: ArenaMatch) -> bool:
    """Whether the judge meets the requirements of section 3 and is not excluded from this match."""
    return not ineligibility(profile, match)


@dataclass(frozen=True, slots=True)
class Selection:
    """The judges drawn for one match, in draw order; none on API fallback.

    `candidates`: eligible, active judges for this match; `active_pool`: judges meeting the
    requirements and active, whatever the match (the pool the document wants at least MIN_POOL of).
    """

    match_id: str
    judges: tuple[str, ...]
    candidates: int
    active_pool: int

    @property
    def api_fallback(self) -> bool:
        """True when too few judges were eligible: the match is judged by the API instead."""
        return not self.judges

    @property
    def pool_short(self) -> bool:
        """True when the active pool is below MIN_POOL."""
        return self.active_pool < MIN_POOL


def select_judges(
    pool: Sequence[JudgeProfile],
    match: ArenaMatch,
    seed: Seed,
    *,
    credibility: Mapping[str, int] | None = None,
    k: int = JUDGES_PER_MATCH,
) -> Selection:
    """Draws `k` distinct judges for `match` from the eligible, active judges of `pool`.

    `credibility` maps judge names to their credibility (a missing judge is at START; pass
    `book.scores()`). Each candidate's key is the SHA-256 of (seed, match id, judge name); the `k`
    smallest keys win, a uniform random subset that anyone with the seed can recompute. With fewer
    than `k` candidates the selection is empty (`api_fallback`), not an error.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ParameterError(f"k (judges per match) is an integer >= 1, got {k!r}")
    names = Counter(profile.name for profile in pool)
    repeated = sorted(name for name, count in names.items() if count > 1)
    if repeated:
        raise ParameterError(f"the judge pool names {', '.join(repeated)} more than once")
    scores = credibility or {}

    def active(profile: JudgeProfile) -> bool:
        return scores.get(profile.name, START) >= THRESHOLD

    active_pool = sum(1 for p in pool if active(p) and not ineligibility(p))
    candidates = [p for p in pool if active(p) and eligible(p, match)]
    if len(candidates) < k:
        return Selection(match.match_id, (), len(candidates), active_pool)
    drawn = sorted(candidates, key=lambda p: (_digest(_TAG_SELECT, seed, match.match_id, p.name), p.name))[:k]
    return Selection(match.match_id, tuple(p.name for p in drawn), len(candidates), active_pool)
