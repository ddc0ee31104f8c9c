"""A contradiction unit as its seat sees it: the descriptor and the two claims its envelope unlocks,
judged by the tier-1 auditor."""

from __future__ import annotations

import pytest

from tests.core.graphs.test_units import corrected
from trust.auditors.base import AuditLayer, Outcome, request_from_plaintexts
from trust.auditors.tiers import computational_auditor
from trust.core.graphs.refinement import ErrorType
from trust.core.graphs.units import audit_units, unit_plaintext
from trust.core.privacy.segments import segment_plaintexts
from trust.errors import GraphError
from trust.settings import SandboxSettings


def _seat_plaintexts(later: str) -> tuple[str, dict[str, bytes]]:
    graph = corrected(later)
    unit = audit_units(graph)[-1]
    nodes = segment_plaintexts(graph)
    return unit.id, {unit.id: unit_plaintext(unit), "s1": nodes["s1"], "s2": nodes["s2"]}


async def test_one_quantity_with_two_values_confirms_the_contradiction() -> None:
    unit_id, plaintexts = _seat_plaintexts("Wait, that is wrong: the total is 15.")
    request = request_from_plaintexts(unit_id, plaintexts)
    assert (request.layer, request.node.id, [p.id for p in request.parents]) == (AuditLayer.CONTRADICTION, "s2", ["s1"])
    assert "really contradict" in request.audit_question
    verdict = await computational_auditor(SandboxSettings()).audit(request)
    assert verdict.vote is Outcome.FAIL and verdict.error_type is ErrorType.LOGICAL
    assert "'total' is 18 in s1" in verdict.critique and "15 in s2" in verdict.critique


async def test_a_contradiction_in_words_is_not_decided_by_a_checker() -> None:
    unit_id, plaintexts = _seat_plaintexts("Wait, that approach is wrong; boxes are sold by weight.")
    verdict = await computational_auditor(SandboxSettings()).audit(request_from_plaintexts(unit_id, plaintexts))
    assert verdict.vote is Outcome.NOT_APPLICABLE


def test_a_seat_reads_exactly_the_two_claims_of_its_unit() -> None:
    unit_id, plaintexts = _seat_plaintexts("the total is 15")
    with pytest.raises(GraphError, match=r"its envelope unlocks .* but the unit reads exactly \['s1', 's2'\]"):
        request_from_plaintexts(unit_id, {**plaintexts, "goal": segment_plaintexts(corrected())["goal"]})
    with pytest.raises(GraphError, match="the plaintext is node 's1'"):
        request_from_plaintexts(unit_id, {**plaintexts, "s2": plaintexts["s1"]})
    with pytest.raises(GraphError, match="the descriptor names unit"):
        request_from_plaintexts("contradiction:s0|s2", {"contradiction:s0|s2": plaintexts[unit_id]})
