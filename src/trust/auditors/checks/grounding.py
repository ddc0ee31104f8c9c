"""Evidence grounding and rule coverage of rule-based scoring tasks (tier 1; paper sections 1.3, 3.1.1).

A scoring task (CHA2DS2-VASc, CURB-65, HAS-BLED, ...) gives a source note and a list of rules, one a
line, in the style of the paper's section 1.3:

    Patient Note: 58-year-old male ... Weight: 85 kg; serum creatinine: 1.4 mg/dL; ...
    Clinical Note: Patient has hypertension (on BP medications) ... No heart failure, ...
    Task: Calculate ... using the following scoring rules:
    Congestive heart failure: +1 point if present
    Age ≥75 years: +2 points if applicable
    Female sex: +1 point if female

and the trace answers with one step per rule, then a final score:

    Age ≥75 rule: Extract patient age from note: 58 years. Check: 58 < 75 → Add 0 points. Score: 0
    CHF rule: Extract from clinical note: “No heart failure” → Add 0 points. Score: 0
    Final Score: CHA2DS2-VASc = 2

Output-only auditing passes a trace that reaches the right total by coincidence; this check reads the
evidence instead. The auditor of a node sees that node and its direct parents only
(`trust.auditors.base.request_for`), so everything is taken from there: the task (rules and note)
from the parent that lists the rules, the previous running score from the other parents.

What it decides, on a *rule step* (a node whose header, the text before its first colon, names a
rule of the task):

(a) grounding: every number the step extracts or compares, other than the rule's own thresholds,
    points and the running score, must be a value the note gives under the rule's label. A number
    the note gives under another label is "variable confusion" (FACTUAL; the detail names both
    labels: the age rule comparing 85, the note's weight); a number the note never states is an
    "ungrounded value" (FACTUAL). Quoted text must occur in the note ("ungrounded quote", FACTUAL),
    in the note section the step names when it names one ("from clinical note: “...”"; otherwise
    "wrong evidence source", FACTUAL).
(b) support: a finding must cite note text that states it. For a finding rule ("Hypertension: +1
    point if present") one quote must mention the rule's condition, affirmed or negated; for a
    category rule ("Female sex: +1 point if female") the category's value; for a threshold rule
    ("Age ≥75 years") the step must cite the note's value of the variable. Otherwise "unsupported
    finding" (LOGICAL: the conclusion does not follow from what was cited, as when hypertension is
    inferred from “creatinine: 1.4 mg/dL”).
(c) one step, one rule: a header naming two of the task's rules ("Vascular + Sex combined") is
    "combined rules" (LOGICAL: independent rules evaluated as one).
(d) arithmetic: the points added must follow from the finding and the rule (present or applicable:
    +n; absent or not applicable: 0), else "wrong points" (FACTUAL), and the running score must be
    the previous step's score plus the points, else "wrong running score" (FACTUAL).

On the *final node* (it states "Final Score: ... = N" or "Total score: N") whose parents are the rule
steps:

(e) coverage: every rule of the task has a step among the parents, else "skipped rule" (LOGICAL: the
    reasoning is incomplete) naming the missing rules; and N equals the sum of the steps' points,
    else "wrong total" (FACTUAL). A final node whose parents do not hold the whole chain of steps
    (their points do not add up to the highest running score among them) cannot be judged for
    coverage: that is NOT_APPLICABLE, never a guess.

NOT_APPLICABLE also for any node with no rule list in reach (not a scoring task), for the node that
states the task, for nodes that neither name a rule nor state a final score (a strategy), and for a
step whose variable or condition the note never mentions and that cites nothing (the note cannot
decide it). A node with several problems fails on the first in the order (c), (a), (b), (d); the
detail lists them all.

Matching is general, not a table of one score. Rule names, step headers, note labels and quotes are
compared as sets of lowercased content words (stop words dropped, a plural "s" stripped), numbers
included, so "Age ≥75 rule" names "Age ≥75 years" and not "Age 65-74 years". A word written as an
acronym stands for consecutive words whose initials it spells, in either text ("CHF" for "Congestive
heart failure", "RR" for "Respiratory rate", "BP" for "blood pressure"). A slash means "or" ("Prior
stroke/TIA" is mentioned by "stroke" or by "TIA"). A header names a rule when all its content words
(less generic ones such as "rule", "combined") are words of the rule; a text mentions a finding rule
when it covers at least half of the rule's words, one of them specific (not a generic head word such
as "disease" or "history": "kidney disease" does not mention "Vascular disease"). Labels match when
the words of one include the words of the other ("urea" and "blood urea", not "heart rate" and
"respiratory rate"). The fixed word lists are generic English and clinical ones (stop words, negation
cues, generic head words); the one piece of domain vocabulary is the two values of sex, which
category rules name ("if female": "male" and "woman" are values of the same category).

Plain and Unicode spellings are equivalent: ≥ and >=, ≤ and <=, → and ->, ∉, curly and straight
double quotes, the LaTeX forms of the paper's text extraction (\\geq, \\rightarrow, \\notin) and its
"<<" for "<". Numbers with thousands separators ("1,200") are not read as one value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from trust.auditors.base import AuditRequest, CheckResult, Outcome, node_text
from trust.core.graphs.refinement import ErrorType

__all__ = [
    "CHECK_NAME",
    "Comparison",
    "GroundingCheck",
    "NoteSection",
    "NoteStatement",
    "NoteValue",
    "Quote",
    "RuleKind",
    "ScoringRule",
    "ScoringTask",
    "SourceNote",
    "StepClaim",
    "normalize_text",
    "parse_note",
    "parse_rules",
    "parse_step",
    "parse_task",
]

CHECK_NAME = "grounding"

MAX_HEADER_CHARS = 80
"""A step's header (the rule it applies) is the text before its first colon, when that colon comes
within this many characters and before any quote; a longer lead is prose, not a header."""

MAX_LABEL_WORDS = 4
"""The most words a note label takes before its value ("serum creatinine: 1.4 mg/dL")."""

ATTRIBUTION_WINDOW_CHARS = 60
"""How far before a quote the step may name the note section it quotes ("from clinical note: “...”")."""

MIN_ACRONYM_WORDS = 2
MAX_ACRONYM_WORDS = 6
"""An acronym stands for 2 to 6 consecutive words ("BP": blood pressure; "CHF": congestive heart
failure); the upper bound keeps matching linear in the length of a long quote."""

# ------------------------------------------------------------------------------------------ text


_PLAIN_FORMS: tuple[tuple[str, str], ...] = (
    ("\\geq", "≥"),
    ("\\leq", "≤"),
    ("\\notin", "∉"),
    ("\\rightarrow", "→"),
    ("\\ll", "<"),
    ("\\gg", ">"),
    ("\u2013", "-"),
    ("\u2014", "-"),
    ("\u2212", "-"),
    ("\u00a0", " "),
    (">=", "≥"),
    ("<=", "≤"),
    ("->", "→"),
    ("<<", "<"),
    (">>", ">"),
    ("≪", "<"),
    ("≫", ">"),
    ("``", "“"),
    ("''", "”"),
)


def normalize_text(text: str) -> str:
    """One spelling for the symbols traces write in several ways (see the module docstring)."""
    for written, canonical in _PLAIN_FORMS:
        text = text.replace(written, canonical)
    return text


_WORD_RE = re.compile(r"[^\W\d_]+|\d+(?:\.\d+)?")
_NUMBER_RE = re.compile(r"(?<![\w.])(?<![^\W\d_]-)\d+(?:\.\d+)?(?!\.?\d)")
"""A number on its own: not part of a word or a name ("CHA2DS2", "CURB-65"), a decimal kept whole."""

_STOP_WORDS = frozenset(
    "a an the of with on in at for to from by and or nor is are was were be been has have had if as "
    "this that its it patient".split()
)
"""Words that carry no meaning when rule names, headers, labels and quotes are compared."""

_HEADER_WORDS = frozenset(
    "rule rules combined combination together both criterion criteria evaluation evaluate check step "
    "score scoring point points".split()
)
"""Words a step header adds around the rule it names ("Age ≥75 rule", "Vascular + Sex combined")."""

_GENERIC_HEADS = frozenset(
    "disease disorder history prior previous failure syndrome condition event status level rate score "
    "sign symptom finding".split()
)
"""Head words shared by many conditions: a text naming only these does not mention a rule
("kidney disease" is not "vascular disease")."""

_GENERIC_CONDITIONS = frozenset("present applicable met yes true positive documented".split())
"""Conditions that say "the rule holds" rather than naming a category value ("if female")."""

_SEX_VALUES: tuple[frozenset[str], frozenset[str]] = (
    frozenset({"female", "woman", "women", "girl"}),
    frozenset({"male", "man", "men", "boy"}),
)
"""The one category vocabulary: the two values of sex that clinical scores name ("if female")."""


def _stem(word: str) -> str:
    """A plural "s" dropped ("years" -> "year"), the same way on both sides of every comparison."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _words(text: str) -> list[str]:
    """The lowercased, stemmed words and numbers of `text`, in order, stop words included."""
    return [_stem(word.lower()) for word in _WORD_RE.findall(text)]


