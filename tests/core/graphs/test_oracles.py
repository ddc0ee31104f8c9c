"""The dual-layer audit: deterministic node and edge oracles, and how oracle verdicts combine."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.graphs.cig_strategies import who_when_dir
from trust.core.graphs.agent_log import build_cig, parse_log
from trust.core.graphs.cig import AgentTurn, Cig, CigEdge, EdgeOrigin, ReplyContract, Role, turn_id
from trust.core.graphs.oracles import (
    ArithmeticOracle,
    ContractOracle,
    EdgeOracle,
    EdgeScore,
    EdgeVerdict,
    ExecutionOracle,
    NodeOracle,
    NodeVerdict,
    ReviewVerdictOracle,
    ValueFidelityOracle,
    audit_cig,
    deterministic_edge_oracles,
    deterministic_node_oracles,
    json_object,
    json_request,
    labelled_values,
    observations,
    rejects,
    wrong_equations,
)
from trust.errors import GraphError

CODE = "Here is the script:\n```python\nprint(1 / 0)\n```"
FAILED = (
    "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\n"
    '  File "x.py", line 1\nZeroDivisionError: division by zero\n'
)


def _chain(*turns: tuple[str, Role, str], origins: dict[tuple[int, int], EdgeOrigin] | None = None) -> Cig:
    """A chain t0 -> t1 -> ... plus any extra edges named in `origins` (which also override the chain's)."""
    cig = Cig()
    origins = origins or {}
    for step, (agent, role, output) in enumerate(turns):
        cig.add_turn(AgentTurn(turn_id(step), step, agent, role, output))
    edges = {(i - 1, i): EdgeOrigin.SEQUENCE for i in range(1, len(turns))} | origins
    for (source, target), origin in sorted(edges.items(), key=lambda item: item[0][1]):
        cig.add_edge(turn_id(source), turn_id(target), origin)
    return cig


# ---------------------------------------------------------------------------------------------- execution


def test_a_failed_run_is_the_code_producers_fault() -> None:
    cig = _chain(("Coder", Role.CODER, CODE), ("Terminal", Role.TOOL, FAILED), ("Reviewer", Role.REVIEWER, "ok"))
    oracle = ExecutionOracle()
    coder, terminal = cig.turn("t0"), cig.turn("t1")
    assert observations(cig, "t0") == [terminal]
    verdict = oracle.audit_node(coder, [], observations(cig, "t0"))
    assert verdict is not None and verdict.score == 0.0
    assert "ZeroDivisionError: division by zero" in verdict.critique and "step 1" in verdict.critique
    assert oracle.audit_node(terminal, [coder], observations(cig, "t1")) is None  # no code, no runs
    ok = _chain(("Coder", Role.CODER, CODE), ("Terminal", Role.TOOL, "exitcode: 0 (execution succeeded)\n4"))
    assert oracle.audit_node(ok.turn("t0"), [], observations(ok, "t0")) == NodeVerdict(1.0)
    prose = _chain(("Coder", Role.CODER, "no code here"), ("Terminal", Role.TOOL, FAILED))
    assert oracle.audit_node(prose.turn("t0"), [], observations(prose, "t0")) is None


def test_only_direct_tool_answers_are_observations() -> None:
    cig = _chain(
        ("Coder", Role.CODER, CODE),
        ("Expert", Role.EXPERT, "thinking"),
        ("Terminal", Role.TOOL, FAILED),
        origins={(0, 2): EdgeOrigin.OVERLAP},
    )
    assert observations(cig, "t0") == []
    assert observations(cig, "t1") == [cig.turn("t2")]


# ---------------------------------------------------------------------------------------------- arithmetic


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("2 + 3 = 6", ["2 + 3 = 6 (it is 5)"]),
        ("2 + 3 = 5", []),
        ("so x = 2 * 3 = 7.", ["2 * 3 = 7 (it is 6)"]),
        ("The difference: \\(737,015 - 4,965 = 732,050\\)", []),
        ("737,015 - 4,965 = 732,000, so", ["737,015 - 4,965 = 732,000 (it is 732,050)"]),
        ("10 / 3 = 3.33", []),
        ("10 / 3 = 3.34", ["10 / 3 = 3.34 (it is 3.333333333)"]),
        ("2 + 3 * 4 = 14", []),
        ("2 + 3 * 4 = 20", ["2 + 3 * 4 = 20 (it is 14)"]),
        ("- 2 + 3 = 6", ["2 + 3 = 6 (it is 5)"]),
        ("is 4 x 5 = 21 right", ["4 x 5 = 21 (it is 20)"]),
        ("2 \\times 3 = 7", ["2 \\times 3 = 7 (it is 6)"]),
        ("-5 + 3 = -2", []),
        ("12 ÷ 4 = 3 and 3 × 3 = 9", []),
        # Parts of longer expressions, percentages, code, and glued words are not checked.
        ("n + 2 * 3 = 11", []),
        ("2 + 3 = 5 + 1", []),
        ("50 / 200 = 25%", []),
        ("2^3 + 1 = 10", []),
        ("step2 + 3 = 9", []),
        ("1 / 0 = 5", []),
        ("```python\nassert 2 + 2 = 5\n```", []),
    ],
)
def test_wrong_equations(text: str, wrong: list[str]) -> None:
    assert wrong_equations(text) == wrong


