"""One culprit per failed log: each signal of `attribute` on small logs written for the test."""

from __future__ import annotations

import pytest

from trust.core.graphs.attribution import (
    MAX_VALUES,
    Basis,
    answer_origin,
    answer_values,
    attribute,
    first_reasoning_turn,
    poses_task,
)
from trust.core.graphs.audit import EdgeScore
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, Role, turn_id
from trust.core.graphs.localize import Localization, localize
from trust.core.graphs.status import NodeStatus
from trust.errors import GraphError

TASK = "How many bridges cross the river in the town of Elmsford? Answer with a number."
TAU = 0.8


def _cig(turns: list[tuple[str, Role, str]]) -> Cig:
    """A group chat: each turn answers the one before it (sequence edges)."""
    cig = Cig()
    for step, (agent, role, output) in enumerate(turns):
        cig.add_turn(AgentTurn(turn_id(step), step, agent, role, output, input=TASK if step == 0 else ""))
        if step:
            cig.add_edge(turn_id(step - 1), turn_id(step), EdgeOrigin.SEQUENCE)
    return cig


def _located(cig: Cig, failing: set[int] = frozenset()) -> Localization:
    """Algorithm 1 with the turns in `failing` scored 0 by the auditors, every other turn 1."""
    scores = {turn.id: 0.0 if turn.step in failing else 1.0 for turn in cig.turns()}
    edges = {(edge.source, edge.target): EdgeScore() for edge in cig.edges()}
    return localize(cig, scores, edges, tau_node=TAU, tau_edge=TAU)


OPENING = ("Planner", Role.PLANNER, f"# Task\n{TASK}\n\n## Plan\n1. Find the bridges. 2. Count them.")
FABRICATED = ("Geographer", Role.EXPERT, "From what I know, the town has **14** bridges over the river.")
RESTATED = ("Checker", Role.REVIEWER, "I agree: there are 14 bridges.")
FINAL = ("Planner", Role.PLANNER, "The answer is **14**.\n\nTERMINATE")


def test_values_skip_single_digits_and_what_the_task_states() -> None:
    text = "Step 1: the 2 lists give **Elmsford Bridge**, 1,250.50 metres, 14 spans and 737015 people."
    assert answer_values(text, TASK) == ["elmsford bridge", "1250.5", "14", "737015"]
    assert answer_values(text, "Which bridge of Elmsford is 737,015 people's?") == ["elmsford bridge", "1250.5", "14"]
    assert answer_values("**" + "x" * 81 + "**") == []  # a highlighted sentence is not a value
    many = " ".join(str(n) for n in range(10, 100))
    assert len(answer_values(many)) == MAX_VALUES


def test_the_turn_that_poses_the_task_is_not_reasoning_about_it() -> None:
    cig = _cig([OPENING, FABRICATED, FINAL])
    assert poses_task(cig.turn("t0"), TASK) and not poses_task(cig.turn("t1"), TASK)
    assert poses_task(AgentTurn("u", 0, "human", Role.USER, "hello"), TASK)
    assert first_reasoning_turn(cig, TASK) is cig.turn("t1")
    assert first_reasoning_turn(_cig([("Terminal", Role.TOOL, "exitcode: 0")]), TASK) is None


def test_answer_origin_is_the_first_turn_stating_the_final_value() -> None:
    cig = _cig([OPENING, ("Helper", Role.EXPERT, "Let us look for a list of bridges."), FABRICATED, RESTATED, FINAL])
    origin = answer_origin(cig, TASK)
    assert origin is not None and origin[0].id == "t2" and origin[1] == "14"
    attribution = attribute(cig, _located(cig), TASK)
    assert (attribution.agent, attribution.step, attribution.basis) == ("Geographer", 2, Basis.ANSWER_ORIGIN)


def test_a_value_a_tool_printed_first_is_blamed_on_the_turn_that_asked_for_it() -> None:
    code = ("Coder", Role.CODER, "```python\nprint(len([b for b in bridges if b.crosses]))\n```")
    cig = _cig([OPENING, code, ("Terminal", Role.TOOL, "exitcode: 0 (execution succeeded)\nCode output: 14"), FINAL])
    origin = answer_origin(cig, TASK)
    assert origin is not None and origin[0].id == "t1"
    assert attribute(cig, _located(cig), TASK).agent == "Coder"


def test_values_the_task_or_its_opening_give_are_no_origin() -> None:
    given = ("Planner", Role.PLANNER, f"{TASK}\nThe town map lists 23 crossings.")
    cig = _cig(
        [given, ("Helper", Role.EXPERT, "Of the 23 crossings, some are fords."), ("Helper", Role.EXPERT, "**23**")]
    )
    assert answer_origin(cig, TASK) is None  # 23 came with the task: nobody in the log produced it
    assert attribute(cig, _located(cig), TASK).basis is Basis.FIRST_REASONING
    own = _cig([OPENING, ("Helper", Role.EXPERT, "It is **14**.")])
    assert answer_origin(own, TASK) is None  # first stated in the final turn itself


def test_the_earlier_of_root_cause_and_answer_origin_wins() -> None:
    cig = _cig([OPENING, ("Helper", Role.EXPERT, "I will search for it."), FABRICATED, RESTATED, FINAL])
    early = attribute(cig, _located(cig, failing={1}), TASK)
    assert (early.step, early.basis) == (1, Basis.ROOT_CAUSE) and "node_failure" in early.detail
    late = attribute(cig, _located(cig, failing={3}), TASK)
    assert (late.step, late.basis) == (2, Basis.ANSWER_ORIGIN)
    tie = attribute(cig, _located(cig, failing={2}), TASK)
    assert (tie.step, tie.basis) == (2, Basis.ROOT_CAUSE)  # a proved fault beats a trace on the same turn


def test_a_negligent_reviewer_is_not_the_culprit() -> None:
    cig = _cig([OPENING, ("Helper", Role.EXPERT, "Unsure."), RESTATED])
    located = _located(cig, failing={1})
    assert located.status("t2") is NodeStatus.NEGLIGENT
    assert attribute(cig, located, TASK).step == 1


def test_without_any_signal_the_first_reasoning_turn_is_named_as_a_prior() -> None:
    cig = _cig([OPENING, ("Terminal", Role.TOOL, "no code to run"), ("Helper", Role.EXPERT, "Let us think.")])
    attribution = attribute(cig, _located(cig), TASK)
    assert (attribution.step, attribution.basis) == (2, Basis.FIRST_REASONING)


def test_logs_with_nobody_to_blame_are_refused() -> None:
    with pytest.raises(GraphError, match="no turns"):
        attribute(Cig(), Localization({}, ()), TASK)
    tools = _cig([("Terminal", Role.TOOL, "exitcode: 0"), ("human", Role.USER, "thanks")])
    with pytest.raises(GraphError, match="only tools and users"):
        attribute(tools, _located(tools), TASK)