def _content(words: Iterable[str]) -> list[str]:
    return [word for word in words if word not in _STOP_WORDS]


def _is_number(word: str) -> bool:
    return word[:1].isdigit()


def _acronym_cover(words: Sequence[str], acronyms: Iterable[str]) -> set[int]:
    """Positions in `words` that one of `acronyms` spells with the initials of a run of them."""
    covered: set[int] = set()
    targets = {a for a in acronyms if len(a) >= MIN_ACRONYM_WORDS and not _is_number(a)}
    if not targets:
        return covered
    for start in range(len(words)):
        for stop in range(start + MIN_ACRONYM_WORDS, min(start + MAX_ACRONYM_WORDS, len(words)) + 1):
            initials = "".join(word[0] for word in words[start:stop])
            if initials in targets:
                covered.update(range(start, stop))
    return covered


def _covers(words: Sequence[str], other: Sequence[str]) -> bool:
    """Whether every content word of `words` is a word of `other` or an acronym of a run of its
    words, or part of a run of `words` spelled by an acronym in `other`."""
    mine = _content(words)
    if not mine:
        return False
    theirs = set(other)
    spelled_by_theirs = _acronym_cover(list(words), theirs)
    spelled_in_theirs: set[str] = set()
    for start in range(len(other)):
        for stop in range(start + MIN_ACRONYM_WORDS, min(start + MAX_ACRONYM_WORDS, len(other)) + 1):
            spelled_in_theirs.add("".join(word[0] for word in other[start:stop] if word))
    for position, word in enumerate(words):
        if word in _STOP_WORDS:
            continue
        if word in theirs or position in spelled_by_theirs:
            continue
        if not _is_number(word) and len(word) >= MIN_ACRONYM_WORDS and word in spelled_in_theirs:
            continue
        return False
    return True


def _labels_match(a: str, b: str) -> bool:
    """Two labels name the same variable when the words of one include the other's."""
    wa, wb = _words(a), _words(b)
    return bool(_content(wa)) and bool(_content(wb)) and (_covers(wa, wb) or _covers(wb, wa))


def _number(text: str) -> Decimal:
    return Decimal(text)


def _show_number(value: Decimal) -> str:
    return format(value.normalize(), "f") if value == value.to_integral_value() else str(value)


# ----------------------------------------------------------------------------------------- rules


class RuleKind(StrEnum):
    """How a rule decides: a stated condition, a value against a threshold, or a category value."""

    FINDING = "finding"  # "Hypertension: +1 point if present"
    THRESHOLD = "threshold"  # "Age ≥75 years: +2 points if applicable"
    CATEGORY = "category"  # "Female sex: +1 point if female"


@dataclass(frozen=True, slots=True)
class Comparison:
    """One test of a threshold rule: `label op value` ("age ≥ 75"), or `low <= label <= high` for a
    range ("age 65-74", op "range"). `unit` as written after the number ("years", "mmol/L")."""

    label: str
    op: str
    low: Decimal
    high: Decimal | None = None
    unit: str = ""

    def holds(self, value: Decimal) -> bool:
        if self.op == "range":
            return self.low <= value <= (self.high if self.high is not None else self.low)
        return {
            "≥": value >= self.low,
            ">": value > self.low,
            "≤": value <= self.low,
            "<": value < self.low,
            "=": value == self.low,
        }[self.op]

    def describe(self) -> str:
        if self.op == "range":
            return f"{self.label} {_show_number(self.low)}-{_show_number(self.high or self.low)}"
        return f"{self.label} {self.op} {_show_number(self.low)}"


