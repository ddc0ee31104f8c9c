"""The dual-layer audit of a CIG (paper section 2.2.4): node oracles (Layer 1) and edge oracles (Layer 2).

A `NodeOracle` scores one turn in [0, 1] from the turn, its parents' outputs and its observations
(the tool turns that directly answer it, such as the terminal that ran its code: running the code is
how section 2.2.4 audits code generation, and the log already holds the run). An `EdgeOracle`
scores one edge for protocol compliance and information fidelity, each in [0, 1]. An oracle returns
None where it has nothing to check, so oracles compose: `audit_cig` runs them all and keeps, per
node, the lowest score of the oracles that applied (1.0 where none found a fault), and per edge the
lowest protocol and the lowest fidelity score. Thresholds (tau_node, tau_edge of
`trust.settings.AuditSettings`) are applied later, by `trust.core.graphs.localize`, never here.

The deterministic oracles below check what is mechanical, and score 0.0 (a definite fault) or 1.0:

- `ExecutionOracle` (node): the code of a turn failed when run ("exitcode: 1 (execution failed)",
  a Traceback) in a tool turn that answers it; the fault is the code producer's, not the terminal's.
- `ArithmeticOracle` (node): "a op b = c" restated with a wrong c (re-computed, section 2.2.4's
  Segment Audit); c may be rounded to its own number of decimals.
- `ReviewVerdictOracle` (node): a reviewer whose output rejects its input (points out an error) is
  marked `rejects_input`, so that it is not taken as having approved an invalid parent (Negligent).
  It never lowers a score.
- `ContractOracle` (edge, protocol): a message that asks for JSON (declared by the log's `expects`,
  or said in words: "respond in JSON", "return only JSON") answered by prose, or by a JSON object
  that lacks a required field.
- `ValueFidelityOracle` (edge, fidelity): a labelled value ("Seattle population: 737,015",
  "author = Jane Doe") restated under the same label with another value (value corruption);
  rounding to fewer decimals is not corruption.

`LlmNodeOracle` is the Layer-1 oracle of a language model, through the `ChatModel` protocol of
`trust.core.decompose.model` (the network lives in the adapter `trust.adapters.llm.client.LlmClient`), and
`LlmEdgeOracle` its Layer-2 counterpart (protocol compliance and information fidelity of each
message, with the failure modes it saw); nothing here opens a socket.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from trust.core.chat import ChatMessage, ChatModel
from trust.core.graphs.cig import AgentTurn, Cig, CigEdge, EdgeOrigin, Role
from trust.errors import GraphError, LlmError

__all__ = [
    "ArithmeticOracle",
    "CigAudit",
    "ContractOracle",
    "EdgeAudit",
    "EdgeOracle",
    "EdgeScore",
    "EdgeVerdict",
    "ExecutionOracle",
    "FIDELITY_FAILURES",
    "LlmEdgeOracle",
    "LlmNodeOracle",
    "NodeAudit",
    "NodeOracle",
    "NodeVerdict",
    "PROTOCOL_FAILURES",
    "ReviewVerdictOracle",
    "ValueFidelityOracle",
    "audit_cig",
    "deterministic_edge_oracles",
    "deterministic_node_oracles",
    "json_object",
    "json_request",
    "labelled_values",
    "observations",
    "rejects",
    "wrong_equations",
]


def _unit(value: float, what: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value) or not 0 <= value <= 1:
        raise GraphError(f"{what} {value!r}: expected a number in [0, 1]")
    return float(value)


# ---------------------------------------------------------------------------------------------- verdicts


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    """One oracle's judgement of one turn: a validity score in [0, 1] and why.

    `rejects_input` is set on a reviewer turn whose output flags its input as wrong: such a reviewer
    did not approve an invalid parent, whatever its score.

    `expected` is the value the checker computed, when it computed one (a deterministic checker
    recomputing a wrong calculation does; a model's judgement does not): corrective feedback quotes
    it as the correct result (section 2.3.3), so nobody has to read it back out of `critique`.
    """

    score: float
    critique: str = ""
    rejects_input: bool = False
    expected: str | None = None

    def __post_init__(self) -> None:
        _unit(self.score, "node score")


@dataclass(frozen=True, slots=True)
class EdgeScore:
    """Layer-2 scores of one edge, each in [0, 1]: protocol compliance and information fidelity."""

    protocol: float = 1.0
    fidelity: float = 1.0

    def __post_init__(self) -> None:
        _unit(self.protocol, "protocol score")
        _unit(self.fidelity, "fidelity score")

    def fails(self, tau_edge: float) -> bool:
        """Algorithm 1 line 5: the edge fails when either check scores below tau_edge."""
        return self.protocol < tau_edge or self.fidelity < tau_edge


@dataclass(frozen=True, slots=True)
class EdgeVerdict:
    """One oracle's judgement of one edge."""

    score: EdgeScore
    findings: tuple[str, ...] = ()


@runtime_checkable
class NodeOracle(Protocol):
    """Layer 1: is a turn's output correct, complete and in role, given what it received?"""

    @property
    def name(self) -> str: ...

    def audit_node(
        self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]
    ) -> NodeVerdict | None: ...


