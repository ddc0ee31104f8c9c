"""Reasoning graphs, the pure core: HDAGs for one model's chain of thought, CIGs for agent logs.

No I/O here: no sockets, environment, clock or logging. Callers pass text, logs and oracles in.
"""

from trust.graphs.agent_log import AgentLog, LogLimits, OverlapRule, build_cig, parse_log
from trust.graphs.analysis import (
    CASCADE_EDGES,
    PATH_EDGES,
    cascade,
    critical_path,
    final_answer,
    nodes_to_audit,
    topological_order,
)
from trust.graphs.cig import AgentTurn, Cig, CigEdge, EdgeOrigin, ReplyContract, Role
from trust.graphs.decompose import (
    DecompositionLimits,
    Operation,
    Trace,
    decompose,
    extract_operations,
    from_steps,
    from_text,
)
from trust.graphs.hdag import Difficulty, EdgeType, Hdag, HdagEdge, HdagNode, Level, Tier, content_hash
from trust.graphs.llm_decompose import ChatMessage, ChatModel, DecompositionResult, decompose_with_model, parse_reply
from trust.graphs.localize import Localization, RootCause, localize, localize_audit
from trust.graphs.oracles import CigAudit, EdgeOracle, EdgeScore, NodeOracle, audit_cig
from trust.graphs.refinement import (
    AuditFinding,
    ErrorType,
    Feedback,
    FeedbackKind,
    RepairPlan,
    feedback_for,
    plan_repair,
)
from trust.graphs.routing import route_node, route_tier, stakes_for_domain
from trust.graphs.serialization import dumps, dumps_node, loads, loads_node, node_from_dict, node_to_dict
from trust.graphs.stationarity import LexicalSimilarity, Similarity, detect_stationarity
from trust.graphs.status import NodeStatus
from trust.graphs.validation import validate, violations

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
    "EdgeOracle",
    "EdgeOrigin",
    "EdgeScore",
    "LexicalSimilarity",
    "Localization",
    "LogLimits",
    "NodeOracle",
    "OverlapRule",
    "ReplyContract",
    "Role",
    "RootCause",
    "Similarity",
    "audit_cig",
    "build_cig",
    "detect_stationarity",
    "localize",
    "localize_audit",
    "parse_log",
    # decomposition: traces to HDAGs (deterministic and by a chat model), tier routing
    "ChatMessage",
    "ChatModel",
    "DecompositionLimits",
    "DecompositionResult",
    "Operation",
    "Trace",
    "decompose",
    "decompose_with_model",
    "extract_operations",
    "from_steps",
    "from_text",
    "parse_reply",
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