@dataclass(frozen=True, slots=True)
class ScoringRule:
    """One rule of a scoring task: `name` as the task writes it, the points it adds and its condition.

    `comparisons` are the tests of a threshold rule, `value` the category value of a category rule
    ("female"); `labels` the variable names the rule reads (threshold rules) or its topic.
    """

    name: str
    points: int
    condition: str
    kind: RuleKind
    comparisons: tuple[Comparison, ...] = ()
    value: str | None = None

    @property
    def words(self) -> list[str]:
        return _words(self.name)

    @property
    def thresholds(self) -> frozenset[Decimal]:
        return frozenset(_number(w) for w in self.words if _is_number(w))

    @property
    def labels(self) -> tuple[str, ...]:
        if self.kind is RuleKind.THRESHOLD:
            return tuple(dict.fromkeys(c.label for c in self.comparisons))
        return (self.topic_text,)

    @property
    def topic_text(self) -> str:
        """The words of the rule's name as written, less numbers, stop words and the category value
        ("sex" of "Female sex", "prior stroke/TIA"); lower case but for acronyms."""
        excluded = set(_STOP_WORDS)
        if self.value is not None:
            excluded |= _category_group(self.value) | _opposite_group(self.value) | {self.value}
        kept = []
        for word in re.findall(r"[^\W\d_]+(?:/[^\W\d_]+)*", self.name):
            if all(_stem(part.lower()) in excluded for part in word.split("/")):
                continue
            kept.append("/".join(p if p.isupper() and len(p) > 1 else p.lower() for p in word.split("/")))
        return " ".join(kept)

    def describe(self) -> str:
        return f"'{self.name}' ({self.points:+d} if {self.condition})"


def _category_group(value: str) -> frozenset[str]:
    for group in _SEX_VALUES:
        if value in group:
            return group
    return frozenset({value})


def _opposite_group(value: str) -> frozenset[str]:
    for index, group in enumerate(_SEX_VALUES):
        if value in group:
            return _SEX_VALUES[1 - index]
    return frozenset()


_RULE_MARK_RE = re.compile(r":\s*(?P<sign>[+-])?\s*(?P<points>\d+)\s+points?\s+if\s+", re.IGNORECASE)
_CONDITION_END_RE = re.compile(r"\s*[.;](?:\s|$)|\s+[A-Z][A-Za-z ]{0,30}:|\s*$")
_BULLET_RE = re.compile(r"^\s*(?:[-*•·]|\d+[.)])\s+")
_COMPARISON_RE = re.compile(
    r"(?P<op>[≥≤<>=])\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>/[^\W\d_]+|%|[^\W\d_][\w/]*)?", re.UNICODE
)
_RANGE_RE = re.compile(
    r"(?<![\w.])(?P<low>\d+(?:\.\d+)?)\s*-\s*(?P<high>\d+(?:\.\d+)?)(?!\.?\d)\s*(?P<unit>/[^\W\d_]+|%|[^\W\d_][\w/]*)?"
)
_LABEL_STOP_RE = re.compile(r"[(),;:]|\b(?:or|and)\b", re.IGNORECASE)


def _comparison_label(name: str, before: int, lead: str) -> str:
    """The words before a comparison back to the nearest "(", ",", "or", "and"; the lead otherwise."""
    text = name[:before]
    stops = list(_LABEL_STOP_RE.finditer(text))
    label = text[stops[-1].end() :] if stops else text
    words = [w for w in label.split() if _content(_words(w))]
    return " ".join(words) if words else lead


def _parse_comparisons(name: str) -> tuple[Comparison, ...]:
    lead_end = len(name)
    for pattern in (_COMPARISON_RE, _RANGE_RE):
        found = pattern.search(name)
        if found:
            lead_end = min(lead_end, found.start())
    lead = name[: min(lead_end, name.find("(") if "(" in name else lead_end)].strip(" (,:")
    found_all: list[tuple[int, Comparison]] = []
    for match in _COMPARISON_RE.finditer(name):
        label = _comparison_label(name, match.start(), lead)
        found_all.append(
            (match.start(), Comparison(label, match["op"], _number(match["num"]), None, match["unit"] or ""))
        )
    for match in _RANGE_RE.finditer(name):
        label = _comparison_label(name, match.start(), lead)
        comparison = Comparison(label, "range", _number(match["low"]), _number(match["high"]), match["unit"] or "")
        found_all.append((match.start(), comparison))
    return tuple(c for _, c in sorted(found_all, key=lambda pair: pair[0]) if c.label)


def _make_rule(name: str, sign: str | None, points: str, condition: str) -> ScoringRule | None:
    name = _BULLET_RE.sub("", name).strip(" \t,;:")
    condition = condition.strip(" \t.,;:")
    if not name or not _content(_words(name)) or not condition:
        return None
    value = -int(points) if sign == "-" else int(points)
    head = condition.split()[0].lower()
    if head in _GENERIC_CONDITIONS:
        comparisons = _parse_comparisons(name)
        kind = RuleKind.THRESHOLD if comparisons else RuleKind.FINDING
        return ScoringRule(name, value, condition, kind, comparisons)
    return ScoringRule(name, value, condition, RuleKind.CATEGORY, (), _stem(head))


def _rule_spans(text: str) -> list[tuple[int, int, ScoringRule]]:
    """Every rule in `text` with its span; rules may be one a line or run on in one line."""
    found: list[tuple[int, int, ScoringRule]] = []
    offset = 0
    for line in text.split("\n"):
        marks = list(_RULE_MARK_RE.finditer(line))
        name_start: int | None = None
        for index, mark in enumerate(marks):
            if name_start is None:
                colon = line.rfind(":", 0, mark.start())
                name_start = colon + 1 if colon >= 0 else 0
            rest = line[mark.end() :]
            if index + 1 < len(marks):
                condition_match = re.match(r"\S+", rest)
                condition = condition_match.group(0) if condition_match else ""
                end = mark.end() + (condition_match.end() if condition_match else 0)
            else:
                stop = _CONDITION_END_RE.search(rest)
                condition = rest[: stop.start()] if stop else rest
                end = mark.end() + len(condition)
            rule = _make_rule(line[name_start : mark.start()], mark["sign"], mark["points"], condition)
            if rule is not None:
                found.append((offset + name_start, offset + end, rule))
            name_start = end
        offset += len(line) + 1
    return found