@runtime_checkable
class EdgeOracle(Protocol):
    """Layer 2: did the message on an edge arrive intact and in the agreed format?"""

    @property
    def name(self) -> str: ...

    def audit_edge(self, edge: CigEdge, source: AgentTurn, target: AgentTurn) -> EdgeVerdict | None: ...


# ---------------------------------------------------------------------------------------------- audit


@dataclass(frozen=True, slots=True)
class NodeAudit:
    """The combined Layer-1 verdicts of one turn (see `audit_cig`). `expected` is the value the
    oracles computed for it (`NodeVerdict.expected`) when exactly one distinct value was stated;
    None when none was, or when two oracles disagree (feedback must not quote a guess)."""

    node_id: str
    score: float
    critique: tuple[str, ...] = ()
    rejects_input: bool = False
    oracles: tuple[str, ...] = ()
    expected: str | None = None


@dataclass(frozen=True, slots=True)
class EdgeAudit:
    source: str
    target: str
    score: EdgeScore
    findings: tuple[str, ...] = ()
    oracles: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CigAudit:
    """The audit of every node and every edge of one CIG."""

    nodes: Mapping[str, NodeAudit]
    edges: Mapping[tuple[str, str], EdgeAudit] = field(default_factory=dict)

    def node_scores(self) -> dict[str, float]:
        return {node_id: audit.score for node_id, audit in self.nodes.items()}

    def edge_scores(self) -> dict[tuple[str, str], EdgeScore]:
        return {key: audit.score for key, audit in self.edges.items()}

    def rejecting(self) -> frozenset[str]:
        """Turns whose output rejects their input (see `NodeVerdict.rejects_input`)."""
        return frozenset(node_id for node_id, audit in self.nodes.items() if audit.rejects_input)


def observations(cig: Cig, node_id: str) -> list[AgentTurn]:
    """The tool turns that directly answer `node_id` (a sequence or reference edge, not an overlap)."""
    found: list[AgentTurn] = []
    for child_id in cig.children(node_id):
        child = cig.turn(child_id)
        if child.role is Role.TOOL and cig.edge_origin(node_id, child_id) is not EdgeOrigin.OVERLAP:
            found.append(child)
    return found


def audit_cig(cig: Cig, node_oracles: Iterable[NodeOracle], edge_oracles: Iterable[EdgeOracle]) -> CigAudit:
    """Runs every oracle on every node and edge; see the module docstring for how scores combine."""
    node_oracles = list(node_oracles)
    edge_oracles = list(edge_oracles)
    nodes: dict[str, NodeAudit] = {}
    for turn in cig.turns():
        parents = [cig.turn(p) for p in cig.parents(turn.id)]
        seen = observations(cig, turn.id)
        score, rejects = 1.0, False
        critique: list[str] = []
        names: list[str] = []
        expected: set[str] = set()
        for oracle in node_oracles:
            verdict = oracle.audit_node(turn, parents, seen)
            if verdict is None:
                continue
            names.append(oracle.name)
            score = min(score, verdict.score)
            rejects = rejects or verdict.rejects_input
            if verdict.critique:
                critique.append(f"{oracle.name}: {verdict.critique}")
            if verdict.expected is not None:
                expected.add(verdict.expected)
        agreed = next(iter(expected)) if len(expected) == 1 else None
        nodes[turn.id] = NodeAudit(turn.id, score, tuple(critique), rejects, tuple(names), agreed)
    edges: dict[tuple[str, str], EdgeAudit] = {}
    for edge in cig.edges():
        source, target = cig.turn(edge.source), cig.turn(edge.target)
        protocol, fidelity = 1.0, 1.0
        findings: list[str] = []
        names = []
        for edge_oracle in edge_oracles:
            edge_verdict = edge_oracle.audit_edge(edge, source, target)
            if edge_verdict is None:
                continue
            names.append(edge_oracle.name)
            protocol = min(protocol, edge_verdict.score.protocol)
            fidelity = min(fidelity, edge_verdict.score.fidelity)
            findings.extend(f"{edge_oracle.name}: {finding}" for finding in edge_verdict.findings)
        edges[(edge.source, edge.target)] = EdgeAudit(
            edge.source, edge.target, EdgeScore(protocol, fidelity), tuple(findings), tuple(names)
        )
    return CigAudit(nodes, edges)


