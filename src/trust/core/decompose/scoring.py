"""Reading rule-based scoring tasks and their steps (paper section 1.3): the rule table, the source
note, a rule step's claims and a final score, as plain data. Pure text parsing, no judgement.

Two users: the tier-1 grounding check (`trust.auditors.checks.grounding`, whose docstring states
what is read and how words are matched) judges a step against the task, and the deterministic
decomposer (`trust.core.decompose.rules`) recognizes a trace that applies a rule table (its problem
statement lists the rules; each rule application and the final score become nodes a checker can
decide). One reader, so what the decomposer routes to tier 1 is what the check reads.

A rule is one line "<name>: <n> point(s)", optionally signed and followed by "if <condition>"
("Hypertension: +1 point if present", "Age ≥ 65 years: 1 point"). Without a condition the rule holds
when its finding is present: a threshold rule when its name holds a comparison ("Age ≥ 65 years"),
a category rule when its name holds a category value ("Female sex"), else a finding rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

__all__ = [
    "FINAL_SCORE_RE",
    "Comparison",
    "NoteSection",
    "NoteStatement",
    "NoteValue",
    "Quote",
    "RuleKind",
    "ScoringRule",
    "ScoringTask",
    "SourceNote",
    "StepClaim",
    "final_score",
    "normalize_text",
    "parse_note",
    "parse_rules",
    "parse_step",
    "parse_task",
    "rule_step",
    "stated_score",
]

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


_RULE_MARK_RE = re.compile(
    r":\s*(?P<sign>[+-])?\s*(?P<points>\d+)\s+points?\b(?:(?P<if>\s+if\s+)"
    r"|(?=\s*[.;,]?\s*(?:$|\(|[^\W\d_][^:\n]{0,80}:\s*[+-]?\s*\d+\s+points?\b)))",
    re.IGNORECASE,
)
"""Where a rule line states its points: ": +1 point if <condition>", or ": 1 point" that ends the line
(a parenthetical or the next rule of a run-on line may follow). A bare ": 1 point" followed by more
prose ("Hypertension: 1 point, so the score is 1") is a step's claim, not a rule."""
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
    name = _BULLET_RE.sub("", name).strip(" \t.,;:")
    condition = condition.strip(" \t.,;:")
    if not name or not _content(_words(name)):
        return None
    value = -int(points) if sign == "-" else int(points)
    if not condition:
        # "Female sex: 1 point" scores a category value its name holds; "Age ≥ 65 years: 1 point" a
        # comparison; "Hypertension: 1 point" a finding that is present
        named = [w for w in _content(_words(name)) if any(w in group for group in _SEX_VALUES)]
        condition = named[0] if named else ("applicable" if _parse_comparisons(name) else "present")
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
            if mark["if"] is None:
                condition, end = "", mark.end()
            elif index + 1 < len(marks):
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
FINAL_SCORE_RE = re.compile(r"(?i)\b(?:final|total)\s+score\b[^\n=]*?[=:]\s*(?P<score>[+-]?\d+)(?!\w|\.\d)")


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


def stated_score(text: str) -> int | None:
    """The running score a node states last ("Score: 1", "Running score: 0")."""
    scores = list(_SCORE_RE.finditer(normalize_text(text)))
    return int(scores[-1]["score"]) if scores else None


def final_score(text: str) -> int | None:
    """The score a node states as final ("Final Score: CURB-65 = 2", "Total score: 3"), else None."""
    found = FINAL_SCORE_RE.search(normalize_text(text))
    return int(found["score"]) if found else None


def rule_step(text: str, rules: Sequence[ScoringRule]) -> tuple[ScoringRule, ...]:
    """The rules of `rules` that the header of `text` names ("CHF rule: ..."); empty when it names none."""
    split = _header(normalize_text(text))
    return _rules_named(split[0], rules) if split is not None else ()
