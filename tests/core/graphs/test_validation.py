"""Structural validation of HDAGs (paper 2.1.4 step 5): every violation reported, each naming its node or edge."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.graphs.hdag_strategies import valid_hdags
from trust.core.graphs import EdgeType, Hdag, HdagNode, Level, validate, violations
from trust.errors import GraphError, GraphValidationError


def chain(*levels: Level, kind: EdgeType = EdgeType.DECOMPOSES_TO) -> Hdag:
    """n0 -> n1 -> ... with the given levels."""
    hdag = Hdag()
    for index, level in enumerate(levels):
        hdag.add_node(HdagNode(f"n{index}", level, f"content {index}"))
        if index:
            hdag.add_edge(f"n{index - 1}", f"n{index}", kind)
    return hdag


def small() -> Hdag:
    return chain(Level.GOAL, Level.STRATEGY, Level.TACTIC, Level.STEP, Level.OPERATION)


def test_a_well_formed_graph_has_no_violations() -> None:
    hdag = small()
    assert violations(hdag) == []
    validate(hdag)


def test_the_empty_graph_is_an_error() -> None:
    with pytest.raises(GraphValidationError) as caught:
        validate(Hdag())
    assert caught.value.violations == ["the HDAG is empty: it needs one goal node and the reasoning below it"]


def test_a_graph_without_a_goal_is_reported() -> None:
    hdag = chain(Level.STRATEGY, Level.STEP)
    found = violations(hdag)
    assert any(v.startswith("no goal node") for v in found)
    assert any("'n0' (strategy) is an orphan" in v for v in found)


def test_two_goals_are_named() -> None:
    hdag = small()
    hdag.add_node(HdagNode("g2", Level.GOAL, "a second problem"))
    hdag.add_edge("g2", "n3", EdgeType.DEPENDS_ON)
    assert violations(hdag) == ["2 goal nodes ('n0', 'g2'): exactly one is allowed; merge them or demote the others"]


def test_a_cycle_is_spelled_out() -> None:
    hdag = small()
    hdag.add_node(HdagNode("a", Level.STEP, "a"))
    hdag.add_node(HdagNode("b", Level.STEP, "b"))
    hdag.add_edge("n2", "a", EdgeType.DECOMPOSES_TO)
    hdag.add_edge("a", "b", EdgeType.DEPENDS_ON)
    hdag.add_edge("b", "a", EdgeType.DEPENDS_ON)
    assert violations(hdag) == ["cycle 'a' -> 'b' -> 'a': an HDAG must be acyclic; remove one of these edges"]


def test_each_cyclic_component_is_reported_once_and_self_loops_count() -> None:
    hdag = small()
    for name in "abc":
        hdag.add_node(HdagNode(name, Level.STEP, name))
        hdag.add_edge("n2", name, EdgeType.DECOMPOSES_TO)
    hdag.add_edge("a", "b", EdgeType.DEPENDS_ON)
    hdag.add_edge("b", "a", EdgeType.DEPENDS_ON)
    hdag.graph.add_edge("c", "c", type=EdgeType.DEPENDS_ON)  # the builder refuses this; a hand-made graph may not
    found = violations(hdag)
    assert found == [
        "cycle 'a' -> 'b' -> 'a': an HDAG must be acyclic; remove one of these edges",
        "cycle 'c' -> 'c': an HDAG must be acyclic; remove one of these edges",
    ]


def test_orphans_and_unreachable_nodes_are_told_apart() -> None:
    hdag = small()
    hdag.add_node(HdagNode("orphan", Level.TACTIC, "nobody points here"))
    hdag.add_node(HdagNode("below", Level.STEP, "only the orphan points here"))
    hdag.add_edge("orphan", "below", EdgeType.DECOMPOSES_TO)
    assert violations(hdag) == [
        "node 'orphan' (tactic) is an orphan: no edge leads to it",
        "node 'below' (step) is not reachable from the goal",
    ]


@pytest.mark.parametrize("level", [Level.GOAL, Level.STRATEGY, Level.TACTIC])
def test_leaves_above_step_level_are_reported(level: Level) -> None:
    hdag = chain(*[lv for lv in Level if lv <= level])
    last = f"n{int(level)}"
    assert violations(hdag) == [
        f"node {last!r} ({level.label}) is a leaf: only step and operation nodes may end the reasoning; "
        "decompose it or remove it"
    ]


@pytest.mark.parametrize("level", [Level.STEP, Level.OPERATION])
def test_leaves_at_step_or_operation_level_are_fine(level: Level) -> None:
    hdag = chain(*[lv for lv in Level if lv <= level])
    assert violations(hdag) == []


def test_the_hierarchy_constraint_is_rechecked_on_graphs_built_by_hand() -> None:
    hdag = small()
    hdag.graph.add_edge("n4", "n1", type=EdgeType.DEPENDS_ON)  # upward: operation -> strategy
    found = violations(hdag)
    assert (
        "edge 'n4' -> 'n1' (depends_on) goes up from operation to strategy: "
        "the hierarchy constraint needs level(source) <= level(target)"
    ) in found
    assert any(v.startswith("cycle 'n1' -> 'n2' -> 'n3' -> 'n4' -> 'n1'") for v in found)


def test_unknown_levels_difficulties_tiers_and_edge_types_are_reported() -> None:
    hdag = small()
    hdag.add_node(HdagNode("x", "stepp", "typo", difficulty="hardest", tier=7))  # type: ignore[arg-type]
    hdag.graph.add_edge("n2", "x", type="depends")
    found = violations(hdag)
    assert "node 'x': unknown level 'stepp'; expected one of goal, strategy, tactic, step, operation" in found
    assert "node 'x': unknown difficulty 'hardest'; expected one of easy, medium, hard" in found
    assert "node 'x': unknown tier 7; expected one of 1, 2, 3" in found
    assert (
        "edge 'n2' -> 'x': unknown edge type 'depends'; expected one of "
        "decomposes_to, depends_on, enables, validates, contradicts"
    ) in found


def test_node_values_must_match_their_keys() -> None:
    hdag = small()
    hdag.graph.add_node("bare")
    hdag.graph.add_edge("n3", "bare", type=EdgeType.DEPENDS_ON)
    hdag.graph.add_node("key", node=HdagNode("other", Level.STEP, "mislabelled"))
    hdag.graph.add_edge("n3", "key", type=EdgeType.DEPENDS_ON)
    found = violations(hdag)
    assert found == [
        "node 'bare': holds no HdagNode value (got NoneType)",
        "node 'key': its value carries the id 'other'; the two must match",
    ]


def test_validate_raises_with_every_violation() -> None:
    hdag = small()
    hdag.add_node(HdagNode("lost", Level.STRATEGY, "alone"))
    hdag.add_node(HdagNode("g2", Level.GOAL, "again"))
    with pytest.raises(GraphValidationError) as caught:
        validate(hdag)
    error = caught.value
    assert isinstance(error, GraphError)
    assert error.violations == violations(hdag)
    assert len(error.violations) == 4  # two goals, an orphan, two leaves above step level
    for line in error.violations:
        assert line in str(error)


@given(valid_hdags())
def test_generated_graphs_are_valid(hdag: Hdag) -> None:
    assert violations(hdag) == []


@given(valid_hdags(), st.data())
def test_cutting_every_edge_into_a_node_makes_it_an_orphan(hdag: Hdag, data: st.DataObject) -> None:
    others = [node.id for node in hdag.nodes() if node.level is not Level.GOAL]
    victim = data.draw(st.sampled_from(others))
    for parent in hdag.parents(victim):
        hdag.graph.remove_edge(parent, victim)
    level = hdag.node(victim).level.label
    assert f"node {victim!r} ({level}) is an orphan: no edge leads to it" in violations(hdag)


@given(valid_hdags(), st.data())
def test_an_edge_back_to_an_ancestor_is_reported_as_a_cycle(hdag: Hdag, data: st.DataObject) -> None:
    below = data.draw(st.sampled_from([node.id for node in hdag.nodes() if hdag.parents(node.id)]))
    ancestor = data.draw(st.sampled_from(sorted(nx.ancestors(hdag.graph, below))))
    hdag.graph.add_edge(below, ancestor, type=EdgeType.DEPENDS_ON)
    cycles = [v for v in violations(hdag) if v.startswith("cycle ")]
    assert len(cycles) == 1
    assert repr(below) in cycles[0] and repr(ancestor) in cycles[0]
