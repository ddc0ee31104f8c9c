"""What the core keeps of the dual-layer audit: the scores Algorithm 1 reads, observations, rejections."""

from __future__ import annotations

import math

import pytest

from trust.core.graphs.audit import EdgeScore, NodeAudit, observations, rejects
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, Role, turn_id
from trust.errors import GraphError

FAILED = "exitcode: 1 (execution failed)\nZeroDivisionError: division by zero\n"


def _chain(*turns: tuple[str, Role, str], origins: dict[tuple[int, int], EdgeOrigin] | None = None) -> Cig:
    cig = Cig()
    origins = origins or {}
    for step, (agent, role, output) in enumerate(turns):
        cig.add_turn(AgentTurn(turn_id(step), step, agent, role, output))
    edges = {(i - 1, i): EdgeOrigin.SEQUENCE for i in range(1, len(turns))} | origins
    for (source, target), origin in sorted(edges.items(), key=lambda item: item[0][1]):
        cig.add_edge(turn_id(source), turn_id(target), origin)
    return cig


def test_only_direct_tool_answers_are_observations() -> None:
    cig = _chain(
        ("Coder", Role.CODER, "```python\nprint(1 / 0)\n```"),
        ("Expert", Role.EXPERT, "thinking"),
        ("Terminal", Role.TOOL, FAILED),
        origins={(0, 2): EdgeOrigin.OVERLAP},
    )
    assert observations(cig, "t0") == []
    assert observations(cig, "t1") == [cig.turn("t2")]


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


def test_scores_are_validated() -> None:
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(GraphError, match="node score"):
            NodeAudit("t0", bad)
        with pytest.raises(GraphError, match="protocol score"):
            EdgeScore(protocol=bad)
        with pytest.raises(GraphError, match="fidelity score"):
            EdgeScore(fidelity=bad)
    assert EdgeScore(0.8, 0.8).fails(0.8) is False
    assert EdgeScore(0.79, 1.0).fails(0.8) and EdgeScore(1.0, 0.79).fails(0.8)
