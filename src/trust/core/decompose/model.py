"""HDAG decomposition by a language model (paper 2.1.4 step 1: few-shot prompting), with a safe fallback.

The core builds the prompt and reads the reply; the network stays in an adapter
(`trust.adapters.llm.client.LlmClient`) that implements the `ChatModel` protocol of `trust.core.chat`
(re-exported here). `decompose_with_model` asks the model for
`{"nodes": [...], "edges": [...]}`, reads it with `parse_reply`, and falls back to the deterministic
decomposer (`trust.core.decompose.rules`) when there is no model, the model fails, or its reply cannot be
made into a valid HDAG. The result says which method produced the graph and why.

Reading the reply. What is mechanically repairable is repaired, each repair recorded as a warning:

- a code fence around the JSON, or text before or after it, is stripped;
- a node's difficulty that is missing or unknown is estimated from its content (2.1.4 step 2 cues);
  an operation without an expression gets the one extracted from its content when there is exactly
  one; an expression on a non-operation node is dropped; tier, domain, stakes and content hash are
  never taken from the model: tiers are recomputed with `route_tier`, hashes from the content;
- a second node with an id already used is dropped;
- an edge naming an unknown node, of an unknown type, a self-loop, a duplicate, one going up the
  hierarchy, or one that would close a cycle is dropped;
- no goal: one is inserted (`g0`, or a free id) holding the problem statement; several goals: the
  first stays the goal, the others become strategies;
- a node no edge leads to is attached to the goal (decomposes_to), which also makes every node
  reachable;
- a goal-, strategy- or tactic-level node that nothing hangs under (besides the goal) becomes a step,
  because leaves must sit at step or operation level.

What is not repairable is rejected with a `GraphError` naming the reason: no JSON object, no `nodes`
array, a node without an id, a known level or non-empty content, more nodes than allowed, no
reasoning node besides the goal, or a graph that still fails `trust.core.graphs.validation.validate`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx

from trust.core.chat import ChatMessage, ChatModel
from trust.core.decompose.rules import (
    GOAL_ID,
    UNSTATED_GOAL,
    DecompositionLimits,
    Trace,
    decompose,
    detect_domain,
    estimate_difficulty,
    extract_operations,
)
from trust.core.graphs.hdag import Difficulty, EdgeType, Hdag, HdagNode, Level
from trust.core.graphs.routing import DOMAINS, route_tier, stakes_for_domain
from trust.core.graphs.validation import validate
from trust.errors import GraphError, GraphValidationError, LlmError

__all__ = [
    "DecompositionResult",
    "build_messages",
    "decompose_with_model",
    "parse_reply",
]

_MAX_REPLY_CHARS = 1_000_000
_MAX_ID_CHARS = 64
_MAX_NODES = 4096  # the contracts' ceiling on segments per session


@dataclass(frozen=True, slots=True)
class DecompositionResult:
    """The HDAG, how it was made ("llm" or "deterministic"), and what was repaired or went wrong."""

    hdag: Hdag
    method: str
    warnings: tuple[str, ...] = ()


# ============================================================================ the prompt

_SYSTEM = """You decompose a reasoning trace into a Hierarchical Directed Acyclic Graph (HDAG) for auditing.

Levels (top to bottom): goal (the problem; exactly one), strategy (a high-level approach), tactic (a
specific method implementing a strategy), step (a self-contained reasoning block with clear inputs
and outputs), operation (an atomic calculation, code run or tool call a deterministic checker can verify).

Edge types, each pointing the way information flows (source above or before target):
- decomposes_to: a node breaks down into its child (goal -> strategy -> tactic -> step -> operation)
- depends_on: the target uses the result of the source
- enables: the source gives context to the target without a strict logical requirement
- validates: the target checks the source ("let me verify ...")
- contradicts: the target contradicts the source
An edge never goes up a level: level(source) must be at or above level(target). No cycles. Every
node is reachable from the goal. Only steps and operations may be leaves.

