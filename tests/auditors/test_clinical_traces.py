"""Clinical scoring traces written as a user writes them (plain text: the notes, the task and its rules in
the first paragraph, one rule application a line after it), from raw text to tier-1 verdicts.

Each file under data/clinical/ is a trace for a patient other than the paper's, on CHA2DS2-VASc (rules
written "<name>: n point(s)") or CURB-65 (rules written "<name>: +1 point if <condition>"): a sound one
and one per planted flaw (a misquoted piece of evidence, wrong points for a rule, a wrong running
total, a skipped rule, a rule counted twice). The path is the network's: the deterministic decomposer
builds the HDAG, the router picks the tiers, and the tier-1 auditor judges each tier-1 node with its
parents only (`request_for`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trust.auditors.base import Outcome, request_for
from trust.auditors.tiers import computational_auditor
from trust.core.decompose.rules import GOAL_ID, UNSTATED_GOAL, from_text
from trust.core.graphs.hdag import EdgeType, Hdag, Level, Tier
from trust.settings import SandboxSettings

DATA = Path(__file__).parent / "data" / "clinical"
AUDITOR = computational_auditor(SandboxSettings(timeout_seconds=5, cpu_seconds=5))

RULES = {"cha2ds2vasc": 8, "curb65": 5}

EXPECTED: dict[str, dict[str, str]] = {
    "cha2ds2vasc_woman78_sound.txt": {},
    "cha2ds2vasc_woman78_misquoted.txt": {"s6": "ungrounded quote"},
    "cha2ds2vasc_woman78_wrong_points.txt": {"s6": "wrong points"},
    "cha2ds2vasc_woman78_wrong_total.txt": {"s3": "wrong running score"},
    "cha2ds2vasc_woman78_skipped_rule.txt": {"s8": "skipped rule"},
    "cha2ds2vasc_woman78_counted_twice.txt": {"s10": "repeated rule"},
    "curb65_man81_sound.txt": {},
    "curb65_man81_misquoted.txt": {"s3": "ungrounded value"},
    "curb65_man81_wrong_points.txt": {"s5": "wrong points"},
    "curb65_man81_wrong_total.txt": {"s2": "wrong running score"},
    "curb65_man81_skipped_rule.txt": {"s5": "skipped rule"},
    "curb65_man81_counted_twice.txt": {"s7": "repeated rule"},
}
"""File -> {node id: the fault the tier-1 auditor names}; every other tier-1 node passes or abstains."""


def decompose(name: str) -> tuple[str, Hdag]:
    text = (DATA / name).read_text(encoding="utf-8")
    return text, from_text(text)


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(p.name for p in DATA.glob("*.txt")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_decomposer_finds_goal_rule_steps_evidence_and_tiers(name: str) -> None:
    text, graph = decompose(name)
    problem, reasoning = text.split("\n\n", 1)
    lines = reasoning.strip().splitlines()
    goal = graph.node(GOAL_ID)
    assert goal.content == problem.strip() and goal.content != UNSTATED_GOAL
    steps = [node for node in graph.nodes() if node.level is Level.STEP]
    assert [node.content for node in steps] == lines, "one step per line after the problem"
    rule_steps, (final, recommendation) = steps[:-2], steps[-2:]
    for step in rule_steps:
        assert step.tier is Tier.COMPUTATIONAL and GOAL_ID in graph.parents(step.id)
    for before, after in zip(rule_steps, rule_steps[1:], strict=False):
        assert graph.edge_type(before.id, after.id) is EdgeType.DEPENDS_ON, "the running score"
    assert final.tier is Tier.COMPUTATIONAL
    assert set(graph.parents(final.id)) == {GOAL_ID, *(step.id for step in rule_steps)}
    assert recommendation.tier is Tier.HUMAN and final.id in graph.parents(recommendation.id)
    assert goal.domain == "medical"


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_each_flaw_is_caught_at_its_step_and_sound_traces_pass(name: str) -> None:
    _, graph = decompose(name)
    verdicts = {
        node.id: await AUDITOR.audit(request_for(graph, node.id))
        for node in graph.nodes()
        if node.tier is Tier.COMPUTATIONAL
    }
    failed = {node_id: v for node_id, v in verdicts.items() if v.vote is Outcome.FAIL}
    assert set(failed) == set(EXPECTED[name]), {n: v.critique for n, v in failed.items()}
    for node_id, fault in EXPECTED[name].items():
        assert fault in (failed[node_id].critique or "")
    undecided = {node_id for node_id, v in verdicts.items() if v.vote is Outcome.NOT_APPLICABLE}
    if not EXPECTED[name]:
        assert undecided == set(), "a sound trace's checkable nodes are all decided"
        final = [n for n in graph.nodes() if n.content.startswith("Final Score")][0]
        rules = RULES[name.split("_")[0]]
        assert f"{rules}/{rules} rules evaluated" in (verdicts[final.id].critique or "")
    else:
        # a wrong running total leaves the final score's coverage undecidable (the steps' points and
        # their running score disagree): never a guess, and the flaw is already caught at its step
        assert len(undecided) <= 1
