"""Algorithm 1 (deterministic fault localization): every branch by hand, then properties on random CIGs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.graphs.cig_strategies import Scored, Spec, scored
from trust.core.graphs.audit import CigAudit, EdgeAudit, EdgeScore, NodeAudit
from trust.core.graphs.cig import AgentTurn, Cig, Role, turn_id
from trust.core.graphs.localize import Localization, RootCause, RootReason, localize, localize_audit
from trust.core.graphs.status import NodeStatus
from trust.errors import GraphError

TAU = 0.8
OK = EdgeScore()
V, ROOT, CASCADE, NEGLIGENT = (
    NodeStatus.VALID,
    NodeStatus.INVALID_ROOT,
    NodeStatus.INVALID_CASCADE,
    NodeStatus.NEGLIGENT,
)


def _graph(roles: list[Role], edges: list[tuple[int, int]]) -> Cig:
    cig = Cig()
    for step, role in enumerate(roles):
        cig.add_turn(AgentTurn(turn_id(step), step, f"{role.value}{step}", role, f"output {step}"))
    for source, target in edges:
        cig.add_edge(turn_id(source), turn_id(target))
    return cig


def _run(
    roles: list[Role],
    edges: list[tuple[int, int]],
    scores: list[float],
    failed: dict[tuple[int, int], EdgeScore] | None = None,
    rejecting: set[int] | None = None,
) -> Localization:
    cig = _graph(roles, edges)
    failed = failed or {}
    edge_scores = {(turn_id(s), turn_id(t)): failed.get((s, t), OK) for s, t in edges}
    return localize(
        cig,
        {turn_id(i): score for i, score in enumerate(scores)},
        edge_scores,
        tau_node=TAU,
        tau_edge=TAU,
        rejecting={turn_id(i) for i in rejecting or set()},
    )


def _statuses(result: Localization) -> list[NodeStatus]:
    return list(result.statuses.values())


C, R, T, P = Role.CODER, Role.REVIEWER, Role.TOOL, Role.PLANNER


def test_all_good_is_all_valid() -> None:
    result = _run([P, C, T, R], [(0, 1), (1, 2), (2, 3)], [1.0, 0.9, 0.8, 1.0])
    assert _statuses(result) == [V, V, V, V] and result.root_causes == ()


def test_a_node_below_tau_with_valid_parents_is_the_root_and_failing_children_cascade() -> None:
    result = _run([P, C, C, C], [(0, 1), (1, 2), (2, 3)], [1.0, 0.2, 0.5, 0.9])
    # t3 passes its own audit: Algorithm 1 marks it Valid although its parent is invalid.
    assert _statuses(result) == [V, ROOT, CASCADE, V]
    assert result.root_causes == (RootCause("t1", "coder1", 1, ROOT, RootReason.NODE_FAILURE),)
    assert result.with_status(CASCADE) == ["t2"]


def test_a_failed_incoming_edge_makes_the_receiver_the_root_whatever_its_score_and_parents() -> None:
    protocol = EdgeScore(protocol=0.79)
    fidelity = EdgeScore(fidelity=0.0)
    result = _run(
        [P, C, C, C],
        [(0, 1), (1, 2), (2, 3), (0, 3)],
        [1.0, 1.0, 0.1, 1.0],
        failed={(0, 1): protocol, (2, 3): fidelity},
    )
    # t1: breach at its boundary despite a perfect score; t2 fails with an invalid parent: cascade;
    # t3: its edge from t2 fails, so Invalid_Root even though t2 is already invalid (line 5 first).
    assert _statuses(result) == [V, ROOT, CASCADE, ROOT]
    assert [(c.node_id, c.reason, c.parents) for c in result.root_causes] == [
        ("t1", RootReason.EDGE_FAILURE, ("t0",)),
        ("t3", RootReason.EDGE_FAILURE, ("t2",)),
    ]


def test_a_reviewer_that_passes_invalid_work_is_negligent_and_its_children_see_it() -> None:
    result = _run([C, R, C, C], [(0, 1), (1, 2), (2, 3)], [0.1, 0.95, 0.5, 0.5])
    assert _statuses(result) == [ROOT, NEGLIGENT, CASCADE, CASCADE]
    assert result.root_causes[1] == RootCause("t1", "reviewer1", 1, NEGLIGENT, RootReason.APPROVED_INVALID, ("t0",))


def test_a_reviewer_that_rejects_invalid_work_is_valid() -> None:
    result = _run([C, R], [(0, 1)], [0.1, 0.95], rejecting={1})
    assert _statuses(result) == [ROOT, V]


def test_a_reviewer_of_valid_work_is_valid_and_a_failing_reviewer_is_root_or_cascade() -> None:
    assert _statuses(_run([C, R], [(0, 1)], [1.0, 1.0])) == [V, V]
    assert _statuses(_run([C, R], [(0, 1)], [1.0, 0.3])) == [V, ROOT]
    assert _statuses(_run([C, R], [(0, 1)], [0.3, 0.3])) == [ROOT, CASCADE]


def test_non_reviewers_passing_on_invalid_work_are_valid() -> None:
    assert _statuses(_run([C, C, T, P], [(0, 1), (0, 2), (0, 3)], [0.0, 1.0, 1.0, 1.0])) == [ROOT, V, V, V]


def test_thresholds_are_inclusive_for_passing() -> None:
    assert _statuses(_run([C, C], [(0, 1)], [0.8, 0.8], failed={(0, 1): EdgeScore(0.8, 0.8)})) == [V, V]
    assert _statuses(_run([C, C], [(0, 1)], [0.8, 0.8], failed={(0, 1): EdgeScore(0.8, 0.7999)})) == [V, ROOT]


def test_one_invalid_parent_among_valid_ones_propagates() -> None:
    result = _run([P, C, C, C], [(0, 3), (1, 3), (2, 3)], [1.0, 0.1, 1.0, 0.0])
    assert _statuses(result) == [V, ROOT, V, CASCADE]


def test_missing_extra_and_bad_scores_are_refused() -> None:
    cig = _graph([C, C], [(0, 1)])
    nodes = {"t0": 1.0, "t1": 1.0}
    edges = {("t0", "t1"): OK}
    with pytest.raises(GraphError, match="turn 't1' has no validity score"):
        localize(cig, {"t0": 1.0}, edges, tau_node=TAU, tau_edge=TAU)
    with pytest.raises(GraphError, match=r"edge 't0' -> 't1' has no scores"):
        localize(cig, nodes, {}, tau_node=TAU, tau_edge=TAU)
    with pytest.raises(GraphError, match="turn the CIG does not have: 't9'"):
        localize(cig, nodes | {"t9": 1.0}, edges, tau_node=TAU, tau_edge=TAU)
    with pytest.raises(GraphError, match=r"an edge the CIG does not have: \('t1', 't0'\)"):
        localize(cig, nodes, edges | {("t1", "t0"): OK}, tau_node=TAU, tau_edge=TAU)
    for bad in (1.5, -0.1, math.nan):
        with pytest.raises(GraphError, match="outside"):
            localize(cig, nodes | {"t1": bad}, edges, tau_node=TAU, tau_edge=TAU)
    for tau in (0.0, 1.2, math.nan):
        with pytest.raises(GraphError, match="tau_node"):
            localize(cig, nodes, edges, tau_node=tau, tau_edge=TAU)
        with pytest.raises(GraphError, match="tau_edge"):
            localize(cig, nodes, edges, tau_node=TAU, tau_edge=tau)
    with pytest.raises(GraphError, match="unknown turn 't9'"):
        localize(cig, nodes, edges, tau_node=TAU, tau_edge=TAU).status("t9")


def test_localize_audit_uses_scores_and_rejections_of_an_audit() -> None:
    cig = _graph([C, R], [(0, 1)])
    audit = CigAudit(
        {"t0": NodeAudit("t0", 0.0), "t1": NodeAudit("t1", 1.0, rejects_input=True)},
        {("t0", "t1"): EdgeAudit("t0", "t1", OK)},
    )
    assert _statuses(localize_audit(cig, audit, tau_node=TAU, tau_edge=TAU)) == [ROOT, V]


# ---------------------------------------------------------------------------------------------- properties


def _localize(case: Scored, cig: Cig | None = None) -> Localization:
    return localize(
        cig or case.spec.build(),
        case.node_scores,
        case.edge_scores,
        tau_node=TAU,
        tau_edge=TAU,
        rejecting=case.rejecting,
    )


@given(scored())
def test_every_status_is_justified_by_its_branch(case: Scored) -> None:
    result = _localize(case)
    spec: Spec = case.spec
    assert list(result.statuses) == [turn_id(i) for i in range(len(spec.roles))]
    for i, role in enumerate(spec.roles):
        node = turn_id(i)
        status = result.statuses[node]
        parents = [turn_id(p) for p in spec.parents[i]]
        edge_fails = any(case.edge_scores[(p, node)].fails(TAU) for p in parents)
        propagated = any(result.statuses[p] is not V for p in parents)
        passes = case.node_scores[node] >= TAU
        approves = role is Role.REVIEWER and propagated and node not in case.rejecting
        if status is ROOT:
            assert edge_fails or (not passes and not propagated)
        elif status is CASCADE:
            assert not edge_fails and not passes and propagated
        elif status is NEGLIGENT:
            assert not edge_fails and passes and approves
        else:
            assert not edge_fails and passes and not approves
    roots = [c.node_id for c in result.root_causes]
    assert roots == [n for n, s in result.statuses.items() if s in (ROOT, NEGLIGENT)]


@given(scored(), st.data())
def test_statuses_are_a_function_of_scores_and_topology(case: Scored, data: st.DataObject) -> None:
    first = _localize(case)
    outputs = tuple(data.draw(st.text(max_size=20)) for _ in case.spec.roles)
    assert _localize(case, case.spec.build(outputs)) == first


@given(scored(), st.data())
def test_changing_one_score_only_affects_that_node_and_its_descendants(case: Scored, data: st.DataObject) -> None:
    cig = case.spec.build()
    before = _localize(case, cig)
    node = data.draw(st.sampled_from(list(case.node_scores)))
    changed = Scored(case.spec, case.node_scores | {node: data.draw(st.floats(0, 1))}, case.edge_scores, case.rejecting)
    after = _localize(changed, cig)
    affected = {node, *cig.descendants(node)}
    for other, status in before.statuses.items():
        if other not in affected:
            assert after.statuses[other] is status


@given(scored())
def test_without_failures_everything_is_valid(case: Scored) -> None:
    clean = Scored(case.spec, dict.fromkeys(case.node_scores, 1.0), dict.fromkeys(case.edge_scores, OK), frozenset())
    result = _localize(clean)
    assert set(result.statuses.values()) <= {V} and result.root_causes == ()


@given(scored())
def test_a_cascade_always_traces_back_to_a_root_cause(case: Scored) -> None:
    result = _localize(case)
    cig = case.spec.build()
    roots = {c.node_id for c in result.root_causes}
    for node, status in result.statuses.items():
        if status is CASCADE:
            ancestors = {a for a in result.statuses if node in cig.descendants(a)}
            assert ancestors & roots
