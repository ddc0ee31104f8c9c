"""The correct value a checker computed travels as a field (`NodeVerdict.expected`, combined into
`NodeAudit.expected`), not as words of the critique."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from trust.core.graphs.cig import AgentTurn, Cig, Role
from trust.core.graphs.oracles import ArithmeticOracle, NodeVerdict, ReviewVerdictOracle, audit_cig


def _expert(text: str) -> AgentTurn:
    return AgentTurn("t0", 0, "A", Role.EXPERT, text)


def test_the_arithmetic_verdict_states_the_value_of_the_first_wrong_calculation() -> None:
    verdict = ArithmeticOracle().audit_node(_expert("737,015 - 4,965 = 732,000, and 10 / 4 = 3.5"), [], [])
    assert verdict is not None and verdict.score == 0.0
    assert verdict.expected == "732050"  # plain digits, while the critique keeps the writer's separators
    assert "(it is 732,050)" in verdict.critique and "10 / 4 = 3.5 (it is 2.5)" in verdict.critique
    big = ArithmeticOracle().audit_node(_expert("123456789 * 1000 = 5"), [], [])
    assert big is not None and big.expected == "123456789000"  # every digit, not 1.23456789e+11
    assert ArithmeticOracle().audit_node(_expert("10 / 3 = 3.34"), [], []) == NodeVerdict(
        0.0, "wrong calculation: 10 / 3 = 3.34 (it is 3.333333333)", expected="3.333333333"
    )


def test_verdicts_without_a_computed_value_leave_it_unset() -> None:
    assert NodeVerdict(0.2, "vague").expected is None
    reviewer = AgentTurn("t1", 1, "R", Role.REVIEWER, "This is wrong.")
    verdict = ReviewVerdictOracle().audit_node(reviewer, [], [])
    assert verdict is not None and verdict.expected is None


@dataclass(frozen=True)
class Says:
    """A node oracle that states a fixed value for every turn (or none)."""

    name: str
    value: str | None

    def audit_node(
        self, node: AgentTurn, parents: Sequence[AgentTurn], observations: Sequence[AgentTurn]
    ) -> NodeVerdict | None:
        return NodeVerdict(0.0, "", expected=self.value)


def _one_turn() -> Cig:
    cig = Cig()
    cig.add_turn(_expert("12 * 3 = 37"))
    return cig


def test_audit_keeps_a_value_the_oracles_agree_on_and_drops_a_disputed_one() -> None:
    cig = _one_turn()
    assert audit_cig(cig, [ArithmeticOracle()], []).nodes["t0"].expected == "36"
    assert audit_cig(cig, [ArithmeticOracle(), Says("same", "36"), Says("none", None)], []).nodes["t0"].expected == "36"
    assert audit_cig(cig, [ArithmeticOracle(), Says("other", "35")], []).nodes["t0"].expected is None
    assert audit_cig(cig, [Says("none", None)], []).nodes["t0"].expected is None


@given(st.integers(-10_000, 10_000), st.integers(-10_000, 10_000), st.sampled_from("+-*"), st.integers(1, 1000))
def test_the_stated_value_is_the_exact_result(a: int, b: int, op: str, off: int) -> None:
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    verdict = ArithmeticOracle().audit_node(_expert(f"We get {a} {op} {b} = {value + off}."), [], [])
    assert verdict is not None and verdict.expected is not None and int(verdict.expected) == value
