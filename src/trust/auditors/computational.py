"""The tier-1 auditor: deterministic checks, composed (paper 3.1.1, Tier 1; error rate 0 by construction).

Every check looks at the segment and answers PASS, FAIL or NOT_APPLICABLE. The auditor's verdict:

- FAIL (score 0) when any check fails: a single definite error is enough, and the critique lists
  every failure with its error type, so refinement gets them all at once;
- PASS (score 1) when no check fails and at least one passed: what was verified is listed;
- NOT_APPLICABLE when no check could decide: tier 1 never guesses. The worker does not vote then.

Each layer has its own checks: `checks` judge what a node says (its calculations, code, formats),
`edge_checks` what reached it (`trust.auditors.checks.messages`), `contradiction_checks` whether
two claims contradict (`trust.auditors.checks.contradictions`). A request of a layer without checks
is not applicable.

A check that breaks (an unexpected exception: a bug, a sandbox that could not start) counts as not
applicable, with the reason in the critique; it never turns into a pass or a fail. The checks run
one after the other, in the order given: they are cheap, except the sandbox, which is a subprocess.
"""

from __future__ import annotations

from collections.abc import Sequence

from trust.auditors.base import AuditLayer, AuditRequest, Check, CheckResult, Outcome, Verdict
from trust.core.decompose.rules import from_steps
from trust.core.graphs.hdag import Tier

__all__ = ["ComputationalAuditor"]


class ComputationalAuditor:
    """Tier 1: the verdict of a fixed list of deterministic `Check`s (see the module docstring)."""

    def __init__(
        self,
        checks: Sequence[Check],
        *,
        edge_checks: Sequence[Check] = (),
        contradiction_checks: Sequence[Check] = (),
        name: str = "computational",
    ) -> None:
        if not checks and not edge_checks and not contradiction_checks:
            raise ValueError("a computational auditor needs at least one check")
        self.checks = tuple(checks)
        self.edge_checks = tuple(edge_checks)
        self.contradiction_checks = tuple(contradiction_checks)
        self._name = name

    @property
    def tier(self) -> Tier:
        return Tier.COMPUTATIONAL

    @property
    def name(self) -> str:
        return self._name

    async def _run(self, check: Check, request: AuditRequest) -> CheckResult:
        try:
            return await check.check(request)
        except Exception as exc:  # a broken check must not decide the vote
            return CheckResult(
                check.name, Outcome.NOT_APPLICABLE, f"the check could not run: {type(exc).__name__}: {exc}"
            )

    async def unavailable(self) -> str | None:
        return None

    async def warm_up(self) -> None:
        """Runs the node checks once on a built-in algebra step, so that the first seat does not pay
        for what the checks load on first use (SymPy's import and caches: 0.3 s of CPU on an idle
        machine, seconds on a busy one, all of it on the first seat's critical path). The verdict
        is thrown away."""
        sample = from_steps("Solve 2x + 3 = 11 for x.", ["2x + 3 = 11, so 2x = 8", "x = 8 / 2 = 4"])
        step = sample.node("s1")
        request = AuditRequest(step, tuple(sample.node(p) for p in sample.parents("s1")), "", AuditLayer.NODE)
        await self.audit(request)

    async def audit(self, request: AuditRequest) -> Verdict:
        checks = {
            AuditLayer.NODE: self.checks,
            AuditLayer.EDGE: self.edge_checks,
            AuditLayer.CONTRADICTION: self.contradiction_checks,
        }[request.layer]
        if not checks:
            return Verdict(Outcome.NOT_APPLICABLE, None, f"no tier-1 check of the {request.layer} layer")
        results = tuple([await self._run(check, request) for check in checks])
        failed = [r for r in results if r.outcome is Outcome.FAIL]
        if failed:
            critique = "; ".join(
                f"[{r.error_type.value if r.error_type else 'error'}] {r.fault}: {r.detail}" for r in failed
            )
            first = failed[0]
            return Verdict(Outcome.FAIL, 0.0, critique, first.error_type, first.expected, results)
        passed = [r for r in results if r.outcome is Outcome.PASS]
        if passed:
            return Verdict(
                Outcome.PASS, 1.0, "verified: " + "; ".join(f"{r.check}: {r.detail}" for r in passed), checks=results
            )
        reasons = "; ".join(f"{r.check}: {r.detail}" for r in results)
        return Verdict(
            Outcome.NOT_APPLICABLE, None, f"no tier-1 check can decide this node ({reasons})", checks=results
        )
