"""Judge vote files, and their replay through the credibility book (`trust judge replay FILE`).

`read_votes(path)` recognizes two formats by content (the first record decides):

(a) generic JSON Lines, one vote per line:
    `{"match": id, "a": name, "b": name, "judge": name, "vote": "a"|"b"|"tie"}`, optionally with
    `"shown": "ab"|"ba"` (the order the judge saw the responses in: "ba" showed b as label A;
    default "ab"), `"audit": "a"|"b"|"tie"|null` (the auditor's verdict when the match was
    audited), `"honeypot": "a"|"b"|null` (the side holding the robotic response) and
    `"response_a"`/`"response_b"` (the texts, for the plagiarism check). `"vote"` names the
    contestant, not the label; `"shown"` says which label that was. The records of one match may be
    anywhere in the file; they must agree on a, b, audit, honeypot and the responses they give.
    Matches are replayed in the order of their first record.
(b) the Vicuna80 judgment format (`records.read_judgments`): a match is (question_id, first,
    second); the LLM judges' votes are its votes (score 1 -> "a" = first, 2 -> "b", 3 -> "tie"),
    shown in file order ("ab": label A is the first answer, as the PRD judges saw it). The human
    votes (judge "human") on the same ordered pair and question, reduced to their majority (the
    sign of the mean of -1 first better, 0 tie, +1 second better), are the audit verdict available
    for that match; `replay` applies it only when the seeded draw (`credibility.schedule`) makes the
    match audited, so about 10% of the matches with human votes are audited, as in the arena.
    Human votes on pairs no LLM judged are not matches and are ignored.

Malformed records raise `RecordError` naming the file, the record (line) and the field; an empty file
raises `RankingError`.

`replay(records, seed)` runs every match through a fresh `CredibilityBook` and returns a
`ReplayResult`: per judge its final credibility, whether it is active, its votes, its agreement with
the consensus, its agreement with the auditor, its honeypots and failures, the lowest credibility it
reached and its anomaly flags; and the match counts. `ReplayResult.to_json()` is the CLI's
`--json` output.

Choices where the data leaves room:

- Vicuna80 match ids are the JSON text of `[question_id, first, second]` (compact), unambiguous
  whatever the names hold; the seeded draws hash these ids.
- Vicuna80 matches are replayed question by question (questions in the order of their first
  record, the pairs of one question in the order of theirs), as an arena plays rounds, each round
  one prompt and every pairing. File order (grouped by judge and pair) would fill each judge's last
  50 votes with one pairing, and the collusion rule would read the file layout instead of the
  judge.
- The Vicuna80 judges are also the contestants and judge their own answers; the data has no owners,
  so the replay scores the votes as recorded (owner exclusion is a rule of `select_judges`, for
  drawing judges, not for reading votes already cast).
- Five judges vote on each Vicuna80 match, so a consensus needs three of them (more than half).
- No honeypots exist in the Vicuna80 data (there is no robotic response): a match the draw makes a
  honeypot (u < 0.05) is scored as an ordinary one, and never audited, since the audit band is
  0.05 <= u < 0.15. In the generic format the file says which matches were audited and which were
  honeypots; the seed plays no part there.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from trust.core.ranking.anomalies import AnomalyFlags
from trust.core.ranking.credibility import (
    Choice,
    CredibilityBook,
    JudgedMatch,
    JudgeState,
    MatchKind,
    MatchOutcome,
    Order,
    Seed,
    Side,
    Vote,
    schedule,
)
from trust.core.ranking.records import item_name, json_lines, read_judgments, read_text
from trust.errors import RankingError, RecordError

__all__ = ["HUMAN_JUDGE", "JudgeReport", "ReplayResult", "VoteRecords", "read_votes", "replay"]

HUMAN_JUDGE = "human"
"""The Vicuna80 judge whose votes are the audit verdicts, never a peer's votes."""

Format = Literal["generic", "vicuna80"]
_CHOICES: dict[str, Choice] = {"a": "a", "b": "b", "tie": "tie"}
_SIDES: dict[str, Side] = {"a": "a", "b": "b"}
_ORDERS: dict[str, Order] = {"ab": "ab", "ba": "ba"}
_VICUNA_CHOICES: dict[int, Choice] = {1: "a", 2: "b", 3: "tie"}
_MATCH_FIELDS = ("a", "b", "audit", "honeypot", "response_a", "response_b")
"""The fields every record of one match must agree on."""
_OPTIONAL_FIELDS = ("response_a", "response_b")
"""Of those, the ones a record may leave out (null or absent) while another gives them."""


