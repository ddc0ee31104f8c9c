"""`trust.auditors.base`: how the auditors await several questions at once (`all_or_nothing`) and what
a seat of the network answers (`audit_seat`)."""

from __future__ import annotations

import asyncio

import pytest

from trust.auditors.base import (
    AuditLayer,
    AuditRequest,
    Outcome,
    Verdict,
    all_or_nothing,
    audit_seat,
    request_for,
    request_from_plaintexts,
)
from trust.auditors.tiers import computational_auditor
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, ReplyContract, Role
from trust.core.graphs.hdag import Tier
from trust.core.graphs.refinement import ErrorType
from trust.core.graphs.units import UnitKind, audit_units, unit_plaintext
from trust.core.privacy.segments import segment_plaintexts
from trust.settings import SandboxSettings

TIER1 = computational_auditor(SandboxSettings(timeout_seconds=5, cpu_seconds=5))


async def test_results_come_in_order_with_at_most_concurrency_in_flight() -> None:
    running, most = 0, 0

    async def job(value: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0)  # let the others start, if the gate allows
        await asyncio.sleep(0)
        running -= 1
        return value * value

    assert await all_or_nothing([job(v) for v in range(10)], concurrency=3) == [v * v for v in range(10)]
    assert most == 3
    most = 0
    assert await all_or_nothing([job(v) for v in range(10)]) == [v * v for v in range(10)]
    assert most == 10


async def test_a_failure_cancels_the_others_before_it_is_raised() -> None:
    hang = asyncio.Event()
    cancelled: list[int] = []

    async def waits(index: int) -> int:
        try:
            await hang.wait()
        except asyncio.CancelledError:
            cancelled.append(index)
            raise
        return index

    async def fails() -> int:
        await asyncio.sleep(0)
        raise RuntimeError("endpoint down")

    for concurrency in (2, None):
        cancelled.clear()
        with pytest.raises(RuntimeError, match="endpoint down"):
            await all_or_nothing([waits(0), fails(), waits(2)], concurrency=concurrency)
        assert 0 in cancelled and set(cancelled) <= {0, 2}
        assert asyncio.all_tasks() == {asyncio.current_task()}  # nothing outlives the call


# ---------------------------------------------------------------- audit_seat: what a network seat answers


def _json_request_answered_in_prose() -> Cig:
    cig = Cig()
    task = "What is 2 + 2? Reply in JSON."
    cig.add_turn(AgentTurn("t0", 0, "Planner", Role.PLANNER, task, contract=ReplyContract("json", ("answer",))))
    cig.add_turn(AgentTurn("t1", 1, "Solver", Role.EXPERT, "The answer is 4."))
    cig.add_edge("t0", "t1", EdgeOrigin.SEQUENCE)
    return cig


def _edge_seat(cig: Cig, source: str, target: str) -> AuditRequest:
    """The request a seat on the edge unit source -> target builds from what its envelope unlocks."""
    (unit,) = [u for u in audit_units(cig) if (u.kind, u.source, u.target) == (UnitKind.EDGE, source, target)]
    nodes = segment_plaintexts(cig)
    return request_from_plaintexts(
        unit.id, {unit.id: unit_plaintext(unit), source: nodes[source], target: nodes[target]}
    )


async def test_a_broken_incoming_message_fails_its_edge_seat_and_not_the_turns_own() -> None:
    """Each layer has its own seats: a prose reply to a JSON contract fails the edge's segment, and
    the receiving turn's seat answers its node layer only (no fault counted twice)."""
    cig = _json_request_answered_in_prose()
    turn = await audit_seat(TIER1, request_for(cig, "t1"))
    assert turn == await TIER1.audit(request_for(cig, "t1")) and turn.vote is not Outcome.FAIL
    edge = _edge_seat(cig, "t0", "t1")
    assert (edge.layer, edge.node.id, edge.sender, edge.origin) == (AuditLayer.EDGE, "t1", "t0", EdgeOrigin.SEQUENCE)
    verdict = await audit_seat(TIER1, edge)
    assert verdict.vote is Outcome.FAIL and verdict.score == 0.0
    assert "t0 asked for JSON; t1 answered in prose" in verdict.critique and verdict.error_type is ErrorType.PROTOCOL


async def test_an_edge_seat_on_a_kept_contract_passes_and_says_what_it_verified() -> None:
    cig = _json_request_answered_in_prose()
    kept = Cig()
    kept.add_turn(cig.turn("t0"))
    kept.add_turn(AgentTurn("t1", 1, "Solver", Role.EXPERT, '{"answer": 4}'))
    kept.add_edge("t0", "t1", EdgeOrigin.SEQUENCE)
    verdict = await audit_seat(TIER1, _edge_seat(kept, "t0", "t1"))
    assert verdict.vote is Outcome.PASS and "contract" in verdict.critique


class _Counting:
    """A tier-2 auditor that counts the questions it is asked (the model call a seat pays for)."""

    def __init__(self) -> None:
        self.layers: list[AuditLayer] = []

    @property
    def tier(self) -> Tier:
        return Tier.LLM

    @property
    def name(self) -> str:
        return "counting"

    async def unavailable(self) -> str | None:
        return None

    async def audit(self, request: AuditRequest) -> Verdict:
        self.layers.append(request.layer)
        return Verdict(Outcome.PASS, 1.0, "fine")


async def test_a_tier2_seat_on_a_turn_is_asked_the_node_layer_once() -> None:
    counting = _Counting()
    verdict = await audit_seat(counting, request_for(_json_request_answered_in_prose(), "t1"))
    assert verdict == Verdict(Outcome.PASS, 1.0, "fine") and counting.layers == [AuditLayer.NODE]
