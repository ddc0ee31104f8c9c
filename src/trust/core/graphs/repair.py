"""What one re-execution of the refinement loop (paper 2.3) asks and answers, and how its answer
replaces a node's output: the pure half of `trust.services.refine`.

The loop calls a `Regenerate` callback with a `RepairRequest` (the node, the current graph, its
feedback or None for a descendant re-run on fresh input, the round's temperature) and reads back a
`Regenerated`; `with_output` (or `replace_value`) writes it into the graph. `rerun_prompt` and
`REGENERATION_SYSTEM_PROMPT` are the words a language model regenerator sends
(`trust.adapters.llm.regenerate.LlmRegenerator`), kept here so that any regenerator can use them
without a network. `approximate_tokens` is the loop's cost estimate where a regenerator reports none.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx

from trust.core.decompose.rules import extract_operations
from trust.core.graphs.hdag import HdagNode
from trust.core.graphs.refinement import VALUE_ATTRIBUTES, Feedback, node_context, node_output
from trust.errors import GraphError

__all__ = [
    "REGENERATION_SYSTEM_PROMPT",
    "Regenerate",
    "Regenerated",
    "RepairRequest",
    "approximate_tokens",
    "replace_value",
    "rerun_prompt",
    "with_output",
]


@dataclass(frozen=True, slots=True)
class RepairRequest:
    """One re-execution: `feedback` is set for a failed node and None for a descendant that is only
    re-run on its regenerated input. `graph` is the current graph: every parent of `node` that this
    round prunes has already been regenerated."""

    node: str
    graph: nx.DiGraph
    feedback: Feedback | None
    temperature: float
    round: int

    @property
    def context(self) -> str:
        return node_context(self.graph, self.node)

    @property
    def output(self) -> str:
        return node_output(self.graph, self.node)


@dataclass(frozen=True, slots=True)
class Regenerated:
    """A regenerated output. `value` replaces the node's whole value (for example an `HdagNode`
    with a new `expression`) when given; otherwise only its output text is replaced. `tokens` is
    what the generation cost (prompt plus completion), when the generator knows it."""

    output: str
    tokens: int | None = None
    value: object | None = None


Regenerate = Callable[[RepairRequest], Regenerated]


def approximate_tokens(text: str) -> int:
    """About four characters per token (the usual rule of thumb for English with BPE tokenizers);
    at least one token for a node that exists."""
    return max(1, math.ceil(len(text) / 4))


def with_output(graph: nx.DiGraph, node_id: str, output: str) -> None:
    """Replaces the node's output text in place: the `output` (CIG turn) or `content` (HDAG node,
    whose operation `expression` is re-extracted, see `_with_content`) field of its frozen value, or
    the plain attribute when the node carries no value object."""
    data = graph.nodes[node_id]
    for attribute in VALUE_ATTRIBUTES:
        value = data.get(attribute)
        if value is None or not dataclasses.is_dataclass(value) or isinstance(value, type):
            continue
        if isinstance(value, HdagNode):
            data[attribute] = _with_content(value, output)
            return
        names = {f.name for f in dataclasses.fields(value)}
        for name in ("output", "content"):
            if name in names:
                data[attribute] = dataclasses.replace(value, **{name: output})
                return
        raise GraphError(
            f"node {node_id!r}: its value {type(value).__name__} has no output or content field to replace; "
            "return the whole new value in Regenerated.value"
        )
    data["output" if "output" in data or "content" not in data else "content"] = output


def _with_content(node: HdagNode, content: str) -> HdagNode:
    """An HDAG node with new content. An operation's checkable `expression` follows its content: the
    one calculation `extract_operations` finds in the new text, or None when it finds none or
    several (the tier-1 check then has nothing to hold the node to; decision: better no check than
    checking the wrong calculation)."""
    if node.expression is None:
        return dataclasses.replace(node, content=content)
    operations = extract_operations(content)
    expression = operations[0].expression if len(operations) == 1 else None
    return dataclasses.replace(node, content=content, expression=expression)


def replace_value(graph: nx.DiGraph, node_id: str, value: object) -> None:
    """Replaces the node's whole value (`Regenerated.value`): the same type, the same id."""
    data = graph.nodes[node_id]
    for attribute in VALUE_ATTRIBUTES:
        if attribute in data:
            old = data[attribute]
            if type(old) is not type(value):
                raise GraphError(
                    f"node {node_id!r}: the regenerated value is a {type(value).__name__}, "
                    f"the node holds a {type(old).__name__}; return the same type"
                )
            if getattr(old, "id", None) != getattr(value, "id", None):
                raise GraphError(f"node {node_id!r}: the regenerated value has id {getattr(value, 'id', None)!r}")
            data[attribute] = value
            return
    raise GraphError(f"node {node_id!r} holds no value object to replace; return only Regenerated.output")


REGENERATION_SYSTEM_PROMPT = (
    "You redo one step of a larger piece of work that an independent audit checked. "
    "Reply with the new output of that step only: no preamble, no explanation of the change."
)


def rerun_prompt(request: RepairRequest) -> str:
    """The prompt of a descendant re-run without feedback: its (regenerated) input and its old output."""
    return "\n\n".join(
        [
            "Work you depend on was corrected. Redo your step on the updated input.",
            f"Input:\n{request.context or '(none)'}",
            f"Your previous output, based on the old input:\n{request.output or '(empty)'}",
        ]
    )