def test_arithmetic_oracle_scores_zero_on_a_wrong_calculation() -> None:
    oracle = ArithmeticOracle()
    bad = AgentTurn("t0", 0, "A", Role.EXPERT, "Total: 500 + 70 = 560")
    verdict = oracle.audit_node(bad, [], [])
    assert verdict is not None and verdict.score == 0.0 and "500 + 70 = 560 (it is 570)" in verdict.critique
    assert oracle.audit_node(AgentTurn("t0", 0, "A", Role.EXPERT, "500 + 70 = 570"), [], []) is None
    assert oracle.audit_node(AgentTurn("t0", 0, "T", Role.TOOL, "2 + 2 = 5"), [], []) is None


@given(st.integers(-10_000, 10_000), st.integers(-10_000, 10_000), st.sampled_from("+-*"))
def test_stated_results_are_checked_exactly(a: int, b: int, op: str) -> None:
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    assert wrong_equations(f"We get {a} {op} {b} = {value}.") == []
    assert len(wrong_equations(f"We get {a} {op} {b} = {value + 1}.")) == 1


# ---------------------------------------------------------------------------------------------- reviewer


@pytest.mark.parametrize(
    ("text", "flag"),
    [
        ("It looks like there was a syntax error.", True),
        ("The calculation is incorrect: 18, not 16.", True),
        ("There is a discrepancy between the two counts.", True),
        ("Let's fix the code and run it again.", True),
        ("No discrepancies were found.", False),
        ("Verified without errors. TERMINATE", False),
        ("All checks pass; the answer is 4.", False),
    ],
)
def test_reviewer_rejections(text: str, flag: bool) -> None:
    assert rejects(text) is flag


def test_review_verdict_oracle_marks_only_rejecting_reviewers() -> None:
    oracle = ReviewVerdictOracle()
    rejecting = oracle.audit_node(AgentTurn("t1", 1, "R", Role.REVIEWER, "This is wrong: 2 + 2 is 4"), [], [])
    assert rejecting == NodeVerdict(1.0, "rejects its input", rejects_input=True)
    assert oracle.audit_node(AgentTurn("t1", 1, "R", Role.REVIEWER, "Approved."), [], []) is None
    assert oracle.audit_node(AgentTurn("t1", 1, "C", Role.CODER, "This is wrong"), [], []) is None


# ---------------------------------------------------------------------------------------------- contract


