"""The audit units of a graph: nodes, `contradicts` edges and CIG messages, each one segment."""

from __future__ import annotations

import json

import pytest

from tests.core.graphs.cig_strategies import APPLES_LOG
from trust.core.graphs.agent_log import build_cig, parse_log
from trust.core.graphs.cig import CONTEXT_ROLES
from trust.core.graphs.hdag import EdgeType, Hdag, HdagNode, Level, Tier
from trust.core.graphs.units import (
    UnitKind,
    access_graph,
    audit_units,
    contradiction_tier,
    loads_unit,
    resolved,
    unit_plaintext,
)
from trust.errors import GraphError


def corrected(
    later: str = "Wait, that is wrong: the total is 15.", tier: Tier = Tier.LLM, *, builds_on: str = "s1"
) -> Hdag:
    """A goal, a step, a later step that contradicts it, and a last step that builds on `builds_on`:
    on the contradicted step by default (so the contradiction is unresolved)."""
    graph = Hdag()
    graph.add_node(HdagNode("goal", Level.GOAL, "What do 5 boxes of 3 cost in total?"))
    graph.add_node(HdagNode("s1", Level.STEP, "The total = 5 * 3 = 18.", tier=Tier.COMPUTATIONAL))
    graph.add_node(HdagNode("s2", Level.STEP, later, tier=tier))
    graph.add_node(HdagNode("s3", Level.STEP, "With the delivery fee, 18 + 2 = 20.", tier=Tier.COMPUTATIONAL))
    graph.add_edge("goal", "s1", EdgeType.DECOMPOSES_TO)
    graph.add_edge("s1", "s2", EdgeType.CONTRADICTS)
    graph.add_edge(builds_on, "s3", EdgeType.DEPENDS_ON)
    return graph


def test_a_self_correction_the_trace_goes_on_from_is_resolved_and_gets_no_unit() -> None:
    graph = corrected(builds_on="s2")  # the trace goes on from the corrected value
    assert resolved(graph, "s1", "s2")
    assert [u.id for u in audit_units(graph)] == ["goal", "s1", "s2", "s3"]
    assert not resolved(corrected(), "s1", "s2")


def test_a_contradicts_edge_is_a_unit_after_the_nodes_reading_its_two_claims() -> None:
    graph = corrected()
    units = audit_units(graph)
    assert [u.id for u in units] == ["goal", "s1", "s2", "s3", "contradiction:s1|s2"]
    unit = units[-1]
    assert (unit.kind, unit.source, unit.target, unit.reads, unit.belongs_to) == (
        UnitKind.CONTRADICTION,
        "s1",
        "s2",
        ("s1", "s2"),
        "s2",
    )
    access = access_graph(graph, units)
    assert list(access.predecessors("contradiction:s1|s2")) == ["s1", "s2"]
    assert list(access.predecessors("s2")) == ["s1"]  # a node's seat reads its parents, as before


def test_a_contradiction_goes_to_tier_1_only_when_a_checker_decides_it() -> None:
    graph = corrected()
    assert contradiction_tier(graph, audit_units(graph)[-1]) is Tier.COMPUTATIONAL
    # No quantity with two values: a contradiction in words, judged at the contradicting claim's tier.
    worded = corrected("Wait, that approach is wrong; boxes are sold by weight.", Tier.HUMAN)
    assert contradiction_tier(worded, audit_units(worded)[-1]) is Tier.HUMAN


def test_every_message_into_an_audited_turn_is_an_edge_unit() -> None:
    cig = build_cig(parse_log(APPLES_LOG))
    edges = [u for u in audit_units(cig) if u.kind is UnitKind.EDGE]
    expected = [
        (source, turn.id) for turn in cig.turns() if turn.role not in CONTEXT_ROLES for source in cig.parents(turn.id)
    ]
    assert [(u.source, u.target) for u in edges] == expected and expected
    for unit in edges:
        assert unit.id == f"edge:{unit.source}->{unit.target}" and unit.reads == (unit.target, unit.source)
        assert unit.origin is cig.edge_origin(unit.source, unit.target)
    assert not [u for u in audit_units(cig, edges=False) if u.kind is not UnitKind.NODE]


def test_a_descriptor_round_trips_and_a_bad_one_is_named() -> None:
    cig = build_cig(parse_log(APPLES_LOG))
    for unit in [*audit_units(corrected()), *audit_units(cig)]:
        if unit.kind is not UnitKind.NODE:
            assert loads_unit(json.loads(unit_plaintext(unit))) == unit
    good = json.loads(unit_plaintext(audit_units(corrected())[-1]))
    with pytest.raises(GraphError, match=r"segment\.id: 'contradiction:s1\|s3' does not name its nodes"):
        loads_unit({**good, "id": "contradiction:s1|s3"})
    with pytest.raises(GraphError, match=r"segment\.kind: a node's segment is the node itself"):
        loads_unit({**good, "kind": "node"})
    with pytest.raises(GraphError, match=r"segment\.origin: only an edge unit"):
        loads_unit({**good, "origin": "sequence"})
    with pytest.raises(GraphError, match=r"unknown fields \['extra'\]"):
        loads_unit({**good, "extra": 1})
    with pytest.raises(GraphError, match="is a node: its segment is the node itself"):
        unit_plaintext(audit_units(corrected())[0])


def test_a_node_named_like_a_unit_is_refused() -> None:
    graph = corrected()
    graph.add_node(HdagNode("contradiction:s1|s2", Level.STEP, "a node with a unit's name"))
    with pytest.raises(GraphError, match="node id 'contradiction:s1|s2' is also the id of an audit unit"):
        audit_units(graph)