@dataclass(frozen=True, slots=True)
class VoteRecords:
    """The matches of a vote file, in replay order. `audit_verdicts` holds the verdicts a seeded draw
    may apply (Vicuna80: the human majority per match); the generic format puts its audits in the
    matches themselves and leaves this empty."""

    source: str
    format: Format
    matches: tuple[JudgedMatch, ...]
    audit_verdicts: Mapping[str, Choice] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------ reading


def _enum(source: str, number: int, record: Mapping[str, Any], name: str, allowed: Mapping[str, Any]) -> Any:
    value = record.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or value not in allowed:
        options = ", ".join(repr(a) for a in allowed)
        raise RecordError(source, number, name, f"expected one of {options} or null, got {value!r}")
    return allowed[value]


def _text(source: str, number: int, record: Mapping[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is not None and not isinstance(value, str):
        raise RecordError(source, number, name, f"expected a string or null, got {value!r}")
    return value


def _generic(path: Path) -> VoteRecords:
    source = str(path)
    fixed: dict[str, dict[str, Any]] = {}
    first_record: dict[str, int] = {}
    votes: dict[str, dict[str, Vote]] = defaultdict(dict)
    for number, record in json_lines(path):
        match_id = item_name(source, number, record, "match")
        a, b = item_name(source, number, record, "a"), item_name(source, number, record, "b")
        if a == b:
            raise RecordError(source, number, "b", f"a self-comparison: {a!r} against itself")
        judge = item_name(source, number, record, "judge")
        if "vote" not in record:
            raise RecordError(source, number, "vote", "missing")
        vote = _enum(source, number, record, "vote", _CHOICES)
        if vote is None:
            raise RecordError(source, number, "vote", "expected 'a', 'b' or 'tie', got null")
        shown: Order = _enum(source, number, record, "shown", _ORDERS) or "ab"
        audit = _enum(source, number, record, "audit", _CHOICES)
        honeypot = _enum(source, number, record, "honeypot", _SIDES)
        if audit is not None and honeypot is not None:
            raise RecordError(source, number, "honeypot", "a match is audited or a honeypot, not both")
        values = {
            "a": a,
            "b": b,
            "audit": audit,
            "honeypot": honeypot,
            "response_a": _text(source, number, record, "response_a"),
            "response_b": _text(source, number, record, "response_b"),
        }
        known = fixed.get(match_id)
        if known is None:
            fixed[match_id], first_record[match_id] = values, number
        elif values != known:  # the common case, every field alike, is one comparison
            for name in _MATCH_FIELDS:
                if name in _OPTIONAL_FIELDS and (values[name] is None or known[name] is None):
                    if known[name] is None:
                        known[name] = values[name]  # a response given only by a later record
                    continue
                if values[name] != known[name]:
                    raise RecordError(
                        source,
                        number,
                        name,
                        f"match {match_id!r} has {name} {values[name]!r} here but {known[name]!r} at record "
                        f"{first_record[match_id]}; every record of a match must agree",
                    )
        cast = votes[match_id]
        if judge in cast:
            raise RecordError(source, number, "judge", f"{judge!r} already voted in match {match_id!r}")
        cast[judge] = Vote(judge, vote, shown)
    matches = tuple(
        JudgedMatch(
            match_id,
            values["a"],
            values["b"],
            tuple(votes[match_id].values()),
            values["audit"],
            values["honeypot"],
            values["response_a"],
            values["response_b"],
        )
        for match_id, values in fixed.items()
    )
    return VoteRecords(source, "generic", matches)


def _vicuna80_id(question_id: int | str, first: str, second: str) -> str:
    return json.dumps([question_id, first, second], separators=(",", ":"), ensure_ascii=False)


def _vicuna80(path: Path, text: str) -> VoteRecords:
    source = str(path)
    judgments = read_judgments(path)
    line_numbers = [number for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    votes: dict[tuple[int | str, str, str], list[Vote]] = {}
    human: dict[tuple[int | str, str, str], list[int]] = defaultdict(list)
    questions: dict[int | str, int] = {}
    for judgment, number in zip(judgments, line_numbers, strict=True):
        key = (judgment.question_id, judgment.first, judgment.second)
        if judgment.judge == HUMAN_JUDGE:
            human[key].append(judgment.sign)
            continue
        questions.setdefault(judgment.question_id, len(questions))
        cast = votes.setdefault(key, [])
        if any(v.judge == judgment.judge for v in cast):
            raise RecordError(
                source,
                number,
                "judge",
                f"{judgment.judge!r} already judged {judgment.first!r} against {judgment.second!r} "
                f"on question {judgment.question_id!r}",
            )
        cast.append(Vote(judgment.judge, _VICUNA_CHOICES[judgment.score], "ab"))
    if not votes:
        raise RankingError(f"{source} holds no votes of a judge other than {HUMAN_JUDGE!r}")
    order = {key: index for index, key in enumerate(votes)}
    keys = sorted(votes, key=lambda key: (questions[key[0]], order[key]))
    matches = tuple(JudgedMatch(_vicuna80_id(*key), key[1], key[2], tuple(votes[key])) for key in keys)
    verdicts: dict[str, Choice] = {}
    for key in keys:
        signs = human.get(key)
        if signs:
            total = sum(signs)
            verdicts[_vicuna80_id(*key)] = "a" if total < 0 else "b" if total > 0 else "tie"
    return VoteRecords(source, "vicuna80", matches, verdicts)


def read_votes(path: str | Path) -> VoteRecords:
    """Reads a vote file in either format (see the module docstring)."""
    path = Path(path)
    text = read_text(path)
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise RankingError(f"{path} holds no records")
    number, head = lines[0]
    try:
        first = json.loads(head)
    except json.JSONDecodeError as exc:
        raise RecordError(str(path), number, "(line)", f"not JSON: {exc.msg} at column {exc.colno}") from exc
    if isinstance(first, dict) and "judge" in first and "first" in first:
        return _vicuna80(path, text)
    return _generic(path)


# ------------------------------------------------------------------------------------------- replay


@dataclass(frozen=True, slots=True)
class JudgeReport:
    """One judge after a replay. Rates are shares in [0, 1], None where nothing was counted."""

    judge: str
    credibility: int
    active: bool
    votes: int
    agreement: float | None
    audits: int
    audit_agreement: float | None
    honeypots: int
    honeypot_failures: int
    lowest: int
    anomalies: AnomalyFlags

    @classmethod
    def of(cls, state: JudgeState) -> JudgeReport:
        return cls(
            state.judge,
            state.credibility,
            state.active,
            state.votes,
            state.agreement_rate,
            state.audits,
            state.audit_agreement_rate,
            state.honeypots,
            state.honeypots_failed,
            state.lowest,
            state.anomalies(),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "credibility": self.credibility,
            "active": self.active,
            "votes": self.votes,
            "agreement": self.agreement,
            "audits": self.audits,
            "audit_agreement": self.audit_agreement,
            "honeypots": self.honeypots,
            "honeypot_failures": self.honeypot_failures,
            "lowest": self.lowest,
            "anomalies": self.anomalies.to_json(),
        }


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """The book after every match. `matches` counts them all; `skipped` the plagiarized ones;
    `honeypots` the honeypots scored; `audited` the audited matches scored, `overturned` those whose
    audit overturned the consensus; `no_consensus` the scored non-honeypot matches without one.
    `outcomes` are the matches' outcomes in replay order."""

    judges: Mapping[str, JudgeReport]
    matches: int
    skipped: int
    audited: int
    honeypots: int
    no_consensus: int
    overturned: int
    outcomes: tuple[MatchOutcome, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "judges": {name: report.to_json() for name, report in self.judges.items()},
            "matches": self.matches,
            "skipped": self.skipped,
            "audited": self.audited,
            "honeypots": self.honeypots,
            "no_consensus": self.no_consensus,
            "overturned": self.overturned,
        }


def replay(records: VoteRecords | Iterable[JudgedMatch], seed: Seed) -> ReplayResult:
    """Scores every match in order through a fresh `CredibilityBook`. `seed` drives the audit draw
    over `records.audit_verdicts` (Vicuna80); matches that carry their own audit keep it."""
    if isinstance(records, VoteRecords):
        matches, verdicts = records.matches, records.audit_verdicts
    else:
        matches, verdicts = tuple(records), {}
    if not matches:
        raise RankingError("no matches to replay")
    book = CredibilityBook()
    outcomes = []
    for match in matches:
        verdict = verdicts.get(match.match_id)
        if match.audit is None and match.honeypot is None and verdict is not None:
            if schedule(seed, match.match_id).audited:
                match = replace(match, audit=verdict)
        outcomes.append(book.process(match))
    scored = [o for o in outcomes if not o.skipped]
    return ReplayResult(
        judges={state.judge: JudgeReport.of(state) for state in sorted(book, key=lambda s: s.judge)},
        matches=len(outcomes),
        skipped=len(outcomes) - len(scored),
        audited=sum(1 for o in scored if o.kind is MatchKind.AUDITED),
        honeypots=sum(1 for o in scored if o.kind is MatchKind.HONEYPOT),
        no_consensus=sum(1 for o in scored if o.kind is not MatchKind.HONEYPOT and o.consensus is None),
        overturned=sum(1 for o in scored if o.overturned),
        outcomes=tuple(outcomes),
    )
