"""Hypothesis strategies for valid HDAGs, shared by the structure tests."""

from __future__ import annotations

from hypothesis import strategies as st

from trust.core.graphs import Difficulty, EdgeType, Hdag, HdagNode, Level, Tier

_NON_GOAL = [Level.STRATEGY, Level.TACTIC, Level.STEP, Level.OPERATION]
_LEAF_LEVELS = (Level.STEP, Level.OPERATION)

node_ids = st.text(min_size=1, max_size=6)


@st.composite
def hdag_nodes(draw: st.DrawFn, node_id: str, level: Level) -> HdagNode:
    return HdagNode(
        id=node_id,
        level=level,
        content=draw(st.text(max_size=30)),
        difficulty=draw(st.sampled_from(list(Difficulty))),
        domain=draw(st.sampled_from(["general", "math", "code", "medical"]) | st.text(max_size=8)),
        stakes=draw(st.sampled_from(["low", "medium", "high"])),
        tier=draw(st.sampled_from(list(Tier))),
        expression=draw(st.none() | st.text(max_size=12)),
    )


@st.composite
def valid_hdags(draw: st.DrawFn, max_nodes: int = 10, edge_types: list[EdgeType] | None = None) -> Hdag:
    """A valid HDAG: one goal, every later node under at least one earlier node of a level no lower,
    and an operation node hung under every goal, strategy or tactic that would otherwise be a leaf."""
    kinds = edge_types or list(EdgeType)
    count = draw(st.integers(min_value=1, max_value=max_nodes))
    ids = draw(st.lists(node_ids, min_size=2 * count + 1, max_size=2 * count + 1, unique=True))
    spare = iter(ids[count:])
    hdag = Hdag()
    hdag.add_node(draw(hdag_nodes(ids[0], Level.GOAL)))
    for node_id in ids[1:count]:
        level = draw(st.sampled_from(_NON_GOAL))
        above = [node.id for node in hdag.nodes() if node.level <= level]
        parents = draw(st.lists(st.sampled_from(above), min_size=1, max_size=3, unique=True))
        hdag.add_node(draw(hdag_nodes(node_id, level)))
        for parent in parents:
            hdag.add_edge(parent, node_id, draw(st.sampled_from(kinds)))
    for node in list(hdag.nodes()):
        if node.level not in _LEAF_LEVELS and not hdag.children(node.id):
            child = next(spare)
            hdag.add_node(draw(hdag_nodes(child, Level.OPERATION)))
            hdag.add_edge(node.id, child, draw(st.sampled_from(kinds)))
    return hdag
