"""The refinement loop end to end: the network's tier-1 auditor and Algorithm 1 audit a CIG of calculator agents, and a
deterministic "model" regenerates turns from the feedback text it is given."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.openai_stub import openai_stub
from trust.adapters.llm.regenerate import LlmRegenerator
from trust.auditors.base import AuditRequest, Verdict
from trust.auditors.checks.arithmetic import ArithmeticCheck
from trust.auditors.computational import ComputationalAuditor
from trust.auditors.refinement import CigAuditorAudit, HdagExpressionAudit
from trust.core.decompose.rules import extract_operations, from_steps
from trust.core.graphs.cig import AgentTurn, Cig, Role
from trust.core.graphs.hdag import EdgeType, Hdag, HdagNode, Level, Tier
from trust.core.graphs.refinement import AuditFinding, ErrorType, Feedback, FeedbackKind
from trust.core.graphs.status import NodeStatus
from trust.core.maths.arithmetic import check_expression
from trust.errors import GraphError, LlmError
from trust.lab.evaluation.processbench import load_processbench
from trust.services.refine import (
    Regenerated,
    RepairRequest,
    StopReason,
    refine,
    with_output,
)
from trust.settings import AuditSettings, LlmSettings, RefinementSettings, Settings

AUDIT = AuditSettings()
TIER1 = CigAuditorAudit.tier1(Settings(audit=AUDIT))
SETTINGS = RefinementSettings()
OPS = {"*": lambda a, b: a * b, "+": lambda a, b: a + b, "-": lambda a, b: a - b}
TASKS = {"Multiplier": ("*", 3), "Adder": ("+", 5), "Subtractor": ("-", 2), "Doubler": ("*", 2)}
_CORRECT = re.compile(r"The correct result is (-?\d+)")


def _last_number(text: str) -> int:
    return int(re.findall(r"-?\d+", text)[-1])


@dataclass
class CalculatorModel:
    """Each agent applies its task (TASKS) to the last number its parent produced. An agent in
    `bugs` adds its offset to the true result, unless the feedback prompt states the correct result
    ("The correct result is N", corrective feedback of section 2.3.3) or the temperature reaches
    `fixed_at` (exploration). Reviewers approve what they read. Tokens: words in and out."""

    bugs: dict[str, int] = field(default_factory=dict)
    fixed_at: float = 99.0
    calls: list[tuple[str, FeedbackKind | None, float]] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)

    def __call__(self, request: RepairRequest) -> Regenerated:
        turn: AgentTurn = request.graph.nodes[request.node]["node"]
        kind = request.feedback.kind if request.feedback is not None else None
        self.calls.append((request.node, kind, request.temperature))
        parents = list(request.graph.predecessors(request.node))
        value = _last_number(request.graph.nodes[parents[-1]]["node"].output)
        prompt = request.feedback.prompt() if request.feedback is not None else request.context
        if turn.role is Role.REVIEWER:
            output = f"I checked the value {value}. Approved."
        else:
            op, operand = TASKS[turn.agent]
            result = OPS[op](value, operand)
            told = _CORRECT.search(prompt)
            if told is not None:
                result = int(told.group(1))
            elif request.temperature < self.fixed_at - 1e-9:
                result += self.bugs.get(turn.agent, 0)
            output = f"{value} {op} {operand} = {result}"
        self.tokens.append(len(prompt.split()) + len(output.split()))
        return Regenerated(output, tokens=self.tokens[-1])


def _turn(step: int, agent: str, role: Role, output: str, input: str = "") -> AgentTurn:
    return AgentTurn(f"t{step}", step, agent, role, output, input)


def pipeline(*, reviewer_reads_multiplier: bool = False) -> Cig:
    """t0 Planner -> t1 Multiplier (12 * 3 = 37, wrong) -> t2 Adder -> t3 Reviewer, and an
    independent branch t4 User -> t5 Subtractor -> t6 Doubler that is correct and must stay frozen."""
    cig = Cig()
    cig.add_turn(_turn(0, "Planner", Role.PLANNER, "Start from 12.", input="compute two values"))
    cig.add_turn(_turn(1, "Multiplier", Role.EXPERT, "12 * 3 = 37"))
    cig.add_turn(_turn(2, "Adder", Role.EXPERT, "37 + 5 = 42"))
    cig.add_turn(_turn(3, "Reviewer", Role.REVIEWER, "I checked the value 42. Approved."))
    cig.add_turn(_turn(4, "User", Role.USER, "The other branch starts from 20."))
    cig.add_turn(_turn(5, "Subtractor", Role.EXPERT, "20 - 2 = 18"))
    cig.add_turn(_turn(6, "Doubler", Role.EXPERT, "18 * 2 = 36"))
    cig.add_edge("t0", "t1")
    cig.add_edge("t1", "t2")
    cig.add_edge("t1" if reviewer_reads_multiplier else "t2", "t3")
    cig.add_edge("t4", "t5")
    cig.add_edge("t5", "t6")
    return cig


def _output(graph: nx.DiGraph, node: str) -> str:
    return str(graph.nodes[node]["node"].output)


def test_corrective_feedback_repairs_the_root_and_reruns_only_its_descendants() -> None:
    cig = pipeline()
    model = CalculatorModel(bugs={"Multiplier": 1})
    messages: list[str] = []
    result = refine(
        cig.graph,
        TIER1,
        model,
        SETTINGS,
        tau_stat=AUDIT.tau_stat,
        progress=messages.append,
    )
    assert result.stop is StopReason.ALL_VALID and result.all_valid
    assert result.initial_invalid == 1 and len(result.rounds) == 1
    record = result.rounds[0]
    assert record.failed == ("t1",) and record.kinds == {"t1": FeedbackKind.CORRECTIVE}
    assert record.temperature == pytest.approx(0.7)
    assert [call[0] for call in model.calls] == ["t1", "t2", "t3"]  # the pruned subgraph, in order
    assert model.calls[0][1] is FeedbackKind.CORRECTIVE and model.calls[1][1] is None
    assert _output(result.graph, "t1") == "12 * 3 = 36"
    assert _output(result.graph, "t2") == "36 + 5 = 41"  # re-run on the corrected input
    assert _output(result.graph, "t3") == "I checked the value 41. Approved."
    for frozen in ("t0", "t4", "t5", "t6"):  # untouched: the very same value objects
        assert result.graph.nodes[frozen]["node"] is cig.graph.nodes[frozen]["node"]
    assert _output(cig.graph, "t1") == "12 * 3 = 37"  # the input graph is left alone
    assert record.nodes_reexecuted == 3 and record.global_nodes == 7
    assert result.node_savings == pytest.approx(4 / 7)
    assert record.tokens_reexecuted == sum(model.tokens) > 0
    assert record.global_tokens > record.tokens_reexecuted
    assert 0 < result.token_savings < 1
    assert any("re-executing 3 of 7 nodes" in m for m in messages)
    assert result.history == {"t1": ("12 * 3 = 37",)}


def test_the_feedback_prompt_reaches_the_model_with_the_correct_value() -> None:
    seen: list[str] = []

    def regenerate(request: RepairRequest) -> Regenerated:
        if request.feedback is not None:
            seen.append(request.feedback.prompt())
        return CalculatorModel(bugs={"Multiplier": 1})(request)

    refine(pipeline().graph, TIER1, regenerate, SETTINGS, tau_stat=AUDIT.tau_stat)
    (prompt,) = seen
    assert "compute two values" not in prompt  # t1 has no outside input: its context is its parent
    assert "[t0] Start from 12." in prompt
    assert "12 * 3 = 37, but 12 * 3 = 36" in prompt  # the auditor's critique
    assert "Error type: factual (Invalid_Root)" in prompt
    assert "The correct result is 36." in prompt


@dataclass(frozen=True)
class RewordedArithmetic:
    """The arithmetic check's verdicts in other words: the critique states no number at all."""

    name: str = "arithmetic-reworded"
    inner: ComputationalAuditor = field(default_factory=lambda: ComputationalAuditor([ArithmeticCheck()]))

    @property
    def tier(self) -> Tier:
        return Tier.COMPUTATIONAL

    async def unavailable(self) -> str | None:
        return None

    async def audit(self, request: AuditRequest) -> Verdict:
        verdict = await self.inner.audit(request)
        if verdict.score != 0.0:
            return verdict
        return Verdict(
            verdict.vote, 0.0, "the product does not match its factors", verdict.error_type, verdict.expected
        )


