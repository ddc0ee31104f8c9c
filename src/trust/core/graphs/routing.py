"""Routing of HDAG nodes to auditor tiers: Tier(v) = f(level, difficulty, domain, stakes) (eq. 3.1).

The paper fixes part of f (section 2.1.4 step 4 and section 3.1.1):

- operation nodes go to tier 1 (computational checkers), always: they are atomic calculations,
  code runs or tool calls that a deterministic checker verifies exactly, whatever the domain;
- step nodes are split by difficulty: easy and medium to tier 2 (LLM), hard to tier 3 (human);
- tactic, strategy and goal nodes go to tier 2 or tier 3 "depending on domain expertise";
- in high-stakes domains (medical diagnosis, legal advice, financial decisions) "ambiguous cases"
  move up a tier (section 3.1.2).

Decisions where the paper is vague, in the order `route_tier` applies them:

1. Operation -> tier 1, whatever else is known; so is a *checkable* step: one the decomposer found
   to make only claims a deterministic checker decides from the node and its parents (a rule of a
   stated rule table applied to the evidence the problem states, a running sum, a final total that
   must cover every rule). Section 2.1.4's worked example sends such checkable steps to tier 1; a
   tier-1 check that cannot decide one abstains, and the committee escalates it. Checkability is
   the decomposer's finding, not a property of the node alone, so `route_node` (which sees one node)
   never sets it.
2. A node is *high-stakes* when its domain is one of `HIGH_STAKES_DOMAINS` (medical, legal,
   financial) or its `stakes` is "high".
3. Hard nodes at any non-operation level -> tier 3 (a hard step, tactic or strategy needs an expert).
4. Strategy and goal nodes in a specialist (high-stakes) domain -> tier 3: judging whether a
   treatment plan or a legal argument is the right approach is the "domain expertise" of 2.1.4;
   the paper's own worked example (integration, a math trace) keeps strategy and goal at tier 2.
5. Everything else -> tier 2, and the *ambiguous* ones among them, the medium-difficulty nodes,
   move up one tier to tier 3 when the node is high-stakes. Easy nodes are not ambiguous and stay
   at tier 2 even in a high-stakes domain: an LLM verifies them reliably and the cost of a human
   there buys nothing.

`stakes` follows the domain by default (`stakes_for_domain`): high for the specialist domains,
medium for code (a wrong program runs), low for math and general text; a caller may raise it for
one node.
"""

from __future__ import annotations

from dataclasses import replace

from trust.core.graphs.hdag import Difficulty, HdagNode, Level, Tier
from trust.errors import GraphError

__all__ = [
    "DOMAINS",
    "HIGH_STAKES_DOMAINS",
    "STAKES",
    "check_domain",
    "check_stakes",
    "route_node",
    "route_tier",
    "stakes_for_domain",
]

DOMAINS: tuple[str, ...] = ("math", "code", "medical", "legal", "financial", "general")
"""The subject areas of section 3.1.2 (math, code, medical, legal, general) plus financial (ibid.)."""

HIGH_STAKES_DOMAINS: frozenset[str] = frozenset({"medical", "legal", "financial"})
"""Domains whose wrong verdicts hurt people: medical diagnosis, legal advice, financial decisions."""

STAKES: tuple[str, ...] = ("low", "medium", "high")
"""Consequence severity if a node's verification fails, from least to most severe."""

_DOMAIN_STAKES = {"medical": "high", "legal": "high", "financial": "high", "code": "medium"}


def check_domain(domain: str) -> str:
    """The domain, lower-cased, or `GraphError` naming the value and the known domains."""
    value = domain.strip().lower() if isinstance(domain, str) else domain
    if value not in DOMAINS:
        raise GraphError(f"unknown domain {domain!r}: expected one of {', '.join(DOMAINS)}")
    return value


def check_stakes(stakes: str) -> str:
    """The stakes, lower-cased, or `GraphError` naming the value and the known levels."""
    value = stakes.strip().lower() if isinstance(stakes, str) else stakes
    if value not in STAKES:
        raise GraphError(f"unknown stakes {stakes!r}: expected one of {', '.join(STAKES)}")
    return value


def stakes_for_domain(domain: str) -> str:
    """Default consequence severity of a domain: high for medical, legal, financial; medium for code."""
    return _DOMAIN_STAKES.get(check_domain(domain), "low")


def route_tier(level: Level, difficulty: Difficulty, domain: str, stakes: str, *, checkable: bool = False) -> Tier:
    """The auditor tier of one node (eq. 3.1); the rules and their reasons are in the module docstring.

    `checkable`: the node is a step whose claims a tier-1 checker decides (rule 1); it has no effect on
    a goal, strategy or tactic, which state plans rather than checkable claims."""
    domain = check_domain(domain)
    stakes = check_stakes(stakes)
    if not isinstance(level, Level):
        raise GraphError(f"route_tier needs a Level, got {level!r}")
    if not isinstance(difficulty, Difficulty):
        raise GraphError(f"route_tier needs a Difficulty, got {difficulty!r}")
    if level is Level.OPERATION or (checkable and level is Level.STEP):
        return Tier.COMPUTATIONAL
    high_stakes = domain in HIGH_STAKES_DOMAINS or stakes == "high"
    if difficulty is Difficulty.HARD:
        return Tier.HUMAN
    if level in (Level.STRATEGY, Level.GOAL) and domain in HIGH_STAKES_DOMAINS:
        return Tier.HUMAN
    if difficulty is Difficulty.MEDIUM and high_stakes:
        return Tier.HUMAN
    return Tier.LLM


def route_node(node: HdagNode) -> HdagNode:
    """The node with its tier recomputed from its own level, difficulty, domain and stakes."""
    return replace(node, tier=route_tier(node.level, node.difficulty, node.domain, node.stakes))
