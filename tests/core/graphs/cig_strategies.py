"""Test helpers for CIGs: Hypothesis strategies, the Who&When files, a sample log in our format."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from trust.core.graphs.audit import EdgeScore
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, Role, turn_id

ROLES = (Role.PLANNER, Role.CODER, Role.REVIEWER, Role.TOOL, Role.EXPERT)


@dataclass(frozen=True)
class Spec:
    """A CIG description: per turn its role and the earlier turns it references."""

    roles: tuple[Role, ...]
    parents: tuple[tuple[int, ...], ...]

    def build(self, outputs: tuple[str, ...] | None = None) -> Cig:
        cig = Cig()
        for index, role in enumerate(self.roles):
            output = outputs[index] if outputs else f"output {index}"
            cig.add_turn(AgentTurn(turn_id(index), index, f"{role.value}-agent", role, output))
            for parent in self.parents[index]:
                cig.add_edge(turn_id(parent), turn_id(index), EdgeOrigin.REFERENCE)
        return cig

    def edges(self) -> list[tuple[str, str]]:
        return [(turn_id(p), turn_id(i)) for i, parents in enumerate(self.parents) for p in parents]


@st.composite
def specs(draw: st.DrawFn, max_turns: int = 12) -> Spec:
    n = draw(st.integers(1, max_turns))
    roles = tuple(draw(st.sampled_from(ROLES)) for _ in range(n))
    parents = tuple(
        tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=min(i, 3))))) if i else () for i in range(n)
    )
    return Spec(roles, parents)


@dataclass(frozen=True)
class Scored:
    spec: Spec
    node_scores: dict[str, float]
    edge_scores: dict[tuple[str, str], EdgeScore]
    rejecting: frozenset[str]


_SCORE = st.sampled_from([0.0, 0.3, 0.79, 0.8, 0.81, 1.0]) | st.floats(0, 1)


@st.composite
def scored(draw: st.DrawFn, max_turns: int = 12) -> Scored:
    spec = draw(specs(max_turns))
    nodes = {turn_id(i): draw(_SCORE) for i in range(len(spec.roles))}
    edges = {edge: EdgeScore(draw(_SCORE), draw(_SCORE)) for edge in spec.edges()}
    rejecting = frozenset(node for node in nodes if draw(st.booleans()))
    return Scored(spec, nodes, edges, rejecting)


def who_when_dir() -> Path:
    """The Who&When logs in shared/ beside the repository (CI) or at /work/shared (a workstation)."""
    for root in (Path(__file__).resolve().parents[4] / "shared", Path("/work/shared")):
        folder = root / "data" / "who_when" / "algorithm_generated"
        if folder.is_dir():
            return folder
    pytest.skip("Who&When data not found in shared/data/who_when/algorithm_generated")


def who_when_files() -> list[Path]:
    return sorted(who_when_dir().glob("*.json"), key=lambda path: int(path.stem))


# A five-turn log in the project's format with one fault of each kind the tier-1 checks see:
# the coder miscalculates (Invalid_Root), the reviewer waves it through (Negligent), and the
# aggregator restates the remaining count wrongly (a fidelity failure on its incoming edge).
APPLES_LOG: dict[str, Any] = {
    "format": "trust.agent-log",
    "version": 1,
    "task": "A crate holds 120 apples and 15% spoil. How many remain?",
    "agents": [
        {"name": "Alice", "role": "user"},
        {"name": "Planner", "role": "planner", "description": "splits the task"},
        {"name": "Coder", "role": "coder"},
        {"name": "Reviewer", "role": "reviewer"},
        {"name": "Aggregator", "role": "aggregator"},
    ],
    "turns": [
        {"agent": "Alice", "content": "A crate holds 120 apples and 15% spoil. How many remain?", "references": []},
        {
            "agent": "Planner",
            "content": "Plan: spoiled = 15% of 120, then remaining = 120 - spoiled. Coder: send spoiled and remaining.",
            "references": [0],
            "expects": {"format": "json", "required": ["spoiled", "remaining"]},
            "timestamp": "2025-01-31T12:00:00+00:00",
        },
        {
            "agent": "Coder",
            "content": 'Spoiled: 120 * 0.15 = 16\n```json\n{"spoiled": 16, "remaining": 104}\n```\nRemaining: 104',
            "references": [1],
            "timestamp": "2025-01-31T12:00:05+00:00",
        },
        {"agent": "Reviewer", "content": "Looks right to me. Remaining: 104", "references": [2]},
        {"agent": "Aggregator", "content": "Remaining: 140 apples."},
    ],
}