def parse_rules(text: str) -> tuple[ScoringRule, ...]:
    """The scoring rules `text` lists ("<name>: +<n> point(s) if <condition>"), in order."""
    return tuple(rule for _, _, rule in _rule_spans(normalize_text(text)))


# ------------------------------------------------------------------------------------------ note


@dataclass(frozen=True, slots=True)
class NoteSection:
    """One part of the source: `name` its label in lower case ("patient note"), "" when unnamed."""

    name: str
    text: str


@dataclass(frozen=True, slots=True)
class NoteValue:
    """A value the note states under a label: `weight` 85 `kg`; `written` as in the note."""

    label: str
    value: Decimal
    unit: str
    written: str
    section: str


@dataclass(frozen=True, slots=True)
class NoteStatement:
    """One clause or list item of the note, affirmed or negated ("no prior stroke/TIA": negated).

    `start` and `end` are offsets into its section's text."""

    text: str
    negated: bool
    section: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class SourceNote:
    """The evidence a step may cite: the note's sections, its labelled values and its statements."""

    sections: tuple[NoteSection, ...]
    values: tuple[NoteValue, ...]
    statements: tuple[NoteStatement, ...]

    @property
    def numbers(self) -> frozenset[Decimal]:
        """Every number the note writes, labelled or not."""
        return frozenset(_number(m.group(0)) for s in self.sections for m in _NUMBER_RE.finditer(s.text))

    def section(self, name: str) -> NoteSection | None:
        wanted = " ".join(_words(name))
        for section in self.sections:
            if " ".join(_words(section.name)) == wanted:
                return section
        return None

    def locate(self, quote: str) -> list[tuple[NoteSection, int, int]]:
        """Where `quote` occurs in the note (case and spacing aside, outer punctuation dropped)."""
        pattern = _quote_pattern(quote)
        if pattern is None:
            return []
        return [(s, m.start(), m.end()) for s in self.sections for m in pattern.finditer(s.text)]

    def values_for(self, label: str) -> list[NoteValue]:
        return [v for v in self.values if _labels_match(v.label, label)]


_NOTE_LABEL_RE = re.compile(r"(?i)\b(?P<name>(?:[^\W\d_]+\s+)?notes?)\s*:")
_TASK_LABEL_RE = re.compile(r"(?i)\btask\s*:")
_AGE_RE = re.compile(
    r"(?i)(?<![\w.])(?P<a>\d+)\s*-?\s*(?:years?|yrs?)\s*-?\s*old\b|(?<![\w.])(?P<b>\d+)\s*y/?o\b"
    r"|\baged\s+(?P<c>\d+)(?!\.?\d)"
)
_VALUE_RE = re.compile(
    r"(?<![\w.])(?P<num>\d+(?:\.\d+)?)(?:\s*/\s*(?P<num2>\d+(?:\.\d+)?))?(?!\.?\d)"
    r"\s*(?P<unit>/[^\W\d_]+|°\s?[CF]\b|%|[^\W\d_µ]+(?:/[^\W\d_]+)?)?"
)
_LABEL_RE = re.compile(r"([^\W\d_][^\W\d_'-]*(?:\s+[^\W\d_][^\W\d_'-]*){0," + str(MAX_LABEL_WORDS - 1) + r"})\s*$")
_LABEL_JOIN_RE = re.compile(r"(?i)(?:\s*[:=]|\s+(?:of|is|was|at))\s*$")
_CLAUSE_SPLIT_RE = re.compile(r"[;\n]|,\s|\.(?=\s|$)")
_SENTENCE_SPLIT_RE = re.compile(r"[;\n]|[.!?](?=\s|$)")
_ITEM_SPLIT_RE = re.compile(r",\s+|\s+(?:and|or|nor)\s+|\s+(?P<contrast>but|however|although|yet)\s+", re.IGNORECASE)
_NEGATION_RE = re.compile(r"(?i)\b(?:no|not|without|denies|denied|negative\s+for|absence\s+of|free\s+of|never|non)\b")
_POSTFIX_NEGATION_RE = re.compile(r"(?i)\b(?:absent|negative|ruled\s+out|denied|excluded)\W*$")
_AFFIRMING_RE = re.compile(r"(?i)\b(?:has|have|had|with|reports?|presents?|shows?|is|are|was|were|diagnosed)\b")