def test_the_correct_value_reaches_the_regenerator_whatever_the_critique_says() -> None:
    audit = CigAuditorAudit((RewordedArithmetic(),), tau_node=AUDIT.tau_node, tau_edge=AUDIT.tau_edge)
    told: list[Feedback] = []
    model = CalculatorModel(bugs={"Multiplier": 1})  # repairs only when the prompt states the correct result

    def regenerate(request: RepairRequest) -> Regenerated:
        if request.feedback is not None:
            told.append(request.feedback)
        return model(request)

    result = refine(pipeline().graph, audit, regenerate, SETTINGS, tau_stat=AUDIT.tau_stat)
    assert result.stop is StopReason.ALL_VALID and len(result.rounds) == 1
    (feedback,) = told
    assert feedback.critique == "arithmetic-reworded: the product does not match its factors"
    assert feedback.expected == "36" and "The correct result is 36." in feedback.prompt()
    assert _output(result.graph, "t1") == "12 * 3 = 36" and _output(result.graph, "t2") == "36 + 5 = 41"


def test_a_model_that_ignores_feedback_gets_divergence_then_the_loop_stops_as_stationary() -> None:
    model = CalculatorModel(bugs={"Multiplier": 1})

    def deaf(request: RepairRequest) -> Regenerated:  # never sees the feedback text
        return model(RepairRequest(request.node, request.graph, None, request.temperature, request.round))

    result = refine(pipeline().graph, TIER1, deaf, SETTINGS, tau_stat=AUDIT.tau_stat)
    assert result.stop is StopReason.STATIONARY and not result.all_valid
    assert [r.kinds["t1"] for r in result.rounds] == [FeedbackKind.CORRECTIVE, FeedbackKind.DIVERGENCE]
    assert [r.temperature for r in result.rounds] == pytest.approx([0.7, 0.8])
    assert result.rounds[0].stationary == ("t1",)  # same output again: similarity 1.0 > tau_stat
    assert result.history["t1"] == ("12 * 3 = 37", "12 * 3 = 37")
    assert result.nodes_reexecuted == 6 and result.global_nodes == 14