# ---------------------------------------------------------------------------------------------- execution

_CODE_BLOCK = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.S)
_CODE_LANGUAGES = frozenset({"", "python", "py", "python3", "sh", "bash", "shell", "console", "javascript", "js"})
_EXECUTION_FAILED = re.compile(
    r"exitcode:\s*(?P<code>-?[1-9]\d*)|\(execution failed\)|Traceback \(most recent call last\)", re.I
)
_ERROR_LINE = re.compile(r"^\s*(\w*(?:Error|Exception)\b.*)$", re.M)


def _has_code(text: str) -> bool:
    return any(match.group(1).lower() in _CODE_LANGUAGES for match in _CODE_BLOCK.finditer(text))


@dataclass(frozen=True, slots=True)
class ExecutionOracle:
    """A turn whose code failed when a tool turn ran it scores 0.0; see the module docstring."""

    name: str = "execution"

    def audit_node(
        self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]
    ) -> NodeVerdict | None:
        if not observations or not _has_code(node.output):
            return None
        for run in observations:
            if _EXECUTION_FAILED.search(run.output):
                errors = _ERROR_LINE.findall(run.output)
                detail = errors[-1].strip() if errors else run.output.strip().splitlines()[0]
                return NodeVerdict(0.0, f"its code failed when {run.agent} ran it at step {run.step}: {detail[:200]}")
        return NodeVerdict(1.0)


# ---------------------------------------------------------------------------------------------- arithmetic

_NUMBER = r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?"
_OPERATOR = r"[-+*/×÷]|\\times|\\cdot|\\div|(?<=\s)x(?=\s)"
_EQUATION = re.compile(rf"(?P<expr>(?:{_NUMBER})(?:\s*(?:{_OPERATOR})\s*(?:{_NUMBER}))+)\s*=\s*(?P<result>{_NUMBER})")
_TOKENS = re.compile(rf"\s*(?:(?P<num>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?)|(?P<op>{_OPERATOR}))")
_CONTINUES = "+-*/×÷^"


def _to_float(text: str) -> float:
    return float(text.replace(",", ""))


def _evaluate(expression: str) -> float | None:
    """Left-to-right with * and / before + and -; None when it is not a plain expression."""
    tokens: list[str | float] = []
    negate = False
    position = 0
    while position < len(expression):
        match = _TOKENS.match(expression, position)
        if match is None or match.end() == position:
            if expression[position:].strip() == "":
                break
            return None
        position = match.end()
        expect_number = not tokens or isinstance(tokens[-1], str)
        if match.group("num") is not None:
            if not expect_number:
                return None
            number = _to_float(match.group("num"))
            tokens.append(-number if negate else number)
            negate = False
        elif expect_number:
            if match.group("op") != "-" or negate:
                return None
            negate = True  # a sign: "-5 + 3", "0 + -1"
        else:
            op = match.group("op")
            tokens.append({"×": "*", "x": "*", "\\times": "*", "\\cdot": "*", "÷": "/", "\\div": "/"}.get(op, op))
    if len(tokens) < 3 or len(tokens) % 2 == 0:
        return None
    terms: list[float] = []
    signs: list[str] = []
    current = tokens[0]
    if not isinstance(current, float):
        return None
    for op, operand in zip(tokens[1::2], tokens[2::2], strict=True):
        if not isinstance(op, str) or not isinstance(operand, float):
            return None
        if op == "*":
            current *= operand
        elif op == "/":
            if operand == 0:
                return None
            current /= operand
        else:
            terms.append(current)
            signs.append(op)
            current = operand
    terms.append(current)
    total = terms[0]
    for sign, term in zip(signs, terms[1:], strict=True):
        total = total + term if sign == "+" else total - term
    return total


def _decimals(number: str) -> int:
    return len(number.split(".", 1)[1]) if "." in number else 0


def _misstated(text: str) -> list[tuple[str, float]]:
    """Each wrong "a op b = c" statement of `text`, as written, with the value a op b really has."""
    prose = _CODE_BLOCK.sub(" ", text)
    wrong: list[tuple[str, float]] = []
    for match in _EQUATION.finditer(prose):
        glued_before = prose[match.start() - 1 : match.start()]
        glued_after = prose[match.end() : match.end() + 1]
        if glued_before.isalnum() or glued_before in ("_", ".", ",") or glued_after.isalnum() or glued_after == "_":
            continue
        before = prose[: match.start()].rstrip()
        line_start = before[before.rfind("\n") + 1 :].strip()
        if before and before[-1] in _CONTINUES and line_start not in ("-", "*", "+"):
            continue  # "n + 2 * 3 = 11": the equation is the tail of a longer expression
        after = prose[match.end() :].lstrip(" \t")
        if after and after[0] in _CONTINUES + "=(%":
            continue  # "2 + 3 = 5 + 1", "50 / 200 = 25%"
        value = _evaluate(match.group("expr"))
        if value is None:
            continue
        stated = match.group("result")
        tolerance = 0.5 * 10 ** (-_decimals(stated)) + 1e-9 * max(1.0, abs(value))
        if abs(value - _to_float(stated)) > tolerance:
            wrong.append((match.group(0).strip(), value))
    return wrong


