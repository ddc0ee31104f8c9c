"""Judging a finished session (`trust.services.sdk.outcome`) and fitting tiers (`AuditConfig`): pure, no chain."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from tests.core.graphs.cig_strategies import APPLES_LOG
from trust.core.graphs.agent_log import build_cig, parse_log
from trust.core.graphs.analysis import critical_path
from trust.core.graphs.hdag import Hdag, Tier
from trust.core.graphs.status import NodeStatus
from trust.lab.demo.clinical import FLAWED_ERRORS, FLAWED_IDS, SOUND_IDS, flawed_trace, sound_trace
from trust.services.sdk.config import AuditConfig
from trust.services.sdk.outcome import SegmentOutcome, judge
from trust.services.sdk.result import Critique, Outcome, Verdict

BETA_BPS = 6_500


def outcomes(graph: Hdag, failed: set[str], share: float = 1.0) -> list[SegmentOutcome]:
    path = set(critical_path(graph))
    return [
        SegmentOutcome(
            index,
            node.id,
            int(node.tier),
            1,
            node.id in path,
            False,
            Outcome.FAILED if node.id in failed else Outcome.PASSED,
            1,
            0.0 if node.id in failed else share,
            (Critique("0xabc", 1, 0, "fail", 0.0, f"{node.id} is wrong", "factual"),) if node.id in failed else (),
        )
        for index, node in enumerate(graph.nodes())
    ]


def test_every_failed_hdag_node_is_a_root_cause_and_its_passing_descendants_cascade() -> None:
    graph = flawed_trace()
    judged = judge(graph, outcomes(graph, set(FLAWED_ERRORS)), valid_on_chain=False, beta_bps=BETA_BPS)
    assert judged.verdict is Verdict.INVALID
    assert {c.node_id for c in judged.root_causes} == set(FLAWED_ERRORS)
    assert all(c.critiques and c.critiques[0].vote == "fail" for c in judged.root_causes)
    statuses = {node_id: node.status for node_id, node in judged.nodes.items()}
    ids = FLAWED_IDS
    assert statuses[ids["goal"]] is statuses[ids["strategy"]] is NodeStatus.VALID
    assert all(statuses[ids[n]] is NodeStatus.INVALID_CASCADE for n in ("chf", "diabetes", "stroke_tia"))
    assert all(statuses[n] is NodeStatus.INVALID_ROOT for n in FLAWED_ERRORS)
    final = ids["final"]
    assert any(f"critical-path node '{final}' failed" in r and f"{final} is wrong" in r for r in judged.failure_reasons)


def test_a_sound_trace_is_valid_with_no_reasons() -> None:
    graph = sound_trace()
    judged = judge(graph, outcomes(graph, set()), valid_on_chain=True, beta_bps=BETA_BPS)
    assert judged.verdict is Verdict.VALID and judged.root_causes == () and judged.failure_reasons == ()


def test_a_stricter_consensus_threshold_fails_a_segment_the_chain_passed() -> None:
    graph = sound_trace()
    judged = judge(
        graph, outcomes(graph, set(), share=0.66), valid_on_chain=True, beta_bps=BETA_BPS, consensus_threshold=0.67
    )
    assert judged.verdict is Verdict.INVALID
    assert any("below the requested consensus threshold 0.67" in r for r in judged.failure_reasons)
    lenient = judge(
        graph, outcomes(graph, set(), share=0.66), valid_on_chain=True, beta_bps=BETA_BPS, consensus_threshold=0.6
    )
    assert lenient.verdict is Verdict.VALID


def test_the_chain_verdict_stands_when_no_threshold_is_asked() -> None:
    graph = sound_trace()
    judged = judge(graph, outcomes(graph, {"sex"}), valid_on_chain=False, beta_bps=BETA_BPS)
    assert judged.verdict is Verdict.INVALID


def test_cig_statuses_follow_algorithm_1() -> None:
    cig = build_cig(parse_log(APPLES_LOG))
    failed = {"t2"}  # the coder's miscalculation
    segments = [
        SegmentOutcome(i, turn.id, 2, 1, False, False, Outcome.FAILED if turn.id in failed else Outcome.PASSED, 1, 1.0)
        for i, turn in enumerate(cig.turns())
    ]
    judged = judge(cig, segments, valid_on_chain=False, beta_bps=BETA_BPS)
    statuses = {node_id: node.status for node_id, node in judged.nodes.items()}
    assert statuses["t2"] is NodeStatus.INVALID_ROOT
    assert statuses["t3"] is NodeStatus.NEGLIGENT  # the reviewer waved the wrong count through
    assert {c.node_id: c.reason for c in judged.root_causes} == {
        "t2": "failed its audit",
        "t3": "approved invalid input",
    }


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        (["computational", "llm"], {1: 1, 2: 2, 3: 2}),
        ([2, 3], {1: 2, 2: 2, 3: 3}),
        (["1", "human"], {1: 1, 2: 3, 3: 3}),
        ([2], {1: 2, 2: 2, 3: 2}),
    ],
)
def test_nodes_go_to_the_nearest_allowed_tier_higher_on_a_tie(tiers: list[object], expected: dict[int, int]) -> None:
    config = AuditConfig(auditor_tiers=tiers)
    assert {t: int(config.tier_for(Tier(t))) for t in (1, 2, 3)} == expected


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("auditor_tiers", ["oracle"], "unknown auditor tier 'oracle'"),
        ("auditor_tiers", [], "auditor_tiers is empty"),
        ("consensus_threshold", 0.4, "greater than 0.5"),
        ("privacy_level", "public", "segmented"),
        ("max_latency_ms", 0, "greater than 0"),
    ],
)
def test_bad_config_names_the_field(field: str, value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as raised:
        AuditConfig(**{field: value})
    assert field in str(raised.value)


def test_an_undetermined_node_is_reported_as_undetermined_never_as_failed() -> None:
    graph = sound_trace()
    path = set(critical_path(graph))
    nobody = SOUND_IDS["final"]  # on the critical path: the contract counts it against the trace
    why = "none of the 3 seats of its last committee revealed a vote in time"
    segments = [
        dataclasses.replace(segment, outcome=Outcome.UNDETERMINED, rounds=2, tier=3, pass_share=0.0, why=why)
        if segment.node_id == nobody
        else segment
        for segment in outcomes(graph, set())
    ]
    assert nobody in path
    judged = judge(graph, segments, valid_on_chain=False, beta_bps=BETA_BPS)

    assert judged.verdict is Verdict.INVALID
    node = judged.nodes[nobody]
    assert node.status is NodeStatus.UNDETERMINED and node.outcome is Outcome.UNDETERMINED
    assert node.reason == f"undetermined after 2 rounds, the last at tier 3: {why}"
    assert node.to_json()["status"] == "Undetermined" and node.to_json()["reason"] == node.reason
    # Nobody judged it: it is no root cause, and what depends on it keeps its own status.
    assert judged.root_causes == ()
    assert all(n.status is NodeStatus.VALID for node_id, n in judged.nodes.items() if node_id != nobody)
    (reason,) = judged.failure_reasons
    assert reason.startswith(f"critical-path node {nobody!r} undetermined after 2 rounds, the last at tier 3: ")
    assert "makes the trace INVALID" in reason and "failed" not in reason


def test_an_undetermined_turn_makes_no_reviewer_negligent() -> None:
    cig = build_cig(parse_log(APPLES_LOG))
    segments = [
        SegmentOutcome(
            i, turn.id, 2, 1, False, False, Outcome.UNDETERMINED if turn.id == "t2" else Outcome.PASSED, 2, 1.0
        )
        for i, turn in enumerate(cig.turns())
    ]
    judged = judge(cig, segments, valid_on_chain=False, beta_bps=BETA_BPS)
    statuses = {node_id: node.status for node_id, node in judged.nodes.items()}
    assert statuses["t2"] is NodeStatus.UNDETERMINED
    assert statuses["t3"] is NodeStatus.VALID  # approving an input nobody judged is no negligence
    assert judged.root_causes == ()


def test_a_confirmed_contradiction_fails_the_trace_and_is_reported_apart_from_the_nodes() -> None:
    from tests.core.graphs.test_units import corrected

    graph = corrected()
    unit_id = "contradiction:s1|s2"
    nodes = [
        SegmentOutcome(i, node.id, int(node.tier), 1, False, False, Outcome.PASSED, 1, 1.0)
        for i, node in enumerate(graph.nodes())
    ]
    critique = Critique("0xabc", 1, 0, "fail", 0.0, "'total' is 18 in s1 and 15 in s2", "logical")
    confirmed = SegmentOutcome(4, unit_id, 1, 1, False, True, Outcome.FAILED, 1, 0.0, (critique,))
    judged = judge(graph, [*nodes, confirmed], valid_on_chain=False, beta_bps=BETA_BPS)
    assert judged.verdict is Verdict.INVALID and list(judged.nodes) == ["goal", "s1", "s2", "s3"]
    assert all(node.status is NodeStatus.VALID for node in judged.nodes.values()) and judged.root_causes == ()
    (found,) = judged.contradictions
    assert (found.unit_id, found.source, found.target, found.outcome) == (unit_id, "s1", "s2", Outcome.FAILED)
    assert found.critiques == (critique,) and judged.edges == ()
    assert judged.failure_reasons == (
        "contradiction between 's1' and 's2' confirmed (tier 1, 1 round): 'total' is 18 in s1 and 15 in s2",
    )
    resolved = dataclasses.replace(confirmed, outcome=Outcome.PASSED, pass_share=1.0, critiques=())
    judged = judge(graph, [*nodes, resolved], valid_on_chain=True, beta_bps=BETA_BPS)
    assert judged.verdict is Verdict.VALID and judged.failure_reasons == ()
    assert judged.contradictions[0].outcome is Outcome.PASSED


def test_an_agent_stuck_in_a_loop_is_reported_and_a_repeating_tool_is_not() -> None:
    from trust.core.graphs.stationarity import LexicalSimilarity
    from trust.services.sdk.outcome import stationary_agents

    fix = "The fix: change the loop bound to n + 1 and rerun the tests."
    log = {
        "format": "trust.agent-log",
        "version": 1,
        "task": "Fix the off-by-one error.",
        "agents": [
            {"name": "Coder", "role": "coder"},
            {"name": "Reviewer", "role": "reviewer"},
            {"name": "Terminal", "role": "tool"},
        ],
        "turns": [
            {"agent": "Coder", "content": fix},
            {"agent": "Terminal", "content": "exitcode: 1"},
            {"agent": "Reviewer", "content": "Still failing: the bound is wrong."},
            {"agent": "Coder", "content": fix},
            {"agent": "Terminal", "content": "exitcode: 1"},
        ],
    }
    cig = build_cig(parse_log(log))
    (stuck,) = stationary_agents(cig, LexicalSimilarity(), tau_stat=0.95)
    assert (stuck.agent, stuck.earlier, stuck.later) == ("Coder", "t0", "t3") and stuck.similarity > 0.95
    assert stuck.to_json() == {"agent": "Coder", "earlier": "t0", "later": "t3", "similarity": 1.0}
    assert stationary_agents(build_cig(parse_log(APPLES_LOG)), LexicalSimilarity(), tau_stat=0.95) == ()


def test_a_failed_edge_segment_feeds_algorithm_1_and_is_reported_beside_the_turns() -> None:
    cig = build_cig(parse_log(APPLES_LOG))
    turns = [
        SegmentOutcome(i, turn.id, 2, 1, False, False, Outcome.PASSED, 1, 1.0)
        for i, turn in enumerate(t for t in cig.turns() if t.id != "t0")
    ]
    corrupted = Critique("0xabc", 1, 0, "fail", 0.0, "'remaining': t3 sent 104, t4 restated 140", "protocol")
    edges = [
        SegmentOutcome(
            len(turns) + i,
            f"edge:{source}->{target}",
            1,
            1,
            False,
            False,
            Outcome.FAILED if target == "t4" else Outcome.PASSED,
            1,
            0.0 if target == "t4" else 1.0,
            (corrupted,) if target == "t4" else (),
        )
        for i, (source, target) in enumerate([("t0", "t1"), ("t1", "t2"), ("t2", "t3"), ("t3", "t4")])
    ]
    judged = judge(cig, [*turns, *edges], valid_on_chain=False, beta_bps=BETA_BPS)
    assert list(judged.nodes) == ["t1", "t2", "t3", "t4"]
    assert judged.nodes["t4"].status is NodeStatus.INVALID_ROOT  # its own segment passed; its input arrived corrupted
    (cause,) = judged.root_causes
    assert (cause.node_id, cause.reason, cause.involved) == ("t4", "protocol breach at its boundary", ("t3",))
    assert cause.critiques == (corrupted,)
    assert [(e.source, e.target, e.outcome) for e in judged.edges] == [
        ("t0", "t1", Outcome.PASSED),
        ("t1", "t2", Outcome.PASSED),
        ("t2", "t3", Outcome.PASSED),
        ("t3", "t4", Outcome.FAILED),
    ]
    assert "message from 't3' into 't4' failed (tier 1, 1 round): 'remaining'" in judged.failure_reasons[0]
    # With every edge sound the same turns are all Valid: the edge's verdict, not an assumption, decided.
    sound = [dataclasses.replace(e, outcome=Outcome.PASSED, pass_share=1.0, critiques=()) for e in edges]
    judged = judge(cig, [*turns, *sound], valid_on_chain=True, beta_bps=BETA_BPS)
    assert judged.root_causes == () and {n.status for n in judged.nodes.values()} == {NodeStatus.VALID}
