"""Prune, freeze and feedback of the refinement loop (paper 2.3.1 and 2.3.3), on HDAGs and plain DAGs."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.core.graphs.hdag import EdgeType, Hdag, HdagNode, Level
from trust.core.graphs.refinement import (
    AuditFinding,
    ErrorType,
    FeedbackKind,
    feedback_for,
    node_context,
    plan_repair,
)
from trust.core.graphs.status import NodeStatus
from trust.errors import GraphError

V = NodeStatus.VALID
ROOT = NodeStatus.INVALID_ROOT
CASCADE = NodeStatus.INVALID_CASCADE
NEGLIGENT = NodeStatus.NEGLIGENT


def integration_hdag() -> Hdag:
    """The worked example of section 2.1.4: integrate x^2 e^x by parts twice."""
    hdag = Hdag()
    nodes = [
        ("v0", Level.GOAL, "Compute the integral of x^2 e^x dx"),
        ("v1", Level.STRATEGY, "Apply integration by parts twice since x^2 requires two reductions"),
        ("v2", Level.TACTIC, "First application with u = x^2 and dv = e^x dx"),
        ("v3", Level.TACTIC, "Second application with u = 2x and dv = e^x dx"),
        ("v4", Level.STEP, "du = 2x dx and v = e^x"),
        ("v5", Level.STEP, "x^2 e^x - integral of 2x e^x dx"),
        ("v6", Level.STEP, "du = 2 dx and v = e^x"),
        ("v7", Level.STEP, "2x e^x - integral of 2 e^x dx"),
        ("v8", Level.OPERATION, "integral of 2 e^x dx = e^x"),
        ("v9", Level.OPERATION, "x^2 e^x - 2x e^x + 2e^x + C"),
    ]
    for node_id, level, content in nodes:
        hdag.add_node(HdagNode(node_id, level, content))
    edges = [
        ("v0", "v1", EdgeType.DECOMPOSES_TO),
        ("v1", "v2", EdgeType.DECOMPOSES_TO),
        ("v2", "v3", EdgeType.ENABLES),
        ("v2", "v4", EdgeType.DECOMPOSES_TO),
        ("v4", "v5", EdgeType.DEPENDS_ON),
        ("v3", "v6", EdgeType.DECOMPOSES_TO),
        ("v6", "v7", EdgeType.DEPENDS_ON),
        ("v5", "v7", EdgeType.DEPENDS_ON),
        ("v7", "v8", EdgeType.DECOMPOSES_TO),
        ("v8", "v9", EdgeType.DEPENDS_ON),
    ]
    for source, target, edge_type in edges:
        hdag.add_edge(source, target, edge_type)
    return hdag


def test_operation_error_prunes_its_descendants_and_freezes_the_rest() -> None:
    graph = integration_hdag().graph
    statuses = {node: V for node in graph}
    statuses |= {"v8": ROOT, "v9": CASCADE}
    plan = plan_repair(graph, statuses)
    assert plan.failed == ("v8",)
    assert plan.pruned == {"v8", "v9"}
    assert plan.frozen == set(graph) - {"v8", "v9"}
    assert plan.order == ("v8", "v9")
    assert plan.kinds == {"v8": FeedbackKind.CORRECTIVE}
    assert plan.error_types == {"v8": ErrorType.FACTUAL}
    assert plan.cost == 2 and plan.total == 10
    assert plan.savings == pytest.approx(0.8)


def test_strategy_error_gets_directive_feedback_and_prunes_almost_everything() -> None:
    graph = integration_hdag().graph
    statuses = {node: CASCADE for node in graph} | {"v0": V, "v1": ROOT}
    plan = plan_repair(graph, statuses)
    assert plan.kinds == {"v1": FeedbackKind.DIRECTIVE}
    assert plan.frozen == {"v0"}
    assert plan.order[0] == "v1" and len(plan.order) == 9


def test_valid_descendants_of_a_failure_are_pruned_too() -> None:
    graph = integration_hdag().graph
    # Algorithm 1 can leave a node Valid below a failure (its own check passed); its input is tainted.
    statuses = {node: V for node in graph} | {"v5": ROOT, "v7": CASCADE}
    plan = plan_repair(graph, statuses)
    assert plan.pruned == {"v5", "v7", "v8", "v9"}
    assert "v8" not in plan.frozen and statuses["v8"] is V


def test_declared_error_type_and_stationarity_override_the_level() -> None:
    graph = integration_hdag().graph
    statuses = {node: V for node in graph} | {"v2": ROOT, "v8": ROOT, "v3": CASCADE}
    statuses |= {n: CASCADE for n in ("v4", "v5", "v6", "v7", "v9")}
    findings = {"v2": AuditFinding(ROOT, "u chosen wrongly", error_type=ErrorType.FACTUAL)}
    plan = plan_repair(graph, statuses, findings=findings, stationary={"v8"})
    assert plan.kinds == {"v2": FeedbackKind.CORRECTIVE, "v8": FeedbackKind.DIVERGENCE}
    assert plan.failed == ("v2", "v8")


def test_negligent_reviewer_and_planner_role_on_a_plain_graph() -> None:
    graph = nx.DiGraph()
    graph.add_node("plan", role="Planner", output="Use a brute-force search", input="find the shortest route")
    graph.add_node("code", role="Coder", output="def route(): ...")
    graph.add_node("review", role="Reviewer", output="LGTM")
    graph.add_node("side", role="Coder", output="helper")
    graph.add_edges_from([("plan", "code"), ("code", "review")])
    statuses = {"plan": ROOT, "code": CASCADE, "review": NEGLIGENT, "side": V}
    plan = plan_repair(graph, statuses)
    assert plan.kinds == {"plan": FeedbackKind.DIRECTIVE, "review": FeedbackKind.CORRECTIVE}
    assert plan.error_types["review"] is ErrorType.NEGLIGENCE
    assert plan.frozen == {"side"}
    assert node_context(graph, "plan") == "find the shortest route"
    assert node_context(graph, "review") == "[code] def route(): ..."


def test_corrective_prompt_carries_input_critique_type_and_the_correct_value() -> None:
    graph = integration_hdag().graph
    statuses = {node: V for node in graph} | {"v8": ROOT, "v9": CASCADE}
    plan = plan_repair(graph, statuses)
    finding = AuditFinding(ROOT, "the factor 2 was dropped", expected="2e^x + C")
    feedback = feedback_for(graph, plan, "v8", ROOT, finding, round=2)
    prompt = feedback.prompt()
    assert "2x e^x - integral of 2 e^x dx" in prompt  # the original input: v8's parent
    assert "integral of 2 e^x dx = e^x" in prompt  # the failed output
    assert "the factor 2 was dropped" in prompt
    assert "factual (Invalid_Root)" in prompt
    assert "The correct result is 2e^x + C. Please recalculate" in prompt
    with pytest.raises(GraphError, match="not a failed node"):
        feedback_for(graph, plan, "v9", CASCADE)


def test_directive_and_divergence_wording() -> None:
    graph = integration_hdag().graph
    statuses = {node: CASCADE for node in graph} | {"v0": V, "v1": ROOT}
    plan = plan_repair(graph, statuses)
    finding = AuditFinding(ROOT, "substitution is inefficient here", hint="integration by parts with u = x^2")
    directive = feedback_for(graph, plan, "v1", ROOT, finding).prompt()
    assert "Your approach is flawed: substitution is inefficient here" in directive
    assert "Consider integration by parts with u = x^2." in directive
    stuck = plan_repair(graph, statuses, stationary={"v1"})
    divergence = feedback_for(graph, stuck, "v1", ROOT, finding, previous_outputs=("a", "a")).prompt()
    assert "Your previous 2 attempts produced identical outputs" in divergence
    assert "fundamentally different approach" in divergence


def test_inconsistent_or_incomplete_statuses_are_refused() -> None:
    graph = integration_hdag().graph
    with pytest.raises(GraphError, match="no audit status for 1 node"):
        plan_repair(graph, {node: V for node in graph if node != "v9"})
    with pytest.raises(GraphError, match="not in the graph"):
        plan_repair(graph, {node: V for node in graph} | {"ghost": V})
    with pytest.raises(GraphError, match="Invalid_Cascade but depend on no Invalid_Root"):
        plan_repair(graph, {node: V for node in graph} | {"v9": CASCADE})


def test_cycles_are_refused() -> None:
    graph = nx.DiGraph([("a", "b"), ("b", "a")])
    with pytest.raises(GraphError, match="cycle"):
        plan_repair(graph, {"a": ROOT, "b": CASCADE})


@st.composite
def audited_dags(draw: st.DrawFn) -> tuple[nx.DiGraph, dict[str, NodeStatus]]:
    """A random DAG with statuses assigned as Algorithm 1 does from random node verdicts."""
    size = draw(st.integers(1, 25))
    graph = nx.DiGraph()
    graph.add_nodes_from(f"n{i}" for i in range(size))
    for target in range(1, size):
        for source in draw(st.sets(st.integers(0, target - 1), max_size=3)):
            graph.add_edge(f"n{source}", f"n{target}")
    passes = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    reviewers = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    statuses: dict[str, NodeStatus] = {}
    for index, node in enumerate(nx.topological_sort(graph)):
        propagated = any(statuses[p] is not V for p in graph.predecessors(node))
        if passes[index]:
            statuses[node] = NEGLIGENT if reviewers[index] and propagated else V
        else:
            statuses[node] = CASCADE if propagated else ROOT
    return graph, statuses


@settings(max_examples=200, deadline=None)
@given(audited_dags())
def test_prune_and_freeze_partition_the_graph(case: tuple[nx.DiGraph, dict[str, NodeStatus]]) -> None:
    graph, statuses = case
    plan = plan_repair(graph, statuses)
    failed = {node for node, status in statuses.items() if status in (ROOT, NEGLIGENT)}
    assert plan.pruned | plan.frozen == set(graph) and not plan.pruned & plan.frozen
    assert set(plan.failed) == failed == set(plan.kinds)
    for node in failed:
        assert nx.descendants(graph, node) <= plan.pruned
    for node in plan.pruned - failed:  # nothing is pruned that no failure reaches
        assert any(p in plan.pruned for p in graph.predecessors(node))
    for node in plan.frozen:
        assert statuses[node] is V and not nx.ancestors(graph, node) & failed
    position = {node: i for i, node in enumerate(plan.order)}
    assert set(position) == plan.pruned
    assert all(position[u] < position[v] for u, v in graph.subgraph(plan.pruned).edges)
    assert 0.0 <= plan.savings <= 1.0
    assert plan.cost + len(plan.frozen) == plan.total == graph.number_of_nodes()