def test_json_requests_and_replies() -> None:
    assert json_request('Please respond in JSON with the fields "name" and "age".') == ("name", "age")
    assert json_request("Return only valid JSON.") == ()
    assert json_request("Answer as a JSON object.") == ()
    assert json_request("The data file is JSON; load it.") is None
    assert json_object('{"a": 1}') == {"a": 1}
    assert json_object('Sure!\n```json\n{"a": 1}\n```') == {"a": 1}
    assert json_object('The result is {"a": 1} as asked') == {"a": 1}
    assert json_object("[1, 2]") is None and json_object("prose only") is None


def _edge(request: str, reply: str, *, contract: ReplyContract | None = None, role: Role = Role.EXPERT) -> tuple:
    source = AgentTurn("t0", 0, "P", Role.PLANNER, request, contract=contract)
    target = AgentTurn("t1", 1, "W", role, reply)
    return CigEdge("t0", "t1", request, EdgeOrigin.SEQUENCE), source, target


def test_contract_oracle() -> None:
    oracle = ContractOracle()
    contract = ReplyContract("json", ("answer",))
    prose = oracle.audit_edge(*_edge("What is 2 + 2?", "It is 4.", contract=contract))
    assert prose is not None and prose.score == EdgeScore(protocol=0.0)
    assert prose.findings == ("t0 asked for JSON; t1 answered in prose",)
    missing = oracle.audit_edge(*_edge("What is 2 + 2?", '{"result": 4}', contract=contract))
    assert missing is not None and missing.score.protocol == 0.0 and "'answer'" in missing.findings[0]
    good = oracle.audit_edge(*_edge("What is 2 + 2?", '{"answer": 4}', contract=contract))
    assert good == EdgeVerdict(EdgeScore())
    worded = oracle.audit_edge(*_edge('Reply in JSON with the field "answer".', "4"))
    assert worded is not None and worded.score.protocol == 0.0
    assert oracle.audit_edge(*_edge("What is 2 + 2?", "4")) is None
    assert oracle.audit_edge(*_edge("x", "4", contract=ReplyContract("text"))) is None
    assert oracle.audit_edge(*_edge("Reply in JSON.", "exitcode: 0", role=Role.TOOL)) is None
    edge, source, target = _edge("Reply in JSON.", "4")
    overlap = CigEdge(edge.source, edge.target, edge.message, EdgeOrigin.OVERLAP)
    assert oracle.audit_edge(overlap, source, target) is None


# ---------------------------------------------------------------------------------------------- fidelity


def test_labelled_values() -> None:
    text = (
        "- Seattle, Washington (2020 Census): 737,015\n- Colville: 4,965\n**Author**: Jane Doe\n"
        "Code output: 5\nbest city is Paris because it rains\nSpoiled: 120 * 0.15 = 16\n"
        "Looks fine. Remaining: 104\nx: 1\nx: 2\n```python\nlimit = 10\n```"
    )
    assert labelled_values(text) == {
        "seattle washington 2020 census": ("number", "737015"),
        "colville": ("number", "4965"),
        "author": ("name", "jane doe"),
        "remaining": ("number", "104"),
    }


def _fidelity(sent: str, received: str, role: Role = Role.EXPERT) -> EdgeVerdict | None:
    return ValueFidelityOracle().audit_edge(*_edge(sent, received, role=role))


def test_value_corruption_across_an_edge() -> None:
    corrupted = _fidelity("Seattle: 737,015\nColville: 4,965", "Seattle: 737,015\nColville: 4,956")
    assert corrupted is not None and corrupted.score == EdgeScore(fidelity=0.5)
    assert corrupted.findings == ("'colville': t0 sent 4965, t1 restated 4956",)
    assert _fidelity("Pi: 3.14159", "Pi: 3.14") == EdgeVerdict(EdgeScore())  # rounding is fine
    assert _fidelity("Pi: 3.14", "Pi: 3.15") is not None
    renamed = _fidelity("Author: Jane Doe", "Author: John Doe")
    assert renamed is not None and renamed.score.fidelity == 0.0
    assert _fidelity("Author: Jane Doe", "Author: Jane  Doe") == EdgeVerdict(EdgeScore())
    assert _fidelity("Seattle: 737,015", "Colville: 4,965") is None  # nothing restated
    assert _fidelity("Seattle: 737,015", "Seattle: 1", role=Role.TOOL) is None