def _spans(text: str, splitter: re.Pattern[str], start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The non-blank pieces of text[start:end] between matches of `splitter`, as (start, end)."""
    end = len(text) if end is None else end
    pieces: list[tuple[int, int]] = []
    cursor = start
    for match in splitter.finditer(text, start, end):
        pieces.append((cursor, match.start()))
        cursor = match.end()
    pieces.append((cursor, end))
    trimmed = []
    for a, b in pieces:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            trimmed.append((a, b))
    return trimmed


def _is_negated(item: str) -> bool:
    return bool(_NEGATION_RE.search(item) or _POSTFIX_NEGATION_RE.search(item))


def _statements(section: NoteSection) -> list[NoteStatement]:
    """The section's list items with their polarity. A negation carries along a list ("No heart
    failure, stroke or vascular disease" negates all three) until an item affirms something itself."""
    found: list[NoteStatement] = []
    text = section.text
    for sentence_start, sentence_end in _spans(text, _SENTENCE_SPLIT_RE):
        carried = False
        contrasts = {m.end() for m in _ITEM_SPLIT_RE.finditer(text, sentence_start, sentence_end) if m["contrast"]}
        for start, end in _spans(text, _ITEM_SPLIT_RE, sentence_start, sentence_end):
            if start in contrasts:
                carried = False  # "never smoked but drinks alcohol": a contrast ends the negation
            item = text[start:end]
            if _is_negated(item):
                negated = True
            elif _AFFIRMING_RE.search(item):
                negated = False
            else:
                negated = carried
            carried = negated
            found.append(NoteStatement(item, negated, section.name, start, end))
    return found


def _values(section: NoteSection) -> list[NoteValue]:
    """Labelled values: "Weight: 85 kg", "serum creatinine: 1.4 mg/dL", "58-year-old" (age, years).
    "BP: 120/80 mmHg" gives both numbers under the label."""
    found: list[NoteValue] = []
    text = section.text
    taken: list[tuple[int, int]] = []
    for match in _AGE_RE.finditer(text):
        number = match["a"] or match["b"] or match["c"]
        found.append(NoteValue("age", _number(number), "years", f"{number} years", section.name))
        taken.append(match.span())
    for clause_start, clause_end in _spans(text, _CLAUSE_SPLIT_RE):
        for match in _VALUE_RE.finditer(text, clause_start, clause_end):
            if any(a <= match.start() < b for a, b in taken):
                continue
            lead = text[clause_start : match.start()]
            before = _LABEL_JOIN_RE.sub("", lead)
            label_match = _LABEL_RE.search(before)
            if label_match is None:
                continue
            if before == lead and before[: label_match.start()].strip():
                # no ":" / "of" / "is" joins label and value, so the label must open the clause
                # ("Respiratory rate 24/min"); "... and type 2 diabetes" is no value of "type"
                continue
            label = " ".join(label_match.group(1).split()).lower()
            if not _content(_words(label)):
                continue
            unit = (match["unit"] or "").strip()
            if unit.lower() in _STOP_WORDS:
                unit = ""
            for key in ("num", "num2"):
                if match[key]:
                    written = f"{match[key]}{unit}" if unit.startswith(("/", "%")) else f"{match[key]} {unit}".strip()
                    found.append(NoteValue(label, _number(match[key]), unit, written, section.name))
    return found


def _quote_pattern(quote: str) -> re.Pattern[str] | None:
    core = quote.strip().strip(' .,;:!?"“”')
    if not core:
        return None
    body = r"\s+".join(re.escape(part) for part in core.split())
    prefix = r"(?<!\w)" if core[0].isalnum() else ""
    suffix = r"(?!\w)" if core[-1].isalnum() else ""
    return re.compile(prefix + body + suffix, re.IGNORECASE)


def parse_note(text: str, *, rule_spans: Sequence[tuple[int, int]] = ()) -> SourceNote:
    """The evidence of a task's text: the sections after "<X> Note:" labels, each up to the next such
    label, "Task:" or the first rule; without such labels, the text before "Task:" or the rules."""
    text = normalize_text(text)
    ends = sorted({m.start() for m in _TASK_LABEL_RE.finditer(text)} | {start for start, _ in rule_spans})
    labels = list(_NOTE_LABEL_RE.finditer(text))
    sections: list[NoteSection] = []
    if labels:
        for index, label in enumerate(labels):
            stop = labels[index + 1].start() if index + 1 < len(labels) else len(text)
            stop = min([stop, *(e for e in ends if e >= label.end())])
            body = text[label.end() : stop].strip()
            if body:
                name = " ".join(label["name"].split()).lower()
                sections.append(NoteSection(re.sub(r"notes$", "note", name), body))
    else:
        body = text[: ends[0] if ends else len(text)].strip()
        if body:
            sections.append(NoteSection("", body))
    values = tuple(v for s in sections for v in _values(s))
    statements = tuple(st for s in sections for st in _statements(s))
    return SourceNote(tuple(sections), values, statements)


@dataclass(frozen=True, slots=True)
class ScoringTask:
    """A task's rules and the note its steps must cite."""

    rules: tuple[ScoringRule, ...]
    note: SourceNote


def parse_task(text: str) -> ScoringTask | None:
    """The scoring task `text` states, or None when it lists no rule."""
    text = normalize_text(text)
    spans = _rule_spans(text)
    if not spans:
        return None
    note = parse_note(text, rule_spans=[(start, end) for start, end, _ in spans])
    return ScoringTask(tuple(rule for _, _, rule in spans), note)


# ------------------------------------------------------------------------------------------ steps


@dataclass(frozen=True, slots=True)
class Quote:
    """Text a step quotes, and the note section it says it took it from (None: it does not say)."""

    text: str
    source: str | None


@dataclass(frozen=True, slots=True)
class StepClaim:
    """What a rule step claims: the rules its header names, its quotes, the numbers it extracts or
    compares outside quotes (`values`) and inside them (`quoted_values`), the points it adds and its
    running score."""

    header: str
    rules: tuple[ScoringRule, ...]
    quotes: tuple[Quote, ...]
    values: tuple[Decimal, ...]
    quoted_values: tuple[Decimal, ...]
    points: int | None
    score: int | None


_QUOTE_RE = re.compile(r"“(?P<a>[^”\n]*)”|\"(?P<b>[^\"\n]*)\"")
_ATTRIBUTION_RE = re.compile(r"(?i)\b(?P<word>[^\W\d_]+)\s+notes?\b(?:\W+\w+){0,2}?\W*$")
_ADD_RE = re.compile(r"(?i)\badd(?:s|ed|ing)?\s+(?P<points>[+-]?\s*\d+)\s+points?\b")
_POINTS_RE = re.compile(r"(?i)(?P<points>[+-]?\s*\d+)\s+points?\b")
_SCORE_RE = re.compile(r"(?i)\bscore\s*[:=]\s*(?P<score>[+-]?\d+)(?!\.?\d)(?:\s*[+=-]\s*\d+)*")
_FINAL_RE = re.compile(r"(?i)\b(?:final|total)\s+score\b[^\n=]*?[=:]\s*(?P<score>[+-]?\d+)(?![\w.])")


def _header(text: str) -> tuple[str, str] | None:
    """(header, body) of a step written "<header>: <body>"."""
    colon = text.find(":")
    quote = _QUOTE_RE.search(text)
    if colon <= 0 or colon > MAX_HEADER_CHARS or (quote is not None and quote.start() < colon):
        return None
    return text[:colon].strip(), text[colon + 1 :]


def _rules_named(header: str, rules: Sequence[ScoringRule]) -> tuple[ScoringRule, ...]:
    """The rules a header names, each part of "A + B" / "A and B" / "A, B" on its own; a part naming
    several rules names all of them unless one rule has exactly its words."""
    named: list[ScoringRule] = []
    for part in re.split(r"\s*(?:\+|&|,|;|\band\b)\s*", header):
        words = [w for w in _words(part) if w not in _HEADER_WORDS]
        if not _content(words):
            continue
        matching = [rule for rule in rules if _covers(words, rule.words)]
        exact = [rule for rule in matching if set(_content(rule.words)) == set(_content(words))]
        for rule in exact or matching:
            if rule not in named:
                named.append(rule)
    return tuple(named)


def _signed(text: str) -> int:
    return int(text.replace(" ", ""))


def parse_step(text: str, rules: Sequence[ScoringRule], note: SourceNote | None = None) -> StepClaim | None:
    """The claims of a rule step, or None when its header names none of `rules`. `note` lets a
    quote's attribution ("from clinical note") be resolved to one of the note's sections."""
    text = normalize_text(text)
    split = _header(text)
    if split is None:
        return None
    header, body = split
    named = _rules_named(header, rules)
    if not named:
        return None
    quotes: list[Quote] = []
    quoted_values: list[Decimal] = []
    cursor = 0
    for match in _QUOTE_RE.finditer(body):
        quoted = match["a"] if match["a"] is not None else (match["b"] or "")
        window = body[max(cursor, match.start() - ATTRIBUTION_WINDOW_CHARS) : match.start()]
        attribution = _ATTRIBUTION_RE.search(window)
        source = None
        if attribution is not None:
            source = f"{attribution['word'].lower()} note"
            if note is not None and note.section(source) is None:
                source = None
        quotes.append(Quote(quoted, source))
        quoted_values.extend(_number(m.group(0)) for m in _NUMBER_RE.finditer(quoted))
        cursor = match.end()
    unquoted = _QUOTE_RE.sub(" ", body)
    adds = list(_ADD_RE.finditer(unquoted))
    any_points = list(_POINTS_RE.finditer(unquoted))
    points = _signed(adds[-1]["points"]) if adds else (_signed(any_points[-1]["points"]) if any_points else None)
    scores = list(_SCORE_RE.finditer(unquoted))
    score = int(scores[-1]["score"]) if scores else None
    stripped = _SCORE_RE.sub(" ", _POINTS_RE.sub(" ", unquoted))
    values = tuple(_number(m.group(0)) for m in _NUMBER_RE.finditer(stripped))
    return StepClaim(header, named, tuple(quotes), values, tuple(quoted_values), points, score)


def _stated_score(text: str) -> int | None:
    """The running score a node states last ("Score: 1", "Running score: 0")."""
    scores = list(_SCORE_RE.finditer(normalize_text(text)))
    return int(scores[-1]["score"]) if scores else None


# ------------------------------------------------------------------------------------- judging


@dataclass(frozen=True, slots=True)
class _Problem:
    fault: str
    error_type: ErrorType
    detail: str
    expected: str | None = None


def _slots(rule: ScoringRule) -> list[frozenset[str]]:
    """The words of a rule's topic, one slot per written word, numbers and category values left out;
    "stroke/TIA" is one slot with two alternatives."""
    excluded: frozenset[str] = frozenset()
    if rule.value is not None:
        excluded = _category_group(rule.value) | _opposite_group(rule.value) | {rule.value}
    slots: list[frozenset[str]] = []
    for chunk in rule.name.split():
        alternatives = frozenset(w for w in _content(_words(chunk)) if not _is_number(w) and w not in excluded)
        if alternatives:
            slots.append(alternatives)
    return slots


def _mentions(text: str, rule: ScoringRule) -> bool:
    """Whether `text` speaks of the rule's condition (see the module docstring for the measure)."""
    words = _words(text)
    present = set(words)
    if rule.kind is RuleKind.CATEGORY and rule.value is not None:
        values = _category_group(rule.value) | _opposite_group(rule.value)
        if present & values:
            return True
    if rule.kind is RuleKind.THRESHOLD:
        return any(_covers(_words(label), words) for label in rule.labels)
    slots = _slots(rule)
    if not slots:
        return False
    rule_words = [w for slot in slots for w in sorted(slot)]
    spelled = {rule_words[i] for i in _acronym_cover(rule_words, present)}
    hit = [slot for slot in slots if slot & present or slot & spelled]
    specific = [slot for slot in hit if slot - _GENERIC_HEADS]
    return bool(specific) and 2 * len(hit) >= len(slots)


def _polarity(statements: Sequence[NoteStatement], rule: ScoringRule) -> bool | None:
    """True when the statements mentioning the rule affirm it, False when they negate it, None when
    none mentions it or they disagree. A category rule is affirmed by its value and negated by the
    other value of the category."""
    verdicts: set[bool] = set()
    for statement in statements:
        if not _mentions(statement.text, rule):
            continue
        if rule.kind is RuleKind.CATEGORY and rule.value is not None:
            present = set(_words(statement.text))
            if present & _category_group(rule.value):
                verdicts.add(not statement.negated)
            elif present & _opposite_group(rule.value):
                verdicts.add(False)
            else:
                continue
        else:
            verdicts.add(not statement.negated)
    return verdicts.pop() if len(verdicts) == 1 else None


def _expected_threshold(rule: ScoringRule, note: SourceNote) -> tuple[bool | None, list[NoteValue]]:
    """Whether the note's values meet the rule (None: undecidable), and the values it read."""
    read: list[NoteValue] = []
    undecided = False
    for comparison in rule.comparisons:
        values = note.values_for(comparison.label)
        distinct = {v.value for v in values}
        if len(distinct) != 1:
            undecided = True
            continue
        value = values[0]
        if comparison.unit and value.unit and not _units_agree(comparison.unit, value.unit):
            undecided = True
            continue
        read.append(value)
        if comparison.holds(value.value):
            return True, read
    return (None if undecided else False), read


def _units_agree(a: str, b: str) -> bool:
    x, y = _stem(a.lower().replace(" ", "")), _stem(b.lower().replace(" ", ""))
    return x == y or x.endswith(y) or y.endswith(x)


def _points(points: int) -> str:
    """Points as a step writes them: "+1 point", "0 points"."""
    return f"{points:+d} point" if abs(points) == 1 else f"{points:+d} points".replace("+0", "0")


def _signed_term(points: int) -> str:
    """A term of a running sum: "+ 1" or "- 1"."""
    return f"{'-' if points < 0 else '+'} {abs(points)}"


def _describe_values(values: Iterable[NoteValue]) -> str:
    return ", ".join(f"{v.label} {v.written}" for v in values)


def _quote_problems(
    claim: StepClaim, note: SourceNote
) -> tuple[list[_Problem], list[tuple[Quote, list[NoteStatement]]]]:
    """Quotes that are not in the note or not where the step says; the others with the statements
    they overlap."""
    problems: list[_Problem] = []
    located: list[tuple[Quote, list[NoteStatement]]] = []
    for quote in claim.quotes:
        places = note.locate(quote.text)
        if not places:
            problems.append(
                _Problem("ungrounded quote", ErrorType.FACTUAL, f"the quoted “{quote.text}” does not occur in the note")
            )
            continue
        if quote.source is not None and all(section.name != quote.source for section, _, _ in places):
            where = ", ".join(sorted({section.name or "the note" for section, _, _ in places}))
            problems.append(
                _Problem(
                    "wrong evidence source",
                    ErrorType.FACTUAL,
                    f"the step takes “{quote.text}” from the {quote.source}; it stands in the {where}",
                )
            )
        statements = [
            st
            for section, start, end in places
            for st in note.statements
            if st.section == section.name and st.start < end and start < st.end
        ]
        located.append((quote, statements))
    return problems, located


def _value_problems(claim: StepClaim, rule: ScoringRule, note: SourceNote) -> tuple[list[_Problem], list[NoteValue]]:
    """(a) for one rule: every number the step uses is the note's value under the rule's label.
    Returns the problems and the note values of the rule's variable the step cited."""
    problems: list[_Problem] = []
    cited: list[NoteValue] = []
    confused: list[tuple[Decimal, list[NoteValue]]] = []
    ungrounded: list[Decimal] = []
    numbers = list(claim.values)
    if rule.kind is RuleKind.THRESHOLD:
        numbers += list(claim.quoted_values)
    allowed = rule.thresholds | {Decimal(abs(rule.points))}
    all_numbers = note.numbers
    for number in dict.fromkeys(numbers):
        if number in rule.thresholds:
            continue
        under = [v for v in note.values if v.value == number]
        if rule.kind is RuleKind.THRESHOLD:
            mine = [v for v in under if any(_labels_match(v.label, label) for label in rule.labels)]
            if mine:
                cited.extend(mine)
            elif under:
                confused.append((number, under))
            elif number not in allowed:
                ungrounded.append(number)
        elif number not in all_numbers and number not in allowed:
            ungrounded.append(number)
    if confused:
        asked = " or ".join(label.lower() for label in rule.labels)
        truth = [v for label in rule.labels for v in note.values_for(label)]
        uses = "; ".join(
            f"{_show_number(n)} is the note's {' / '.join(dict.fromkeys(v.label for v in vs))} "
            f"({', '.join(dict.fromkeys(v.written for v in vs))})"
            for n, vs in confused
        )
        problems.append(
            _Problem(
                "variable confusion",
                ErrorType.FACTUAL,
                f"rule {rule.describe()} reads {asked}, but the step uses other variables: {uses}",
                _describe_values(truth) or None,
            )
        )
    if ungrounded:
        shown = ", ".join(_show_number(n) for n in ungrounded)
        problems.append(
            _Problem("ungrounded value", ErrorType.FACTUAL, f"the step uses {shown}, which the note never states")
        )
    return problems, cited


class GroundingCheck:
    """Tier-1 check of evidence grounding and rule coverage in rule-based scoring traces."""

    @property
    def name(self) -> str:
        return CHECK_NAME

    async def check(self, request: AuditRequest) -> CheckResult:
        return self.run(request)

    def run(self, request: AuditRequest) -> CheckResult:
        """The check, synchronously (it does no I/O): see the module docstring."""
        own = node_text(request.node)
        tasks: list[ScoringTask] = []
        others: list[str] = []
        for parent in request.parents:
            text = node_text(parent)
            task = parse_task(text)
            if task is None:
                others.append(text)
            else:
                tasks.append(task)
        if not tasks:
            if parse_task(own) is not None:
                return self._not_applicable("the node states the scoring task itself; it makes no claim to check")
            return self._not_applicable("no scoring rules in reach: the node is not part of a rule-based scoring task")
        task = ScoringTask(
            tuple(r for t in tasks for r in t.rules),
            SourceNote(
                tuple(s for t in tasks for s in t.note.sections),
                tuple(v for t in tasks for v in t.note.values),
                tuple(st for t in tasks for st in t.note.statements),
            ),
        )
        final = _FINAL_RE.search(normalize_text(own))
        if final is not None:
            return self._final(int(final["score"]), task, others)
        claim = parse_step(own, task.rules, task.note)
        if claim is None:
            return self._not_applicable(
                "the node names no rule of the task and states no final score: nothing to check against the rules"
            )
        return self._step(claim, task, others)

    # ----------------------------------------------------------------------------- rule steps

    def _step(self, claim: StepClaim, task: ScoringTask, others: Sequence[str]) -> CheckResult:
        note = task.note
        problems: list[_Problem] = []
        notes: list[str] = []
        undecided: list[str] = []
        if len(claim.rules) > 1:
            problems.append(
                _Problem(
                    "combined rules",
                    ErrorType.LOGICAL,
                    f"the step evaluates {len(claim.rules)} rules at once ("
                    + ", ".join(r.describe() for r in claim.rules)
                    + "); each rule needs its own step",
                )
            )
        quote_problems, located = _quote_problems(claim, note)
        problems.extend(quote_problems)
        expected_points: int | None = 0
        for rule in claim.rules:
            value_problems, cited = _value_problems(claim, rule, note)
            problems.extend(value_problems)
            holds, reason, support_problem = self._finding(rule, claim, located, cited, note)
            if support_problem is not None:
                problems.append(support_problem)
            if holds is None:
                if reason:
                    undecided.append(reason)
                expected_points = None
            else:
                notes.append(reason)
                if expected_points is not None:
                    expected_points += rule.points if holds else 0
        if claim.points is not None and expected_points is not None and claim.points != expected_points:
            problems.append(
                _Problem(
                    "wrong points",
                    ErrorType.FACTUAL,
                    f"the step adds {_points(claim.points)}; by the note and the rule it adds "
                    f"{_points(expected_points)}",
                    _points(expected_points),
                )
            )
        previous = [s for s in (_stated_score(text) for text in others) if s is not None]
        if len(previous) == 1 and claim.points is not None and claim.score is not None:
            running = previous[0] + claim.points
            if claim.score != running:
                problems.append(
                    _Problem(
                        "wrong running score",
                        ErrorType.FACTUAL,
                        f"the previous score {previous[0]} {_signed_term(claim.points)} is {running}, "
                        f"not the step's {claim.score}",
                        f"Score: {running}",
                    )
                )
            else:
                notes.append(f"score {previous[0]} {_signed_term(claim.points)} = {running}")
        if problems:
            first = problems[0]
            detail = f"'{claim.header}': " + "; ".join(p.detail for p in problems)
            return CheckResult(CHECK_NAME, Outcome.FAIL, detail, first.fault, first.error_type, first.expected)
        if undecided:
            return self._not_applicable(f"'{claim.header}': " + "; ".join(undecided))
        return CheckResult(CHECK_NAME, Outcome.PASS, f"'{claim.header}': " + "; ".join(notes))

    def _finding(
        self,
        rule: ScoringRule,
        claim: StepClaim,
        located: Sequence[tuple[Quote, list[NoteStatement]]],
        cited: Sequence[NoteValue],
        note: SourceNote,
    ) -> tuple[bool | None, str, _Problem | None]:
        """(b) for one rule: whether it holds by what the step cites (None: the note cannot decide),
        a line saying why, and the problem when the step cites nothing that states its finding."""
        adds = claim.points is not None and claim.points != 0
        if rule.kind is RuleKind.THRESHOLD:
            holds, read = _expected_threshold(rule, note)
            labels = " or ".join(label.lower() for label in rule.labels)
            if cited:
                shown = _describe_values(dict.fromkeys(cited))
                state = "meets" if holds else ("does not meet" if holds is False else "cannot be compared with")
                return holds, f"{shown} from the note {state} {rule.describe()}", None
            if read or holds is not None:
                return (
                    holds,
                    "",
                    _Problem(
                        "unsupported finding",
                        ErrorType.LOGICAL,
                        f"the step cites no value of {labels}; the note gives {_describe_values(read)}",
                        _describe_values(read) or None,
                    ),
                )
            if adds:
                return None, "", self._unsupported(rule, f"it adds points with no value of {labels} from the note")
            return None, f"the note gives no {labels}: {rule.describe()} cannot be checked", None
        supporting = [(quote, sts) for quote, sts in located if _mentions(quote.text, rule)]
        stated_in = [st for st in note.statements if _mentions(st.text, rule)]
        where = "; the note states it in " + ", ".join(f"“{st.text}”" for st in stated_in) if stated_in else ""
        if not supporting:
            if claim.quotes:
                quoted = ", ".join(f"“{q.text}”" for q in claim.quotes)
                reason = f"the step cites {quoted}, which does not state {rule.topic_text or rule.name}{where}"
                return _polarity(stated_in, rule), "", self._unsupported(rule, reason, stated_in)
            if stated_in:
                reason = f"the step cites no note text for {rule.topic_text or rule.name}{where}"
                return _polarity(stated_in, rule), "", self._unsupported(rule, reason, stated_in)
            if adds:
                return None, "", self._unsupported(rule, "it adds points with no note text that states the finding")
            return None, f"the note says nothing of {rule.topic_text or rule.name}: it cannot decide the step", None
        verdicts: set[bool] = set()
        for quote, statements in supporting:
            relevant = [st for st in statements if _mentions(st.text, rule)]
            if not relevant:
                relevant = [NoteStatement(quote.text, _is_negated(quote.text), "", 0, len(quote.text))]
            polarity = _polarity(relevant, rule)
            if polarity is not None:
                verdicts.add(polarity)
        holds = verdicts.pop() if len(verdicts) == 1 else None
        quoted = ", ".join(f"“{quote.text}”" for quote, _ in supporting)
        if holds is None:
            return None, f"{quoted} does not settle {rule.describe()}", None
        return holds, f"{quoted} shows that {rule.describe()} {'holds' if holds else 'does not hold'}", None

    @staticmethod
    def _unsupported(rule: ScoringRule, reason: str, stated_in: Sequence[NoteStatement] = ()) -> _Problem:
        """An unsupported finding; `expected` quotes the note text that does state it, when there is one."""
        expected = ", ".join(f"“{st.text}”" for st in stated_in) or None
        return _Problem("unsupported finding", ErrorType.LOGICAL, f"rule {rule.describe()}: {reason}", expected)

    # ----------------------------------------------------------------------------- final score

    def _final(self, stated: int, task: ScoringTask, others: Sequence[str]) -> CheckResult:
        claims = [c for c in (parse_step(text, task.rules, task.note) for text in others) if c is not None]
        if not claims:
            return self._not_applicable(
                "the final score's parents hold no rule step: coverage and the total cannot be checked here"
            )
        points = [c.points for c in claims]
        scores = [c.score for c in claims if c.score is not None]
        if any(p is None for p in points):
            return self._not_applicable("a rule step among the parents states no points: the total cannot be summed")
        total = sum(p for p in points if p is not None)
        if scores and max(scores) != total:
            return self._not_applicable(
                f"the parents' points add up to {total} but their running score reaches {max(scores)}: "
                "they are not the whole chain of rule steps, so coverage cannot be judged"
            )
        covered = {rule for c in claims for rule in c.rules}
        missing = [rule for rule in task.rules if rule not in covered]
        problems: list[_Problem] = []
        evaluated = f"{len(task.rules) - len(missing)}/{len(task.rules)} rules evaluated"
        if missing:
            consequences = []
            for rule in missing:
                holds = self._holds_by_note(rule, task.note)
                if holds is not None:
                    consequences.append(f"by the note it would add {rule.points if holds else 0:+d}")
            extra = f" ({'; '.join(consequences)})" if consequences else ""
            problems.append(
                _Problem(
                    "skipped rule",
                    ErrorType.LOGICAL,
                    f"{evaluated}; no step evaluates " + ", ".join(r.describe() for r in missing) + extra,
                )
            )
        if stated != total:
            problems.append(
                _Problem(
                    "wrong total",
                    ErrorType.FACTUAL,
                    f"the final score {stated} is not the sum of the steps' points, {total}",
                    str(total),
                )
            )
        if problems:
            first = problems[0]
            return CheckResult(
                CHECK_NAME,
                Outcome.FAIL,
                "; ".join(p.detail for p in problems),
                first.fault,
                first.error_type,
                first.expected,
            )
        return CheckResult(CHECK_NAME, Outcome.PASS, f"{evaluated}; final score {stated} = sum of the steps' points")

    @staticmethod
    def _holds_by_note(rule: ScoringRule, note: SourceNote) -> bool | None:
        if rule.kind is RuleKind.THRESHOLD:
            return _expected_threshold(rule, note)[0]
        return _polarity(note.statements, rule)

    @staticmethod
    def _not_applicable(detail: str) -> CheckResult:
        return CheckResult(CHECK_NAME, Outcome.NOT_APPLICABLE, detail)
