"""Deterministic, offline decomposition of a reasoning trace into an HDAG (paper section 2.1.4).

The paper builds HDAGs with a trained classifier or few-shot prompting (`trust.core.decompose.model`);
this module is the decomposer that always works: no model, no network, the same graph for the same
text. It follows the five construction steps with lexical cues instead of a model.

Two entry points:

- `from_steps(problem, steps)`: a trace already cut into steps (ProcessBench). The problem becomes the
  goal, every step a step node, in order; arithmetic written inside a step becomes operation children.
- `from_text(text)`: a raw chain of thought. It is segmented (paragraphs, else lines, else sentences),
  each unit classified as strategy, tactic or step by its wording, and relationships are read from
  discourse markers.

Rule-table traces. When the problem states a rule table (at least `MIN_TABLE_RULES` lines
"<name>: n point(s)", read by `trust.core.decompose.scoring`, the reader of the tier-1 grounding
check), a unit whose header names a rule ("CHF rule: ...") is a rule application and a unit stating a
final or total score the final score: both are steps, routed to tier 1 as checkable
(`route_tier(..., checkable=True)`). Their edges replace the lexical ones: goal -> unit (the notes
and the rules are every step's evidence), the latest unit stating a running score -> rule
application, every rule application -> final score; a step after the final score depends on it.

Node ids (stable: the same input always gives the same ids):

- `g0` the goal;
- `st1`, `st2`, ... strategies, `ta1`, ... tactics, `s1`, `s2`, ... steps, numbered in trace order
  within their level. In `from_steps`, `s{i+1}` is `steps[i]` (ProcessBench's 0-based step index i).
- `s3.op1`, `s3.op2`, ... the operations extracted from step `s3`, in the order written;
  `s3.code1`, ... fenced code blocks in step `s3` (operations for a tier-1 syntax or test run, with no
  `expression`).

Edges, all pointing the way information flows (source earlier in the trace, or the parent):

- decomposes_to: goal -> strategy -> tactic -> step -> operation. A tactic hangs under the latest
  strategy, a step under the latest tactic of the current strategy (else the strategy, else the goal).
- enables: a tactic -> the next tactic under the same strategy (the paper's v2 enables v3).
- depends_on: in `from_steps`, every step depends on the step before it (the steps are given as one
  chain). In both entry points, a step depends on the previous step when it opens with a consequence
  marker ("so", "then", "thus", ...) or uses one anywhere ("therefore", "hence", "using the above"),
  on step N when it says "step N", and on every earlier step that computed a number it uses (data
  flow: the latest step whose extracted operation produced that number, unless the number is already
  in the problem statement).
- validates: a step that checks ("let me verify", "double-check", "checking", ...) -> from the step
  it checks (the one it names, else the latest step sharing a number with it, else the previous one).
- contradicts: conservative. Only a step that both turns back ("but wait", "however", "actually",
  ...) and states an error ("wrong", "mistake", "contradicts", ...), from the step it names, else from
  the previous step. "But wait" alone is not a contradiction.

When a pair of steps gets several of these, the most specific wins: contradicts, then validates,
then depends_on.

Levels (from_text): a unit holding an extracted operation or a code block, a check or a
contradiction is a step (it executes); otherwise plan wording ("we'll use", "approach", "strategy",
"the plan", "let's ...") makes a strategy and method wording ("let x be", "denote", "we need to
find", "set up", "apply the formula") a tactic; the rest are steps. A strategy or tactic that nothing
hangs under is demoted to a step, because the paper requires leaves at step or operation level.

Operations and `expression`: only closed numeric arithmetic becomes an operation, written in Python
syntax that a tier-1 checker evaluates exactly (`trust.core.maths.arithmetic.check_expression`):
"12 * 3 = 36" gives "12 * 3 == 36". The calculations are those the project's one calculation
finder finds (`trust.core.maths.calculations.find_calculations`, which the tier-1 arithmetic check
uses too, after the one LaTeX and code clean-up of `trust.core.maths.text`): see it for where a
calculation starts and ends in prose (unit words, "p% of q", labels in parentheses, chains, a name
restated with a new value) and what it leaves out (code, labels, operands in words, sides that run
into words, two bare numbers, conversions such as "5 quarters = 5 * 25 cents", variables). An
operation is each "=" it finds that Python syntax spells, written with the engine's `to_python`
("x * 100 = p%" keeps p as the number: the % names the unit of the result); approximations (≈),
comparisons and factorials stay in their step. A decimal result is taken as rounded at the
precision written (`trust.core.maths.rounding`): "6 * 0.75 = 4.50" gives
"abs(6 * 0.75 - 4.50) <= 0.005" (half a unit of the last digit), and a result cut short
("1.636...") allows a whole unit of the last digit. Decision where the paper is vague: algebra
with variables stays inside its step for a tier-2 auditor.

Difficulty (2.1.4 step 2) is a score of four cues: formal notation beyond arithmetic (+1, +2 when
heavy), a specialist domain (+1), length (+1 over 80 words, +2 over 200), logical connectives
(+1 from 3, +2 from 6), and ground truth: a short unit whose claims were extracted as operations
(-1), a unit with no number and no operation to check (+1). Score <= 0 is easy, 1-2 medium, 3 or
more hard. Operations are always easy: a checker has their ground truth.

Domain: keyword lexicons (math, code, medical, legal, financial); the domain with the most distinct
terms wins if it has at least two, a specialist domain only when it beats math (so a word problem
about a loan stays math), ties to the higher-stakes domain; otherwise math when there is arithmetic,
else general. Every node carries the trace's domain and `stakes_for_domain(domain)`; tiers come
from `trust.core.graphs.routing.route_tier`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from trust.core.decompose.scoring import ScoringRule, final_score, parse_rules, rule_step, stated_score
from trust.core.graphs.hdag import Difficulty, EdgeType, Hdag, HdagNode, Level
from trust.core.graphs.routing import check_domain, route_tier, stakes_for_domain
from trust.core.graphs.validation import validate
from trust.core.maths import rounding
from trust.core.maths.calculations import find_calculations
from trust.core.maths.expressions import NUMBER, EvaluationError, Number, Percent, format_exact, to_python
from trust.core.maths.text import FENCE, plain_maths
from trust.errors import GraphError

__all__ = [
    "GOAL_ID",
    "UNSTATED_GOAL",
    "DecompositionLimits",
    "Operation",
    "Trace",
    "decompose",
    "detect_domain",
    "estimate_difficulty",
    "extract_operations",
    "from_steps",
    "from_text",
    "segment",
]

GOAL_ID = "g0"

MIN_TABLE_RULES = 2
"""A problem statement with at least this many scoring rules ("<name>: n point(s)", one a line) is a
rule table, and the trace is read as rule applications; one rule line alone is prose."""
UNSTATED_GOAL = "(the trace does not state its problem)"
"""Content of the goal when neither the caller nor the trace states the problem."""


@dataclass(frozen=True, slots=True)
class DecompositionLimits:
    """Bounds on what the decomposer accepts; a larger trace is refused with a clear error.

    The defaults fit any single chain of thought seen in practice (ProcessBench's longest GSM8K
    trace has 16 steps and under 5,000 characters) and keep one session under the contracts'
    ceiling on segments (4,096) even with several operations per step.
    """

    max_chars: int = 200_000
    max_units: int = 1_000
    max_operations_per_unit: int = 32

    def __post_init__(self) -> None:
        for name in ("max_chars", "max_units", "max_operations_per_unit"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise GraphError(f"DecompositionLimits.{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True, slots=True)
class Operation:
    """One checkable calculation: `text` as written (normalized), `expression` in Python syntax."""

    text: str
    expression: str
    result: str | None = None
    """The number the calculation produced, when its right side is a single number (for data flow)."""


# ============================================================================ arithmetic extraction


def extract_operations(text: str, *, limit: int | None = None) -> list[Operation]:
    """The closed numeric calculations written in `text`, in order, without duplicates.

    The calculations are those `trust.core.maths.calculations.find_calculations` finds; an operation
    is each "=" among them that Python syntax spells (see the module docstring). `limit` caps how
    many are returned.
    """
    found: list[Operation] = []
    seen: set[str] = set()
    for calculation in find_calculations(text):
        if calculation.relation != "=":
            continue  # approximations and comparisons stay in their step
        stated = calculation.right
        if isinstance(stated, Percent) and isinstance(stated.operand, Number):
            try:
                hundredfold = to_python(calculation.left).endswith("* 100")
            except EvaluationError:
                continue
            if hundredfold:
                stated = stated.operand  # "0.2 * 100 = 20%": % names the unit of the result
        try:
            left, right = to_python(calculation.left), to_python(stated)
        except EvaluationError:
            continue  # a factorial, a function, a variable: not arithmetic Python syntax spells
        expression = f"{left} == {right}"
        places = rounding.decimals(stated) if isinstance(stated, Number) else 0
        if calculation.truncated or places:
            # a decimal result is written at some precision (trust.core.maths.rounding): rounded there
            # (half a unit of its last decimal), or cut short before "..." (a whole unit)
            tolerance = rounding.unit(places) if calculation.truncated else rounding.half_unit(places)
            expression = f"abs({left} - {right}) <= {format_exact(tolerance)}"
        if expression in seen:
            continue
        seen.add(expression)
        number = right if isinstance(calculation.right, Number) else None
        found.append(Operation(calculation.written, expression, number))
        if limit is not None and len(found) >= limit:
            break
    return found


# ============================================================================ cues

_STRATEGY_RE = re.compile(
    r"\b(?:we(?:'ll| will| can| could| should| shall) (?:use|apply|try|solve|approach|tackle|break)"
    r"|i(?:'ll| will| can) (?:use|apply|try|solve|approach|tackle|break)"
    r"|let(?:'s| us) (?:use|apply|try|approach|solve|tackle|break|start by|consider|think|plan)"
    r"|approach|strategy|our plan|the plan|my plan|plan is|the idea is|the key (?:idea|insight)"
    r"|step[- ]by[- ]step|break (?:it|this|the problem) down)",
    re.IGNORECASE,
)
_LETS_RE = re.compile(r"\blet(?:'s| us)\b", re.IGNORECASE)
_TACTIC_RE = re.compile(
    r"\b(?:let(?:'s| us) (?:denote|define|call|set|say|find|calculate|compute|determine|figure out|identify)"
    r"|let [a-z]\w* (?:be|denote)|we need to (?:find|calculate|compute|determine|figure out|identify|know)"
    r"|(?:first|next|second|then|finally),? (?:we|i)(?:'ll| will| need| must| should| have to)"
    r"|identify|set up|denote|define|substitut\w*|apply (?:the|this) (?:formula|rule|theorem|identity)"
    r"|using the formula)",
    re.IGNORECASE,
)
_VERIFY_RE = re.compile(
    r"\b(?:let(?: me|'s| us) (?:verify|check|double[- ]check|confirm|make sure)|to (?:verify|check|confirm)"
    r"|verif(?:y|ying|ies|ied|ication)|double[- ]check\w*|sanity[- ]check|cross[- ]check"
    r"|checking|check(?:s)? (?:out|that|if|whether|again|this|our|my|the (?:answer|result|calculation))"
    r"|we can check|i(?:'ll| will) check|to confirm)",
    re.IGNORECASE,
)
_TURN_RE = re.compile(r"\b(?:but wait|wait|however|actually|hmm+|oops|on second thought|hold on)\b", re.IGNORECASE)
_ERROR_RE = re.compile(
    r"(?<!\bnot )(?<!\bno )(?<!n't )(?<!\bnothing )"  # "that is not wrong" states no error
    r"\b(?:contradict\w*|wrong|incorrect|mistake\w*|error|not (?:right|correct|true|possible)"
    r"|doesn'?t (?:match|add up|make sense)|does not (?:match|add up|make sense)|inconsistent|impossible)\b",
    re.IGNORECASE,
)
_LEAD_MARKER_RE = re.compile(
    r"^\W*(?:so|thus|therefore|hence|then|next|consequently|as a result|this means|that means|now)\b",
    re.IGNORECASE,
)
_ANY_MARKER_RE = re.compile(
    r"\b(?:therefore|thus|hence|consequently|using (?:the above|this|that|these|the (?:previous|result))"
    r"|from (?:the above|above|this|that|the previous)|as (?:computed|calculated|found) (?:above|earlier|before)"
    r"|(?:this|which) gives|plugging|substituting)\b",
    re.IGNORECASE,
)
_STEP_REF_RE = re.compile(r"\bstep\s+#?(\d{1,4})\b", re.IGNORECASE)
_STEP_LABEL_RE = re.compile(r"^\W*step\s+#?(\d{1,4})\b", re.IGNORECASE)
_HEADING_RE = re.compile(r"^\W*(?:step\s+#?\d{1,4}|#+\s*[^\n]{0,60}|\*\*[^*\n]{1,60}\*\*)\s*[:.]?\s*$", re.IGNORECASE)
_PROBLEM_RE = re.compile(r"^\W*(?:problem|question|task)\s*(?:statement)?\s*[:.]", re.IGNORECASE)
_TASK_LINE_RE = re.compile(r"^\W*(?:problem|question|task)\s*(?:statement)?\s*:", re.IGNORECASE | re.MULTILINE)


def _states_task(paragraph: str) -> bool:
    """Whether a trace's first paragraph is its problem statement: one of its lines opens with
    "Problem:", "Question:" or "Task:" (after notes or data, as in a clinical input), or it lists a
    rule table. Only a first paragraph followed by others is taken: the reasoning comes after it."""
    return bool(_TASK_LINE_RE.search(paragraph)) or len(parse_rules(paragraph)) >= MIN_TABLE_RULES


_FORMAL_RE = re.compile(
    r"\\(?:int|iint|oint|sum|prod|lim|sqrt|partial|infty|forall|exists|mathbb|binom|log|ln|sin|cos|tan|nabla)\b"
    r"|[∫∑∏√∂∞∀∃∇]|\b(?:theorem|lemma|proof|corollary|derivative|integral|integrate|differentiate|matrix"
    r"|eigen\w*|polynomial|modulo|logarithm|limit|vector|gradient|induction|converge\w*|bijection)\b"
    r"|\bd/d[a-z]\b|\b[a-z]\([a-z]\)\s*=",
    re.IGNORECASE,
)
_CONNECTIVE_RE = re.compile(
    r"\b(?:if|then|implies|because|since|suppose|assume|hence|therefore|contradiction|unless|otherwise|iff"
    r"|whenever|necessarily|consequently|thus)\b",
    re.IGNORECASE,
)

_LEXICON: dict[str, tuple[str, ...]] = {
    "math": (
        "equation", "solve", "calculate", "compute", "sum", "total", "product", "integral", "derivative",
        "fraction", "percent", "multiply", "divide", "subtract", "add", "algebra", "geometry", "probability",
        "theorem", "proof", "area", "perimeter", "average", "remainder", "ratio", "number", "integer",
    ),
    "code": (
        "python", "function", "def", "return", "variable", "compile", "compiler", "bug", "code", "program",
        "algorithm", "array", "loop", "class", "import", "javascript", "sql", "runtime", "exception", "api",
        "unit test", "stack trace", "git", "syntax", "recursion", "string", "script",
    ),
    "medical": (
        "patient", "diagnosis", "diagnose", "symptom", "symptoms", "dose", "dosage", "mg", "mg/kg", "treatment",
        "clinical", "disease", "drug", "medication", "therapy", "prescription", "blood pressure", "cancer",
        "infection", "physician", "hospital", "anticoagulation", "renal", "contraindicated", "adverse",
        "chronic", "acute", "cardiac", "guideline", "mmhg",
    ),
    "legal": (
        "contract", "plaintiff", "defendant", "statute", "court", "liability", "legal", "attorney",
        "jurisdiction", "tort", "clause", "breach", "precedent", "regulation", "compliance", "lawsuit", "judge",
        "appeal", "constitutional", "negligence", "litigation", "damages", "lawful", "unlawful",
    ),
    "financial": (
        "investment", "invest", "portfolio", "stock", "stocks", "bond", "bonds", "dividend", "interest rate",
        "loan", "mortgage", "tax", "capital gains", "asset", "assets", "equity", "hedge", "retirement",
        "inflation", "credit", "securities", "valuation", "cash flow", "roi", "annuity", "liquidity",
        "financial", "budget",
    ),
}  # fmt: skip
_DOMAIN_PRIORITY = ("medical", "legal", "financial", "code", "math")
_LEXICON_RE = {
    domain: [re.compile(rf"(?<![\w/]){re.escape(term)}(?![\w/])", re.IGNORECASE) for term in terms]
    for domain, terms in _LEXICON.items()
}


def detect_domain(text: str) -> str:
    """The subject area of `text` by keyword lexicon (rule in the module docstring)."""
    scores = {
        domain: sum(1 for pattern in patterns if pattern.search(text)) for domain, patterns in _LEXICON_RE.items()
    }
    has_arithmetic = bool(extract_operations(text, limit=1))
    if has_arithmetic:
        scores["math"] += 1
    best = max(_DOMAIN_PRIORITY, key=lambda d: (scores[d], -_DOMAIN_PRIORITY.index(d)))
    if scores[best] >= 2 and (best in ("code", "math") or scores[best] > scores["math"]):
        return best
    if scores["math"] >= 2 or has_arithmetic:
        return "math"
    return "general"


def estimate_difficulty(text: str, *, domain: str, operations: int = 0) -> Difficulty:
    """Easy / medium / hard from the four cues of 2.1.4 step 2 (weights in the module docstring)."""
    score = 0
    formal = len({m.group().lower() for m in _FORMAL_RE.finditer(text)})
    score += 2 if formal >= 4 else 1 if formal else 0
    if domain in ("medical", "legal", "financial"):
        score += 1
    words = len(text.split())
    score += 2 if words > 200 else 1 if words > 80 else 0
    connectives = len(_CONNECTIVE_RE.findall(text))
    score += 2 if connectives >= 6 else 1 if connectives >= 3 else 0
    if operations and words <= 60:
        score -= 1
    elif not operations and not NUMBER.search(text):
        score += 1
    if score <= 0:
        return Difficulty.EASY
    return Difficulty.MEDIUM if score <= 2 else Difficulty.HARD


# ============================================================================ segmentation


def _protect_fences(text: str) -> tuple[str, list[str]]:
    blocks: list[str] = []

    def keep(match: re.Match[str]) -> str:
        blocks.append(match.group())
        return f"\x00{len(blocks) - 1}\x00"

    return FENCE.sub(keep, text), blocks


def _restore(text: str, blocks: Sequence[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: blocks[int(m.group(1))], text)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z\\$\d])")
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|etc|vs|Dr|Mr|Mrs|Ms|Prof|Fig|Eq|approx|No)\.$")


def _sentences(text: str) -> list[str]:
    parts = _SENTENCE_END.split(text)
    merged: list[str] = []
    for part in parts:
        if merged and _ABBREVIATIONS.search(merged[-1]):
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    return merged


def segment(text: str) -> list[str]:
    """Reasoning units of a raw trace: paragraphs; else lines; else sentences (fences kept whole).

    A heading alone on its paragraph or line ("Step 2:", "**Plan**") is joined to the unit after it.
    """
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    protected, blocks = _protect_fences(normalized)
    parts = [p for p in re.split(r"\n\s*\n", protected) if p.strip()]
    if len(parts) <= 1:
        parts = [p for p in protected.split("\n") if p.strip()]
    if len(parts) <= 1:
        parts = [p for p in _sentences(protected.strip()) if p.strip()]
    units: list[str] = []
    pending = ""
    for part in parts:
        piece = part.strip()
        if _HEADING_RE.match(piece) and "\x00" not in piece:
            pending = f"{pending} {piece}".strip()
            continue
        units.append(_restore(f"{pending} {piece}".strip() if pending else piece, blocks))
        pending = ""
    if pending:
        units.append(_restore(pending, blocks))
    return units


# ============================================================================ building


@dataclass(slots=True)
class _Unit:
    position: int
    text: str
    level: Level
    operations: list[Operation]
    code_blocks: list[str]
    label: int | None  # "Step N:" as the trace numbers it
    node_id: str = ""
    numbers: set[Fraction] = field(default_factory=set)
    applies: tuple[ScoringRule, ...] = ()  # the rules of the problem's rule table this unit applies
    final: bool = False  # the unit states the final score of a rule table

    @property
    def checkable(self) -> bool:
        """A rule application or a final score: claims a tier-1 checker decides from the problem."""
        return bool(self.applies) or self.final


def _value(number: str) -> Fraction:
    """A number as written ("1,200", "4.50", ".5"), exactly: "4.5" and "4.50" are one value."""
    return Fraction(number.replace(",", ""))


def _numbers(text: str) -> set[Fraction]:
    return {_value(m.group()) for m in NUMBER.finditer(plain_maths(text))}


def _check_limits(chars: int, units: int, limits: DecompositionLimits) -> None:
    if chars > limits.max_chars:
        raise GraphError(
            f"trace is {chars:,} characters, over the limit of {limits.max_chars:,}: "
            "split it into several traces or raise DecompositionLimits.max_chars"
        )
    if units > limits.max_units:
        raise GraphError(
            f"trace has {units:,} reasoning units, over the limit of {limits.max_units:,}: "
            "split it into several traces or raise DecompositionLimits.max_units"
        )


def _empty() -> GraphError:
    return GraphError("trace is empty: there is no reasoning to decompose; pass the model's chain of thought")


def _classify(text: str, has_work: bool) -> Level:
    if has_work or _VERIFY_RE.search(text) or (_TURN_RE.search(text) and _ERROR_RE.search(text)):
        return Level.STEP
    if _STRATEGY_RE.search(text):
        return Level.STRATEGY
    if _TACTIC_RE.search(text):
        return Level.TACTIC
    if _LETS_RE.search(text):
        return Level.STRATEGY
    return Level.STEP


def _parents(units: Sequence[_Unit]) -> dict[int, int | None]:
    """Decomposition parent (a unit position, None for the goal) of each unit."""
    parent: dict[int, int | None] = {}
    strategy: int | None = None
    tactic: int | None = None
    for unit in units:
        if unit.level is Level.STRATEGY:
            parent[unit.position] = None
            strategy, tactic = unit.position, None
        elif unit.level is Level.TACTIC:
            parent[unit.position] = strategy
            tactic = unit.position
        else:
            parent[unit.position] = tactic if tactic is not None else strategy
    return parent


def _settle_levels(units: Sequence[_Unit]) -> dict[int, int | None]:
    """Demotes strategies and tactics that nothing hangs under until every one has a child."""
    while True:
        parent = _parents(units)
        has_child = {p for p in parent.values() if p is not None}
        childless = [u for u in units if u.level in (Level.STRATEGY, Level.TACTIC) and u.position not in has_child]
        if not childless:
            return parent
        for unit in childless:
            unit.level = Level.STEP


def _assign_ids(units: Sequence[_Unit]) -> None:
    counters = {Level.STRATEGY: 0, Level.TACTIC: 0, Level.STEP: 0}
    prefixes = {Level.STRATEGY: "st", Level.TACTIC: "ta", Level.STEP: "s"}
    for unit in units:
        counters[unit.level] += 1
        unit.node_id = f"{prefixes[unit.level]}{counters[unit.level]}"


def _read_scoring(goal_text: str, units: Sequence[_Unit]) -> None:
    """Marks the rule applications and final scores when the problem states a rule table; they are
    steps whatever their wording (a rule line such as "Age rule: identify the age ..." is no plan)."""
    rules = parse_rules(goal_text)
    if len(rules) < MIN_TABLE_RULES:
        return
    for unit in units:
        unit.applies = rule_step(unit.text, rules)
        unit.final = not unit.applies and final_score(unit.text) is not None
        if unit.checkable:
            unit.level = Level.STEP


def _build(
    goal_text: str,
    units: list[_Unit],
    *,
    chain: bool,
    domain: str | None,
    goal_numbers: set[Fraction],
) -> Hdag:
    _read_scoring(goal_text, units)
    parent = _settle_levels(units)
    _assign_ids(units)
    all_text = "\n".join([goal_text, *(u.text for u in units)])
    domain = check_domain(domain) if domain is not None else detect_domain(all_text)
    stakes = stakes_for_domain(domain)

    def node(
        node_id: str,
        level: Level,
        content: str,
        difficulty: Difficulty,
        expression: str | None = None,
        *,
        checkable: bool = False,
    ) -> None:
        tier = route_tier(level, difficulty, domain, stakes, checkable=checkable)
        hdag.add_node(HdagNode(node_id, level, content, difficulty, domain, stakes, tier, expression))

    def link(source: str, target: str) -> None:
        if hdag.edge_type(source, target) is None:
            hdag.add_edge(source, target, EdgeType.DEPENDS_ON)

    hdag = Hdag()
    node(GOAL_ID, Level.GOAL, goal_text, estimate_difficulty(goal_text, domain=domain))
    by_position = {u.position: u for u in units}
    steps = [u for u in units if u.level is Level.STEP]
    step_order = {u.position: i for i, u in enumerate(steps)}
    labels = {u.label: u for u in steps if u.label is not None}
    producers: dict[Fraction, _Unit] = {}  # number -> latest step whose operation produced it
    extra: dict[tuple[str, str], EdgeType] = {}
    rank = {EdgeType.DEPENDS_ON: 1, EdgeType.VALIDATES: 2, EdgeType.CONTRADICTS: 3}

    def relate(source: _Unit, target: _Unit, kind: EdgeType) -> None:
        key = (source.node_id, target.node_id)
        if source.position >= target.position or source.level is not Level.STEP:
            return
        if key not in extra or rank[kind] > rank[extra[key]]:
            extra[key] = kind

    def referenced(unit: _Unit) -> _Unit | None:
        for match in _STEP_REF_RE.finditer(unit.text):
            number = int(match.group(1))
            if unit.label is not None and number == unit.label:
                continue
            target = labels.get(number)
            if target is None and not labels and 1 <= number <= len(steps):
                target = steps[number - 1]
            if target is not None and target.position < unit.position:
                return target
        return None

    previous_tactic: dict[int | None, _Unit] = {}
    scored: _Unit | None = None  # the latest unit that states a running score
    applied: list[_Unit] = []  # the rule applications so far
    final: _Unit | None = None  # the latest final score
    for unit in units:
        difficulty = estimate_difficulty(unit.text, domain=domain, operations=len(unit.operations))
        node(unit.node_id, unit.level, unit.text, difficulty, checkable=unit.checkable)
        up = parent[unit.position]
        hdag.add_edge(GOAL_ID if up is None else by_position[up].node_id, unit.node_id, EdgeType.DECOMPOSES_TO)
        if not unit.checkable:
            if stated_score(unit.text) is not None and not applied:
                scored = unit  # "Running score: 0" before the first rule step
            if final is not None and unit.level is Level.STEP:
                link(final.node_id, unit.node_id)  # a conclusion drawn after the final score rests on it
        if unit.level is Level.TACTIC:
            before = previous_tactic.get(up)
            if before is not None:
                hdag.add_edge(before.node_id, unit.node_id, EdgeType.ENABLES)
            previous_tactic[up] = unit
        if unit.level is not Level.STEP:
            continue
        for index, operation in enumerate(unit.operations, start=1):
            op_id = f"{unit.node_id}.op{index}"
            node(op_id, Level.OPERATION, operation.text, Difficulty.EASY, operation.expression)
            hdag.add_edge(unit.node_id, op_id, EdgeType.DECOMPOSES_TO)
        for index, block in enumerate(unit.code_blocks, start=1):
            code_id = f"{unit.node_id}.code{index}"
            node(code_id, Level.OPERATION, block, Difficulty.EASY)
            hdag.add_edge(unit.node_id, code_id, EdgeType.DECOMPOSES_TO)

        if unit.checkable:
            # a rule-table trace: every rule step's evidence is the problem (notes and rules) and its
            # running score the latest score stated before it; the final score sums every rule step
            link(GOAL_ID, unit.node_id)
            sources = applied if unit.final else ([scored] if scored is not None else [])
            for earlier in sources:
                link(earlier.node_id, unit.node_id)
            if unit.final:
                final = unit
            else:
                applied.append(unit)
            if stated_score(unit.text) is not None:
                scored = unit
            continue

        order = step_order[unit.position]
        previous = steps[order - 1] if order > 0 else None
        named = referenced(unit)
        if previous is not None and (chain or _LEAD_MARKER_RE.search(unit.text) or _ANY_MARKER_RE.search(unit.text)):
            relate(previous, unit, EdgeType.DEPENDS_ON)
        if named is not None:
            relate(named, unit, EdgeType.DEPENDS_ON)
        used = unit.numbers - goal_numbers
        for source in sorted({producers[n].position for n in used if n in producers}):
            relate(by_position[source], unit, EdgeType.DEPENDS_ON)
        contradiction = bool(_TURN_RE.search(unit.text) and _ERROR_RE.search(unit.text))
        if contradiction or _VERIFY_RE.search(unit.text):
            checked = named
            if checked is None:
                sharing = [s for s in steps[:order] if s.numbers & unit.numbers - goal_numbers]
                checked = sharing[-1] if sharing else previous
            if checked is not None:
                relate(checked, unit, EdgeType.CONTRADICTS if contradiction else EdgeType.VALIDATES)
        for operation in unit.operations:
            if operation.result is not None:
                producers[_value(operation.result)] = unit

    for (upstream, downstream), kind in extra.items():
        if hdag.edge_type(upstream, downstream) is None:
            hdag.add_edge(upstream, downstream, kind)
    validate(hdag)
    return hdag


def _make_unit(position: int, text: str, limits: DecompositionLimits, *, classify: bool) -> _Unit:
    protected, blocks = _protect_fences(text)
    operations = extract_operations(protected, limit=limits.max_operations_per_unit)
    code_blocks = blocks[: max(0, limits.max_operations_per_unit - len(operations))]
    level = _classify(text, bool(operations or code_blocks)) if classify else Level.STEP
    label_match = _STEP_LABEL_RE.match(text)
    unit = _Unit(position, text, level, operations, code_blocks, int(label_match.group(1)) if label_match else None)
    unit.numbers = _numbers(re.sub(r"\x00\d+\x00", " ", protected))
    return unit


def from_steps(
    problem: str | None,
    steps: Sequence[str],
    *,
    domain: str | None = None,
    limits: DecompositionLimits | None = None,
) -> Hdag:
    """The HDAG of a trace given as ordered steps: `g0` the problem, `s{i+1}` for `steps[i]`.

    `domain` overrides the lexicon's guess. Raises `GraphError` for an empty or oversized trace, a
    step that is not text or is blank; the result passes `trust.core.graphs.validation.validate`.
    """
    limits = limits or DecompositionLimits()
    if isinstance(steps, str) or not isinstance(steps, Sequence):
        raise GraphError(f"steps must be a list of strings, got {type(steps).__name__}")
    if problem is not None and not isinstance(problem, str):
        raise GraphError(f"problem must be a string or None, got {type(problem).__name__}")
    for index, step in enumerate(steps):
        if not isinstance(step, str):
            raise GraphError(f"steps[{index}] must be a string, got {type(step).__name__}")
    if not steps or all(not step.strip() for step in steps):
        raise _empty()
    _check_limits(len(problem or "") + sum(len(s) for s in steps), len(steps), limits)
    for index, step in enumerate(steps):
        if not step.strip():
            raise GraphError(f"steps[{index}] is blank: every step needs text; drop it or fill it in")
    goal_text = problem.strip() if problem and problem.strip() else UNSTATED_GOAL
    units = [_make_unit(i, step.strip(), limits, classify=False) for i, step in enumerate(steps)]
    return _build(goal_text, units, chain=True, domain=domain, goal_numbers=_numbers(goal_text))


def from_text(
    text: str,
    *,
    problem: str | None = None,
    domain: str | None = None,
    limits: DecompositionLimits | None = None,
) -> Hdag:
    """The HDAG of a raw chain of thought (segmentation, levels and edges in the module docstring).

    The goal is `problem` when given; else the trace's first unit when it opens with "Problem:",
    "Question:" or "Task:", or when it is a paragraph followed by others that states the task
    (`_states_task`); else `UNSTATED_GOAL`. After a goal paragraph, a single paragraph of reasoning
    is cut into its lines. Raises `GraphError` for an empty or oversized trace.
    """
    limits = limits or DecompositionLimits()
    if not isinstance(text, str):
        raise GraphError(f"trace must be text, got {type(text).__name__}")
    if problem is not None and not isinstance(problem, str):
        raise GraphError(f"problem must be a string or None, got {type(problem).__name__}")
    if not text.strip():
        raise _empty()
    _check_limits(len(text) + len(problem or ""), 0, limits)
    parts = segment(text)
    goal_text = problem.strip() if problem and problem.strip() else None
    if goal_text is None and parts and (_PROBLEM_RE.match(parts[0]) or (len(parts) > 1 and _states_task(parts[0]))):
        goal_text, parts = parts[0], parts[1:]
        if len(parts) == 1 and "\n" in parts[0].strip():
            parts = segment(parts[0])  # the reasoning after the problem, one step a line
    if not parts:
        raise GraphError(
            "trace holds only its problem statement: there is no reasoning to decompose; "
            "pass the model's chain of thought after the problem"
        )
    _check_limits(len(text), len(parts), limits)
    goal_text = goal_text or UNSTATED_GOAL
    units = [_make_unit(i, part, limits, classify=True) for i, part in enumerate(parts)]
    return _build(goal_text, units, chain=False, domain=domain, goal_numbers=_numbers(goal_text))


@dataclass(frozen=True, slots=True)
class Trace:
    """What a provider submits for decomposition: raw `text`, or `steps` already cut, and the problem.

    Exactly one of `text` and `steps` is set.
    """

    text: str | None = None
    steps: tuple[str, ...] | None = None
    problem: str | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.steps is None):
            raise GraphError("a trace needs exactly one of text (a raw chain of thought) or steps (a list of steps)")

    def render(self) -> str:
        """The trace as one text: the problem, then the text or the numbered steps."""
        body = (
            self.text
            if self.text is not None
            else "\n".join(f"Step {i + 1}: {s}" for i, s in enumerate(self.steps or ()))
        )
        return f"Problem: {self.problem}\n\n{body}" if self.problem else body


def decompose(trace: Trace, *, domain: str | None = None, limits: DecompositionLimits | None = None) -> Hdag:
    """`from_steps` or `from_text`, whichever fits the trace."""
    if trace.steps is not None:
        return from_steps(trace.problem, trace.steps, domain=domain, limits=limits)
    assert trace.text is not None  # __post_init__ guarantees one of the two
    return from_text(trace.text, problem=trace.problem, domain=domain, limits=limits)
