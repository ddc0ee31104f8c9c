"""The dual-layer audit of a whole CIG by the network's auditors (`trust.auditors.graph.audit_cig`)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.graphs.cig_strategies import who_when_dir
from trust.auditors.base import AuditLayer, Auditor, AuditRequest, Outcome, Verdict
from trust.auditors.checks.arithmetic import ArithmeticCheck
from trust.auditors.computational import ComputationalAuditor
from trust.auditors.graph import audit_cig
from trust.auditors.tiers import computational_auditor
from trust.core.graphs.agent_log import build_cig, parse_log
from trust.core.graphs.audit import EdgeScore
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, ReplyContract, Role, turn_id
from trust.core.graphs.hdag import Tier
from trust.core.graphs.localize import RootCause, RootReason, localize_audit
from trust.core.graphs.refinement import ErrorType
from trust.core.graphs.status import NodeStatus
from trust.settings import SandboxSettings

CODE = "Here is the script:\n```python\nprint(1 / 0)\n```"
FAILED = "exitcode: 1 (execution failed)\nZeroDivisionError: division by zero\n"
TIER1 = computational_auditor(SandboxSettings(timeout_seconds=5, cpu_seconds=5))


def _chain(*turns: tuple[str, Role, str]) -> Cig:
    cig = Cig()
    for step, (agent, role, output) in enumerate(turns):
        cig.add_turn(AgentTurn(turn_id(step), step, agent, role, output))
        if step:
            cig.add_edge(turn_id(step - 1), turn_id(step), EdgeOrigin.SEQUENCE)
    return cig


@dataclass(frozen=True)
class Fixed:
    """A pluggable auditor (what a tier-2 judge is, minus the model): a fixed score per agent and layer."""

    scores: dict[tuple[str, AuditLayer], float]
    name: str = "fixed"
    expected: str | None = None

    @property
    def tier(self) -> Tier:
        return Tier.LLM

    async def unavailable(self) -> str | None:
        return None

    async def audit(self, request: AuditRequest) -> Verdict:
        assert isinstance(request.node, AgentTurn)
        score = self.scores.get((request.node.agent, request.layer))
        if score is None:
            return Verdict(Outcome.NOT_APPLICABLE, None, "not mine")
        if score >= 0.8:
            return Verdict(Outcome.PASS, score, "fine")
        where = f"{request.sender}->{request.node.id}" if request.sender else request.node.agent
        error = ErrorType.PROTOCOL if request.layer is AuditLayer.EDGE else ErrorType.FACTUAL
        return Verdict(Outcome.FAIL, score, f"{where} scored {score}", error, self.expected)


async def test_scores_are_the_lowest_of_the_auditors_that_decided() -> None:
    cig = _chain(
        ("Coder", Role.CODER, CODE),
        ("Terminal", Role.TOOL, FAILED),
        ("Reviewer", Role.REVIEWER, "There is an error."),
    )
    fixed = Fixed({("Coder", AuditLayer.NODE): 0.9, ("Reviewer", AuditLayer.NODE): 0.6})
    edges = Fixed({("Terminal", AuditLayer.EDGE): 0.7}, "edges")
    assert isinstance(fixed, Auditor)
    audit = await audit_cig(cig, [TIER1, fixed, edges])
    coder, terminal, reviewer = (audit.nodes[t] for t in ("t0", "t1", "t2"))
    assert coder.score == 0.0 and coder.auditors == ("computational", "fixed")
    assert coder.critique[0].startswith("computational: [factual] code failed: its code failed when Terminal ran")
    assert terminal.score == 1.0 and terminal.critique == ()
    assert reviewer.score == 0.6 and reviewer.critique == ("fixed: Reviewer scored 0.6",)
    assert reviewer.rejects_input and audit.rejecting() == frozenset({"t2"})
    assert audit.node_scores() == {"t0": 0.0, "t1": 1.0, "t2": 0.6}
    # A tier-2 verdict's one score judges the transmission as a whole: it lowers both scores.
    edge = audit.edges[("t0", "t1")]
    assert edge.score == EdgeScore(0.7, 0.7) and edge.auditors == ("edges",)
    assert edge.findings == ("edges: t0->t1 scored 0.7",)
    assert audit.edges[("t1", "t2")].score == EdgeScore()


async def test_tier1_edge_checks_say_whether_protocol_or_fidelity_failed() -> None:
    cig = Cig()
    cig.add_turn(AgentTurn("t0", 0, "P", Role.PLANNER, "Seattle: 737,015", contract=ReplyContract("json", ("a",))))
    cig.add_turn(AgentTurn("t1", 1, "W", Role.EXPERT, "Seattle: 737,000"))
    cig.add_edge("t0", "t1", EdgeOrigin.SEQUENCE)
    audit = await audit_cig(cig, [TIER1])
    edge = audit.edges[("t0", "t1")]
    assert edge.score == EdgeScore(0.0, 0.0)
    assert edge.findings == (
        "contract: t0 asked for JSON; t1 answered in prose",
        "value-fidelity: 1 of 1 restated value(s) changed: 'seattle': t0 sent 737015, t1 restated 737000",
    )
    only_values = Cig()
    only_values.add_turn(AgentTurn("t0", 0, "P", Role.PLANNER, "Seattle: 737,015"))
    only_values.add_turn(AgentTurn("t1", 1, "W", Role.EXPERT, "Seattle: 737,000"))
    only_values.add_edge("t0", "t1", EdgeOrigin.OVERLAP)
    assert (await audit_cig(only_values, [TIER1])).edges[("t0", "t1")].score == EdgeScore(1.0, 0.0)


@pytest.mark.parametrize("sender_valid", [True, False])
async def test_one_broken_json_reply_is_one_fault_charged_to_its_edge(sender_valid: bool) -> None:
    """Paper 2.2.4: a prose reply to a JSON contract is a protocol failure of the edge (Layer 2), so
    the node layer stays silent about it and Algorithm 1 makes the receiver Invalid_Root for a
    breach at its boundary (line 6), naming the sender, even when the sender is invalid itself."""
    task = "What is 2 + 2? Reply in JSON." if sender_valid else "2 + 2 = 5, so check it. Reply in JSON."
    cig = Cig()
    cig.add_turn(AgentTurn("t0", 0, "Planner", Role.PLANNER, task, contract=ReplyContract("json", ("answer",))))
    cig.add_turn(AgentTurn("t1", 1, "Solver", Role.EXPERT, "The answer is 4."))
    cig.add_edge("t0", "t1", EdgeOrigin.SEQUENCE)
    audit = await audit_cig(cig, [TIER1])
    reported = [c for n in audit.nodes.values() for c in n.critique] + [
        f for e in audit.edges.values() for f in e.findings
    ]
    assert [r for r in reported if "JSON" in r] == ["contract: t0 asked for JSON; t1 answered in prose"]
    assert audit.nodes["t1"].score == 1.0 and audit.nodes["t1"].critique == ()
    assert audit.edges[("t0", "t1")].score == EdgeScore(protocol=0.0, fidelity=1.0)
    found = localize_audit(cig, audit, tau_node=0.8, tau_edge=0.8)
    assert found.status("t0") is (NodeStatus.VALID if sender_valid else NodeStatus.INVALID_ROOT)
    assert found.status("t1") is NodeStatus.INVALID_ROOT
    assert found.root_causes[-1] == RootCause(
        "t1", "Solver", 1, NodeStatus.INVALID_ROOT, RootReason.EDGE_FAILURE, ("t0",)
    )


async def test_only_the_named_nodes_are_audited() -> None:
    cig = _chain(("A", Role.EXPERT, "2 + 2 = 5"), ("B", Role.EXPERT, "3 + 3 = 7"))
    audit = await audit_cig(cig, [TIER1], nodes=frozenset({"t1"}))
    assert audit.node_scores() == {"t0": 1.0, "t1": 0.0} and audit.nodes["t0"].auditors == ()
    assert set(audit.edges) == {("t0", "t1")}


async def test_the_audit_keeps_a_value_the_auditors_agree_on_and_drops_a_disputed_one() -> None:
    cig = Cig()
    cig.add_turn(AgentTurn("t0", 0, "A", Role.EXPERT, "12 * 3 = 37"))
    arithmetic = ComputationalAuditor([ArithmeticCheck()])
    node = {("A", AuditLayer.NODE): 0.0}
    assert (await audit_cig(cig, [arithmetic])).nodes["t0"].expected == "36"
    agreed = await audit_cig(cig, [arithmetic, Fixed(node, "same", "36"), Fixed(node, "none")])
    assert agreed.nodes["t0"].expected == "36"
    assert (await audit_cig(cig, [arithmetic, Fixed(node, "other", "35")])).nodes["t0"].expected is None


@given(st.integers(-10_000, 10_000), st.integers(-10_000, 10_000), st.sampled_from("+-*"), st.integers(1, 1000))
async def test_the_stated_value_is_the_exact_result(a: int, b: int, op: str, off: int) -> None:
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    cig = Cig()
    cig.add_turn(AgentTurn("t0", 0, "A", Role.EXPERT, f"Result: {a} {op} {b} = {value + off}."))
    audit = await audit_cig(cig, [ComputationalAuditor([ArithmeticCheck()])])
    assert audit.nodes["t0"].score == 0.0 and audit.nodes["t0"].expected == str(value)


async def test_who_when_10_code_failure_is_found_at_step_5() -> None:
    cig = build_cig(parse_log(json.loads((who_when_dir() / "10.json").read_text())))
    audit = await audit_cig(cig, [TIER1])
    failing = [node for node, result in audit.nodes.items() if result.score < 0.8]
    assert failing == ["t5"]
    assert "SyntaxError" in audit.nodes["t5"].critique[0]
    assert "t7" in audit.rejecting()  # "there was a syntax error ... let's correct that"
