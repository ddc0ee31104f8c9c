"""The edge-layer checks (paper 2.2.4, Layer 2, "the telephone test"): did the messages a turn
received arrive in the format asked for, and with their values intact?

Both judge an edge-layer request: the node is the receiver, and each audited sender (the request's
`sender`, or every parent) sent its output as the message. A failure's `fault` is the failure mode
of section 2.2.4 it shows (`PROTOCOL_FAILURES`, `FIDELITY_FAILURES`), which is how an audit of a
whole CIG (`trust.auditors.graph`) tells a protocol score from a fidelity score.

- `ContractCheck` (protocol): what a message asks of the reply's format, checked once, here. A
  message asks for JSON by the log's `expects` (`ReplyContract`, format "json" with its required
  fields), in words ("respond in JSON", "return only JSON", with the fields it names), or with a
  ```json-schema block. The reply must be JSON as `trust.auditors.checks.schema.json_output` reads
  it (the whole reply, or a ```json or plain fenced block; JSON buried in prose is prose), else
  format_mismatch; a contract or a worded request wants an object (another kind: format_mismatch)
  holding every required field (else schema_violation); a schema is applied with jsonschema
  (violations: schema_violation, each by its JSON path). Only replies are held to it: not a
  receiver that reuses content of the message (an overlap edge), nor a tool that executes it. The
  node layer never checks a reply's format (`SchemaCheck` says why), so one broken reply is one
  failed edge and its receiver is Invalid_Root for a protocol breach at its boundary.
- `ValueFidelityCheck` (fidelity): a labelled value ("Seattle population: 737,015", "author = Jane
  Doe") restated by the receiver under the same label with another value (value_corruption);
  rounding to fewer decimals is not corruption. Not applicable when the receiver restates none.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final

from trust.auditors.base import AuditLayer, AuditRequest, CheckResult, Node, Outcome, node_text
from trust.auditors.checks.schema import json_kind, json_output, schema_in_text, schema_violations
from trust.core.graphs.cig import AgentTurn, Role
from trust.core.graphs.refinement import ErrorType
from trust.core.maths.text import CODE_BLOCK

__all__ = [
    "FIDELITY_FAILURES",
    "PROTOCOL_FAILURES",
    "ContractCheck",
    "ValueFidelityCheck",
    "edge_decidable",
    "json_request",
    "labelled_values",
]

PROTOCOL_FAILURES: Final = ("format_mismatch", "schema_violation", "ignored_constraint")
"""The protocol-compliance failure modes of section 2.2.4."""
FIDELITY_FAILURES: Final = ("value_corruption", "semantic_drift", "information_injection", "information_loss")
"""The information-fidelity failure modes of section 2.2.4."""


def _is_tool(node: Node) -> bool:
    return isinstance(node, AgentTurn) and node.role is Role.TOOL


def _not_edge(name: str, request: AuditRequest) -> CheckResult | None:
    if request.layer is not AuditLayer.EDGE or not isinstance(request.node, AgentTurn) or not request.parents:
        return CheckResult(name, Outcome.NOT_APPLICABLE, "not an edge-layer audit of a CIG turn with parents")
    if request.node.role is Role.TOOL:
        return CheckResult(name, Outcome.NOT_APPLICABLE, "a tool executes what it is sent; its output is judged")
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


@dataclass(frozen=True, slots=True)
class _Demand:
    """What one message asks of its reply: JSON, an object with `fields` when `fields` is not None,
    meeting `schema` when there is one."""

    fields: tuple[str, ...] | None
    schema: dict[str, Any] | None


def _demand(sender: Node) -> _Demand | None:
    """What a reply to `sender` must be; None when it asks for no JSON (a "text" contract asks none)."""
    text = node_text(sender)
    schema = schema_in_text(text)
    if isinstance(sender, AgentTurn) and sender.contract is not None:
        return _Demand(sender.contract.required, schema) if sender.contract.format == "json" else None
    fields = json_request(text)
    return None if fields is None and schema is None else _Demand(fields, schema)


@dataclass(frozen=True, slots=True)
class ContractCheck:
    """Protocol compliance of a reply to a message that asks for JSON; see the module docstring."""

    @property
    def name(self) -> str:
        return "contract"

    async def check(self, request: AuditRequest) -> CheckResult:
        return self.decide(request)

    def decide(self, request: AuditRequest) -> CheckResult:
        """The check, synchronously (it reads text only), for `edge_decidable`."""
        skipped = _not_edge(self.name, request)
        if skipped is not None:
            return skipped
        if not request.replies:
            return CheckResult(self.name, Outcome.NOT_APPLICABLE, "the receiver reuses this message, it does not reply")
        receiver = request.node
        asked = [(sender, demand) for sender in request.senders if (demand := _demand(sender)) is not None]
        if not asked:
            return CheckResult(self.name, Outcome.NOT_APPLICABLE, "no message asks for a JSON reply")
        found = json_output(node_text(receiver))
        undecided: list[str] = []
        for sender, demand in asked:
            if found is None:
                return self._fail(
                    "format_mismatch",
                    f"{sender.id} asked for JSON; {receiver.id} answered in prose",
                    "JSON, bare or in a ```json block",
                )
            value = found[0]
            if demand.fields is not None:
                if not isinstance(value, dict):
                    return self._fail(
                        "format_mismatch",
                        f"{sender.id} asked for a JSON object; {receiver.id} answered with {json_kind(value)}",
                        "a JSON object",
                    )
                missing = [name for name in demand.fields if name not in value]
                if missing:
                    return self._fail(
                        "schema_violation",
                        f"{receiver.id}'s JSON reply lacks required field(s) {', '.join(map(repr, missing))}, "
                        f"asked for by {sender.id} (it has {', '.join(sorted(map(str, value))) or 'no fields'})",
                        ", ".join(demand.fields),
                    )
            if demand.schema is not None:
                violated = schema_violations(demand.schema, f"the JSON Schema of {sender.id}", value)
                if violated is not None:
                    outcome, detail = violated
                    if outcome is Outcome.FAIL:
                        return self._fail("schema_violation", f"{receiver.id}'s JSON reply: {detail}", None)
                    if demand.fields is None:  # JSON was all it asked for, by a schema that cannot judge
                        undecided.append(detail)
        if len(undecided) == len(asked):
            return CheckResult(self.name, Outcome.NOT_APPLICABLE, "; ".join(undecided))
        return CheckResult(self.name, Outcome.PASS, f"{receiver.id} replied in the JSON asked for")

    def _fail(self, fault: str, detail: str, expected: str | None) -> CheckResult:
        return CheckResult(
            self.name, Outcome.FAIL, detail, fault=fault, error_type=ErrorType.PROTOCOL, expected=expected
        )


# ---------------------------------------------------------------------------------------------- fidelity

_NUMBER = r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?"
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


def _decimals(number: str) -> int:
    return len(number.split(".", 1)[1]) if "." in number else 0


def labelled_values(text: str) -> dict[str, tuple[str, str]]:
    """Label -> (kind, value) for lines such as "Seattle population: 737,015" or "author = Jane Doe",
    outside code blocks. A label given two different values in the same text is dropped (ambiguous);
    generic labels ("output", "result", "answer") are ignored because they are restated on purpose."""
    prose = CODE_BLOCK.sub("\n", text)
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
class ValueFidelityCheck:
    """Value corruption across an edge; see the module docstring."""

    @property
    def name(self) -> str:
        return "value-fidelity"

    async def check(self, request: AuditRequest) -> CheckResult:
        return self.decide(request)

    def decide(self, request: AuditRequest) -> CheckResult:
        """The check, synchronously (it reads text only), for `edge_decidable`."""
        skipped = _not_edge(self.name, request)
        if skipped is not None:
            return skipped
        receiver = request.node
        received = labelled_values(node_text(receiver))
        shared = 0
        corrupted: list[str] = []
        for sender in request.senders:
            if _is_tool(sender):
                continue
            sent = labelled_values(node_text(sender))
            labels = [label for label in sent if label in received and sent[label][0] == received[label][0]]
            shared += len(labels)
            corrupted += [
                f"{label!r}: {sender.id} sent {sent[label][1]}, {receiver.id} restated {received[label][1]}"
                for label in labels
                if not _same_value(sent[label][0], sent[label][1], received[label][1])
            ]
        if not shared:
            return CheckResult(self.name, Outcome.NOT_APPLICABLE, "the receiver restates no labelled value it was sent")
        if corrupted:
            return CheckResult(
                self.name,
                Outcome.FAIL,
                f"{len(corrupted)} of {shared} restated value(s) changed: " + "; ".join(corrupted),
                fault="value_corruption",
                error_type=ErrorType.PROTOCOL,
            )
        return CheckResult(self.name, Outcome.PASS, f"{shared} restated value(s) arrived intact")


def edge_decidable(request: AuditRequest) -> bool:
    """Whether a tier-1 check decides this edge-layer request (a reply format asked for, or a
    labelled value restated): the router sends such an edge to tier 1 and any other to tier 2,
    exactly as a node goes to tier 1 when a checker can judge it."""
    return any(
        check.decide(request).outcome is not Outcome.NOT_APPLICABLE for check in (ContractCheck(), ValueFidelityCheck())
    )