def wrong_equations(text: str) -> list[str]:
    """The "a op b = c" statements of `text` whose c is wrong (c may be rounded to its decimals),
    each followed by its correct value: "12 * 3 = 37 (it is 36)".

    An equation is skipped when something glued to its ends makes it part of a larger expression
    ("n + 2 * 3 = 11", "2 + 3 = 5 + 1", "2^3 = 8") or when it sits inside a code block.
    """
    return [f"{statement} (it is {value:,.10g})" for statement, value in _misstated(text)]


def _plain(value: float) -> str:
    if value.is_integer() and abs(value) <= 2**53:
        return str(int(value))
    return f"{value:.10g}"


@dataclass(frozen=True, slots=True)
class ArithmeticOracle:
    """A turn that states a wrong calculation scores 0.0; turns without calculations are skipped.

    The verdict's `expected` is the correct value of the first wrong calculation in the text, with
    no thousands separators: every digit of a whole number up to 2**53 ("36", "123456789012"), else
    10 significant digits ("3.333333333"); the critique lists the correct value of each (up to five).
    """

    name: str = "arithmetic"

    def audit_node(
        self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]
    ) -> NodeVerdict | None:
        if node.role is Role.TOOL or "=" not in node.output:
            return None
        wrong = _misstated(node.output)
        if wrong:
            listed = "; ".join(f"{statement} (it is {value:,.10g})" for statement, value in wrong[:5])
            return NodeVerdict(0.0, f"wrong calculation: {listed}", expected=_plain(wrong[0][1]))
        return None


# ---------------------------------------------------------------------------------------------- reviewer

_REJECTION = re.compile(
    r"\b(?:incorrect|is wrong|are wrong|was wrong|not correct|mistakes?|errors? in|discrepanc\w*|does not match"
    r"|doesn't match|do not match|inconsistent|inconsistency|failed|fails|reject\w*|needs? to be (?:fixed|corrected)"
    r"|cannot (?:be )?verif\w*|could not (?:be )?verif\w*|not verified|errors?|bugs?"
    r"|(?:correct|fix)(?:ed|ing)? (?:that|this|it|the (?:code|error|issue|mistake|calculation)))\b",
    re.I,
)
_NEGATION = re.compile(r"\b(?:no|without|free of|not any|zero|never)\s+(?:\w+\s+){0,2}$", re.I)


def rejects(text: str) -> bool:
    """Whether a reviewer's text flags what it reviewed as wrong (a negated mention does not count:
    "no discrepancies", "without errors")."""
    for match in _REJECTION.finditer(text):
        if not _NEGATION.search(text[max(0, match.start() - 40) : match.start()]):
            return True
    return False


@dataclass(frozen=True, slots=True)
class ReviewVerdictOracle:
    """Marks reviewer turns that reject their input; see the module docstring."""

    name: str = "review-verdict"

    def audit_node(
        self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]
    ) -> NodeVerdict | None:
        if node.role is not Role.REVIEWER:
            return None
        if rejects(node.output):
            return NodeVerdict(1.0, "rejects its input", rejects_input=True)
        return None


# ---------------------------------------------------------------------------------------------- contract

_JSON_REQUEST = re.compile(
    r"\b(?:respond|reply|answer|return|output|provide|give|format|write)\b(?:\s+[\w'\"-]+){0,8}?\s+(?:in|as|using)\s+"
    r"(?:a\s+|an\s+|valid\s+|strict\s+)*JSON\b|\bJSON\s+only\b|\bonly\s+(?:valid\s+)?JSON\b",
    re.I,
)
_REQUIRED_FIELDS = re.compile(r"\b(?:fields?|keys?)\b\s*[:(]?\s*((?:[`\"'][\w .-]+[`\"']\s*,?\s*(?:and\s+)?)+)", re.I)
_QUOTED_NAME = re.compile(r"[`\"']([\w .-]+)[`\"']")


