"""Tier routing (paper 2.1.4 step 4, 3.1.1 and eq. 3.1): a table of cases and the properties behind it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.core.graphs.hdag import Difficulty, HdagNode, Level, Tier
from trust.core.graphs.routing import (
    DOMAINS,
    HIGH_STAKES_DOMAINS,
    STAKES,
    route_node,
    route_tier,
    stakes_for_domain,
)
from trust.errors import GraphError

E, M, H = Difficulty.EASY, Difficulty.MEDIUM, Difficulty.HARD
T1, T2, T3 = Tier.COMPUTATIONAL, Tier.LLM, Tier.HUMAN

CASES = [
    # operations: tier 1 whatever the difficulty, domain or stakes
    (Level.OPERATION, E, "math", "low", T1),
    (Level.OPERATION, H, "medical", "high", T1),
    (Level.OPERATION, M, "code", "medium", T1),
    # steps: easy and medium to tier 2, hard to tier 3
    (Level.STEP, E, "math", "low", T2),
    (Level.STEP, M, "math", "low", T2),
    (Level.STEP, H, "math", "low", T3),
    (Level.STEP, M, "code", "medium", T2),
    # high-stakes domains upgrade the ambiguous (medium) steps, not the easy ones
    (Level.STEP, M, "medical", "high", T3),
    (Level.STEP, M, "legal", "high", T3),
    (Level.STEP, M, "financial", "high", T3),
    (Level.STEP, E, "medical", "high", T2),
    # a caller-raised stake upgrades an ambiguous case in any domain
    (Level.STEP, M, "general", "high", T3),
    (Level.STEP, E, "general", "high", T2),
    # tactics: like steps
    (Level.TACTIC, E, "math", "low", T2),
    (Level.TACTIC, M, "math", "low", T2),
    (Level.TACTIC, H, "math", "low", T3),
    (Level.TACTIC, M, "legal", "high", T3),
    (Level.TACTIC, E, "legal", "high", T2),
    # strategy and goal: tier 2 in math (the paper's integral example), tier 3 when hard or specialist
    (Level.STRATEGY, M, "math", "low", T2),
    (Level.GOAL, M, "math", "low", T2),
    (Level.GOAL, E, "general", "low", T2),
    (Level.STRATEGY, H, "math", "low", T3),
    (Level.GOAL, H, "code", "medium", T3),
    (Level.STRATEGY, E, "medical", "high", T3),
    (Level.GOAL, E, "financial", "high", T3),
    (Level.STRATEGY, M, "general", "high", T3),
    (Level.STRATEGY, E, "general", "high", T2),
]


@pytest.mark.parametrize(("level", "difficulty", "domain", "stakes", "tier"), CASES)
def test_route_tier_table(level: Level, difficulty: Difficulty, domain: str, stakes: str, tier: Tier) -> None:
    assert route_tier(level, difficulty, domain, stakes) is tier


def test_paper_integral_example_routes_like_figure_3() -> None:
    # 2.1.4 worked example: goal, strategy and tactics at tier 2, operations at tier 1 (math domain).
    assert route_tier(Level.GOAL, M, "math", "low") is T2
    assert route_tier(Level.STRATEGY, M, "math", "low") is T2
    assert route_tier(Level.TACTIC, M, "math", "low") is T2
    assert route_tier(Level.OPERATION, E, "math", "low") is T1


@pytest.mark.parametrize(("domain", "stakes"), [("medical", "high"), ("legal", "high"), ("financial", "high")])
def test_specialist_domains_default_to_high_stakes(domain: str, stakes: str) -> None:
    assert stakes_for_domain(domain) == stakes


def test_other_domains_default_stakes() -> None:
    assert stakes_for_domain("code") == "medium"
    assert stakes_for_domain("math") == "low"
    assert stakes_for_domain("general") == "low"


@pytest.mark.parametrize(
    ("domain", "stakes", "message"),
    [("astrology", "low", "unknown domain 'astrology'"), ("math", "extreme", "unknown stakes 'extreme'")],
)
def test_unknown_domain_or_stakes_is_named(domain: str, stakes: str, message: str) -> None:
    with pytest.raises(GraphError, match=message):
        route_tier(Level.STEP, E, domain, stakes)


def test_domain_and_stakes_are_case_insensitive() -> None:
    assert route_tier(Level.STEP, M, " Medical ", "HIGH") is T3


def test_route_node_recomputes_the_tier() -> None:
    node = HdagNode("s1", Level.STEP, "hard reasoning", difficulty=H, tier=T1)
    assert route_node(node).tier is T3
    assert route_node(node).content == node.content


levels = st.sampled_from(list(Level))
difficulties = st.sampled_from(list(Difficulty))
domains = st.sampled_from(DOMAINS)
stakes_values = st.sampled_from(STAKES)


@given(levels, difficulties, domains, stakes_values)
def test_operations_and_only_operations_go_to_tier_1(level: Level, d: Difficulty, domain: str, stakes: str) -> None:
    assert (route_tier(level, d, domain, stakes) is T1) == (level is Level.OPERATION)


_ORDER = [E, M, H]
_STAKES_ORDER = list(STAKES)


@given(levels, st.integers(0, 1), domains, stakes_values)
def test_harder_never_routes_lower(level: Level, i: int, domain: str, stakes: str) -> None:
    easier, harder = _ORDER[i], _ORDER[i + 1]
    assert route_tier(level, easier, domain, stakes) <= route_tier(level, harder, domain, stakes)


@given(levels, difficulties, domains, st.integers(0, 1))
def test_higher_stakes_never_route_lower(level: Level, d: Difficulty, domain: str, i: int) -> None:
    lower, higher = _STAKES_ORDER[i], _STAKES_ORDER[i + 1]
    assert route_tier(level, d, domain, lower) <= route_tier(level, d, domain, higher)


@given(levels, difficulties, domains, stakes_values)
def test_high_stakes_domains_never_route_lower_than_general(
    level: Level, d: Difficulty, domain: str, stakes: str
) -> None:
    for specialist in HIGH_STAKES_DOMAINS:
        assert route_tier(level, d, specialist, stakes) >= route_tier(level, d, "general", stakes)


@pytest.mark.parametrize("difficulty", list(Difficulty))
def test_a_checkable_step_goes_to_tier_1_and_a_checkable_plan_does_not(difficulty: Difficulty) -> None:
    assert route_tier(Level.STEP, difficulty, "medical", "high", checkable=True) is Tier.COMPUTATIONAL
    assert route_tier(Level.STRATEGY, difficulty, "medical", "high", checkable=True) is Tier.HUMAN
