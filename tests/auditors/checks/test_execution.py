"""The execution check: code a tool of the log ran and saw fail is the code producer's fault."""

from __future__ import annotations

from trust.auditors.base import AuditRequest, Outcome
from trust.auditors.checks.execution import ExecutionCheck
from trust.core.graphs.cig import AgentTurn, Role

CODE = "Here is the script:\n```python\nprint(1 / 0)\n```"
FAILED = (
    "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\n"
    '  File "x.py", line 1\nZeroDivisionError: division by zero\n'
)
CODER = AgentTurn("t0", 0, "Coder", Role.CODER, CODE)


def _run(output: str) -> AgentTurn:
    return AgentTurn("t1", 1, "Terminal", Role.TOOL, output)


async def test_a_failed_run_is_the_code_producers_fault() -> None:
    result = await ExecutionCheck().check(AuditRequest(CODER, observations=(_run(FAILED),)))
    assert result.outcome is Outcome.FAIL and result.fault == "code failed"
    assert "ZeroDivisionError: division by zero" in result.detail and "step 1" in result.detail


async def test_a_clean_run_passes_and_nothing_to_read_is_not_applicable() -> None:
    check = ExecutionCheck()
    ok = await check.check(AuditRequest(CODER, observations=(_run("exitcode: 0 (execution succeeded)\n4"),)))
    assert ok.outcome is Outcome.PASS
    # A seat of the network sees no observations: the check says it cannot decide.
    assert (await check.check(AuditRequest(CODER))).outcome is Outcome.NOT_APPLICABLE
    prose = AgentTurn("t0", 0, "Coder", Role.CODER, "no code here")
    assert (await check.check(AuditRequest(prose, observations=(_run(FAILED),)))).outcome is Outcome.NOT_APPLICABLE
