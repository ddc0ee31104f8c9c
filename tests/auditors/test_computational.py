"""The tier-1 auditor with every check, on whole traces, and `trust audit-segment` on segment files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trust.auditors.base import AuditRequest, CheckResult, Outcome, request_for
from trust.auditors.computational import ComputationalAuditor
from trust.auditors.tiers import computational_auditor
from trust.core.graphs.hdag import Hdag, HdagNode, Level, Tier
from trust.core.graphs.refinement import ErrorType
from trust.settings import SandboxSettings

from .cha2ds2vasc import FLAWED_ERRORS, SEGMENTS_DIR, flawed_trace, sound_trace

AUDITOR = computational_auditor(SandboxSettings(timeout_seconds=5, cpu_seconds=5))


async def _verdicts(graph: Hdag) -> dict[str, Outcome]:
    return {node.id: (await AUDITOR.audit(request_for(graph, node.id))).vote for node in graph.nodes()}


async def test_the_four_errors_of_the_flawed_trace_and_nothing_else() -> None:
    graph = flawed_trace()
    verdicts = await _verdicts(graph)
    failed = {node for node, vote in verdicts.items() if vote is Outcome.FAIL}
    assert failed == set(FLAWED_ERRORS)
    for node, fault in FLAWED_ERRORS.items():
        verdict = await AUDITOR.audit(request_for(graph, node))
        assert verdict.score == 0.0 and fault in verdict.critique
        assert verdict.error_type in (ErrorType.FACTUAL, ErrorType.LOGICAL)


async def test_every_checkable_node_of_the_sound_trace_passes() -> None:
    graph = sound_trace()
    verdicts = await _verdicts(graph)
    assert Outcome.FAIL not in verdicts.values()
    # Only the nodes the router sends past tier 1 (the task statement, the plan, the recommendation)
    # make no claim a deterministic check can decide.
    undecided = {node for node, vote in verdicts.items() if vote is Outcome.NOT_APPLICABLE}
    assert undecided == {node.id for node in graph.nodes() if node.tier is not Tier.COMPUTATIONAL}


async def test_a_wrong_product_and_a_wrong_integral_fail_with_the_right_value() -> None:
    product = await AUDITOR.audit(AuditRequest(HdagNode("op", Level.OPERATION, "17 * 23 = 409")))
    assert product.vote is Outcome.FAIL and product.expected == "391"
    integral = await AUDITOR.audit(AuditRequest(HdagNode("op", Level.OPERATION, "∫ 2e^x dx = e^x + C")))
    assert integral.vote is Outcome.FAIL and integral.error_type is ErrorType.FACTUAL
    right = await AUDITOR.audit(AuditRequest(HdagNode("op", Level.OPERATION, "∫ 2e^x dx = 2e^x + C")))
    assert right.vote is Outcome.PASS and right.score == 1.0


async def test_a_node_no_check_can_decide_is_not_applicable_never_guessed() -> None:
    verdict = await AUDITOR.audit(AuditRequest(HdagNode("s", Level.STEP, "The patient should rest and drink water.")))
    assert verdict.vote is Outcome.NOT_APPLICABLE and verdict.score is None and not verdict.decided
    with pytest.raises(ValueError, match="no on-chain vote"):
        _ = verdict.passed


class _Broken:
    name = "broken"

    async def check(self, request: AuditRequest) -> CheckResult:
        raise RuntimeError("the checker itself is broken")


async def test_a_check_that_breaks_does_not_decide_the_vote() -> None:
    auditor = ComputationalAuditor([_Broken(), *AUDITOR.checks])
    verdict = await auditor.audit(AuditRequest(HdagNode("op", Level.OPERATION, "12 * 12 = 144")))
    assert verdict.vote is Outcome.PASS
    assert verdict.checks[0].outcome is Outcome.NOT_APPLICABLE and "broken" in verdict.checks[0].detail


def _audit_segment(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trust", "audit-segment", *args], capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "vote", "fault"),
    [
        ("cha2ds2vasc_flawed_age.json", "fail", "variable confusion"),
        ("cha2ds2vasc_flawed_hypertension.json", "fail", "unsupported finding"),
        ("cha2ds2vasc_flawed_vascular_sex.json", "fail", "combined rules"),
        ("cha2ds2vasc_flawed_final.json", "fail", "skipped rule"),
        ("cha2ds2vasc_sound_hypertension.json", "pass", "verified"),
        ("cha2ds2vasc_sound_final.json", "pass", "verified"),
    ],
)
def test_audit_segment_prints_the_verdict_as_json(name: str, vote: str, fault: str) -> None:
    done = _audit_segment(str(SEGMENTS_DIR / name), "--tier", "1", "--json")
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert list(verdict)[:3] == ["vote", "score", "critique"]
    assert verdict["vote"] == vote and fault in verdict["critique"]
    assert verdict["score"] == (1.0 if vote == "pass" else 0.0)


def test_audit_segment_refuses_bad_input_clearly(tmp_path: Path) -> None:
    malformed = tmp_path / "bad.json"
    malformed.write_text('{"node": {"id": "x", "level": "stepp"}}')
    done = _audit_segment(str(malformed), "--tier", "1", "--json")
    assert done.returncode == 1 and "segment.node" in done.stderr and "Traceback" not in done.stderr
    missing = _audit_segment(str(tmp_path / "absent.json"), "--tier", "1")
    assert missing.returncode == 1 and "cannot read the segment file" in missing.stderr
    human = _audit_segment(str(SEGMENTS_DIR / "cha2ds2vasc_sound_final.json"), "--tier", "3")
    assert human.returncode == 1 and "tier 3 is a person" in human.stderr


def test_warm_up_loads_what_the_first_seat_would_load() -> None:
    """`warm_up` runs the checks on a built-in algebra step: SymPy, which the symbolic check imports
    on first use (seconds on a busy machine, on the first seat's critical path), is loaded before
    any seat comes. In a fresh interpreter, where nothing has imported it yet."""
    code = (
        "import asyncio, sys\n"
        "from trust.auditors.tiers import computational_auditor\n"
        "from trust.settings import Settings\n"
        "auditor = computational_auditor(Settings().worker.sandbox)\n"
        "assert 'sympy' not in sys.modules\n"
        "asyncio.run(auditor.warm_up())\n"
        "print('sympy' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
