"""The CIG model: turns unrolled in time, causal edges, get_parents / get_descendants, topological order."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given

from tests.core.graphs.cig_strategies import Spec, specs
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, ReplyContract, Role, turn_id
from trust.errors import GraphError


def _turn(step: int, agent: str = "Coder", role: Role = Role.CODER, output: str = "") -> AgentTurn:
    return AgentTurn(turn_id(step), step, agent, role, output or f"out {step}")


def _loop() -> Cig:
    """Coder <-> Reviewer, three rounds, unrolled: c0 -> r1 -> c2 -> r3 -> c4, plus c0 -> c2 (overlap)."""
    cig = Cig()
    for step in range(5):
        agent, role = ("Coder", Role.CODER) if step % 2 == 0 else ("Reviewer", Role.REVIEWER)
        cig.add_turn(_turn(step, agent, role))
        if step:
            cig.add_edge(turn_id(step - 1), turn_id(step), EdgeOrigin.SEQUENCE)
    cig.add_edge("t0", "t2", EdgeOrigin.OVERLAP)
    return cig


def test_a_loop_is_unrolled_into_a_dag() -> None:
    cig = _loop()
    assert len(cig) == 5 and cig.number_of_edges() == 5
    assert nx.is_directed_acyclic_graph(cig.graph)
    assert cig.parents("t2") == ["t0", "t1"] == cig.get_parents("t2")
    assert cig.children("t0") == ["t1", "t2"]
    assert cig.descendants("t1") == ["t2", "t3", "t4"] == cig.get_descendants("t1")
    assert cig.descendants("t4") == []
    assert cig.topological_order() == ["t0", "t1", "t2", "t3", "t4"]
    assert cig.agents() == {"Coder": Role.CODER, "Reviewer": Role.REVIEWER}
    assert cig.at_step(3).agent == "Reviewer"
    assert cig.message("t0", "t2") == "out 0"
    assert cig.edge_origin("t0", "t2") is EdgeOrigin.OVERLAP
    assert cig.edge_origin("t1", "t2") is EdgeOrigin.SEQUENCE
    assert [(e.source, e.target, e.origin) for e in cig.edges()][:3] == [
        ("t0", "t1", EdgeOrigin.SEQUENCE),
        ("t1", "t2", EdgeOrigin.SEQUENCE),
        ("t0", "t2", EdgeOrigin.OVERLAP),
    ]


def test_the_networkx_view_carries_turns_and_origins_and_follows_additions() -> None:
    cig = _loop()
    graph = cig.graph
    assert graph.nodes["t3"]["node"] == cig.turn("t3")
    assert graph.edges["t0", "t2"]["origin"] is EdgeOrigin.OVERLAP
    cig.add_turn(_turn(7))
    cig.add_edge("t4", "t7")
    assert cig.graph is graph and graph.has_edge("t4", "t7") and graph.nodes["t7"]["node"].step == 7
    assert cig.descendants("t3") == ["t4", "t7"]


def test_steps_may_skip_but_never_go_back() -> None:
    cig = Cig()
    cig.add_turn(_turn(2))
    cig.add_turn(_turn(5))
    with pytest.raises(GraphError, match="not after step 5"):
        cig.add_turn(_turn(4))
    with pytest.raises(GraphError, match="duplicate turn id 't5'"):
        cig.add_turn(AgentTurn("t5", 9, "x", Role.EXPERT, ""))
    with pytest.raises(GraphError, match="negative step"):
        Cig().add_turn(_turn(-1))
    with pytest.raises(GraphError, match="empty id"):
        Cig().add_turn(AgentTurn("", 0, "x", Role.EXPERT, ""))


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        ("t9", "t1", "unknown turn 't9'"),
        ("t0", "t9", "unknown turn 't9'"),
        ("t1", "t0", "only receive output of an earlier turn"),
        ("t1", "t1", "only receive output of an earlier turn"),
        ("t0", "t1", "already present"),
    ],
)
def test_bad_edges_are_refused(source: str, target: str, message: str) -> None:
    cig = Cig()
    cig.add_turn(_turn(0))
    cig.add_turn(_turn(1))
    cig.add_edge("t0", "t1")
    with pytest.raises(GraphError, match=message):
        cig.add_edge(source, target)


def test_reading_unknown_things_names_them() -> None:
    cig = _loop()
    for call in (lambda: cig.turn("t9"), lambda: cig.parents("t9"), lambda: cig.descendants("nope")):
        with pytest.raises(GraphError, match="unknown turn"):
            call()
    with pytest.raises(GraphError, match="no turn at step 9"):
        cig.at_step(9)
    with pytest.raises(GraphError, match="no edge 't0' -> 't3'"):
        cig.message("t0", "t3")
    with pytest.raises(GraphError, match="no edge"):
        cig.edge_origin("t3", "t0")
    with pytest.raises(GraphError, match="positions 0 -> 9"):
        cig.add_edge_at(0, 9)
    assert not cig.has_edge("t0", "t9")


def test_roles_parse_names_and_synonyms() -> None:
    assert Role.parse("Reviewer") is Role.REVIEWER
    assert Role.parse(" verifier ") is Role.REVIEWER
    assert Role.parse("environment") is Role.TOOL
    assert Role.parse("manager") is Role.PLANNER
    for bad in ("wizard", 3, None):
        with pytest.raises(GraphError, match="unknown role"):
            Role.parse(bad)


def test_reply_contracts_are_checked() -> None:
    assert ReplyContract("json", ("answer",)).required == ("answer",)
    with pytest.raises(GraphError, match="expected 'json' or 'text'"):
        ReplyContract("xml")
    with pytest.raises(GraphError, match="needs format 'json'"):
        ReplyContract("text", ("answer",))


@given(specs())
def test_time_order_is_a_topological_order_and_descendants_match_networkx(spec: Spec) -> None:
    cig = spec.build()
    order = {node: i for i, node in enumerate(cig.topological_order())}
    assert len(order) == len(cig)
    for source, target in cig.graph.edges:
        assert order[source] < order[target]
    assert nx.is_directed_acyclic_graph(cig.graph)
    assert cig.number_of_edges() == cig.graph.number_of_edges() == len(spec.edges())
    for node in cig.topological_order():
        assert set(cig.descendants(node)) == nx.descendants(cig.graph, node)
        assert set(cig.parents(node)) == set(cig.graph.predecessors(node))
        assert set(cig.children(node)) == set(cig.graph.successors(node))