def test_rising_temperature_lets_an_exploring_model_escape() -> None:
    model = CalculatorModel(bugs={"Multiplier": 1}, fixed_at=0.8)

    def deaf(request: RepairRequest) -> Regenerated:
        return model(RepairRequest(request.node, request.graph, None, request.temperature, request.round))

    result = refine(pipeline().graph, TIER1, deaf, SETTINGS, tau_stat=AUDIT.tau_stat)
    assert result.stop is StopReason.ALL_VALID
    assert [r.temperature for r in result.rounds] == pytest.approx([0.7, 0.8])
    assert _output(result.graph, "t2") == "36 + 5 = 41"


def test_max_rounds_stops_the_loop() -> None:
    result = refine(
        pipeline().graph,
        TIER1,
        lambda request: Regenerated("12 * 3 = 38" if request.node == "t1" else _output(request.graph, request.node)),
        RefinementSettings(max_rounds=1),
        tau_stat=AUDIT.tau_stat,
    )
    assert result.stop is StopReason.MAX_ROUNDS and len(result.rounds) == 1
    assert result.statuses["t1"] is NodeStatus.INVALID_ROOT
    assert result.rounds[0].tokens_reexecuted > 0  # estimated when the generator reports none


def test_negligent_reviewer_gets_its_own_feedback_and_is_valid_after_the_repair() -> None:
    cig = pipeline(reviewer_reads_multiplier=True)
    model = CalculatorModel(bugs={"Multiplier": 1})
    result = refine(cig.graph, TIER1, model, SETTINGS, tau_stat=AUDIT.tau_stat)
    record = result.rounds[0]
    assert record.failed == ("t1", "t3")
    assert record.kinds == {"t1": FeedbackKind.CORRECTIVE, "t3": FeedbackKind.CORRECTIVE}
    assert result.stop is StopReason.ALL_VALID
    assert _output(result.graph, "t3") == "I checked the value 36. Approved."


def test_a_valid_graph_needs_no_round() -> None:
    cig = pipeline()
    model = CalculatorModel()
    graph = cig.graph.copy()
    with_output(graph, "t1", "12 * 3 = 36")
    with_output(graph, "t2", "36 + 5 = 41")
    result = refine(graph, TIER1, model, SETTINGS, tau_stat=AUDIT.tau_stat)
    assert result.stop is StopReason.ALL_VALID and result.rounds == () and model.calls == []
    assert result.summary()["nodes_reexecuted"] == 0