Difficulty: easy, medium or hard, from formal notation, domain specificity, the length of the logical
chain and whether ground truth is available (verifiable arithmetic is easy).

Reply with one JSON object and nothing else:
{"domain": "math|code|medical|legal|financial|general",
 "nodes": [{"id": "...", "level": "goal|strategy|tactic|step|operation", "content": "...",
            "difficulty": "easy|medium|hard", "expression": null}],
 "edges": [{"source": "...", "target": "...", "type": "..."}]}
"content" quotes or closely summarizes the trace. "expression" is set on operation nodes only: a
Python or SymPy expression that is True exactly when the operation is correct (e.g. "12 * 3 == 36");
null when nothing is mechanically checkable."""

_SHOT_TRACE = Trace(
    text=(
        "We integrate by parts twice, since x^2 needs two reductions. First take u = x^2, dv = e^x dx, so "
        "du = 2x dx and v = e^x, giving x^2 e^x - ∫2x e^x dx. Then take u = 2x, dv = e^x dx: du = 2 dx, "
        "v = e^x, so ∫2x e^x dx = 2x e^x - ∫2e^x dx, and ∫2e^x dx = 2e^x + C. Altogether: "
        "x^2 e^x - 2x e^x + 2e^x + C. Let me verify by differentiating: the derivative is x^2 e^x."
    ),
    problem="Compute ∫x^2 e^x dx.",
)


def _shot_reply() -> str:
    nodes = [
        ("v0", "goal", "Compute ∫x^2 e^x dx", "medium", None),
        ("v1", "strategy", "Apply integration by parts twice since x^2 requires two reductions", "medium", None),
        ("v2", "tactic", "First application: u = x^2, dv = e^x dx", "medium", None),
        ("v3", "tactic", "Second application: u = 2x, dv = e^x dx", "medium", None),
        ("v4", "step", "du = 2x dx and v = e^x", "easy", None),
        ("v5", "step", "Apply the formula: x^2 e^x - ∫2x e^x dx", "medium", None),
        ("v6", "step", "du = 2 dx and v = e^x", "easy", None),
        ("v7", "step", "Apply the formula: ∫2x e^x dx = 2x e^x - ∫2e^x dx", "medium", None),
        ("v8", "operation", "∫2e^x dx = 2e^x + C", "easy", "integrate(2*exp(x), x) == 2*exp(x)"),
        (
            "v9",
            "operation",
            "Combine: x^2 e^x - 2x e^x + 2e^x + C",
            "easy",
            "simplify(x**2*exp(x) - (2*x*exp(x) - 2*exp(x)) - (x**2*exp(x) - 2*x*exp(x) + 2*exp(x))) == 0",
        ),
        (
            "v10",
            "operation",
            "Verify by differentiation: d/dx (x^2 e^x - 2x e^x + 2e^x) = x^2 e^x",
            "easy",
            "simplify(diff(x**2*exp(x) - 2*x*exp(x) + 2*exp(x), x) - x**2*exp(x)) == 0",
        ),
    ]
    edges = [
        ("v0", "v1", "decomposes_to"),
        ("v1", "v2", "decomposes_to"),
        ("v1", "v3", "decomposes_to"),
        ("v2", "v3", "enables"),
        ("v2", "v4", "decomposes_to"),
        ("v2", "v5", "decomposes_to"),
        ("v4", "v5", "depends_on"),
        ("v3", "v6", "decomposes_to"),
        ("v3", "v7", "decomposes_to"),
        ("v5", "v7", "depends_on"),
        ("v6", "v7", "depends_on"),
        ("v7", "v8", "decomposes_to"),
        ("v8", "v9", "depends_on"),
        ("v5", "v9", "depends_on"),
        ("v9", "v10", "validates"),
    ]
    return json.dumps(
        {
            "domain": "math",
            "nodes": [
                {"id": i, "level": lv, "content": c, "difficulty": d, "expression": e} for i, lv, c, d, e in nodes
            ],
            "edges": [{"source": s, "target": t, "type": k} for s, t, k in edges],
        },
        ensure_ascii=False,
    )


def build_messages(trace: Trace) -> list[ChatMessage]:
    """The few-shot conversation: instructions, the paper's integration example (2.1.4), the trace."""
    return [
        ChatMessage("system", _SYSTEM),
        ChatMessage("user", f"Decompose this trace:\n\n{_SHOT_TRACE.render()}"),
        ChatMessage("assistant", _shot_reply()),
        ChatMessage("user", f"Decompose this trace:\n\n{trace.render()}"),
    ]


