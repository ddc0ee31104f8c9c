"""What the network seats committees on: the audit units of a graph (paper 2.2.4, 3.2.3).

A graph's nodes are not all there is to audit. The DAAN protocol also asks:

- of every unresolved `contradicts` edge of an HDAG, whether its two claims really contradict each
  other (the contract's third validity condition: a confirmed contradiction fails the trace);
- of every message a CIG turn received, whether it arrived intact ("the telephone test": protocol
  compliance and information fidelity), so that Algorithm 1 reads each edge's own verdict.

Each of these is a *unit*, and each unit is one segment on chain, sealed under its own key, drawn
its own committee and voted on like a node. A node unit's segment is the node itself (its parents'
keys come in the seat's envelope, as always). A contradiction or edge unit's segment is a small
descriptor (`unit_plaintext`: which unit, which two nodes), and the seat's envelope unlocks the two
nodes it is about (`reads`), so the seat reads exactly the two claims, or the sender's message and
the receiving turn, and nothing else. `access_graph` is the need-to-know graph over every unit (a
unit's predecessors are what its seat reads): `trust.core.privacy.access.plan_envelopes` takes it.

Units are derived from the graph alone (`audit_units`), so the provider, a resumed session and the
journal all find the same ones in the same order: node units in the graph's order, then the
contradictions in edge order, then the edges in time order of their receiving turn.

Resolved contradictions (decision; the paper fails traces with "unresolved contradicts edges" and does
not define resolution): a `contradicts` edge runs from the earlier claim to the later one that turns
on it, and it is resolved when nothing but that later claim builds on the earlier one, as in a
self-correction ("wait, 5 * 3 is 15, not 18") after which the trace goes on from the corrected
value. It gets no unit: seating it would fail a trace for correcting itself. When anything else
depends on the earlier claim, the contradicted value may have flowed on, and the edge is a unit.

Unit ids name what they audit ("contradiction:<a>|<b>", "edge:<a>-><b>"); a node whose own id
collides with one is a `GraphError` (the segments of one trace need distinct ids).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import networkx as nx

from trust.core.graphs.cig import CONTEXT_ROLES, Cig, EdgeOrigin
from trust.core.graphs.hdag import EdgeType, Hdag, Tier
from trust.core.maths.assignments import conflicting_values
from trust.errors import GraphError

__all__ = [
    "UNIT_FORMAT",
    "UNIT_VERSION",
    "AuditUnit",
    "UnitKind",
    "access_graph",
    "audit_units",
    "contradiction_tier",
    "is_unit_document",
    "loads_unit",
    "resolved",
    "unit_plaintext",
]

UNIT_FORMAT: Final = "trust.audit-unit"
UNIT_VERSION: Final = 1


class UnitKind(StrEnum):
    NODE = "node"
    EDGE = "edge"
    CONTRADICTION = "contradiction"


@dataclass(frozen=True, slots=True)
class AuditUnit:
    """One thing a committee is seated on.

    `id` is its segment's node id. `reads` are the nodes its seat reads besides its own segment: a
    node unit's parents; an edge unit's receiving turn and sender (`target`, `source`); a
    contradiction unit's two claims (`source`, `target` of the `contradicts` edge). `origin` is how
    an edge's message reached its target (an overlap edge is content reused, not a reply)."""

    id: str
    kind: UnitKind
    reads: tuple[str, ...] = ()
    source: str = ""
    target: str = ""
    origin: EdgeOrigin | None = None

    @property
    def belongs_to(self) -> str:
        """The node whose audit this unit is part of: itself, or the node that receives the message
        or states the contradicting claim (the edge's target)."""
        return self.id if self.kind is UnitKind.NODE else self.target


def _edge_id(source: str, target: str) -> str:
    return f"edge:{source}->{target}"


def _contradiction_id(source: str, target: str) -> str:
    return f"contradiction:{source}|{target}"


def audit_units(graph: Hdag | Cig, *, edges: bool = True) -> list[AuditUnit]:
    """Every unit of `graph`, in segment order (see the module docstring). `edges=False` leaves the
    CIG's edge units out (the node layer alone, as a batch or an offline count would seat it)."""
    units: list[AuditUnit] = []
    if isinstance(graph, Hdag):
        units += [AuditUnit(node.id, UnitKind.NODE, tuple(graph.parents(node.id))) for node in graph.nodes()]
        units += [
            AuditUnit(_contradiction_id(edge.source, edge.target), UnitKind.CONTRADICTION, (edge.source, edge.target),
                      edge.source, edge.target)
            for edge in graph.edges()
            if edge.type is EdgeType.CONTRADICTS and not resolved(graph, edge.source, edge.target)
        ]  # fmt: skip
    elif isinstance(graph, Cig):
        turns = list(graph.turns())
        units += [AuditUnit(turn.id, UnitKind.NODE, tuple(graph.parents(turn.id))) for turn in turns]
        if edges:
            for turn in turns:
                if turn.role in CONTEXT_ROLES:
                    continue  # nobody is seated on a user or tool turn, nor on what it received
                for source in graph.parents(turn.id):
                    origin = graph.edge_origin(source, turn.id)
                    units.append(
                        AuditUnit(_edge_id(source, turn.id), UnitKind.EDGE, (turn.id, source), source, turn.id, origin)
                    )
    else:
        raise GraphError(f"expected an Hdag or a Cig, got {type(graph).__name__}")
    ids = [unit.id for unit in units]
    if len(set(ids)) != len(ids):
        clash = next(i for n, i in enumerate(ids) if i in ids[:n])
        raise GraphError(
            f"node id {clash!r} is also the id of an audit unit (an edge or a contradiction of the graph): "
            "rename the node"
        )
    return units


