"""Critical path, final answer, topological order and the dependency-aware cascade of section 2.1.3."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.graphs.hdag_strategies import valid_hdags
from trust.core.graphs import (
    CASCADE_EDGES,
    PATH_EDGES,
    EdgeType,
    Hdag,
    HdagNode,
    Level,
    NodeStatus,
    cascade,
    critical_path,
    dumps,
    final_answer,
    loads,
    nodes_to_audit,
    topological_order,
)
from trust.errors import GraphError, GraphValidationError

D = EdgeType.DECOMPOSES_TO
DEP = EdgeType.DEPENDS_ON
EN = EdgeType.ENABLES
VAL = EdgeType.VALIDATES
CON = EdgeType.CONTRADICTS


def build(levels: dict[str, Level], edges: list[tuple[str, str, EdgeType]]) -> Hdag:
    hdag = Hdag()
    for node_id, level in levels.items():
        hdag.add_node(HdagNode(node_id, level, f"content of {node_id}"))
    for source, target, kind in edges:
        hdag.add_edge(source, target, kind)
    return hdag


def diamond() -> Hdag:
    """g -> s -> t, which splits into two steps a, b that both feed the operation o; c checks o."""
    return build(
        {
            "g": Level.GOAL,
            "s": Level.STRATEGY,
            "t": Level.TACTIC,
            "a": Level.STEP,
            "b": Level.STEP,
            "o": Level.OPERATION,
            "c": Level.OPERATION,
        },
        [("g", "s", D), ("s", "t", D), ("t", "a", D), ("t", "b", D), ("a", "o", DEP), ("b", "o", DEP), ("o", "c", VAL)],
    )


def along(hdag: Hdag, types: frozenset[EdgeType]) -> nx.DiGraph:
    kept = nx.DiGraph()
    kept.add_nodes_from(hdag.graph.nodes)
    kept.add_edges_from((e.source, e.target) for e in hdag.edges() if e.type in types)
    return kept


# ---------------------------------------------------------------------- topological order


def test_topological_order_breaks_ties_by_insertion_order() -> None:
    assert topological_order(diamond()) == ["g", "s", "t", "a", "b", "o", "c"]
    hdag = build({"g": Level.GOAL, "late": Level.STEP, "early": Level.STEP}, [("g", "early", D), ("g", "late", D)])
    assert topological_order(hdag) == ["g", "late", "early"]


def test_topological_order_refuses_a_cycle() -> None:
    hdag = build({"g": Level.GOAL, "a": Level.STEP, "b": Level.STEP}, [("g", "a", D), ("a", "b", DEP), ("b", "a", DEP)])
    with pytest.raises(GraphError, match="has a cycle"):
        topological_order(hdag)


@given(valid_hdags())
def test_topological_order_puts_parents_first(hdag: Hdag) -> None:
    order = topological_order(hdag)
    position = {node_id: index for index, node_id in enumerate(order)}
    assert sorted(order) == sorted(node.id for node in hdag.nodes())
    for edge in hdag.edges():
        assert position[edge.source] < position[edge.target]


# ---------------------------------------------------------------------- final answer and critical path


def test_the_final_answer_is_the_deepest_end_and_not_its_checker() -> None:
    hdag = diamond()
    assert final_answer(hdag) == "o"  # c is reached only through validates: it checks the answer
    assert critical_path(hdag) == ["g", "s", "t", "a", "o"]  # a and b tie; a was inserted first


def test_the_last_inserted_of_the_deepest_ends_is_the_answer() -> None:
    hdag = build(
        {"g": Level.GOAL, "x": Level.STEP, "first": Level.OPERATION, "second": Level.OPERATION},
        [("g", "x", D), ("x", "first", DEP), ("x", "second", DEP)],
    )
    assert final_answer(hdag) == "second"
    hdag = build(
        {"g": Level.GOAL, "deep": Level.OPERATION, "shallow": Level.STEP},
        [("g", "deep", D), ("g", "shallow", D)],
    )
    assert final_answer(hdag) == "deep"  # depth before insertion order


def test_the_critical_path_is_the_longest_chain_to_the_answer() -> None:
    hdag = build(
        {"g": Level.GOAL, "t": Level.TACTIC, "s1": Level.STEP, "s2": Level.STEP, "o": Level.OPERATION},
        [("g", "t", D), ("g", "o", D), ("t", "s1", D), ("s1", "s2", DEP), ("s2", "o", DEP)],
    )
    assert critical_path(hdag) == ["g", "t", "s1", "s2", "o"]


def test_enables_edges_carry_the_path_but_validates_and_contradicts_do_not() -> None:
    hdag = build(
        {"g": Level.GOAL, "a": Level.STEP, "b": Level.STEP, "x": Level.OPERATION},
        [("g", "a", D), ("a", "b", EN), ("b", "x", VAL), ("a", "x", CON)],
    )
    assert final_answer(hdag) == "b"
    assert critical_path(hdag) == ["g", "a", "b"]


def test_a_named_answer_is_used_and_checked() -> None:
    hdag = diamond()
    assert critical_path(hdag, answer="b") == ["g", "s", "t", "b"]
    with pytest.raises(GraphError, match=r"^answer: unknown node\(s\) 'zz'"):
        critical_path(hdag, answer="zz")
    with pytest.raises(GraphError, match=r"^answer 'c' is not reachable from the goal 'g' through"):
        critical_path(hdag, answer="c")


def test_analysis_of_an_invalid_graph_is_refused() -> None:
    hdag = diamond()
    hdag.add_node(HdagNode("lost", Level.STEP, "nobody points here"))
    for analyse in (critical_path, final_answer, lambda h: cascade(h, set()), lambda h: nodes_to_audit(h, set())):
        with pytest.raises(GraphValidationError, match="'lost'"):
            analyse(hdag)


@given(valid_hdags(max_nodes=8))
def test_the_critical_path_is_a_longest_dependency_path_from_the_goal(hdag: Hdag) -> None:
    path = critical_path(hdag)
    (goal,) = hdag.goals()
    answer = final_answer(hdag)
    assert path[0] == goal and path[-1] == answer
    for source, target in zip(path, path[1:], strict=False):
        assert hdag.edge_type(source, target) in PATH_EDGES
    dependency = along(hdag, PATH_EDGES)
    longest = max(len(p) for p in nx.all_simple_paths(dependency, goal, answer)) if answer != goal else 1
    assert len(path) == longest
    assert critical_path(loads(dumps(hdag))) == path  # deterministic, and survives the JSON round trip
    ends = [n for n in nx.descendants(dependency, goal) | {goal} if dependency.out_degree(n) == 0]
    assert hdag.node(answer).level == max(hdag.node(n).level for n in ends)


# ---------------------------------------------------------------------- cascade


def test_a_failed_step_cascades_to_what_depends_on_it_but_not_to_its_checker() -> None:
    hdag = diamond()
    assert cascade(hdag, {"a"}) == {"a": NodeStatus.INVALID_ROOT, "o": NodeStatus.INVALID_CASCADE}
    assert nodes_to_audit(hdag, {"a"}) == ["g", "s", "t", "b", "c"]


def test_a_failed_plan_cascades_to_its_decomposition() -> None:
    hdag = diamond()
    assert cascade(hdag, {"s"}) == {
        "s": NodeStatus.INVALID_ROOT,
        "t": NodeStatus.INVALID_CASCADE,
        "a": NodeStatus.INVALID_CASCADE,
        "b": NodeStatus.INVALID_CASCADE,
        "o": NodeStatus.INVALID_CASCADE,
    }
    assert nodes_to_audit(hdag, {"s"}) == ["g", "c"]


def test_a_failure_below_another_failure_is_inherited_not_a_root() -> None:
    hdag = diamond()
    statuses = cascade(hdag, ["t", "o"])
    assert statuses["t"] is NodeStatus.INVALID_ROOT
    assert statuses["o"] is NodeStatus.INVALID_CASCADE
    assert list(statuses) == ["t", "a", "b", "o"]  # topological order


def test_enables_edges_do_not_cascade_unless_asked() -> None:
    hdag = build({"g": Level.GOAL, "a": Level.STEP, "b": Level.STEP}, [("g", "a", D), ("a", "b", EN)])
    assert cascade(hdag, {"a"}) == {"a": NodeStatus.INVALID_ROOT}
    assert cascade(hdag, {"a"}, through={EN}) == {"a": NodeStatus.INVALID_ROOT, "b": NodeStatus.INVALID_CASCADE}


def test_no_failure_means_nothing_is_decided() -> None:
    hdag = diamond()
    assert cascade(hdag, set()) == {}
    assert nodes_to_audit(hdag, set()) == topological_order(hdag)


def test_unknown_failed_ids_are_refused() -> None:
    with pytest.raises(GraphError, match=r"^failed: unknown node\(s\) 'nope', 'zz'; name nodes of this HDAG$"):
        cascade(diamond(), {"zz", "nope", "a"})


@given(valid_hdags(max_nodes=10), st.data(), st.sampled_from([CASCADE_EDGES, frozenset(EdgeType), frozenset({EN})]))
def test_cascade_properties(hdag: Hdag, data: st.DataObject, through: frozenset[EdgeType]) -> None:
    ids = [node.id for node in hdag.nodes()]
    failed = set(data.draw(st.lists(st.sampled_from(ids), max_size=4)))
    statuses = cascade(hdag, failed, through=through)
    carrying = along(hdag, through)
    downstream = set().union(*(nx.descendants(carrying, f) for f in failed)) if failed else set()

    assert set(statuses) == failed | downstream
    for node_id, status in statuses.items():
        if node_id in downstream:
            assert status is NodeStatus.INVALID_CASCADE
        else:
            assert status is NodeStatus.INVALID_ROOT
            assert not nx.ancestors(carrying, node_id) & failed
    for node_id in statuses:  # closed: everything a decided node feeds through `through` is decided too
        for child in carrying.successors(node_id):
            assert statuses[child] is NodeStatus.INVALID_CASCADE

    to_audit = nodes_to_audit(hdag, failed, through=through)
    assert not set(to_audit) & set(statuses)
    assert set(to_audit) | set(statuses) == set(ids)
    order = topological_order(hdag)
    assert to_audit == [n for n in order if n in set(to_audit)]
    assert list(statuses) == [n for n in order if n in statuses]
