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
    the previous step's score plus the points, else "wrong running score" (FACTUAL). The sum is
    evaluated by the one maths engine (`trust.core.maths.arithmetic.check_expression`); a step whose
    only parent is the task is the first, and its sum starts at 0.

On the *final node* (it states "Final Score: ... = N" or "Total score: N") whose parents are the rule
steps:

(e) coverage: every rule of the task has a step among the parents, else "skipped rule" (LOGICAL: the
    reasoning is incomplete) naming the missing rules; and N equals the sum of the steps' points,
    else "wrong total" (FACTUAL); a rule evaluated by more than one step is a "repeated rule"
    (LOGICAL: each rule counts once). A final node whose parents do not hold the whole chain of steps
    (their points do not add up to the highest running score among them) cannot be judged for
    coverage: that is NOT_APPLICABLE, never a guess.

NOT_APPLICABLE also for any node with no rule list in reach (not a scoring task), for the node that
states the task, for nodes that neither name a rule nor state a final score (a strategy), and for a
step whose variable or condition the note never mentions and that cites nothing (the note cannot
decide it). A node with several problems fails on the first in the order (c), (a), (b), (d); the
detail lists them all.

The task and the steps are read by `trust.core.decompose.scoring` (the same reader the decomposer
uses to route rule steps here); a rule is "<name>: +n point(s) if <condition>" or "<name>: n
point(s)" alone on its line. Matching is general, not a table of one score. Rule names, step
headers, note labels and quotes are compared as sets of lowercased content words (stop words
dropped, a plural "s" stripped), numbers included, so "Age ≥75 rule" names "Age ≥75 years" and not
"Age 65-74 years". A word written as an acronym stands for consecutive words whose initials it
spells, in either text ("CHF" for "Congestive heart failure", "RR" for "Respiratory rate", "BP" for
"blood pressure"). A slash means "or" ("Prior stroke/TIA" is mentioned by "stroke" or by "TIA"). A
header names a rule when all its content words (less generic ones such as "rule", "combined") are
words of the rule; a text mentions a finding rule when it covers at least half of the rule's words,
one of them specific (not a generic head word such as "disease" or "history": "kidney disease" does
not mention "Vascular disease"). Labels match when the words of one include the words of the other
("urea" and "blood urea", not "heart rate" and "respiratory rate"). The fixed word lists are generic
English and clinical ones (stop words, negation cues, generic head words); the one piece of domain
vocabulary is the two values of sex, which category rules name ("if female": "male" and "woman" are
values of the same category).

Plain and Unicode spellings are equivalent: ≥ and >=, ≤ and <=, → and ->, ∉, curly and straight
double quotes, the LaTeX forms of the paper's text extraction (\\geq, \\rightarrow, \\notin) and its
"<<" for "<". Numbers with thousands separators ("1,200") are not read as one value.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from trust.auditors.base import AuditRequest, CheckResult, Outcome, node_text

# The reading of tasks and steps lives in the core, shared with the decomposer that routes rule
# steps here; the word-matching helpers are that module's internals, imported for the judging.
from trust.core.decompose.scoring import (
    _GENERIC_HEADS,
    FINAL_SCORE_RE,
    NoteStatement,
    NoteValue,
    Quote,
    RuleKind,
    ScoringRule,
    ScoringTask,
    SourceNote,
    StepClaim,
    _acronym_cover,
    _category_group,
    _content,
    _covers,
    _is_negated,
    _is_number,
    _labels_match,
    _opposite_group,
    _show_number,
    _stem,
    _words,
    normalize_text,
    parse_step,
    parse_task,
    stated_score,
)
from trust.core.graphs.refinement import ErrorType
from trust.core.maths.arithmetic import check_expression

__all__ = ["CHECK_NAME", "GroundingCheck"]

CHECK_NAME = "grounding"


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
        final = FINAL_SCORE_RE.search(normalize_text(own))
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
        previous = [s for s in (stated_score(text) for text in others) if s is not None]
        if not others:
            previous = [0]  # no parent but the task: the first step, and a sum starts at 0
        if len(previous) == 1 and claim.points is not None and claim.score is not None:
            # the running sum by the one maths engine, exactly as any other tier-1 arithmetic
            checked = check_expression(f"{previous[0]} + ({claim.points}) == {claim.score}")
            running = int(checked.left) if checked.left is not None else previous[0] + claim.points
            if checked.holds is False:
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
        times = {rule: sum(1 for c in claims if rule in c.rules) for rule in task.rules}
        repeated = [rule for rule in task.rules if times[rule] > 1]
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
        if repeated:
            problems.append(
                _Problem(
                    "repeated rule",
                    ErrorType.LOGICAL,
                    "each rule counts once; "
                    + ", ".join(f"{r.describe()} is evaluated by {times[r]} steps" for r in repeated),
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