def test_an_audit_that_skips_nodes_is_an_error() -> None:
    def lazy(graph: nx.DiGraph, nodes: frozenset[str], known: object) -> dict[str, AuditFinding]:
        return {node: AuditFinding(NodeStatus.VALID) for node in sorted(nodes)[:-1]}

    with pytest.raises(GraphError, match="no finding for 1 audited node"):
        refine(pipeline().graph, lazy, CalculatorModel(), SETTINGS, tau_stat=AUDIT.tau_stat)


def test_plain_graphs_with_a_custom_audit_and_directive_feedback() -> None:
    """Any DAG works: a planner's strategy error is repaired with directive feedback."""
    graph = nx.DiGraph()
    graph.add_node("plan", role="planner", output="sort with bubble sort", input="sort 10^6 numbers fast")
    graph.add_node("code", role="coder", output="bubble_sort(xs)")
    graph.add_edge("plan", "code")

    def audit(g: nx.DiGraph, nodes: frozenset[str], known: object) -> dict[str, AuditFinding]:
        found = {}
        for node in nodes:
            text = g.nodes[node]["output"]
            if node == "plan" and "bubble" in text:
                found[node] = AuditFinding(NodeStatus.INVALID_ROOT, "O(n^2) is too slow", hint="an O(n log n) sort")
            elif node == "code" and "bubble" in text:
                found[node] = AuditFinding(NodeStatus.INVALID_CASCADE)
            else:
                found[node] = AuditFinding(NodeStatus.VALID)
        return found

    def model(request: RepairRequest) -> Regenerated:
        if request.feedback is not None:
            assert request.feedback.error_type is ErrorType.STRATEGY
            hint = re.search(r"Consider (an [^.]*)\.", request.feedback.prompt())
            assert hint is not None
            return Regenerated(f"sort with {hint.group(1)}: merge sort")
        plan = request.graph.nodes["plan"]["output"]
        return Regenerated("merge_sort(xs)" if "merge" in plan else "bubble_sort(xs)")

    result = refine(graph, audit, model, SETTINGS, tau_stat=AUDIT.tau_stat)
    assert result.stop is StopReason.ALL_VALID
    assert result.rounds[0].kinds == {"plan": FeedbackKind.DIRECTIVE}
    assert result.graph.nodes["code"]["output"] == "merge_sort(xs)"
    assert graph.nodes["code"]["output"] == "bubble_sort(xs)"