# ---------------------------------------------------------------------------------------------- combining


def test_verdicts_and_scores_are_validated() -> None:
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(GraphError, match="expected a number in"):
            NodeVerdict(bad)
        with pytest.raises(GraphError, match="protocol score"):
            EdgeScore(protocol=bad)
        with pytest.raises(GraphError, match="fidelity score"):
            EdgeScore(fidelity=bad)
    assert EdgeScore(0.8, 0.8).fails(0.8) is False
    assert EdgeScore(0.79, 1.0).fails(0.8) and EdgeScore(1.0, 0.79).fails(0.8)


@dataclass(frozen=True)
class FixedNodeOracle:
    """A pluggable oracle (what an LLM oracle is, minus the model): a fixed score per agent."""

    scores: dict[str, float]
    name: str = "fixed"

    def audit_node(
        self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]
    ) -> NodeVerdict | None:
        if node.agent not in self.scores:
            return None
        return NodeVerdict(self.scores[node.agent], f"{node.agent} scored {self.scores[node.agent]}")


@dataclass(frozen=True)
class FixedEdgeOracle:
    protocol: float
    fidelity: float
    name: str = "fixed-edge"

    def audit_edge(self, edge: CigEdge, source: AgentTurn, target: AgentTurn) -> EdgeVerdict | None:
        return EdgeVerdict(EdgeScore(self.protocol, self.fidelity), (f"{edge.source}->{edge.target}",))


def test_audit_takes_the_lowest_score_of_the_oracles_that_apply() -> None:
    cig = _chain(
        ("Coder", Role.CODER, CODE),
        ("Terminal", Role.TOOL, FAILED),
        ("Reviewer", Role.REVIEWER, "There is an error."),
    )
    fixed = FixedNodeOracle({"Coder": 0.9, "Reviewer": 0.6})
    assert isinstance(fixed, NodeOracle) and isinstance(FixedEdgeOracle(1, 1), EdgeOracle)
    audit = audit_cig(
        cig,
        [*deterministic_node_oracles(), fixed],
        [*deterministic_edge_oracles(), FixedEdgeOracle(0.9, 0.7), FixedEdgeOracle(0.5, 1.0, "other")],
    )
    coder, terminal, reviewer = (audit.nodes[t] for t in ("t0", "t1", "t2"))
    assert coder.score == 0.0 and coder.oracles == ("execution", "fixed")
    assert coder.critique[0].startswith("execution: its code failed") and coder.critique[1] == "fixed: Coder scored 0.9"
    assert terminal.score == 1.0 and terminal.oracles == () and terminal.critique == ()
    assert reviewer.score == 0.6 and reviewer.rejects_input and audit.rejecting() == frozenset({"t2"})
    assert audit.node_scores() == {"t0": 0.0, "t1": 1.0, "t2": 0.6}
    edge = audit.edges[("t0", "t1")]
    assert edge.score == EdgeScore(0.5, 0.7) and edge.oracles == ("fixed-edge", "other")
    assert edge.findings == ("fixed-edge: t0->t1", "other: t0->t1")
    assert set(audit.edge_scores()) == {("t0", "t1"), ("t1", "t2")}


def test_who_when_10_code_failure_is_found_at_step_5() -> None:
    cig = build_cig(parse_log(json.loads((who_when_dir() / "10.json").read_text())))
    audit = audit_cig(cig, deterministic_node_oracles(), deterministic_edge_oracles())
    failing = [node for node, result in audit.nodes.items() if result.score < 0.8]
    assert failing == ["t5"]
    assert "SyntaxError" in audit.nodes["t5"].critique[0]
    assert "t7" in audit.rejecting()  # "there was a syntax error ... let's correct that"
