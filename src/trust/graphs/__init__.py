"""Reasoning graphs, the pure core: HDAGs for one model's chain of thought, CIGs for agent logs.

No I/O here: no sockets, environment, clock or logging. Callers pass text, logs and oracles in.
"""

from trust.graphs.hdag import Difficulty, EdgeType, Hdag, HdagEdge, HdagNode, Level, Tier, content_hash

__all__ = [
    "Difficulty",
    "EdgeType",
    "Hdag",
    "HdagEdge",
    "HdagNode",
    "Level",
    "Tier",
    "content_hash",
]