def json_request(text: str) -> tuple[str, ...] | None:
    """None when `text` does not ask for JSON; else the required fields it names (maybe none)."""
    match = _JSON_REQUEST.search(text)
    if match is None:
        return None
    fields = _REQUIRED_FIELDS.search(text, max(0, match.start() - 200))
    if fields is None:
        return ()
    return tuple(dict.fromkeys(name.strip() for name in _QUOTED_NAME.findall(fields.group(1))))


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a reply holds: the whole text, a fenced block, or the outermost braces."""
    candidates = [text.strip()]
    candidates += [block.group(2) for block in _CODE_BLOCK.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


@dataclass(frozen=True, slots=True)
class ContractOracle:
    """Protocol compliance of replies to a message that asks for JSON; see the module docstring.

    Only direct replies are checked (reference and sequence edges, not overlap), and a tool turn is
    not held to the format of the message it executes.
    """

    name: str = "contract"

    def audit_edge(self, edge: CigEdge, source: AgentTurn, target: AgentTurn) -> EdgeVerdict | None:
        if edge.origin is EdgeOrigin.OVERLAP or target.role is Role.TOOL:
            return None
        if source.contract is not None:
            if source.contract.format != "json":
                return None
            required: tuple[str, ...] = source.contract.required
        else:
            found = json_request(edge.message)
            if found is None:
                return None
            required = found
        reply = json_object(target.output)
        if reply is None:
            return EdgeVerdict(EdgeScore(protocol=0.0), (f"{source.id} asked for JSON; {target.id} answered in prose",))
        missing = [name for name in required if name not in reply]
        if missing:
            listed = ", ".join(map(repr, missing))
            return EdgeVerdict(EdgeScore(protocol=0.0), (f"{target.id}'s JSON reply lacks required field(s) {listed}",))
        return EdgeVerdict(EdgeScore())


# ---------------------------------------------------------------------------------------------- fidelity

_LABELLED = re.compile(
    r"^[ \t>]*(?:[-*•+]|\d+[.)])?[ \t]*(?:\*\*)?(?P<label>[A-Za-z][\w ,()'/.&-]{0,60}?)(?:\*\*)?[ \t]*"
    r"(?::|=|\bis\b|\bwas\b|\bequals\b)[ \t]*(?:\*\*)?\$?[ \t]*"
    rf"(?:(?P<number>{_NUMBER})(?![\w.,]*\d)|(?P<name>[A-Z][\w'.-]*(?:[ \t]+[A-Z][\w'.-]*){{0,3}}))"
    r"(?:\*\*)?[ \t]*(?P<rest>[^\n]*)$",
    re.M,
)
_GENERIC_LABELS = frozenset({"code output", "output", "exitcode", "exit code", "result", "step", "note", "answer"})


_SENTENCE_BREAK = re.compile(r"[.!?]\s+")


def _normal_label(label: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", label.lower()))


def labelled_values(text: str) -> dict[str, tuple[str, str]]:
    """Label -> (kind, value) for lines such as "Seattle population: 737,015" or "author = Jane Doe",
    outside code blocks. A label given two different values in the same text is dropped (ambiguous);
    generic labels ("output", "result", "answer") are ignored because they are restated on purpose."""
    prose = _CODE_BLOCK.sub("\n", text)
    values: dict[str, tuple[str, str]] = {}
    ambiguous: set[str] = set()
    for match in _LABELLED.finditer(prose):
        label = _normal_label(_SENTENCE_BREAK.split(match.group("label"))[-1])
        if not label or label in _GENERIC_LABELS or label.split()[0] in ("step", "exitcode"):
            continue
        if match.group("number") is not None:
            if match.group("rest").lstrip().startswith(tuple("+-*/×÷^=x%")):
                continue  # "spoiled: 120 * 0.15 = 16" states a calculation, not a value
            value = ("number", match.group("number").replace(",", ""))
        else:
            rest = match.group("rest").strip()
            if rest and not rest.startswith(("(", ",", ".", ";")):
                continue  # a name followed by more prose is a sentence, not a value
            value = ("name", " ".join(match.group("name").lower().split()))
        if label in values and values[label] != value:
            ambiguous.add(label)
        values.setdefault(label, value)
    for label in ambiguous:
        del values[label]
    return values


def _same_value(kind: str, sent: str, received: str) -> bool:
    if kind == "name":
        return sent == received
    if sent == received:
        return True
    a, b = float(sent), float(received)
    if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
        return True
    places = _decimals(received)
    return places < _decimals(sent) and round(a, places) == b  # restated with fewer decimals


@dataclass(frozen=True, slots=True)
class ValueFidelityOracle:
    """Value corruption across an edge: fidelity = preserved / restated labelled values (0.0 when a
    single restated value of one is changed); None when the target restates none of them."""

    name: str = "value-fidelity"

    def audit_edge(self, edge: CigEdge, source: AgentTurn, target: AgentTurn) -> EdgeVerdict | None:
        if target.role is Role.TOOL or source.role is Role.TOOL:
            return None
        sent = labelled_values(edge.message)
        if not sent:
            return None
        received = labelled_values(target.output)
        shared = [label for label in sent if label in received and sent[label][0] == received[label][0]]
        if not shared:
            return None
        corrupted = [label for label in shared if not _same_value(sent[label][0], sent[label][1], received[label][1])]
        findings = tuple(
            f"{label!r}: {source.id} sent {sent[label][1]}, {target.id} restated {received[label][1]}"
            for label in corrupted
        )
        fidelity = (len(shared) - len(corrupted)) / len(shared)
        return EdgeVerdict(EdgeScore(fidelity=fidelity), findings)


def deterministic_node_oracles() -> list[NodeOracle]:
    return [ExecutionOracle(), ArithmeticOracle(), ReviewVerdictOracle()]


def deterministic_edge_oracles() -> list[EdgeOracle]:
    return [ContractOracle(), ValueFidelityOracle()]


# ---------------------------------------------------------------------------------------------- LLM

_LLM_SYSTEM = """You are an auditor of a multi-agent system. You see ONE turn: the agent's role, the \
input it received (the task, or the messages of the turns it answers) and its output, and, when it \
wrote code, what running that code printed. Judge this turn's output only:
- correctness: facts and calculations are sound (re-compute numbers), nothing is hallucinated;
- completeness: it addresses what its input asked for;
- role adherence: it does what its role is for.
An output that faithfully repeats a wrong input is still wrong. If the turn reviews or verifies \
earlier work, also say whether it rejects that work (points out an error) or approves it.
Reply with one JSON object and nothing else:
{"score": <number from 0.0 (wrong) to 1.0 (fully correct)>, "critique": "<the specific errors, or ''>", \
"rejects_input": <true if the turn flags its input as wrong, else false>}"""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n[... {len(text) - limit} more characters cut]"


class LlmNodeOracle:
    """Layer 1 by a language model (a tier-2 auditor), through any `ChatModel` (the
    `trust.adapters.llm.client.LlmClient` adapter speaks to an OpenAI-compatible endpoint).

    Models are asynchronous and `NodeOracle.audit_node` is not, so the oracle works in two steps:
    `await prepare(cig)` asks the model about every turn (at most `concurrency` requests at once)
    and keeps the verdicts; `audit_node` then returns the kept verdict of a turn. Tool turns are not
    asked about: they report, they do not reason. The prompt holds only the turn, its parents'
    outputs and its observations, as an auditor of the network would see them, each text clipped to
    `max_chars`. `temperature` 0.0 keeps the judgement as repeatable as the endpoint allows. A reply
    that is not a JSON object with a score in [0, 1] raises `LlmError` naming the turn: a turn the
    model could not judge must not pass silently.
    """

    name = "llm"

    def __init__(
        self, model: ChatModel, *, temperature: float = 0.0, max_chars: int = 4000, concurrency: int = 4
    ) -> None:
        if concurrency < 1 or max_chars < 1:
            raise GraphError(f"LLM oracle: concurrency ({concurrency}) and max_chars ({max_chars}) must be >= 1")
        self._model = model
        self._temperature = temperature
        self._max_chars = max_chars
        self._concurrency = concurrency
        self._verdicts: dict[str, NodeVerdict] = {}

    def messages(
        self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]
    ) -> list[ChatMessage]:
        limit = self._max_chars
        parts = [f"Agent: {node.agent}\nRole: {node.role.value}"]
        if node.input:
            parts.append(f"Input from outside the swarm:\n{_clip(node.input, limit)}")
        for parent in parents:
            parts.append(f"Message received from {parent.agent} (step {parent.step}):\n{_clip(parent.output, limit)}")
        parts.append(f"Output of this turn (step {node.step}):\n{_clip(node.output, limit)}")
        for run in observations:
            parts.append(f"{run.agent} ran this turn's code (step {run.step}):\n{_clip(run.output, limit)}")
        return [ChatMessage("system", _LLM_SYSTEM), ChatMessage("user", "\n\n".join(parts))]

    def parse(self, node_id: str, reply: str) -> NodeVerdict:
        found = json_object(reply)
        if found is None:
            raise LlmError(f"LLM audit of turn {node_id!r}: the reply holds no JSON object: {reply[:200]!r}")
        score = found.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
            raise LlmError(f"LLM audit of turn {node_id!r}: score {score!r} is not a number in [0, 1]")
        critique = found.get("critique", "")
        rejects_input = found.get("rejects_input", False)
        return NodeVerdict(
            float(score),
            critique if isinstance(critique, str) else json.dumps(critique),
            rejects_input is True,
        )

    async def prepare(self, cig: Cig) -> None:
        gate = asyncio.Semaphore(self._concurrency)

        async def ask(turn: AgentTurn) -> tuple[str, NodeVerdict]:
            parents = [cig.turn(p) for p in cig.parents(turn.id)]
            prompt = self.messages(turn, parents, observations(cig, turn.id))
            async with gate:
                reply = await self._model.complete(prompt, temperature=self._temperature, json_mode=True)
            return turn.id, self.parse(turn.id, reply)

        tasks = [asyncio.ensure_future(ask(turn)) for turn in cig.turns() if turn.role is not Role.TOOL]
        try:
            results = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:  # one turn failed: stop asking about the others, and wait until they stop
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        self._verdicts = dict(results)

    def audit_node(
        self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]
    ) -> NodeVerdict | None:
        return self._verdicts.get(node.id)


# ---------------------------------------------------------------------------------------------- LLM edges

PROTOCOL_FAILURES = ("format_mismatch", "schema_violation", "ignored_constraint")
"""The protocol-compliance failure modes of section 2.2.4, as `LlmEdgeOracle` findings name them."""
FIDELITY_FAILURES = ("value_corruption", "semantic_drift", "information_injection", "information_loss")
"""The information-fidelity failure modes of section 2.2.4, as `LlmEdgeOracle` findings name them."""

_LLM_EDGE_SYSTEM = """You are an auditor of a multi-agent system running "the telephone test" on ONE \
message passed from a sender agent to a receiver agent. You see the message, the receiver's other \
inputs, and the output the receiver produced. Judge the transmission only, not whether the sender \
was right: a receiver that faithfully passes on a wrong value is faithful.
- protocol: does the receiver's output conform to the interface the message asked for? Failure modes: \
format_mismatch (e.g. JSON requested, prose returned), schema_violation (a required field missing, \
or of the wrong type), ignored_constraint (an explicit instruction of the message disregarded). When \
the receiver does not reply to this message but only reuses content from it, protocol is 1.0.
- fidelity: did the information the receiver took from the message arrive intact? Failure modes: \
value_corruption (a number, name or identifier altered), semantic_drift (the meaning changed or \
distorted), information_injection (the receiver states data found neither in this message nor in its \
other inputs), information_loss (critical content of the message dropped).
Reply with one JSON object and nothing else:
{"protocol": <number from 0.0 (broken) to 1.0 (fully compliant)>, \
"fidelity": <number from 0.0 (corrupted) to 1.0 (intact)>, \
"failures": [{"mode": "<one of the seven failure modes above>", "detail": "<what was sent, what arrived>"}]}
Leave "failures" empty when you see none."""

_FAILURE_MODES = frozenset(PROTOCOL_FAILURES + FIDELITY_FAILURES)


class LlmEdgeOracle:
    """Layer 2 by a language model ("the telephone test", section 2.2.4), through any `ChatModel`.

    The same two steps as `LlmNodeOracle`: `await prepare(cig)` asks the model about every edge
    whose receiver is not a tool turn (a tool executes what it is sent; a failure there shows in its
    output, which the node oracles read), at most `concurrency` requests at once, and keeps the
    verdicts; `audit_edge` returns the kept verdict of an edge. The model scores protocol compliance
    and information fidelity in [0, 1] and names the failure modes it saw (`PROTOCOL_FAILURES`,
    `FIDELITY_FAILURES`); each finding reads "<mode>: <detail>".

    The prompt holds the edge as an auditor of the network would see it: the sender and receiver
    (agent, role, step), how the link was found (`EdgeOrigin`), the interface the sender declared
    for replies (`AgentTurn.contract`) when it did, the transmitted message, the receiver's other
    inputs (outside input and the other parents' outputs, so that data from them is not mistaken
    for injection) and the receiver's output, each text clipped to `max_chars`.

    Decision (the paper does not say which edges a contract binds): a receiver linked by an overlap
    edge only reuses content from the message, it does not reply to it, so on such an edge the
    protocol score is 1.0 whatever the model says and protocol findings are dropped; fidelity is
    judged on every edge. This is the rule of the deterministic `ContractOracle` as well.

    A reply that is not a JSON object with `protocol` and `fidelity` in [0, 1], or whose `failures`
    is not a list of known modes, raises `LlmError` naming the edge: an edge the model could not
    judge must not pass silently.
    """

    name = "llm-edge"

    def __init__(
        self, model: ChatModel, *, temperature: float = 0.0, max_chars: int = 4000, concurrency: int = 4
    ) -> None:
        if concurrency < 1 or max_chars < 1:
            raise GraphError(f"LLM edge oracle: concurrency ({concurrency}) and max_chars ({max_chars}) must be >= 1")
        self._model = model
        self._temperature = temperature
        self._max_chars = max_chars
        self._concurrency = concurrency
        self._verdicts: dict[tuple[str, str], EdgeVerdict] = {}

    def messages(
        self, edge: CigEdge, source: AgentTurn, target: AgentTurn, others: Sequence[AgentTurn] = ()
    ) -> list[ChatMessage]:
        """The prompt about one edge; `others` are the receiver's other parents."""
        limit = self._max_chars
        if edge.origin is EdgeOrigin.OVERLAP:
            link = "the receiver does not reply to this message; it reuses content from it"
        else:
            link = "the receiver replies to this message"
        parts = [
            f"Edge {edge.source} -> {edge.target} ({edge.origin.value}: {link})",
            f"Sender: {source.agent} (role {source.role.value}, step {source.step})",
            f"Receiver: {target.agent} (role {target.role.value}, step {target.step})",
        ]
        if source.contract is not None:
            interface = "a JSON object" if source.contract.format == "json" else "text"
            if source.contract.required:
                interface += " with the fields " + ", ".join(source.contract.required)
            parts.append(f"Interface the sender declared for replies: {interface}")
        parts.append(f"Message transmitted by {source.agent} (step {source.step}):\n{_clip(edge.message, limit)}")
        if target.input:
            parts.append(f"Other input of the receiver, from outside the swarm:\n{_clip(target.input, limit)}")
        for other in others:
            parts.append(
                f"Other input of the receiver, from {other.agent} (step {other.step}):\n{_clip(other.output, limit)}"
            )
        parts.append(f"Output of the receiver {target.agent} (step {target.step}):\n{_clip(target.output, limit)}")
        return [ChatMessage("system", _LLM_EDGE_SYSTEM), ChatMessage("user", "\n\n".join(parts))]

    def parse(self, edge: CigEdge, reply: str) -> EdgeVerdict:
        where = f"LLM audit of edge {edge.source!r} -> {edge.target!r}"
        found = json_object(reply)
        if found is None:
            raise LlmError(f"{where}: the reply holds no JSON object: {reply[:200]!r}")
        scores: dict[str, float] = {}
        for check in ("protocol", "fidelity"):
            value = found.get(check)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise LlmError(f"{where}: {check} {value!r} is not a number in [0, 1]")
            scores[check] = float(value)
        failures = found.get("failures", [])
        if not isinstance(failures, list):
            raise LlmError(f"{where}: failures {failures!r} is not a list")
        findings: list[str] = []
        for failure in failures:
            raw = failure.get("mode") if isinstance(failure, dict) else failure
            mode = "_".join(raw.lower().replace("-", " ").split()) if isinstance(raw, str) else None
            if mode not in _FAILURE_MODES:
                known = ", ".join(PROTOCOL_FAILURES + FIDELITY_FAILURES)
                raise LlmError(f"{where}: failure mode {raw!r} is not one of {known}")
            if edge.origin is EdgeOrigin.OVERLAP and mode in PROTOCOL_FAILURES:
                continue
            detail = failure.get("detail", "") if isinstance(failure, dict) else ""
            detail = detail if isinstance(detail, str) else json.dumps(detail)
            findings.append(f"{mode}: {detail}" if detail.strip() else mode)
        protocol = 1.0 if edge.origin is EdgeOrigin.OVERLAP else scores["protocol"]
        return EdgeVerdict(EdgeScore(protocol, scores["fidelity"]), tuple(findings))

    async def prepare(self, cig: Cig) -> None:
        gate = asyncio.Semaphore(self._concurrency)

        async def ask(edge: CigEdge) -> tuple[tuple[str, str], EdgeVerdict]:
            source, target = cig.turn(edge.source), cig.turn(edge.target)
            others = [cig.turn(p) for p in cig.parents(edge.target) if p != edge.source]
            prompt = self.messages(edge, source, target, others)
            async with gate:
                reply = await self._model.complete(prompt, temperature=self._temperature, json_mode=True)
            return (edge.source, edge.target), self.parse(edge, reply)

        roles = {turn.id: turn.role for turn in cig.turns()}
        tasks = [asyncio.ensure_future(ask(edge)) for edge in cig.edges() if roles[edge.target] is not Role.TOOL]
        try:
            results = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:  # one edge failed: stop asking about the others, and wait until they stop
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        self._verdicts = dict(results)

    def audit_edge(self, edge: CigEdge, source: AgentTurn, target: AgentTurn) -> EdgeVerdict | None:
        return self._verdicts.get((edge.source, edge.target))
