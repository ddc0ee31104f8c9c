"""One culprit per failed log: which agent, at which turn, made the decisive mistake.

Algorithm 1 (`trust.core.graphs.localize`) localizes a *set* of root causes, and only where an
auditor proved a fault. A failure-attribution benchmark (Who&When) and a user reading a failed log
want one answer: the turn where the failure started. `attribute` gives it from signals that hold on
any multi-agent log, with no model and nothing learned from a data set:

1. `Basis.ROOT_CAUSE`: the earliest Invalid_Root of Algorithm 1 (a turn an auditor failed with every
   parent sound, or one that received a broken message: code a tool ran and saw fail, a value
   corrupted in transit, a reply in the wrong format). A cascade starts at its first root.
2. `Basis.ANSWER_ORIGIN`: the turn where the log's final answer was born. A log is attributed
   because its outcome is wrong, so the values its last answering turn states are wrong values,
   and the turn that first stated one of them (`answer_origin`) either made the mistake or acted
   on it first. Values given by the task itself prove nothing and are skipped. When a tool printed
   the value first (a terminal running code, a search), the culprit is the turn whose request the
   tool answered: a tool reports, the agent that wrote the code or the query chose what it reports.
3. `Basis.FIRST_REASONING`: when neither signal exists, the first turn that reasons (not a tool,
   not a user, not the turn that only poses the task). Every later turn builds on it, so an
   undetected early mistake is the single most likely decisive one; this is a prior, and it is
   labelled as one.

Signals 1 and 2 compete on time: the earlier wins (ties go to the root cause, which is proved).
The decisive mistake is the first one; a later signal is usually its consequence.

What counts as a value (`answer_values`): numbers (thousands separators dropped, trailing zeros of
decimals dropped: 1,250.50 -> 1250.5) other than single digits, which number lists and steps in every
message and so say nothing about where an answer came from; and text a message emphasises in
Markdown (`**...**`, at most `MAX_EMPHASIS_CHARS`), which is how chat agents mark their answer.
Values are compared on normalised text: lower-cased words and numbers separated by single spaces.

Signals measured and left out (they lowered accuracy on the development split, see docs/graphs.md):
stationarity (an agent repeating itself marks where a log got stuck, not where it went wrong) and
words that admit placeholder or simulated data (frequent in sound turns that plan or explain).

Cost: one pass over the turns per value, O(turns * values * text length), with at most
`MAX_VALUES` values read from the final answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from trust.core.graphs.cig import CONTEXT_ROLES, AgentTurn, Cig, Role
from trust.core.graphs.localize import Localization
from trust.core.graphs.status import NodeStatus
from trust.errors import GraphError

__all__ = [
    "MAX_EMPHASIS_CHARS",
    "MAX_VALUES",
    "Attribution",
    "Basis",
    "answer_origin",
    "answer_values",
    "attribute",
    "first_reasoning_turn",
    "poses_task",
]

MAX_EMPHASIS_CHARS: Final = 80
"""Longest emphasised span read as a value; a longer one is a highlighted sentence, not an answer."""
MAX_VALUES: Final = 32
"""Values read from the final answer at most (bounds the cost on a hostile log)."""
_TASK_PREFIX_CHARS: Final = 200
"""Characters of the normalised task that a turn must repeat to count as posing it."""


class Basis(StrEnum):
    """Which signal chose the culprit; see the module docstring."""

    ROOT_CAUSE = "root_cause"
    ANSWER_ORIGIN = "answer_origin"
    FIRST_REASONING = "first_reasoning"


@dataclass(frozen=True, slots=True)
class Attribution:
    """The turn blamed for a failed log, and why (`basis`, `detail` in words)."""

    node_id: str
    agent: str
    step: int
    basis: Basis
    detail: str


_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")
_EMPHASIS = re.compile(rf"\*\*([^*\n]{{1,{MAX_EMPHASIS_CHARS}}})\*\*")
_WORD = re.compile(r"[a-z0-9]+")


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _numbers(text: str) -> list[str]:
    found: list[str] = []
    for match in _NUMBER.finditer(text):
        value = match.group().replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        found.append(value)
    return found


def _states(text: str, value: str) -> bool:
    """Whether `text` states `value` (a normalised number or phrase) as a whole token run."""
    if not value:
        return False
    if value.lstrip("-").replace(".", "", 1).isdigit():
        return value in _numbers(text)
    return f" {value} " in f" {_normal(text)} "


def answer_values(text: str, task: str = "") -> list[str]:
    """The values `text` states (see the module docstring), minus those the task states, in order
    of first appearance, at most `MAX_VALUES`."""
    values: dict[str, None] = {}
    for span in _EMPHASIS.findall(text):
        phrase = _normal(span)
        if phrase and not _states(task, phrase):
            values[phrase] = None
    for number in _numbers(text):
        if len(number.lstrip("-")) > 1 and not _states(task, number):
            values[number] = None
    return list(values)[:MAX_VALUES]


def poses_task(turn: AgentTurn, task: str) -> bool:
    """Whether `turn` poses the task rather than works on it: a user turn, or one whose output
    repeats the task statement (the opening message of a group chat carries the task to everyone)."""
    if turn.role is Role.USER:
        return True
    head = _normal(task)[:_TASK_PREFIX_CHARS]
    return bool(head) and head in _normal(turn.output)


def _reasons(turn: AgentTurn) -> bool:
    return turn.role not in CONTEXT_ROLES


def first_reasoning_turn(cig: Cig, task: str) -> AgentTurn | None:
    """The first turn that reasons and does not only pose the task; else the first that reasons;
    None when no turn reasons (a log of tools and users only)."""
    reasoning = [turn for turn in cig.turns() if _reasons(turn)]
    return next((turn for turn in reasoning if not poses_task(turn, task)), reasoning[0] if reasoning else None)


def _requester(cig: Cig, turns: Sequence[AgentTurn], tool: AgentTurn) -> AgentTurn | None:
    """The reasoning turn whose request `tool` answered: its latest reasoning parent, else the
    latest reasoning turn before it."""
    parents = [cig.turn(p) for p in cig.parents(tool.id)]
    for turn in sorted(parents, key=lambda t: t.step, reverse=True):
        if _reasons(turn):
            return turn
    earlier = [turn for turn in turns if turn.step < tool.step and _reasons(turn)]
    return earlier[-1] if earlier else None


def answer_origin(cig: Cig, task: str) -> tuple[AgentTurn, str] | None:
    """The turn where the final answer was born and the value that shows it; None when the log
    states no final value or every value of the final answer is its own (first stated there).

    The final answer is the last reasoning turn that states a value; the origin is the earliest
    earlier turn stating one of its values (a tool's turn is traced to the turn it answered). Values
    that a turn posing the task states were given with the task, like the task's own.
    """
    turns = list(cig.turns())
    final: AgentTurn | None = None
    values: list[str] = []
    for turn in reversed(turns):
        if _reasons(turn) and (values := answer_values(turn.output, task)):
            final = turn
            break
    if final is None:
        return None
    posing = [turn for turn in turns if poses_task(turn, task)]
    values = [value for value in values if not any(_states(turn.output, value) for turn in posing)]
    skip = {turn.id for turn in posing}
    for turn in turns:
        if turn.step >= final.step:
            return None
        if turn.id in skip:
            continue
        stated = next((value for value in values if _states(turn.output, value)), None)
        if stated is None:
            continue
        if turn.role is Role.TOOL:
            requester = _requester(cig, turns, turn)
            if requester is None:
                continue
            return requester, stated
        if turn.role is Role.USER:
            continue
        return turn, stated
    return None


def attribute(cig: Cig, localization: Localization, task: str) -> Attribution:
    """The culprit of a failed log; see the module docstring for the signals and their order.

    Raises `GraphError` for an empty CIG or one where no turn reasons (nobody to blame).
    """
    if len(cig) == 0:
        raise GraphError("the log has no turns: nothing to attribute")
    root = next((cause for cause in localization.root_causes if cause.status is NodeStatus.INVALID_ROOT), None)
    origin = answer_origin(cig, task)
    if root is not None and (origin is None or root.step <= origin[0].step):
        return Attribution(
            root.node_id, root.agent, root.step, Basis.ROOT_CAUSE, f"earliest Invalid_Root ({root.reason.value})"
        )
    if origin is not None:
        turn, value = origin
        return Attribution(
            turn.id, turn.agent, turn.step, Basis.ANSWER_ORIGIN, f"first stated {value!r}, a value of the final answer"
        )
    first = first_reasoning_turn(cig, task)
    if first is None:
        raise GraphError("no turn of the log reasons (only tools and users): nothing to attribute")
    return Attribution(
        first.id, first.agent, first.step, Basis.FIRST_REASONING, "no fault found: the first turn that reasons"
    )