# ============================================================================ reading the reply


def _json_object(reply: str, warnings: list[str]) -> dict[str, Any]:
    """The first JSON object in `reply`, with fences and surrounding text stripped (and noted)."""
    if not isinstance(reply, str):
        raise GraphError(f"model reply must be text, got {type(reply).__name__}")
    if len(reply) > _MAX_REPLY_CHARS:
        raise GraphError(f"model reply is {len(reply):,} characters, over the limit of {_MAX_REPLY_CHARS:,}")
    text = reply.strip()
    fenced = re.search(r"```(?:json|JSON)?\s*\n?(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
        warnings.append("stripped a code fence around the JSON reply")
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, end = decoder.raw_decode(text, match.start())
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            if match.start() > 0 or text[end:].strip():
                warnings.append("ignored text around the JSON object in the reply")
            return value
    excerpt = reply[:120].replace("\n", " ")
    raise GraphError(f"model reply holds no JSON object (starts {excerpt!r}); expected {{'nodes': [...], ...}}")


def _node_id(value: object, index: int) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise GraphError(f"nodes[{index}].id: expected a string, got {type(value).__name__}")
    node_id = str(value).strip()
    if not node_id or len(node_id) > _MAX_ID_CHARS or not node_id.isprintable():
        raise GraphError(f"nodes[{index}].id: {node_id[:80]!r} is not a usable id (1-{_MAX_ID_CHARS} printable chars)")
    return node_id


def _read_nodes(document: dict[str, Any], warnings: list[str], max_nodes: int) -> list[dict[str, Any]]:
    raw = document.get("nodes")
    if not isinstance(raw, list):
        raise GraphError("model reply has no 'nodes' array; expected {'nodes': [...], 'edges': [...]}")
    if len(raw) > max_nodes:
        raise GraphError(f"model reply has {len(raw)} nodes, over the limit of {max_nodes}")
    nodes: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise GraphError(f"nodes[{index}]: expected an object, got {type(entry).__name__}")
        node_id = _node_id(entry.get("id"), index)
        if node_id in seen:
            warnings.append(f"dropped nodes[{index}]: its id {node_id!r} is already used")
            continue
        seen.add(node_id)
        level_value = entry.get("level")
        if not isinstance(level_value, str | int) or isinstance(level_value, bool):
            raise GraphError(f"nodes[{index}].level: expected a level name, got {level_value!r}")
        level = Level.parse(level_value)
        content = entry.get("content")
        if not isinstance(content, str) or not content.strip():
            raise GraphError(f"nodes[{index}].content: expected non-empty text, got {content!r:.80}")
        raw_difficulty = entry.get("difficulty")
        difficulty: Difficulty | None = None
        if isinstance(raw_difficulty, str):
            try:
                difficulty = Difficulty.parse(raw_difficulty)
            except GraphError:
                difficulty = None
        expression = entry.get("expression")
        if expression is not None and (not isinstance(expression, str) or not expression.strip()):
            warnings.append(f"dropped the expression of node {node_id!r}: not a non-empty string")
            expression = None
        nodes.append(
            {
                "id": node_id,
                "level": level,
                "content": content.strip(),
                "difficulty": difficulty,
                "expression": expression.strip() if isinstance(expression, str) else None,
            }
        )
    return nodes


def _edge_ends(entry: dict[str, Any]) -> tuple[object, object]:
    source = entry.get("source", entry.get("from"))
    target = entry.get("target", entry.get("to"))
    return source, target


def parse_reply(
    reply: str,
    trace: Trace,
    *,
    max_nodes: int = _MAX_NODES,
) -> tuple[Hdag, list[str]]:
    """The HDAG a model's reply describes, repaired (module docstring), and the warnings of each repair.

    Raises `GraphError` (or `GraphValidationError`) naming why the reply cannot be used.
    """
    warnings: list[str] = []
    document = _json_object(reply, warnings)
    nodes = _read_nodes(document, warnings, max_nodes)

    goals = [n for n in nodes if n["level"] is Level.GOAL]
    if not goals:
        goal_id = GOAL_ID
        taken = {n["id"] for n in nodes}
        suffix = 0
        while goal_id in taken:
            suffix += 1
            goal_id = f"{GOAL_ID}_{suffix}"
        problem = (trace.problem or "").strip() or UNSTATED_GOAL
        inserted = {"id": goal_id, "level": Level.GOAL, "content": problem, "difficulty": None, "expression": None}
        nodes.insert(0, inserted | {"inserted": True})
        warnings.append(f"the reply had no goal node: inserted {goal_id!r} holding the problem statement")
    else:
        for extra in goals[1:]:
            extra["level"] = Level.STRATEGY
            warnings.append(f"the reply had several goals: {extra['id']!r} became a strategy")
        nodes.remove(goals[0])
        nodes.insert(0, goals[0])
    if len(nodes) < 2:
        raise GraphError("model reply has no reasoning node besides the goal: nothing to audit")

    raw_domain = document.get("domain")
    if isinstance(raw_domain, str) and raw_domain.strip().lower() in DOMAINS:
        domain = raw_domain.strip().lower()
    else:
        domain = detect_domain("\n".join(n["content"] for n in nodes))
        if raw_domain is not None:
            warnings.append(f"unknown domain {raw_domain!r:.40} in the reply: detected {domain!r} instead")
    stakes = stakes_for_domain(domain)

    hdag = Hdag()
    for entry in nodes:
        level: Level = entry["level"]
        expression = entry["expression"]
        if expression is not None and level is not Level.OPERATION:
            warnings.append(f"dropped the expression of {level.label} node {entry['id']!r}: only operations carry one")
            expression = None
        if expression is None and level is Level.OPERATION:
            found = extract_operations(entry["content"], limit=2)
            if len(found) == 1:
                expression = found[0].expression
                warnings.append(f"operation {entry['id']!r} had no expression: extracted {expression!r} from it")
        difficulty = entry["difficulty"]
        if difficulty is None:
            difficulty = (
                Difficulty.EASY
                if level is Level.OPERATION
                else estimate_difficulty(entry["content"], domain=domain, operations=0)
            )
            if not entry.get("inserted"):
                warnings.append(f"node {entry['id']!r} had no valid difficulty: estimated {difficulty.value!r}")
        tier = route_tier(level, difficulty, domain, stakes)
        hdag.add_node(HdagNode(entry["id"], level, entry["content"], difficulty, domain, stakes, tier, expression))

    raw_edges = document.get("edges", [])
    if not isinstance(raw_edges, list):
        warnings.append("the reply's 'edges' is not an array: ignored it")
        raw_edges = []
    for index, entry in enumerate(raw_edges):
        refusal = _edge_problem(hdag, entry)
        if refusal is None:
            source, target = _edge_ends(entry)
            hdag.add_edge(str(source), str(target), EdgeType.parse(entry["type"]))
        else:
            warnings.append(f"dropped edges[{index}]: {refusal}")

    goal = hdag.goals()[0]
    orphans = [n.id for n in hdag.nodes() if n.id != goal and hdag.graph.in_degree(n.id) == 0]
    for orphan in orphans:
        hdag.add_edge(goal, orphan, EdgeType.DECOMPOSES_TO)
    if orphans:
        warnings.append(f"attached {len(orphans)} node(s) no edge led to under the goal: {', '.join(orphans[:10])}")

    for node in list(hdag.nodes()):
        if node.level in (Level.STRATEGY, Level.TACTIC) and hdag.graph.out_degree(node.id) == 0:
            hdag.replace_node(replace(node, level=Level.STEP))
            warnings.append(f"{node.level.label} node {node.id!r} had nothing under it: made it a step")

    for node in list(hdag.nodes()):
        hdag.replace_node(replace(node, tier=route_tier(node.level, node.difficulty, node.domain, node.stakes)))
    validate(hdag)
    return hdag, warnings


def _edge_problem(hdag: Hdag, entry: object) -> str | None:
    """Why an edge of the reply cannot be added, or None when it can."""
    if not isinstance(entry, dict):
        return f"expected an object, got {type(entry).__name__}"
    source, target = _edge_ends(entry)
    if isinstance(source, int) and not isinstance(source, bool):
        source = str(source)
    if isinstance(target, int) and not isinstance(target, bool):
        target = str(target)
    for end, name in ((source, "source"), (target, "target")):
        if not isinstance(end, str) or end not in hdag:
            return f"unknown {name} node {end!r:.80}"
    assert isinstance(source, str) and isinstance(target, str)
    kind = entry.get("type")
    try:
        EdgeType.parse(kind)  # type: ignore[arg-type]
    except (GraphError, AttributeError, TypeError):
        return f"unknown edge type {kind!r:.40}"
    if source == target:
        return f"self-loop on {source!r}"
    if hdag.graph.has_edge(source, target):
        return f"duplicate edge {source!r} -> {target!r}"
    upper, lower = hdag.node(source).level, hdag.node(target).level
    if upper > lower:
        return f"{source!r} -> {target!r} goes up from {upper.label} to {lower.label}"
    if nx.has_path(hdag.graph, target, source):
        return f"{source!r} -> {target!r} would close a cycle"
    return None


# ============================================================================ the use case


async def decompose_with_model(
    trace: Trace,
    model: ChatModel | None,
    *,
    temperature: float,
    limits: DecompositionLimits | None = None,
    domain: str | None = None,
    unavailable: str = "no chat model configured",
) -> DecompositionResult:
    """The HDAG of `trace`: from the model when it gives a usable one, else from the deterministic decomposer.

    The trace is checked first (empty or oversized traces raise `GraphError` whatever the method).
    `domain` overrides the domain for both methods. `unavailable` is the warning recorded when
    `model` is None. Model failures (`LlmError`) and unusable replies (`GraphError`) are not raised:
    they become a warning and the deterministic graph.
    """
    fallback = decompose(trace, domain=domain, limits=limits)
    if model is None:
        return DecompositionResult(fallback, "deterministic", (f"{unavailable}: used the deterministic decomposer",))
    try:
        reply = await model.complete(build_messages(trace), temperature=temperature, json_mode=True)
        hdag, warnings = parse_reply(reply, trace)
    except (LlmError, GraphError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, GraphValidationError):
            reason = f"{reason} {'; '.join(exc.violations[:3])}"
        return DecompositionResult(
            fallback, "deterministic", (f"LLM decomposition failed ({reason}): used the deterministic decomposer",)
        )
    if domain is not None:
        for node in list(hdag.nodes()):
            moved = replace(node, domain=domain, stakes=stakes_for_domain(domain))
            hdag.replace_node(replace(moved, tier=route_tier(moved.level, moved.difficulty, domain, moved.stakes)))
    return DecompositionResult(hdag, "llm", tuple(warnings))
