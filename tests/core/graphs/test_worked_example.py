"""The paper's worked example (section 2.1.4): the HDAG of "Compute the integral of x^2 e^x dx".

Nodes v0-v10 carry the levels and tiers the paper gives. The tiers are data here, set by hand, not
computed: the paper's v4 and v6 are *step* nodes at tier 1, which the routing rule of 2.1.4 step 4
(steps: easy and medium to tier 2, hard to tier 3) never yields; `test_routing_differs_from_the_paper_only_at_v4_and_v6`
pins that down. Difficulties are not given in the paper; we annotate the two "compute du and v"
steps and the operations as easy and the rest as medium.

The paper lists only representative edges. They are split into three groups below:

- `PAPER_EDGES`: named in the text. v0 -> v1, v1 -> v2, v2 -> v3, v2 -> v4, v4 -> v5 verbatim; the
  text says v10 is "connected through a validates edge" without naming the other end: we take v9,
  the answer v10 checks by differentiation (edge direction: checked node -> checker).
- `ADDED_FOR_VALIDITY`: the fewest edges that make the graph valid. v6, v7, v8 and v9 have no
  incoming edge in the paper's list, so each needs one (four is the minimum): v3 decomposes into the
  steps of the second application (v6, v7); v8 evaluates the integral v7 leaves; v9 uses v8's result.
- `ADDED_DATA_FLOW`: edges the text implies but does not list, not needed for validity: v7 applies
  the formula with v6's du and v, to the integral v5 left; v9 "combines results" of v5, v7 and v8.
"""

from __future__ import annotations

import pytest

from trust.core.graphs import (
    Difficulty,
    EdgeType,
    Hdag,
    HdagNode,
    Level,
    NodeStatus,
    Tier,
    cascade,
    critical_path,
    dumps,
    final_answer,
    loads,
    nodes_to_audit,
    validate,
    violations,
)
from trust.core.graphs.routing import route_tier
from trust.errors import GraphValidationError

E = Difficulty.EASY
M = Difficulty.MEDIUM

# id: (level, content, tier as the paper gives it, difficulty (ours), expression for tier-1 checkers)
NODES: dict[str, tuple[Level, str, Tier, Difficulty, str | None]] = {
    "v0": (Level.GOAL, "Compute the integral of x^2 e^x dx", Tier.LLM, M, None),
    "v1": (Level.STRATEGY, "Apply integration by parts twice since x^2 requires two reductions", Tier.LLM, M, None),
    "v2": (Level.TACTIC, "First application: u = x^2, dv = e^x dx", Tier.LLM, M, None),
    "v3": (Level.TACTIC, "Second application: u = 2x, dv = e^x dx", Tier.LLM, M, None),
    "v4": (Level.STEP, "du = 2x dx and v = e^x", Tier.COMPUTATIONAL, E, "diff(x**2, x) = 2*x"),
    "v5": (Level.STEP, "By parts: x^2 e^x - integral of 2x e^x dx", Tier.LLM, M, None),
    "v6": (Level.STEP, "du = 2 dx and v = e^x", Tier.COMPUTATIONAL, E, "diff(2*x, x) = 2"),
    "v7": (Level.STEP, "By parts: 2x e^x - integral of 2 e^x dx", Tier.LLM, M, None),
    "v8": (
        Level.OPERATION,
        "integral of 2 e^x dx = 2 e^x + C",
        Tier.COMPUTATIONAL,
        E,
        "integrate(2*exp(x), x) = 2*exp(x)",
    ),
    "v9": (
        Level.OPERATION,
        "Combine: x^2 e^x - 2x e^x + 2 e^x + C",
        Tier.COMPUTATIONAL,
        E,
        "x**2*exp(x) - (2*x*exp(x) - 2*exp(x))",
    ),
    "v10": (
        Level.OPERATION,
        "Check: d/dx (x^2 e^x - 2x e^x + 2 e^x) = x^2 e^x",
        Tier.COMPUTATIONAL,
        E,
        "diff(x**2*exp(x) - 2*x*exp(x) + 2*exp(x), x) = x**2*exp(x)",
    ),
}

D, DEP, EN, VAL = EdgeType.DECOMPOSES_TO, EdgeType.DEPENDS_ON, EdgeType.ENABLES, EdgeType.VALIDATES

PAPER_EDGES = [
    ("v0", "v1", D),
    ("v1", "v2", D),
    ("v2", "v3", EN),
    ("v2", "v4", D),
    ("v4", "v5", DEP),
    ("v9", "v10", VAL),
]
ADDED_FOR_VALIDITY = [("v3", "v6", D), ("v3", "v7", D), ("v7", "v8", DEP), ("v8", "v9", DEP)]
ADDED_DATA_FLOW = [("v5", "v7", DEP), ("v6", "v7", DEP), ("v5", "v9", DEP), ("v7", "v9", DEP)]


def integral(edges: list[tuple[str, str, EdgeType]]) -> Hdag:
    hdag = Hdag()
    for node_id, (level, content, tier, difficulty, expression) in NODES.items():
        hdag.add_node(
            HdagNode(node_id, level, content, difficulty=difficulty, domain="math", tier=tier, expression=expression)
        )
    for source, target, kind in edges:
        hdag.add_edge(source, target, kind)
    return hdag


