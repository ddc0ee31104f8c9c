"""The Causal Interaction Graph of a multi-agent log (paper section 2.2).

A CIG is G_CIG = (A, M, C): agents with roles, the messages they produce, and causal links between
messages. Here each node is one agent turn (an atomic agent state, section 2.2.2: role, input,
output; its audit status is computed by `trust.core.graphs.localize`, not stored on the node), and an
edge u -> v says that the output of u appears in the input of v (section 2.2.3); the edge carries the
transmitted message, which is the output of u, and how the link was found (`EdgeOrigin`).

Invariants, kept by `add_turn` and `add_edge`:

- Turns are unrolled in time: each turn of an agent is its own node, so a Coder <-> Reviewer loop
  becomes a chain Coder@1 -> Reviewer@2 -> Coder@3 -> ... and the graph stays acyclic.
- Steps strictly increase in insertion order, and every edge goes from a smaller step to a larger
  one. Hence insertion order *is* a topological order: `topological_order()` is O(V), acyclicity
  holds by construction, and nothing ever needs a cycle check.

`Cig.graph` is the networkx `DiGraph` view, keyed by node id, each node's value under the attribute
`node`, each edge's `EdgeOrigin` under `origin`. The message on an edge is its source's output, read
through `message(u, v)` rather than copied onto the edge, so a 100k-turn log costs one string per
turn.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

import networkx as nx

from trust.errors import GraphError

__all__ = [
    "CONTEXT_ROLES",
    "AgentTurn",
    "Cig",
    "CigEdge",
    "EdgeOrigin",
    "ReplyContract",
    "Role",
    "turn_id",
]


class Role(StrEnum):
    """The function an agent plays in the swarm (section 2.2.1: Coder, Reviewer, Planner, ...).

    `EXPERT` is a worker that solves (part of) the task without a more specific role; `TOOL` is a
    code executor, search engine or other environment that reports rather than reasons; `USER` is
    the human or orchestrator that poses the task. Only `REVIEWER` changes Algorithm 1 (a reviewer
    can be Negligent).
    """

    PLANNER = "planner"
    CODER = "coder"
    REVIEWER = "reviewer"
    AGGREGATOR = "aggregator"
    EXPERT = "expert"
    TOOL = "tool"
    USER = "user"

    @classmethod
    def parse(cls, value: object) -> Role:
        """A role from its name or a common synonym ("verifier" -> reviewer); `GraphError` otherwise."""
        if isinstance(value, str):
            key = value.strip().lower()
            try:
                return cls(key)
            except ValueError:
                pass
            if key in _ROLE_SYNONYMS:
                return _ROLE_SYNONYMS[key]
        known = ", ".join(role.value for role in cls)
        raise GraphError(f"unknown role {value!r}: expected one of {known} (or a synonym such as 'verifier')")


CONTEXT_ROLES = frozenset({Role.USER, Role.TOOL})
"""Roles whose turns do not reason: a user poses and a tool reports. Auditors find nothing to judge in
such a turn (they declare it not applicable) and judge the turns that use it, which receive it as a
parent; on the network it is delivered as context only and never voted on."""


_ROLE_SYNONYMS: dict[str, Role] = {
    "verifier": Role.REVIEWER,
    "validator": Role.REVIEWER,
    "critic": Role.REVIEWER,
    "checker": Role.REVIEWER,
    "manager": Role.PLANNER,
    "orchestrator": Role.PLANNER,
    "programmer": Role.CODER,
    "developer": Role.CODER,
    "solver": Role.EXPERT,
    "worker": Role.EXPERT,
    "assistant": Role.EXPERT,
    "summarizer": Role.AGGREGATOR,
    "environment": Role.TOOL,
    "executor": Role.TOOL,
    "terminal": Role.TOOL,
    "human": Role.USER,
}


class EdgeOrigin(StrEnum):
    """How a causal link was established.

    `REFERENCE`: the log names the turns a turn answers (explicit, trusted as given). `SEQUENCE`: no
    references, so a turn is taken to respond to the turn just before it. `OVERLAP`: a turn reuses
    distinctive content (numbers, identifiers, names) that an earlier turn produced; see
    `trust.core.graphs.agent_log.OverlapRule` for the exact rule.
    """

    REFERENCE = "reference"
    SEQUENCE = "sequence"
    OVERLAP = "overlap"


_ORIGINS: tuple[EdgeOrigin, ...] = tuple(EdgeOrigin)
_ORIGIN_CODE: dict[EdgeOrigin, int] = {origin: code for code, origin in enumerate(_ORIGINS)}


@dataclass(frozen=True, slots=True)
class ReplyContract:
    """Protocol metadata of a message: the interface a reply to it must respect (section 2.2.4).

    `format` is "json" (the reply must be a JSON object, bare or in a ```json block) or "text";
    `required` lists the top-level fields a JSON reply must have.
    """

    format: str = "text"
    required: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.format not in ("json", "text"):
            raise GraphError(f"reply contract format {self.format!r}: expected 'json' or 'text'")
        if self.required and self.format != "json":
            raise GraphError("a reply contract with required fields needs format 'json'")


def turn_id(step: int) -> str:
    """The node id of the turn at `step` in a log: "t0", "t1", ..."""
    return f"t{step}"


@dataclass(frozen=True, slots=True)
class AgentTurn:
    """One agent turn, the node of a CIG.

    `step` is the 0-based position of the turn in the log (the Who&When `mistake_step` index).
    `input` is context the turn received from outside the graph (the task, a user prompt, an
    environment observation); what it received from other turns is the messages on its incoming
    edges. `timestamp` is an ISO 8601 string when the log has one. `contract` is the protocol
    metadata that replies to this turn must respect, when the log declares it.
    """

    id: str
    step: int
    agent: str
    role: Role
    output: str
    input: str = ""
    timestamp: str | None = None
    contract: ReplyContract | None = None


@dataclass(frozen=True, slots=True)
class CigEdge:
    source: str
    target: str
    message: str
    origin: EdgeOrigin


class Cig:
    """A CIG under construction or ready to audit; see the module docstring for its invariants.

    Storage is compact and index-based: turns in a list (position = time order), each turn's
    parents as a tuple of positions and its edges' origins as a tuple of small codes beside them
    (tuples of ints cost the garbage collector nothing once untracked); children are derived on
    first use. That keeps building and localizing a 100k-turn log under a second, where a networkx
    graph of the same size alone takes most of one. The networkx view (`graph`) is built on first
    use and kept in step with later additions.
    """

    def __init__(self) -> None:
        self._turns: list[AgentTurn] = []
        self._index: dict[str, int] = {}
        self._by_step: dict[int, int] = {}
        self._parents: list[tuple[int, ...]] = []
        self._origins: list[tuple[int, ...]] = []
        self._children: list[list[int]] | None = None
        self._edges = 0
        self._nx: nx.DiGraph | None = None

    # ------------------------------------------------------------------ building

    def add_turn(self, turn: AgentTurn) -> AgentTurn:
        """Appends a turn; its step must be larger than every step already in the graph."""
        if not turn.id:
            raise GraphError(f"turn at step {turn.step}: empty id")
        if turn.id in self._index:
            raise GraphError(f"duplicate turn id {turn.id!r}")
        if self._turns:
            last = self._turns[-1]
            if turn.step <= last.step:
                raise GraphError(
                    f"turn {turn.id!r} has step {turn.step}, not after step {last.step} of {last.id!r}: "
                    "add turns in the order they happened"
                )
        elif turn.step < 0:
            raise GraphError(f"turn {turn.id!r} has negative step {turn.step}")
        position = len(self._turns)
        self._turns.append(turn)
        self._index[turn.id] = position
        self._by_step[turn.step] = position
        self._parents.append(())
        self._origins.append(())
        self._children = None
        if self._nx is not None:
            self._nx.add_node(turn.id, node=turn)
        return turn

    def add_edge(self, source: str, target: str, origin: EdgeOrigin = EdgeOrigin.REFERENCE) -> None:
        """Adds a causal link; refuses unknown ends, duplicates and links that go back in time."""
        index = self._index
        if source not in index or target not in index:
            unknown = source if source not in index else target
            raise GraphError(f"edge {source!r} -> {target!r}: unknown turn {unknown!r}")
        self.add_edge_at(index[source], index[target], origin)

    def add_edge_at(self, source: int, target: int, origin: EdgeOrigin = EdgeOrigin.REFERENCE) -> None:
        """`add_edge` by positions in time order (0 = first turn): the fast path of log importers."""
        count = len(self._turns)
        if not (0 <= source < count and 0 <= target < count):
            raise GraphError(f"edge at positions {source} -> {target}: the CIG has {count} turns")
        if source >= target:
            a, b = self._turns[source], self._turns[target]
            raise GraphError(
                f"edge {a.id!r} -> {b.id!r}: a turn can only receive output of an earlier turn "
                f"(step {a.step} is not before step {b.step})"
            )
        parents = self._parents[target]
        if source in parents:
            raise GraphError(f"edge {self._turns[source].id!r} -> {self._turns[target].id!r}: already present")
        self._parents[target] = (*parents, source)
        self._origins[target] = (*self._origins[target], _ORIGIN_CODE[origin])
        self._children = None
        self._edges += 1
        if self._nx is not None:
            self._nx.add_edge(self._turns[source].id, self._turns[target].id, origin=origin)

    # ------------------------------------------------------------------ reading

    def _position(self, node_id: str) -> int:
        try:
            return self._index[node_id]
        except KeyError:
            raise GraphError(f"unknown turn {node_id!r}") from None

    def turn(self, node_id: str) -> AgentTurn:
        return self._turns[self._position(node_id)]

    def at_step(self, step: int) -> AgentTurn:
        try:
            return self._turns[self._by_step[step]]
        except KeyError:
            raise GraphError(f"no turn at step {step}") from None

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._index

    def __len__(self) -> int:
        return len(self._turns)

    def turns(self) -> Iterator[AgentTurn]:
        """Turns in time order (a topological order)."""
        return iter(self._turns)

    def edges(self) -> Iterator[CigEdge]:
        """Edges grouped by target in time order, each target's parents in the order added."""
        turns = self._turns
        for target, (parents, origins) in enumerate(zip(self._parents, self._origins, strict=True)):
            for source, code in zip(parents, origins, strict=True):
                yield CigEdge(turns[source].id, turns[target].id, turns[source].output, _ORIGINS[code])

    def number_of_edges(self) -> int:
        return self._edges

    def has_edge(self, source: str, target: str) -> bool:
        if source not in self._index or target not in self._index:
            return False
        return self._index[source] in self._parents[self._index[target]]

    def message(self, source: str, target: str) -> str:
        """The transmitted message of edge source -> target: the output of `source`."""
        if not self.has_edge(source, target):
            raise GraphError(f"no edge {source!r} -> {target!r}")
        return self.turn(source).output

    def edge_origin(self, source: str, target: str) -> EdgeOrigin:
        if not self.has_edge(source, target):
            raise GraphError(f"no edge {source!r} -> {target!r}")
        s, t = self._index[source], self._index[target]
        return _ORIGINS[self._origins[t][self._parents[t].index(s)]]

    def parents(self, node_id: str) -> list[str]:
        """get_parents(v) of section 2.2.3: the turns whose output v received, oldest first."""
        turns = self._turns
        return [turns[p].id for p in sorted(self._parents[self._position(node_id)])]

    get_parents = parents

    def children(self, node_id: str) -> list[str]:
        turns = self._turns
        return [turns[c].id for c in sorted(self._child_lists()[self._position(node_id)])]

    def _child_lists(self) -> list[list[int]]:
        if self._children is None:
            children: list[list[int]] = [[] for _ in self._turns]
            for target, parents in enumerate(self._parents):
                for source in parents:
                    children[source].append(target)
            self._children = children
        return self._children

    def descendants(self, node_id: str) -> list[str]:
        """get_descendants(v) of section 2.2.3: every turn downstream of v, in time order; O(V + E)."""
        start = self._position(node_id)
        seen = {start}
        stack = [start]
        children = self._child_lists()
        while stack:
            for child in children[stack.pop()]:
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        seen.discard(start)
        turns = self._turns
        return [turns[d].id for d in sorted(seen)]

    get_descendants = descendants

    def topological_order(self) -> list[str]:
        """Node ids such that every turn comes after all of its parents: the time order, O(V)."""
        return [turn.id for turn in self._turns]

    def adjacency(self) -> tuple[Sequence[AgentTurn], Sequence[tuple[int, ...]]]:
        """Read-only fast path for whole-graph passes (Algorithm 1): the turns in time order, and for
        each position the positions of its parents."""
        return self._turns, self._parents

    def agents(self) -> dict[str, Role]:
        """Agent name -> role, in order of first appearance."""
        roles: dict[str, Role] = {}
        for turn in self._turns:
            roles.setdefault(turn.agent, turn.role)
        return roles

    @property
    def graph(self) -> nx.DiGraph:
        """A networkx view: nodes keyed by id with the `AgentTurn` under `node` (as in `Hdag`), edges
        with their `EdgeOrigin` under `origin`. Built on first use, then kept in step; read it and
        change the CIG through its methods."""
        if self._nx is None:
            graph = nx.DiGraph()
            turns = self._turns
            graph.add_nodes_from((turn.id, {"node": turn}) for turn in turns)
            graph.add_edges_from(
                (turns[source].id, turns[target].id, {"origin": _ORIGINS[code]})
                for target, (parents, origins) in enumerate(zip(self._parents, self._origins, strict=True))
                for source, code in zip(parents, origins, strict=True)
            )
            self._nx = graph
        return self._nx