def test_llm_regenerator_sends_the_feedback_over_the_chat_completions_wire() -> None:
    with openai_stub() as stub:
        stub.reply("12 * 3 = 36")
        stub.reply("  36 + 5 = 41\n")
        stub.reply("I checked the value 41. Approved.")
        settings = LlmSettings(base_url=stub.base_url, model="repair-model", max_retries=0)
        with LlmRegenerator(settings) as model:
            result = refine(pipeline().graph, TIER1, model, SETTINGS, tau_stat=AUDIT.tau_stat)
    assert result.stop is StopReason.ALL_VALID
    assert [_output(result.graph, n) for n in ("t1", "t2", "t3")] == [
        "12 * 3 = 36",
        "36 + 5 = 41",
        "I checked the value 41. Approved.",
    ]
    first, second, third = (request.body for request in stub.requests)
    assert first["model"] == "repair-model" and first["temperature"] == pytest.approx(0.7)
    system, user = first["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert "The correct result is 36." in user["content"] and "12 * 3 = 37, but 12 * 3 = 36" in user["content"]
    rerun = second["messages"][1]["content"]
    assert "Work you depend on was corrected" in rerun and "[t1] 12 * 3 = 36" in rerun and "37 + 5 = 42" in rerun
    assert "[t2] 36 + 5 = 41" in third["messages"][1]["content"]
    assert result.rounds[0].tokens_reexecuted > 0


def test_llm_regenerator_failures_reach_the_caller() -> None:
    with openai_stub() as stub:
        stub.fail(500)
        settings = LlmSettings(base_url=stub.base_url, model="repair-model", max_retries=0)
        with LlmRegenerator(settings) as model, pytest.raises(LlmError, match="HTTP 500"):
            refine(pipeline().graph, TIER1, model, SETTINGS, tau_stat=AUDIT.tau_stat)
        with pytest.raises(LlmError, match="closed"):
            model(RepairRequest("t1", pipeline().graph, None, 0.7, 1))


def calculation_hdag() -> Hdag:
    """goal -> step -> op1 "12 * 3 = 37" (wrong) -> op2 "37 + 5 = 42" (uses op1), and a correct op3."""
    hdag = Hdag()
    hdag.add_node(HdagNode("g0", Level.GOAL, "What is 12 * 3 + 5, and 20 - 2?"))
    hdag.add_node(HdagNode("s1", Level.STEP, "Multiply, then add; separately subtract."))
    for node_id, content in (("op1", "12 * 3 = 37"), ("op2", "37 + 5 = 42"), ("op3", "20 - 2 = 18")):
        (operation,) = extract_operations(content)
        hdag.add_node(HdagNode(node_id, Level.OPERATION, content, expression=operation.expression))
    hdag.add_edge("g0", "s1", EdgeType.DECOMPOSES_TO)
    for node_id in ("op1", "op2", "op3"):
        hdag.add_edge("s1", node_id, EdgeType.DECOMPOSES_TO)
    hdag.add_edge("op1", "op2", EdgeType.DEPENDS_ON)
    return hdag


def test_hdag_operations_are_repaired_and_their_expressions_follow() -> None:
    hdag = calculation_hdag()

    def model(request: RepairRequest) -> Regenerated:
        node: HdagNode = request.graph.nodes[request.node]["node"]
        if request.feedback is not None:
            told = _CORRECT.search(request.feedback.prompt())
            assert told is not None
            return Regenerated(re.sub(r"= -?\d+$", f"= {told.group(1)}", node.content))
        parent = request.graph.nodes["op1"]["node"].content
        value = _last_number(parent)
        return Regenerated(f"{value} + 5 = {value + 5}")

    audit = HdagExpressionAudit()
    before = audit(hdag.graph, frozenset(hdag.graph), {})
    assert before["op1"].status is NodeStatus.INVALID_ROOT and before["op1"].expected == "36"
    assert before["op2"].status is NodeStatus.INVALID_CASCADE and before["op3"].status is NodeStatus.VALID
    result = refine(hdag.graph, audit, model, SETTINGS, tau_stat=AUDIT.tau_stat)
    assert result.stop is StopReason.ALL_VALID
    record = result.rounds[0]
    assert record.kinds == {"op1": FeedbackKind.CORRECTIVE} and record.nodes_reexecuted == 2
    op1, op2 = (result.graph.nodes[n]["node"] for n in ("op1", "op2"))
    assert (op1.content, op1.expression) == ("12 * 3 = 36", "12 * 3 == 36")
    assert (op2.content, op2.expression) == ("36 + 5 = 41", "36 + 5 == 41")
    assert hdag.node("op1").content == "12 * 3 = 37"


def test_hdag_audit_refuses_other_graphs() -> None:
    with pytest.raises(GraphError, match="HdagExpressionAudit audits HDAGs only"):
        HdagExpressionAudit()(pipeline().graph, frozenset({"t1"}), {})


_WRITTEN_NUMBER = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\d.,])\d+(?:\.\d+)?")


_ROUNDED = re.compile(r"abs\((.+) - [\d.]+\) <= [\d.]+$")


