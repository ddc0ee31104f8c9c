"""Tier-1 checks (paper 3.1.1): deterministic checkers that each decide one kind of thing in a node."""

from trust.auditors.checks.arithmetic import ArithmeticCheck
from trust.auditors.checks.contradictions import ContradictionCheck
from trust.auditors.checks.execution import ExecutionCheck
from trust.auditors.checks.grounding import GroundingCheck
from trust.auditors.checks.messages import ContractCheck, ValueFidelityCheck
from trust.auditors.checks.sandbox import RunReason, RunResult, SandboxCheck, SandboxLayer, run_python
from trust.auditors.checks.schema import SchemaCheck
from trust.auditors.checks.symbolic import SymbolicCheck
from trust.core.maths.expressions import EvaluationError, ParseError

__all__ = [
    "ArithmeticCheck",
    "ContractCheck",
    "ContradictionCheck",
    "EvaluationError",
    "ExecutionCheck",
    "GroundingCheck",
    "ParseError",
    "RunReason",
    "RunResult",
    "SandboxCheck",
    "SandboxLayer",
    "SchemaCheck",
    "SymbolicCheck",
    "ValueFidelityCheck",
    "run_python",
]
