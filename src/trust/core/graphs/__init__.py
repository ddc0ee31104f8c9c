"""Reasoning graphs, the pure core: HDAGs for one model's chain of thought, CIGs for agent logs.

No I/O here: no sockets, environment, clock or logging. Callers pass text, logs and auditors' verdicts in.
"""

from trust.core.graphs.agent_log import AgentLog, LogLimits, OverlapRule, build_cig, parse_log
from trust.core.graphs.analysis import (
    CASCADE_EDGES,
    PATH_EDGES,
    cascade,
    critical_path,
    final_answer,
    nodes_to_audit,
    topological_order,
)
from trust.core.graphs.audit import CigAudit, EdgeAudit, EdgeScore, NodeAudit
from trust.core.graphs.cig import AgentTurn, Cig, CigEdge, EdgeOrigin, ReplyContract, Role
from trust.core.graphs.hdag import Difficulty, EdgeType, Hdag, HdagEdge, HdagNode, Level, Tier, content_hash
from trust.core.graphs.localize import Localization, RootCause, localize, localize_audit
from trust.core.graphs.refinement import (
    AuditFinding,
    ErrorType,
    Feedback,
    FeedbackKind,
    RepairPlan,
    feedback_for,
    plan_repair,
)
from trust.core.graphs.routing import route_node, route_tier, stakes_for_domain
from trust.core.graphs.serialization import dumps, dumps_node, loads, loads_node, node_from_dict, node_to_dict
from trust.core.graphs.stationarity import LexicalSimilarity, Similarity, detect_stationarity
from trust.core.graphs.status import NodeStatus
from trust.core.graphs.validation import validate, violations

__all__ = [
    "Difficulty",
    "EdgeType",
    "Hdag",
    "HdagEdge",
    "HdagNode",
    "Level",
    "Tier",
    "content_hash",
    # structure: validation, JSON, analysis, statuses
    "CASCADE_EDGES",
    "NodeStatus",
    "PATH_EDGES",
    "cascade",
    "critical_path",
    "dumps",
    "dumps_node",
    "final_answer",
    "loads",
    "loads_node",
    "node_from_dict",
    "node_to_dict",
    "nodes_to_audit",
    "topological_order",
    "validate",
    "violations",
    # CIGs: agent logs, dual-layer audit, Algorithm 1, stationarity
    "AgentLog",
    "AgentTurn",
    "Cig",
    "CigAudit",
    "CigEdge",
    "EdgeAudit",
    "EdgeOrigin",
    "EdgeScore",
    "LexicalSimilarity",
    "Localization",
    "LogLimits",
    "NodeAudit",
    "OverlapRule",
    "ReplyContract",
    "Role",
    "RootCause",
    "Similarity",
    "build_cig",
    "detect_stationarity",
    "localize",
    "localize_audit",
    "parse_log",
    # decomposition: traces to HDAGs (deterministic and by a chat model), tier routing
    "route_node",
    "route_tier",
    "stakes_for_domain",
    # active refinement: prune, freeze, feedback (section 2.3)
    "AuditFinding",
    "ErrorType",
    "Feedback",
    "FeedbackKind",
    "RepairPlan",
    "feedback_for",
    "plan_repair",
]