def _exact(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def _written(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.10g}"


@dataclass
class ArithmeticReviser:
    """A deterministic stand-in for a model redoing the steps of a decomposed trace.

    A failed step (corrective feedback) replaces the result of its first wrong calculation with the
    value the feedback states (`Feedback.expected`; it computes nothing itself). A step re-run on
    corrected input replaces every number a corrected step changed, then recomputes each of its
    calculations that no longer holds. An operation `s{i}.op{k}` is the k-th calculation extracted
    again from its regenerated step (the decomposer's naming)."""

    corrected: dict[Fraction, Fraction] = field(default_factory=dict)
    calls: list[tuple[str, bool]] = field(default_factory=list)

    def _substitute(self, text: str) -> str:
        def swap(match: re.Match[str]) -> str:
            new = self.corrected.get(_exact(match.group()))
            return match.group() if new is None else _written(new)

        return _WRITTEN_NUMBER.sub(swap, text)

    def _recompute(self, text: str, told: str | None) -> str:
        for _ in range(20):
            for operation in extract_operations(text):
                check = check_expression(operation.expression)
                if check.holds is False and operation.result is not None:
                    rounded = _ROUNDED.match(operation.expression)  # "abs(a - c) <= t": a is the value
                    value = check_expression(f"{rounded.group(1)} == 0").left if rounded else check.left
                    assert value is not None
                    self.corrected[_exact(operation.result)] = Fraction(told) if told is not None else value
                    told = None
                    text = self._substitute(text)
                    break
            else:
                return text
        return text

    def __call__(self, request: RepairRequest) -> Regenerated:
        node: HdagNode = request.graph.nodes[request.node]["node"]
        self.calls.append((request.node, request.feedback is not None))
        if node.level is Level.OPERATION:
            step, _, k = request.node.rpartition(".op")
            operations = extract_operations(request.graph.nodes[step]["node"].content)
            return Regenerated(operations[int(k) - 1].text if int(k) <= len(operations) else node.content)
        if request.feedback is not None:
            assert request.feedback.kind is FeedbackKind.CORRECTIVE and request.feedback.expected is not None
            return Regenerated(self._recompute(node.content, request.feedback.expected))
        return Regenerated(self._recompute(self._substitute(node.content), None))


def test_a_wrong_operation_regenerates_the_step_that_states_it_and_the_steps_after() -> None:
    hdag = from_steps(
        "Ann has 12 apples and buys 3 bags of 4. How many apples?",
        ["She buys 3 * 4 = 12 apples.", "Now she has 12 + 12 = 25 apples.", "Half of them is 25 / 2 = 12.5 apples."],
    )
    audit = HdagExpressionAudit()
    before = audit(hdag.graph, frozenset(hdag.graph), {})
    assert {n: f.status for n, f in before.items() if f.status is not NodeStatus.VALID} == {
        "s2": NodeStatus.INVALID_ROOT,  # the step states the wrong sum: it is the repair unit
        "s2.op1": NodeStatus.INVALID_CASCADE,
        "s3": NodeStatus.INVALID_CASCADE,
        "s3.op1": NodeStatus.INVALID_CASCADE,
    }
    assert before["s2"].expected == "24" and "operation s2.op1" in before["s2"].critique
    model = ArithmeticReviser()
    result = refine(hdag.graph, audit, model, SETTINGS, tau_stat=AUDIT.tau_stat)
    assert result.stop is StopReason.ALL_VALID and len(result.rounds) == 1 and result.rounds[0].failed == ("s2",)
    assert model.calls == [("s2", True), ("s2.op1", False), ("s3", False), ("s3.op1", False)]
    contents = {n: result.graph.nodes[n]["node"].content for n in ("s2", "s2.op1", "s3", "s3.op1")}
    assert contents == {
        "s2": "Now she has 12 + 12 = 24 apples.",
        "s2.op1": "12 + 12 = 24",
        "s3": "Half of them is 24 / 2 = 12 apples.",
        "s3.op1": "24 / 2 = 12",
    }
    assert result.graph.nodes["s1"]["node"] is hdag.graph.nodes["s1"]["node"]  # frozen
    assert (result.nodes_reexecuted, result.global_nodes) == (4, 7)


def test_an_operation_stays_its_own_repair_unit_when_its_step_is_not_audited_or_does_not_state_it() -> None:
    hdag = from_steps("q", ["So 2 + 2 = 5.", "Then 5 + 1 = 6."])
    known = {n: NodeStatus.VALID for n in hdag.graph if n != "s1.op1"}
    alone = HdagExpressionAudit()(hdag.graph, frozenset({"s1.op1"}), known)
    assert alone["s1.op1"].status is NodeStatus.INVALID_ROOT and alone["s1.op1"].expected == "4"
    only_data = HdagExpressionAudit(through=frozenset({EdgeType.DEPENDS_ON}))(hdag.graph, frozenset(hdag.graph), {})
    assert only_data["s1"].status is NodeStatus.INVALID_ROOT
    assert only_data["s1.op1"].status is NodeStatus.INVALID_CASCADE  # failed, but repaired through s1
    assert only_data["s2"].status is NodeStatus.INVALID_CASCADE
    rounded = from_steps("q", ["Each costs 6 * 0.75 = 4.60 dollars."])
    (finding,) = (f for f in HdagExpressionAudit()(rounded.graph, frozenset(rounded.graph), {}).values() if f.expected)
    assert finding.status is NodeStatus.INVALID_ROOT and finding.expected == "4.5"  # a rounded check states it too


PROCESSBENCH = Path("/work/shared/data/processbench/gsm8k.json")


@pytest.mark.skipif(not PROCESSBENCH.is_file(), reason="the ProcessBench development file is not on this machine")
@pytest.mark.parametrize(
    ("item_id", "answer"),
    [("gsm8k-7", "2325"), ("gsm8k-2", "5600"), ("gsm8k-21", "9")],
)
def test_processbench_items_are_repaired_step_and_dependents(item_id: str, answer: str) -> None:
    """A real wrong step that the arithmetic check flags (the labelled earliest error): refinement
    regenerates that step and every step after it, and the HDAG then audits valid."""
    (item,) = (i for i in load_processbench(PROCESSBENCH) if i.id == item_id)
    hdag = from_steps(item.problem, list(item.steps))
    audit = HdagExpressionAudit()
    labelled = f"s{item.label + 1}"
    before = audit(hdag.graph, frozenset(hdag.graph), {})
    assert [n for n, f in before.items() if f.status is NodeStatus.INVALID_ROOT] == [labelled]
    tainted = {labelled} | nx.descendants(hdag.graph, labelled)
    model = ArithmeticReviser()
    result = refine(hdag.graph, audit, model, SETTINGS, tau_stat=AUDIT.tau_stat)
    assert result.stop is StopReason.ALL_VALID and len(result.rounds) == 1
    assert audit(result.graph, frozenset(result.graph), {}) == {n: AuditFinding(NodeStatus.VALID) for n in hdag.graph}
    assert {node for node, _ in model.calls} == tainted and model.calls[0] == (labelled, True)
    assert result.nodes_reexecuted == len(tainted) < result.global_nodes == hdag.graph.number_of_nodes()
    for node in set(hdag.graph) - tainted:
        assert result.graph.nodes[node]["node"] is hdag.graph.nodes[node]["node"]
    final = result.graph.nodes[f"s{len(item.steps)}"]["node"].content
    assert re.search(rf"boxed{{\$?{answer}}}", final), final


@st.composite
def faulty_dags(draw: st.DrawFn) -> nx.DiGraph:
    size = draw(st.integers(1, 30))
    graph = nx.DiGraph()
    bad = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    for index in range(size):
        graph.add_node(f"n{index}", output="bad" if bad[index] else "ok")
    for target in range(1, size):
        for source in draw(st.sets(st.integers(0, target - 1), max_size=3)):
            graph.add_edge(f"n{source}", f"n{target}")
    return graph


def _algorithm_1(graph: nx.DiGraph, nodes: frozenset[str], known: Mapping[str, NodeStatus]) -> dict[str, AuditFinding]:
    """Algorithm 1 without edges or reviewers, on outputs "ok" / "bad"."""
    statuses = dict(known)
    for node in nx.topological_sort(graph):
        if node not in nodes:
            continue
        propagated = any(statuses[p] is not NodeStatus.VALID for p in graph.predecessors(node))
        if graph.nodes[node]["output"] == "ok":
            statuses[node] = NodeStatus.VALID
        else:
            statuses[node] = NodeStatus.INVALID_CASCADE if propagated else NodeStatus.INVALID_ROOT
    return {node: AuditFinding(statuses[node], "bad output") for node in nodes}


@settings(max_examples=100, deadline=None)
@given(faulty_dags())
def test_one_round_repairs_exactly_the_failed_nodes_and_their_descendants(graph: nx.DiGraph) -> None:
    roots = {n for n, f in _algorithm_1(graph, frozenset(graph), {}).items() if f.status is NodeStatus.INVALID_ROOT}
    tainted = roots.union(*(nx.descendants(graph, root) for root in roots))
    rerun: list[str] = []

    def fix(request: RepairRequest) -> Regenerated:
        rerun.append(request.node)
        assert (request.feedback is not None) == (request.node in roots)
        return Regenerated("ok", tokens=1)

    result = refine(graph, _algorithm_1, fix, SETTINGS, tau_stat=AUDIT.tau_stat)
    assert result.stop is StopReason.ALL_VALID
    assert len(result.rounds) == (1 if roots else 0)
    assert set(rerun) == tainted and len(rerun) == len(tainted) == result.nodes_reexecuted
    assert result.tokens_reexecuted == len(tainted)
    for node in set(graph) - tainted:
        assert result.graph.nodes[node]["output"] == graph.nodes[node]["output"]
    position = {node: i for i, node in enumerate(rerun)}
    assert all(position[u] < position[v] for u, v in graph.subgraph(tainted).edges)
