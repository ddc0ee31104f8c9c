"""Reading model replies into HDAGs: the prompt, parsing, mechanical repairs, rejections, the fallback."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trust.core.decompose.model import build_messages, decompose_with_model, parse_reply
from trust.core.decompose.rules import UNSTATED_GOAL, Trace
from trust.core.graphs.hdag import Difficulty, EdgeType, Level, Tier
from trust.core.graphs.validation import violations
from trust.errors import GraphError

TRACE = Trace(text="12 * 3 = 36, so the total is 36. Then 36 + 4 = 40.", problem="What is 12 * 3 + 4?")


def _node(node_id: str, level: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "level": level, "content": content, "difficulty": "easy", "expression": None} | extra


GOOD: dict[str, Any] = {
    "domain": "math",
    "nodes": [
        _node("g", "goal", "What is 12 * 3 + 4?"),
        _node("p", "strategy", "Multiply, then add", difficulty="medium"),
        _node("a", "step", "12 * 3 = 36"),
        _node("a1", "operation", "12 * 3 = 36", expression="12 * 3 == 36"),
        _node("b", "step", "36 + 4 = 40"),
        _node("b1", "operation", "36 + 4 = 40", expression="36 + 4 == 40"),
    ],
    "edges": [
        {"source": "g", "target": "p", "type": "decomposes_to"},
        {"source": "p", "target": "a", "type": "decomposes_to"},
        {"source": "p", "target": "b", "type": "decomposes_to"},
        {"source": "a", "target": "b", "type": "depends_on"},
        {"source": "a", "target": "a1", "type": "decomposes_to"},
        {"source": "b", "target": "b1", "type": "decomposes_to"},
    ],
}


def _reply(document: dict[str, Any]) -> str:
    return json.dumps(document)


def _with(**changes: Any) -> dict[str, Any]:
    return json.loads(json.dumps(GOOD)) | changes


def test_prompt_is_few_shot_with_the_integral_example() -> None:
    messages = build_messages(TRACE)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert "decomposes_to" in messages[0].content and '"nodes"' in messages[0].content
    assert "x^2 e^x" in messages[1].content
    shot = json.loads(messages[2].content)
    assert len(shot["nodes"]) == 11 and shot["nodes"][0]["level"] == "goal"
    assert messages[3].content.endswith(
        "Problem: What is 12 * 3 + 4?\n\n12 * 3 = 36, so the total is 36. Then 36 + 4 = 40."
    )
    steps = build_messages(Trace(steps=("a = 1", "b = 2"), problem="p"))[3].content
    assert steps.endswith("Problem: p\n\nStep 1: a = 1\nStep 2: b = 2")


def test_the_few_shot_answer_itself_parses_cleanly() -> None:
    shot = build_messages(TRACE)[2].content
    hdag, warnings = parse_reply(shot, Trace(text="x", problem="Compute the integral"))
    assert warnings == []
    assert hdag.node("v8").tier is Tier.COMPUTATIONAL and hdag.node("v1").tier is Tier.LLM
    assert hdag.edge_type("v9", "v10") is EdgeType.VALIDATES


def test_a_clean_reply_is_taken_as_is_with_tiers_recomputed() -> None:
    document = _with()
    document["nodes"][2]["tier"] = 3  # the model's tier is ignored
    hdag, warnings = parse_reply(_reply(document), TRACE)
    assert warnings == []
    assert [n.id for n in hdag.nodes()] == ["g", "p", "a", "a1", "b", "b1"]
    assert hdag.node("a").tier is Tier.LLM and hdag.node("a1").tier is Tier.COMPUTATIONAL
    assert hdag.node("a1").expression == "12 * 3 == 36"
    assert hdag.node("p").difficulty is Difficulty.MEDIUM
    assert {n.domain for n in hdag.nodes()} == {"math"} and {n.stakes for n in hdag.nodes()} == {"low"}
    assert hdag.node("a").content_hash != hdag.node("b").content_hash


@pytest.mark.parametrize(
    "wrapped",
    [
        "```json\n{doc}\n```",
        "Here is the HDAG:\n```\n{doc}\n```\nHope this helps!",
        "Sure! {doc} -- end of graph",
    ],
)
def test_fences_and_surrounding_text_are_stripped(wrapped: str) -> None:
    hdag, warnings = parse_reply(wrapped.replace("{doc}", _reply(GOOD)), TRACE)
    assert len(hdag) == 6
    assert warnings


def test_bad_edges_are_dropped_with_reasons() -> None:
    document = _with()
    document["edges"] += [
        {"source": "a", "target": "ghost", "type": "depends_on"},  # unknown node
        {"source": "b1", "target": "b", "type": "depends_on"},  # goes up
        {"source": "a", "target": "b", "type": "enables"},  # duplicate pair
        {"source": "b", "target": "b", "type": "validates"},  # self-loop
        {"source": "a", "target": "b1", "type": "implies"},  # unknown type
        {"source": "b", "target": "a", "type": "depends_on"},  # closes a cycle
        "not an edge",
    ]
    hdag, warnings = parse_reply(_reply(document), TRACE)
    assert len(list(hdag.edges())) == 6
    joined = "\n".join(warnings)
    for reason in ("unknown target node 'ghost'", "goes up from operation to step", "duplicate edge", "self-loop",
                   "unknown edge type 'implies'", "would close a cycle", "expected an object"):  # fmt: skip
        assert reason in joined
    assert violations(hdag) == []


def test_missing_goal_is_inserted_and_orphans_attached() -> None:
    document = _with()
    document["nodes"] = document["nodes"][1:]
    document["edges"] = [e for e in document["edges"] if e["source"] != "g"]
    hdag, warnings = parse_reply(_reply(document), TRACE)
    assert hdag.goals() == ["g0"] and hdag.node("g0").content == "What is 12 * 3 + 4?"
    assert hdag.edge_type("g0", "p") is EdgeType.DECOMPOSES_TO
    assert any("no goal node" in w for w in warnings) and any("attached 1 node" in w for w in warnings)
    hdag, _ = parse_reply(_reply(document), Trace(text="t"))
    assert hdag.node("g0").content == UNSTATED_GOAL


def test_several_goals_keep_the_first() -> None:
    document = _with()
    document["nodes"].append(_node("g2", "goal", "Also: what is 40 / 2?"))
    document["nodes"].append(_node("c", "step", "40 / 2 = 20"))
    document["edges"].append({"source": "g2", "target": "c", "type": "decomposes_to"})
    hdag, warnings = parse_reply(_reply(document), TRACE)
    assert hdag.goals() == ["g"] and hdag.node("g2").level is Level.STRATEGY
    assert hdag.edge_type("g", "g2") is EdgeType.DECOMPOSES_TO
    assert violations(hdag) == []


def test_childless_strategy_becomes_a_step_and_orphans_attach() -> None:
    document = _with()
    document["nodes"].append(_node("q", "tactic", "Double-check by estimation"))
    hdag, warnings = parse_reply(_reply(document), TRACE)
    assert hdag.node("q").level is Level.STEP and hdag.node("q").tier is Tier.LLM
    assert any("made it a step" in w for w in warnings)


def test_node_fields_are_repaired() -> None:
    document = _with()
    document["nodes"][2]["difficulty"] = "trivial"
    document["nodes"][2]["expression"] = "36 == 36"  # a step carries no expression
    document["nodes"][3]["expression"] = None  # filled from the operation's content
    document["nodes"].append(_node("a", "step", "a duplicate id"))
    document["domain"] = "astrology"
    hdag, warnings = parse_reply(_reply(document), TRACE)
    assert hdag.node("a").expression is None and hdag.node("a").content == "12 * 3 = 36"
    assert hdag.node("a1").expression == "12 * 3 == 36"
    assert hdag.node("g").domain == "math"
    joined = "\n".join(warnings)
    for reason in ("no valid difficulty", "only operations carry one", "extracted '12 * 3 == 36'",
                   "already used", "unknown domain 'astrology'"):  # fmt: skip
        assert reason in joined


def test_integer_ids_and_from_to_aliases() -> None:
    document = {
        "nodes": [_node(0, "goal", "Add"), _node(1, "step", "1 + 1 = 2")],  # type: ignore[arg-type]
        "edges": [{"from": 0, "to": 1, "type": "DECOMPOSES_TO"}],
    }
    hdag, warnings = parse_reply(_reply(document), TRACE)
    assert hdag.edge_type("0", "1") is EdgeType.DECOMPOSES_TO and warnings == []


def test_specialist_domain_routes_strategy_to_humans() -> None:
    hdag, _ = parse_reply(_reply(_with(domain="medical")), TRACE)
    assert hdag.node("p").tier is Tier.HUMAN and hdag.node("p").stakes == "high"
    assert hdag.node("a1").tier is Tier.COMPUTATIONAL


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I cannot do that.", "holds no JSON object"),
        ('{"graph": []}', "no 'nodes' array"),
        ('{"nodes": [{"id": "a", "level": "stage", "content": "x"}]}', "unknown level 'stage'"),
        ('{"nodes": [{"id": "a", "level": "step", "content": ""}]}', r"nodes\[0\].content: expected non-empty text"),
        ('{"nodes": [{"id": "", "level": "step", "content": "x"}]}', r"nodes\[0\].id"),
        ('{"nodes": [{"id": true, "level": "step", "content": "x"}]}', r"nodes\[0\].id: expected a string"),
        ('{"nodes": [{"id": "g", "level": "goal", "content": "x"}]}', "no reasoning node besides the goal"),
        ('{"nodes": ["a"]}', r"nodes\[0\]: expected an object"),
    ],
)
def test_unrepairable_replies_are_rejected(reply: str, message: str) -> None:
    with pytest.raises(GraphError, match=message):
        parse_reply(reply, TRACE)


def test_too_many_nodes_are_rejected() -> None:
    with pytest.raises(GraphError, match="7 nodes, over the limit of 6"):
        parse_reply(_reply(_with(nodes=GOOD["nodes"] + [_node("z", "step", "z")])), TRACE, max_nodes=6)


def test_repairs_never_yield_an_invalid_graph() -> None:
    # Only edges from the goal: every other node is a leaf, strategies get demoted, validation passes.
    document = _with(edges=[{"source": "g", "target": "p", "type": "decomposes_to"}])
    hdag, warnings = parse_reply(_reply(document), TRACE)
    assert violations(hdag) == [] and hdag.node("p").level is Level.STEP


async def test_without_a_model_the_deterministic_decomposer_answers() -> None:
    result = await decompose_with_model(TRACE, None, temperature=0.0, unavailable="no LLM endpoint configured")
    assert result.method == "deterministic"
    assert result.warnings == ("no LLM endpoint configured: used the deterministic decomposer",)
    assert result.hdag.node("s1.op1").expression == "12 * 3 == 36"


async def test_empty_trace_is_refused_whatever_the_method() -> None:
    with pytest.raises(GraphError, match="trace is empty"):
        await decompose_with_model(Trace(text="  "), None, temperature=0.0)
