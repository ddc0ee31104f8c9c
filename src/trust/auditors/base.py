"""One auditor interface for the three tiers (paper 3.1.1): a segment in, a verdict out.

An auditor sees one decrypted segment: the node it was seated for, its parents' content as context
(the keys of exactly these come in the seat's envelope), the node's level and domain, and the audit
question. It answers a `Verdict`: a vote (pass or fail), a score in [0, 1] and a short critique
naming the error type, which refinement later turns into feedback (`trust.core.graphs.refinement`).

A verdict may also be *not applicable*: the auditor could not decide (a tier-1 checker finds nothing
it can check in the node). That is never guessed into a pass or a fail. The worker does not commit
a vote it does not have; docs/auditors.md says what an abstaining seat costs.

The tier-1 auditor is built from `Check`s, each deciding one kind of thing (arithmetic, symbolic
algebra, code run in a sandbox, formats, evidence grounding) and returning a `CheckResult`, or
`NOT_APPLICABLE` when the node holds nothing of its kind.

Segments travel as JSON (`SEGMENT_FORMAT`, version 1) for `trust audit-segment`:

    {"format": "trust.segment", "version": 1,
     "node": <HDAG node object (trust.core.graphs.serialization) or CIG turn object (trust.cig-turn)>,
     "parents": [<same kinds>, ...],
     "question": "<the audit question>" | null,
     "layer": "node" | "edge" | "contradiction"}

`format` and `version` may be left out; `parents` defaults to none, `question` to the default
question of the node's level and the layer (`default_question`), `layer` to "node". Reading is
strict: unknown fields, a wrong kind or a malformed node are a `GraphError` naming the path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar, runtime_checkable

from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, Role
from trust.core.graphs.hdag import Hdag, HdagNode, Level, Tier
from trust.core.graphs.refinement import ErrorType
from trust.core.graphs.serialization import node_from_dict, node_to_dict, parse_json
from trust.core.graphs.units import AuditUnit, UnitKind, is_unit_document, loads_unit
from trust.core.privacy.segments import TURN_FORMAT, loads_turn, turn_to_dict
from trust.errors import GraphError

__all__ = [
    "MAX_SEGMENT_BYTES",
    "SEGMENT_FORMAT",
    "SEGMENT_VERSION",
    "AuditLayer",
    "AuditRequest",
    "Auditor",
    "Check",
    "CheckResult",
    "Outcome",
    "Verdict",
    "all_or_nothing",
    "audit_seat",
    "default_question",
    "dumps_request",
    "loads_request",
    "node_text",
    "parse_segment_plaintext",
    "request_for",
    "request_from_plaintexts",
]

SEGMENT_FORMAT = "trust.segment"
SEGMENT_VERSION = 1
MAX_SEGMENT_BYTES = 4 * 1024 * 1024
"""The largest segment file `loads_request` reads (a node and its parents, as JSON)."""


class Outcome(StrEnum):
    """What a check or an auditor concluded. `NOT_APPLICABLE`: it could not decide, and says so."""

    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "not_applicable"


class AuditLayer(StrEnum):
    """The two layers of the dual-layer audit (paper 2.2.4).

    `NODE`: is the node's output correct, complete and true to its role, given its inputs.
    `EDGE`: did the messages from the parents reach the node intact (protocol compliance and
    information fidelity, "the telephone test"). HDAG segments are audited at the node layer.
    `CONTRADICTION`: a `contradicts` edge of an HDAG (paper 3.2.3): do the node (the later claim)
    and its one parent (the earlier claim) really contradict each other? PASS: they do not; FAIL:
    the contradiction is confirmed, which the contract counts against the whole trace.
    """

    NODE = "node"
    EDGE = "edge"
    CONTRADICTION = "contradiction"


Node = HdagNode | AgentTurn


@dataclass(frozen=True, slots=True)
class AuditRequest:
    """One segment as its auditor sees it: the node, its parents (context), the question, the layer.

    `deadline` and `seat` are not part of the segment file; the worker sets them. Neither are
    `observations`, `sender` and `origin`, which an audit of a whole CIG sets where it has the whole
    log at hand (`trust.auditors.graph.audit_cig`, what `trust graph localize` runs):

    - `observations`: the tool turns that answer a CIG turn (`trust.core.graphs.audit.observations`:
      the terminal that ran its code). A seat of the network sees the node and its parents only, so
      there the checks that read them have nothing to read and say so (not applicable).
    - `sender` (edge layer): the id of the one parent whose message is audited, the others being
      context; None audits every incoming message (the segment file's edge layer).
    - `origin` (with `sender`): how that message reached the node (`EdgeOrigin`); an overlap edge
      is content reused, not a reply, so no reply format binds it. None: a reply.
    """

    node: Node
    parents: tuple[Node, ...] = ()
    question: str = ""
    layer: AuditLayer = AuditLayer.NODE
    # Set by the worker, for auditors that wait on someone (the tier-3 expert): when the vote must
    # be in (unix seconds, the commit deadline less a margin) and which seat it is for.
    deadline: float | None = None
    seat: str = ""
    observations: tuple[Node, ...] = ()
    sender: str | None = None
    origin: EdgeOrigin | None = None

    def __post_init__(self) -> None:
        if self.layer is AuditLayer.CONTRADICTION and len(self.parents) != 1:
            raise GraphError(
                f"audit of {self.node.id!r}: a contradiction is between the node and exactly one earlier claim, "
                f"got {len(self.parents)} parents"
            )
        if self.sender is not None:
            if self.layer is not AuditLayer.EDGE:
                raise GraphError(f"audit of {self.node.id!r}: a sender is audited on the edge layer only")
            if self.sender not in {p.id for p in self.parents}:
                raise GraphError(f"audit of {self.node.id!r}: the sender {self.sender!r} is not one of its parents")
        elif self.origin is not None:
            raise GraphError(f"audit of {self.node.id!r}: an edge origin needs the sender it belongs to")

    @property
    def senders(self) -> tuple[Node, ...]:
        """The parents whose messages an edge-layer audit judges: the sender, or every parent."""
        if self.sender is None:
            return self.parents
        return tuple(p for p in self.parents if p.id == self.sender)

    @property
    def replies(self) -> bool:
        """Whether the node replies to the audited message(s), so that their reply format binds it."""
        return self.origin is not EdgeOrigin.OVERLAP

    @property
    def node_id(self) -> str:
        return self.node.id

    @property
    def text(self) -> str:
        """What the node says: an HDAG node's content, a CIG turn's output."""
        return self.node.content if isinstance(self.node, HdagNode) else self.node.output

    @property
    def level(self) -> str:
        """The HDAG level name ("operation"), or "turn" for a CIG turn."""
        return self.node.level.label if isinstance(self.node, HdagNode) else "turn"

    @property
    def domain(self) -> str:
        return self.node.domain if isinstance(self.node, HdagNode) else "general"

    @property
    def audit_question(self) -> str:
        """The question asked, or the default one for the node's level and the layer."""
        return self.question or default_question(self.node, self.layer)


def node_text(node: Node) -> str:
    """What a node says: an HDAG node's content, a CIG turn's output."""
    return node.content if isinstance(node, HdagNode) else node.output


_LEVEL_QUESTIONS: Mapping[Level, str] = {
    Level.GOAL: "Does this goal state the problem faithfully and completely?",
    Level.STRATEGY: "Is this an appropriate overall approach for the goal it serves?",
    Level.TACTIC: "Is this technique applied correctly and does it serve the strategy above it?",
    Level.STEP: "Is this step correct, supported by its inputs, and complete?",
    Level.OPERATION: "Is this calculation, derivation or program result exactly right?",
}


def default_question(node: Node, layer: AuditLayer = AuditLayer.NODE) -> str:
    """The audit question of a node that came without one."""
    if layer is AuditLayer.EDGE:
        return (
            "Did the messages this turn received arrive intact: in the format their sender was asked for, "
            "with no value changed, dropped, distorted or invented?"
        )
    if layer is AuditLayer.CONTRADICTION:
        return (
            "Do this claim and the earlier claim it is said to contradict really contradict each other? "
            "Pass if they are consistent; fail if they cannot both be true."
        )
    if isinstance(node, HdagNode):
        return _LEVEL_QUESTIONS[node.level]
    if node.role is Role.REVIEWER:
        return "Is this review correct: does it flag exactly the real errors in what it reviewed?"
    return "Is this agent's output correct, complete and within its role, given its inputs?"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What one tier-1 check found.

    `fault` names the kind of error in a few words ("wrong product", "variable confusion", "skipped
    rule"); `error_type` is the refinement class it belongs to; `expected` the correct value where
    the check knows it (a recomputed product). All three are None unless `outcome` is FAIL.
    """

    check: str
    outcome: Outcome
    detail: str
    fault: str | None = None
    error_type: ErrorType | None = None
    expected: str | None = None

    def __post_init__(self) -> None:
        if self.outcome is not Outcome.FAIL and (self.fault or self.error_type or self.expected):
            raise ValueError(f"check {self.check!r}: only a failed check carries a fault, error type or expected value")
        if self.outcome is Outcome.FAIL and (self.fault is None or self.error_type is None):
            raise ValueError(f"check {self.check!r}: a failed check must name its fault and error type")

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "outcome": self.outcome.value,
            "detail": self.detail,
            "fault": self.fault,
            "error_type": None if self.error_type is None else self.error_type.value,
            "expected": self.expected,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """An auditor's answer on one segment.

    `vote` is PASS or FAIL, or NOT_APPLICABLE when the auditor could not decide (then `score` is
    None: there is nothing to score). `score` lies in [0, 1]. `critique` is a short text a person or
    the refinement loop can act on; for a failure it names the error type. `checks` holds the
    tier-1 checks behind the verdict, `expected` the correct value where the auditor knows it.
    """

    vote: Outcome
    score: float | None
    critique: str
    error_type: ErrorType | None = None
    expected: str | None = None
    checks: tuple[CheckResult, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.vote is Outcome.NOT_APPLICABLE:
            if self.score is not None:
                raise ValueError("a not-applicable verdict has no score")
        elif self.score is None or not 0.0 <= self.score <= 1.0:
            raise ValueError(f"a verdict's score must lie in [0, 1], got {self.score!r}")
        if self.vote is not Outcome.FAIL and self.error_type is not None:
            raise ValueError("only a failing verdict names an error type")

    @property
    def decided(self) -> bool:
        return self.vote is not Outcome.NOT_APPLICABLE

    @property
    def passed(self) -> bool:
        """The vote as the chain takes it (True = Pass); only for a decided verdict."""
        if self.vote is Outcome.NOT_APPLICABLE:
            raise ValueError("a not-applicable verdict has no on-chain vote")
        return self.vote is Outcome.PASS

    def to_json(self) -> dict[str, Any]:
        """`{"vote", "score", "critique"}` first (what `trust audit-segment --json` promises), then the rest."""
        return {
            "vote": self.vote.value,
            "score": self.score,
            "critique": self.critique,
            "error_type": None if self.error_type is None else self.error_type.value,
            "expected": self.expected,
            "checks": [c.to_json() for c in self.checks],
        }


@runtime_checkable
class Auditor(Protocol):
    """One auditor of a tier. `audit` never raises for a bad node: it answers FAIL or NOT_APPLICABLE
    with a critique. It raises (a `TrustError`) only when it cannot work at all: its model endpoint
    is down, its sandbox cannot start."""

    @property
    def tier(self) -> Tier: ...

    @property
    def name(self) -> str: ...

    async def audit(self, request: AuditRequest) -> Verdict: ...

    async def unavailable(self) -> str | None:
        """None when the auditor can take a seat now; otherwise why not, in words (its model server
        is down, its expert is away). The worker asks before it takes new seats and stays out of the
        draw while this says no, instead of failing seats it cannot audit."""
        ...


@runtime_checkable
class Check(Protocol):
    """One tier-1 check. Deterministic: the same request always gives the same result."""

    @property
    def name(self) -> str: ...

    async def check(self, request: AuditRequest) -> CheckResult: ...


# ------------------------------------------------------------------------------------- segment JSON

_SEGMENT_FIELDS = ("format", "version", "node", "parents", "question", "layer")


def _node_from(value: object, path: str) -> Node:
    if isinstance(value, dict) and value.get("format") == TURN_FORMAT:
        try:
            return loads_turn(json.dumps(value))
        except GraphError as exc:
            raise GraphError(f"{path}: {exc}") from None
    return node_from_dict(value, path=path)


def _node_to(node: Node) -> dict[str, Any]:
    return node_to_dict(node) if isinstance(node, HdagNode) else turn_to_dict(node)


def parse_segment_plaintext(plaintext: bytes, *, path: str = "segment") -> Node:
    """The node a decrypted segment holds: an HDAG node JSON or a CIG turn JSON."""
    return _node_from(parse_json(plaintext, MAX_SEGMENT_BYTES, path), path)


def request_from_plaintexts(node_id: str, plaintexts: Mapping[str, bytes], *, question: str = "") -> AuditRequest:
    """The request of a seat from the plaintexts its envelope unlocked (`trust.services.delivery.open_granted`):
    `node_id` is the seat's own node, every other entry a parent. Node and turn ids are checked
    against the ids the envelope named, so a segment cannot pose as another node.

    A seat on an edge or contradiction unit (`trust.core.graphs.units`) unlocks the unit's
    descriptor and the two nodes it names: the request is then the edge layer (the receiving turn,
    its sender as the one parent) or the contradiction layer (the later claim, the earlier as the
    one parent)."""
    if node_id not in plaintexts:
        raise GraphError(f"the envelope grants no segment for its own node {node_id!r}")
    own = parse_json(plaintexts[node_id], MAX_SEGMENT_BYTES, f"segment {node_id!r}")
    if is_unit_document(own):
        return _unit_request(node_id, loads_unit(own, path=f"segment {node_id!r}"), plaintexts, question)
    nodes: dict[str, Node] = {}
    for granted_id, plaintext in plaintexts.items():
        node = parse_segment_plaintext(plaintext, path=f"segment {granted_id!r}")
        if node.id != granted_id:
            raise GraphError(
                f"segment {granted_id!r}: the plaintext is node {node.id!r}; the provider sealed the wrong node "
                "under this id"
            )
        nodes[granted_id] = node
    if node_id not in nodes:
        raise GraphError(f"the envelope grants no segment for its own node {node_id!r}")
    own = nodes.pop(node_id)
    return AuditRequest(own, tuple(nodes.values()), question, AuditLayer.NODE)


def _unit_request(node_id: str, unit: AuditUnit, plaintexts: Mapping[str, bytes], question: str) -> AuditRequest:
    if unit.id != node_id:
        raise GraphError(
            f"segment {node_id!r}: the descriptor names unit {unit.id!r}; the provider sealed the wrong unit"
        )
    expected = {unit.id, unit.source, unit.target}
    if set(plaintexts) != expected:
        raise GraphError(
            f"segment {node_id!r}: its envelope unlocks {sorted(plaintexts)}, but the unit reads exactly "
            f"{sorted(expected - {unit.id})}"
        )
    nodes = {}
    for member in (unit.source, unit.target):
        node = parse_segment_plaintext(plaintexts[member], path=f"segment {member!r}")
        if node.id != member:
            raise GraphError(
                f"segment {member!r}: the plaintext is node {node.id!r}; the provider sealed the wrong node"
            )
        nodes[member] = node
    source, target = nodes[unit.source], nodes[unit.target]
    if unit.kind is UnitKind.EDGE:
        if not isinstance(source, AgentTurn) or not isinstance(target, AgentTurn):
            raise GraphError(f"segment {node_id!r}: an edge unit joins two CIG turns")
        return AuditRequest(target, (source,), question, AuditLayer.EDGE, sender=source.id, origin=unit.origin)
    if not isinstance(source, HdagNode) or not isinstance(target, HdagNode):
        raise GraphError(f"segment {node_id!r}: a contradiction unit joins two HDAG nodes")
    return AuditRequest(target, (source,), question, AuditLayer.CONTRADICTION)


def request_for(
    graph: Hdag | Cig, node_id: str, *, question: str = "", layer: AuditLayer = AuditLayer.NODE
) -> AuditRequest:
    """The request a seat on `node_id` receives: the node and its direct parents, in graph order
    (what `trust.core.privacy.access.grant_for` lets the seat decrypt)."""
    if isinstance(graph, Hdag):
        return AuditRequest(graph.node(node_id), tuple(graph.node(p) for p in graph.parents(node_id)), question, layer)
    return AuditRequest(graph.turn(node_id), tuple(graph.turn(p) for p in graph.parents(node_id)), question, layer)


def loads_request(text: str | bytes) -> AuditRequest:
    """Reads a segment file (see the module docstring); `GraphError` naming the field otherwise."""
    data = parse_json(text, MAX_SEGMENT_BYTES, "segment")
    if not isinstance(data, dict):
        raise GraphError(f"segment: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_SEGMENT_FIELDS))
    if unknown:
        raise GraphError(f"segment: unknown fields {unknown}; a segment has {list(_SEGMENT_FIELDS)}")
    if data.get("format", SEGMENT_FORMAT) != SEGMENT_FORMAT or data.get("version", SEGMENT_VERSION) != SEGMENT_VERSION:
        raise GraphError(
            f"segment: format {data.get('format')!r} version {data.get('version')!r}, "
            f"expected {SEGMENT_FORMAT!r} {SEGMENT_VERSION}"
        )
    if "node" not in data:
        raise GraphError("segment.node: missing; a segment holds the node to audit")
    node = _node_from(data["node"], "segment.node")
    parents_raw = data.get("parents", [])
    if not isinstance(parents_raw, list):
        raise GraphError(f"segment.parents: expected a list, got {type(parents_raw).__name__}")
    parents = tuple(_node_from(p, f"segment.parents[{i}]") for i, p in enumerate(parents_raw))
    ids = [node.id, *(p.id for p in parents)]
    if len(set(ids)) != len(ids):
        raise GraphError(f"segment.parents: node ids repeat ({ids})")
    question = data.get("question") or ""
    if not isinstance(question, str):
        raise GraphError(f"segment.question: expected a string or null, got {type(question).__name__}")
    try:
        layer = AuditLayer(data.get("layer", AuditLayer.NODE.value))
    except ValueError:
        raise GraphError(
            f"segment.layer: expected 'node', 'edge' or 'contradiction', got {data.get('layer')!r}"
        ) from None
    if layer is AuditLayer.EDGE and (isinstance(node, HdagNode) or not parents):
        raise GraphError(
            "segment.layer: the edge layer audits a CIG turn's incoming messages; it needs a turn with parents"
        )
    if layer is AuditLayer.CONTRADICTION and (
        len(parents) != 1 or not isinstance(node, HdagNode) or not isinstance(parents[0], HdagNode)
    ):
        raise GraphError(
            "segment.layer: the contradiction layer audits an HDAG node (the later claim) against exactly one "
            "parent (the earlier claim)"
        )
    return AuditRequest(node, parents, question, layer)


def dumps_request(request: AuditRequest) -> str:
    """The segment file of `request` (indented, for people and tests)."""
    return json.dumps(
        {
            "format": SEGMENT_FORMAT,
            "version": SEGMENT_VERSION,
            "node": _node_to(request.node),
            "parents": [_node_to(p) for p in request.parents],
            "question": request.question or None,
            "layer": request.layer.value,
        },
        indent=2,
        ensure_ascii=False,
    )


_T = TypeVar("_T")


async def all_or_nothing(awaitables: Sequence[Awaitable[_T]], *, concurrency: int | None = None) -> list[_T]:
    """Every result, in order, at most `concurrency` at once (None: no limit). When one fails, the
    others are cancelled (and awaited) before the failure is raised, so no request an auditor sent
    outlives the audit that asked it: a verdict is whole or there is none."""
    gate = asyncio.Semaphore(concurrency) if concurrency is not None else None

    async def run(awaitable: Awaitable[_T]) -> _T:
        if gate is None:
            return await awaitable
        async with gate:
            return await awaitable

    tasks = [asyncio.ensure_future(run(a)) for a in awaitables]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def audit_seat(auditor: Auditor, request: AuditRequest) -> Verdict:
    """What a seat of the network answers on `request`: the auditor's verdict on the layer the request
    asks about, nothing more.

    Each layer has seats of its own (`trust.core.graphs.units`): a seat on a turn judges the turn (the
    node layer), a seat on an edge the one message it names (the edge layer, the telephone test), a
    seat on a contradiction the two claims. So a broken incoming message fails its edge's segment,
    which Algorithm 1 reads as a failed edge (the receiver is Invalid_Root for a protocol breach at
    its boundary), and the turn's own verdict stays about the turn, as offline
    (`trust.auditors.graph.audit_cig`): no fault is counted twice.
    """
    return await auditor.audit(request)