def resolved(graph: Hdag, earlier: str, later: str) -> bool:
    """Whether the contradiction of `later` with `earlier` is resolved: nothing but `later` builds on
    `earlier` (see the module docstring)."""
    return all(child == later for child in graph.children(earlier))


def contradiction_tier(graph: Hdag, unit: AuditUnit) -> Tier:
    """Where a contradiction unit is audited: tier 1 when a checker decides it (the two claims give
    one named quantity two values, `trust.core.maths.assignments`), otherwise the tier of the node
    it belongs to (the contradicting claim), whose auditors judge its meaning."""
    first, second = graph.node(unit.source), graph.node(unit.target)
    if conflicting_values(first.content, second.content):
        return Tier.COMPUTATIONAL
    return second.tier


def access_graph(graph: Hdag | Cig, units: list[AuditUnit] | None = None) -> nx.DiGraph:
    """The need-to-know graph over every unit of `graph`: a unit's predecessors, in order, are the
    nodes its seat reads (`AuditUnit.reads`)."""
    units = audit_units(graph) if units is None else units
    access = nx.DiGraph()
    for unit in units:
        access.add_node(unit.id)
    for unit in units:
        for read in unit.reads:
            access.add_edge(read, unit.id)
    return access


def unit_plaintext(unit: AuditUnit) -> bytes:
    """The segment of an edge or contradiction unit: canonical ASCII JSON naming the unit and its
    two nodes (their content travels in their own segments, unlocked by the seat's envelope)."""
    if unit.kind is UnitKind.NODE:
        raise GraphError(f"unit {unit.id!r} is a node: its segment is the node itself")
    data: dict[str, Any] = {
        "format": UNIT_FORMAT,
        "version": UNIT_VERSION,
        "kind": unit.kind.value,
        "id": unit.id,
        "source": unit.source,
        "target": unit.target,
    }
    if unit.origin is not None:
        data["origin"] = unit.origin.value
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def is_unit_document(data: object) -> bool:
    return isinstance(data, dict) and data.get("format") == UNIT_FORMAT


def loads_unit(data: object, *, path: str = "segment") -> AuditUnit:
    """The unit a descriptor (parsed JSON) names; `GraphError` naming the field otherwise."""
    if not isinstance(data, dict) or data.get("format") != UNIT_FORMAT:
        raise GraphError(f"{path}: not an audit-unit descriptor (format {UNIT_FORMAT!r})")
    if data.get("version") != UNIT_VERSION:
        raise GraphError(f"{path}.version: {data.get('version')!r}, expected {UNIT_VERSION}")
    unknown = sorted(set(data) - {"format", "version", "kind", "id", "source", "target", "origin"})
    if unknown:
        raise GraphError(f"{path}: unknown fields {unknown}")
    try:
        kind = UnitKind(str(data.get("kind")))
    except ValueError:
        raise GraphError(f"{path}.kind: {data.get('kind')!r}, expected 'edge' or 'contradiction'") from None
    if kind is UnitKind.NODE:
        raise GraphError(f"{path}.kind: a node's segment is the node itself, not a descriptor")
    fields = {}
    for name in ("id", "source", "target"):
        value = data.get(name)
        if not isinstance(value, str) or not value:
            raise GraphError(f"{path}.{name}: expected a non-empty string, got {value!r}")
        fields[name] = value
    if fields["source"] == fields["target"]:
        raise GraphError(f"{path}: source and target are both {fields['source']!r}; a unit joins two nodes")
    expected = (_edge_id if kind is UnitKind.EDGE else _contradiction_id)(fields["source"], fields["target"])
    if fields["id"] != expected:
        raise GraphError(f"{path}.id: {fields['id']!r} does not name its nodes; expected {expected!r}")
    origin = None
    if "origin" in data:
        if kind is not UnitKind.EDGE:
            raise GraphError(f"{path}.origin: only an edge unit has an origin")
        try:
            origin = EdgeOrigin(data["origin"])
        except ValueError:
            raise GraphError(
                f"{path}.origin: {data['origin']!r}, expected one of {[o.value for o in EdgeOrigin]}"
            ) from None
    reads = (fields["target"], fields["source"]) if kind is UnitKind.EDGE else (fields["source"], fields["target"])
    return AuditUnit(fields["id"], kind, reads, fields["source"], fields["target"], origin)