@pytest.fixture
def example() -> Hdag:
    return integral(PAPER_EDGES + ADDED_FOR_VALIDITY + ADDED_DATA_FLOW)


def test_the_example_validates(example: Hdag) -> None:
    validate(example)
    validate(integral(PAPER_EDGES + ADDED_FOR_VALIDITY))


def test_the_papers_edges_alone_leave_four_orphans_and_an_unfinished_tactic() -> None:
    assert violations(integral(PAPER_EDGES)) == [
        "node 'v3' (tactic) is a leaf: only step and operation nodes may end the reasoning; decompose it or remove it",
        "node 'v6' (step) is an orphan: no edge leads to it",
        "node 'v7' (step) is an orphan: no edge leads to it",
        "node 'v8' (operation) is an orphan: no edge leads to it",
        "node 'v9' (operation) is an orphan: no edge leads to it",
        "node 'v10' (operation) is not reachable from the goal",
    ]


@pytest.mark.parametrize("dropped", ADDED_FOR_VALIDITY)
def test_every_edge_added_for_validity_is_needed(dropped: tuple[str, str, EdgeType]) -> None:
    edges = [e for e in PAPER_EDGES + ADDED_FOR_VALIDITY if e != dropped]
    with pytest.raises(GraphValidationError, match=f"'{dropped[1]}'"):
        validate(integral(edges))


def test_levels_and_tiers_are_the_papers(example: Hdag) -> None:
    levels = {node.id: node.level for node in example.nodes()}
    assert [n for n, lv in levels.items() if lv is Level.STEP] == ["v4", "v5", "v6", "v7"]
    assert [n for n, lv in levels.items() if lv is Level.OPERATION] == ["v8", "v9", "v10"]
    # "Tier-1 auditors can immediately verify v4, v6, v8, v9 and v10 while Tier-2 auditors evaluate
    # the strategy and step nodes."
    tiers = {node.id: node.tier for node in example.nodes()}
    assert [n for n, t in tiers.items() if t is Tier.COMPUTATIONAL] == ["v4", "v6", "v8", "v9", "v10"]
    assert [n for n, t in tiers.items() if t is Tier.LLM] == ["v0", "v1", "v2", "v3", "v5", "v7"]


def test_routing_differs_from_the_paper_only_at_v4_and_v6(example: Hdag) -> None:
    """Steps never reach tier 1 under the routing of 2.1.4 step 4; the paper's example puts v4 and v6
    there (a "compute du and v" step is really a calculation). Every other tier agrees."""
    differ = {
        node.id: (node.tier, route_tier(node.level, node.difficulty, node.domain, node.stakes))
        for node in example.nodes()
        if route_tier(node.level, node.difficulty, node.domain, node.stakes) != node.tier
    }
    assert differ == {"v4": (Tier.COMPUTATIONAL, Tier.LLM), "v6": (Tier.COMPUTATIONAL, Tier.LLM)}


def test_the_final_answer_and_critical_path(example: Hdag) -> None:
    assert final_answer(example) == "v9"  # v10 checks the answer through a validates edge
    # v7 is reached equally far through v5 (first application) and v6; the tie goes to v5
    assert critical_path(example) == ["v0", "v1", "v2", "v4", "v5", "v7", "v8", "v9"]
    minimal = integral(PAPER_EDGES + ADDED_FOR_VALIDITY)
    assert final_answer(minimal) == "v9"
    assert critical_path(minimal) == ["v0", "v1", "v2", "v3", "v7", "v8", "v9"]


def test_a_failed_v5_cascades_to_the_second_application_and_the_combination(example: Hdag) -> None:
    assert cascade(example, {"v5"}) == {
        "v5": NodeStatus.INVALID_ROOT,
        "v7": NodeStatus.INVALID_CASCADE,
        "v8": NodeStatus.INVALID_CASCADE,
        "v9": NodeStatus.INVALID_CASCADE,
    }
    # v10, the checker, is still audited: it either catches the fault or approved a wrong answer
    assert nodes_to_audit(example, {"v5"}) == ["v0", "v1", "v2", "v3", "v4", "v6", "v10"]


def test_a_failed_first_application_spares_the_tactic_it_only_enables(example: Hdag) -> None:
    statuses = cascade(example, {"v2"})
    assert statuses == {
        "v2": NodeStatus.INVALID_ROOT,
        "v4": NodeStatus.INVALID_CASCADE,
        "v5": NodeStatus.INVALID_CASCADE,
        "v7": NodeStatus.INVALID_CASCADE,
        "v8": NodeStatus.INVALID_CASCADE,
        "v9": NodeStatus.INVALID_CASCADE,
    }
    assert nodes_to_audit(example, {"v2"}) == ["v0", "v1", "v3", "v6", "v10"]


def test_the_example_round_trips_through_json(example: Hdag) -> None:
    text = dumps(example)
    again = loads(text)
    assert list(again.nodes()) == list(example.nodes())
    assert list(again.edges()) == list(example.edges())
    assert dumps(again) == text
    assert critical_path(again) == critical_path(example)
