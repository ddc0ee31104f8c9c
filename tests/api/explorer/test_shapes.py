"""Graph shapes (trust.api.explorer.shapes) and the session drawing made from them (trust.api.explorer.session_graph):
the skeleton of an HDAG or CIG as stored, its statuses by the SDK's rules, its check against the
chain, the provider's journal as a source, and what the drawing shows with and without a shape.

Traces are sealed for real (`seal_graph`, AES-GCM) and their CIDs computed as Kubo computes them
(`unixfs_cid`), without an IPFS node: the shape needs the stored trace, not the uploads."""

from __future__ import annotations

import json
import os
import random
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

import pytest

from trust.adapters.chain.types import SegmentSpec
from trust.api.explorer.graph_svg import Fill, Mark
from trust.api.explorer.session_graph import MAX_DRAWN_NODES, node_place, session_graph
from trust.api.explorer.shapes import (
    GraphShape,
    JournalShapes,
    ShapeKind,
    StaticShapes,
    mismatch,
    node_statuses,
    shape_of,
)
from trust.api.index import SegmentState, SegmentSummary, TxRef
from trust.core.cid import unixfs_cid
from trust.core.decompose.rules import from_steps
from trust.core.graphs.cig import AgentTurn, Cig, EdgeOrigin, Role
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.status import NodeStatus
from trust.core.privacy.access import segment_keys
from trust.core.privacy.segments import new_trace_id, seal_graph
from trust.errors import ConfigError, GraphError
from trust.services.delivery import SegmentProfile, StoredTrace, default_profiles
from trust.services.sdk.journal import Journal, SessionRecord
from trust.services.sdk.outcome import SegmentOutcome, judge
from trust.services.sdk.result import Outcome

SVG = "{http://www.w3.org/2000/svg}"
CHAIN_ID = 31337


def stored_offline(graph: Hdag | Cig, profiles: Mapping[str, SegmentProfile] | None = None) -> StoredTrace:
    """The trace as `store_trace` stores it (audited nodes first, context-only ones after), with the
    CIDs Kubo would give the blobs."""
    profiles = default_profiles(graph) if profiles is None else profiles
    rng = random.Random(3).randbytes
    trace_id = new_trace_id(rng)
    sealed = seal_graph(graph, trace_id, rng)
    ordered = [s for s in sealed if profiles[s.node_id].audited] + [
        s for s in sealed if not profiles[s.node_id].audited
    ]
    return StoredTrace.from_keys(trace_id, segment_keys(ordered, [unixfs_cid(s.blob) for s in ordered]), profiles)


def hdag() -> Hdag:
    return from_steps("Is the dosing plan sound?", ["70 kg.", "5 mg per kg.", "So 350 mg."])


def cig() -> Cig:
    """A user asks, a planner plans, a coder codes, one reviewer approves and one rejects."""
    graph = Cig()
    turns = [
        ("user", Role.USER, "Write a function that sums a list."),
        ("planner", Role.PLANNER, "Plan: loop over the list and add."),
        ("coder", Role.CODER, "def total(xs): return max(xs)"),
        ("reviewer", Role.REVIEWER, "Looks good to me, approved."),
        ("critic", Role.REVIEWER, "This is wrong: max is not a sum."),
    ]
    for step, (agent, role, output) in enumerate(turns):
        graph.add_turn(AgentTurn(f"t{step}", step, agent, role, output))
    graph.add_edge("t0", "t1")
    graph.add_edge("t1", "t2")
    graph.add_edge("t2", "t3")
    graph.add_edge("t2", "t4", EdgeOrigin.SEQUENCE)
    return graph


def statuses_by_the_sdk(
    graph: Hdag | Cig, stored: StoredTrace, failed: set[str], undetermined: frozenset[str] = frozenset()
) -> dict[str, NodeStatus]:
    """What the provider's result says for the same verdicts (`trust.services.sdk.outcome.judge`)."""

    def outcome(node_id: str) -> Outcome:
        if node_id in failed:
            return Outcome.FAILED
        return Outcome.UNDETERMINED if node_id in undetermined else Outcome.PASSED

    outcomes = [
        SegmentOutcome(key.segment_index, key.node_id, 1, 1, False, False, outcome(key.node_id), 1, 1.0)
        for key in stored.segments
    ]
    found = judge(graph, outcomes, valid_on_chain=False, beta_bps=6_500)
    return {node_id: node.status for node_id, node in found.nodes.items()}


def assert_same_as_the_sdk(
    mine: dict[str, NodeStatus], sdk: dict[str, NodeStatus], undetermined: frozenset[str]
) -> None:
    """Judged nodes agree; an undetermined node has no Table 1 status here and is neither a root
    cause nor a cascade nor negligent in the provider's result."""
    assert {n: mine[n] for n in sdk if n not in undetermined} == {n: s for n, s in sdk.items() if n not in undetermined}
    assert not undetermined & set(mine)
    judged = (NodeStatus.INVALID_ROOT, NodeStatus.INVALID_CASCADE, NodeStatus.NEGLIGENT, NodeStatus.VALID)
    assert all(sdk[n] not in judged for n in undetermined)


def at(block: int = 1) -> TxRef:
    return TxRef("0x" + "ab" * 32, block, 1_700_000_000 + block)


def summaries(shape: GraphShape, states: Mapping[int, SegmentState]) -> list[SegmentSummary]:
    return [
        SegmentSummary(1, index, spec.tier, spec.tier + (index == 2), spec.weight, spec.critical, False,
                       spec.content_digest, "bafy", states.get(index, SegmentState.PASSED), 1, at(), None)
        for index, spec in enumerate(shape.specs)
    ]  # fmt: skip


def href(segment: int) -> str:
    return f"/explorer/sessions/1/segments/{segment}"


# ---------------------------------------------------------------------------------------- shapes


def test_the_shape_of_an_hdag_is_its_skeleton_without_content() -> None:
    graph = hdag()
    stored = stored_offline(graph)
    shape = shape_of(graph, stored)
    assert shape.kind is ShapeKind.HDAG and shape.trace_root == stored.root
    assert [(n.node_id, n.leaf, n.registered, n.kind) for n in shape.nodes] == [
        ("g0", 0, True, "goal"),
        ("s1", 1, True, "step"),
        ("s2", 2, True, "step"),
        ("s3", 3, True, "step"),
    ]
    assert sorted((e.source, e.target, e.type) for e in shape.edges) == [
        ("g0", "s1", "decomposes_to"),
        ("g0", "s2", "decomposes_to"),
        ("g0", "s3", "decomposes_to"),
        ("s1", "s2", "depends_on"),
        ("s2", "s3", "depends_on"),
    ]
    assert list(shape.specs) == stored.specs()
    assert "mg" not in repr(shape)  # no content travels with the shape


@pytest.mark.parametrize(
    ("failed", "undetermined"),
    [(set(), ()), ({"s1"}, ()), ({"s2"}, ()), ({"g0", "s3"}, ()), ({"s1", "s2", "s3"}, ()), ({"s2"}, ("s1",)),
     (set(), ("s1", "s3"))],
)  # fmt: skip
def test_hdag_statuses_are_the_sdks(failed: set[str], undetermined: tuple[str, ...]) -> None:
    graph = hdag()
    stored = stored_offline(graph)
    mine = node_statuses(shape_of(graph, stored), failed, frozenset(undetermined))
    assert_same_as_the_sdk(
        mine, statuses_by_the_sdk(graph, stored, failed, frozenset(undetermined)), frozenset(undetermined)
    )


def test_an_undetermined_step_starts_no_cascade() -> None:
    statuses = node_statuses(shape_of(hdag(), stored_offline(hdag())), set(), {"s1"})
    assert statuses == {"g0": NodeStatus.VALID, "s2": NodeStatus.VALID, "s3": NodeStatus.VALID}


def test_a_failed_step_is_a_root_cause_and_the_steps_that_use_it_cascade() -> None:
    statuses = node_statuses(shape_of(hdag(), stored_offline(hdag())), {"s1"})
    assert statuses == {
        "g0": NodeStatus.VALID,
        "s1": NodeStatus.INVALID_ROOT,
        "s2": NodeStatus.INVALID_CASCADE,
        "s3": NodeStatus.INVALID_CASCADE,
    }


def test_the_shape_of_a_cig_keeps_roles_context_turns_and_reviewers_verdicts() -> None:
    graph = cig()
    stored = stored_offline(graph)
    shape = shape_of(graph, stored)
    assert shape.kind is ShapeKind.CIG
    by_id = {n.node_id: n for n in shape.nodes}
    assert not by_id["t0"].registered and by_id["t0"].kind == "user"  # a user turn is context only
    assert [by_id[t].leaf for t in ("t1", "t2", "t3", "t4")] == [0, 1, 2, 3] and by_id["t0"].leaf == 4
    assert (by_id["t3"].rejects_input, by_id["t4"].rejects_input) == (False, True)
    assert by_id["t4"].agent == "critic" and by_id["t4"].step == 4
    assert {(e.source, e.target, e.type) for e in shape.edges} >= {("t2", "t4", "sequence"), ("t0", "t1", "reference")}
    # The coder failed: the reviewer that approved it is negligent, the one that rejected it is not.
    statuses = node_statuses(shape, {"t2"})
    assert statuses["t2"] is NodeStatus.INVALID_ROOT
    assert statuses["t3"] is NodeStatus.NEGLIGENT and statuses["t4"] is NodeStatus.VALID
    by_the_sdk = statuses_by_the_sdk(graph, stored, {"t2"})  # its result lists the audited turns
    assert {node_id: statuses[node_id] for node_id in by_the_sdk} == by_the_sdk and statuses["t0"] is NodeStatus.VALID
    # The coder undetermined: nobody found it wrong, so the approving reviewer is not negligent.
    unsure = node_statuses(shape, set(), {"t2"})
    assert "t2" not in unsure and unsure["t3"] is NodeStatus.VALID
    assert_same_as_the_sdk(unsure, statuses_by_the_sdk(graph, stored, set(), frozenset({"t2"})), frozenset({"t2"}))


def test_a_shape_that_does_not_match_the_chain_is_named() -> None:
    shape = shape_of(hdag(), stored_offline(hdag()))
    registered = list(shape.specs)
    assert mismatch(shape, registered) is None
    assert mismatch(shape, registered[:3]) == "the provider's record has 4 segments, the chain 3"
    altered = [*registered[:2], SegmentSpec(2, 1, b"\x07" * 32, False), registered[3]]
    assert mismatch(shape, altered) == "segment 2's content digest differs between the provider's record and the chain"
    heavier = [*registered[:3], SegmentSpec(registered[3].tier, 9, registered[3].content_digest)]
    assert mismatch(shape, heavier) == "segment 3's weight differs between the provider's record and the chain"


def test_unknown_failed_nodes_are_refused() -> None:
    with pytest.raises(GraphError, match="'zz'"):
        node_statuses(shape_of(hdag(), stored_offline(hdag())), {"zz"})


# ---------------------------------------------------------------------------------------- sources


def record(graph: Hdag | Cig, stored: StoredTrace) -> SessionRecord:
    return SessionRecord(CHAIN_ID, "0x" + "11" * 20, "trace", graph, stored, session_id=1)


def test_the_journal_gives_the_shape_of_its_sessions_by_trace_root(tmp_path: Path) -> None:
    graph, stored = hdag(), stored_offline(hdag())
    journal = Journal(tmp_path)
    path = journal.save(record(graph, stored))
    source = JournalShapes(tmp_path)
    assert source.shape(CHAIN_ID, stored.root) == shape_of(graph, stored)
    assert source.shape(CHAIN_ID + 1, stored.root) is None  # another chain's record is elsewhere
    assert source.shape(CHAIN_ID, b"\x01" * 32) is None
    # Replaced by another trace's record under the same name: the root it rebuilds gives it away.
    other = stored_offline(cig())
    path.write_text(json.dumps(record(cig(), other).to_json()), encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a new mtime, whatever the clock's resolution
    with pytest.raises(ConfigError, match="rebuilds the trace root .* the record was altered"):
        source.shape(CHAIN_ID, stored.root)
    path.write_text('{"format": "trust.provider-session", "version": 1, "graph": [', encoding="utf-8")
    os.utime(path, ns=(2, 2))
    with pytest.raises(ConfigError, match=r"is not JSON \(line 1, column \d+"):
        source.shape(CHAIN_ID, stored.root)
    path.write_text('{"format": "trust.provider-session", "version": 1}', encoding="utf-8")
    os.utime(path, ns=(3, 3))
    with pytest.raises(ConfigError, match="lacks or mangles a field"):
        source.shape(CHAIN_ID, stored.root)


def test_static_shapes_are_looked_up_by_chain_and_root() -> None:
    shape = shape_of(hdag(), stored_offline(hdag()))
    source = StaticShapes({(CHAIN_ID, shape.trace_root): shape})
    assert source.shape(CHAIN_ID, shape.trace_root) is shape
    assert source.shape(1, shape.trace_root) is None


# ---------------------------------------------------------------------------------------- drawing


def test_the_drawing_of_a_shape_fills_marks_and_links_every_node() -> None:
    shape = shape_of(hdag(), stored_offline(hdag()))
    states = {1: SegmentState.FAILED, 3: SegmentState.UNDETERMINED}
    graph = session_graph(summaries(shape, states), shape, note="from the record", href=href, title="session 1")
    assert graph.drawn_from == "shape" and graph.svg is not None
    assert {n.key: n.fill for n in graph.nodes} == {
        "s0": Fill.PASSED,
        "s1": Fill.FAILED,
        "s2": Fill.PASSED,
        "s3": Fill.UNDETERMINED,
    }
    # s3 ended undetermined: never judged, so unmarked (its fill says it), though below the failed s1.
    assert {n.key: n.mark for n in graph.nodes} == {"s0": None, "s1": Mark.ROOT_CAUSE, "s2": Mark.CASCADE, "s3": None}
    assert [(r.label, r.href) for r in graph.root_causes] == [("s1", href(1))]
    assert graph.fills == {"passed": 2, "failed": 1, "undetermined": 1} and graph.marks == {
        "root cause": 1,
        "cascade": 1,
    }
    root = ET.fromstring(graph.svg)
    assert {a.get("id"): a.get("href") for a in root.iter(f"{SVG}a")} == {f"node-s{i}": href(i) for i in range(4)}
    assert len([p for p in root.iter(f"{SVG}path") if p.get("data-style")]) == 5
    sublabels = [t.text for a in root.iter(f"{SVG}a") for t in a.iter(f"{SVG}text")]
    assert any(text.startswith("#2 · step · T2→3") for text in sublabels if text)  # escalated from 2 to 3
    assert any(text.endswith("★") for text in sublabels if text)  # the critical path


def test_voting_segments_are_neither_passed_nor_marked() -> None:
    shape = shape_of(hdag(), stored_offline(hdag()))
    states = {0: SegmentState.VOTING, 1: SegmentState.AWAITING_DRAW, 2: SegmentState.VOTING, 3: SegmentState.VOTING}
    graph = session_graph(summaries(shape, states), shape, note="", href=href, title="t")
    assert [n.fill for n in graph.nodes] == [Fill.VOTING, Fill.AWAITING, Fill.VOTING, Fill.VOTING]
    assert all(n.mark is None for n in graph.nodes)


def test_a_cig_drawing_shows_context_turns_unlinked_and_a_negligent_reviewer() -> None:
    graph_ = cig()
    shape = shape_of(graph_, stored_offline(graph_))
    drawn = session_graph(summaries(shape, {1: SegmentState.FAILED}), shape, note="", href=href, title="t")
    by_key = {n.key: n for n in drawn.nodes}
    assert by_key["c4"].fill is Fill.NOT_AUDITED and by_key["c4"].href is None and by_key["c4"].label == "t0"
    assert by_key["s2"].mark is Mark.NEGLIGENT and by_key["s1"].mark is Mark.ROOT_CAUSE
    assert {e.style for e in drawn.edges} == {"reference", "sequence"}
    place = node_place(summaries(shape, {1: SegmentState.FAILED}), shape, 2, href)
    assert place is not None and place.mark is Mark.NEGLIGENT and place.agent == "reviewer"
    assert [(p.label, p.href) for p in place.parents] == [("t2 (segment 1)", href(1))]
    first = node_place(summaries(shape, {}), shape, 0, href)
    assert first is not None and [(p.label, p.href) for p in first.parents] == [("t0 (context)", None)]


def test_without_a_shape_the_segments_are_drawn_alone_on_a_grid() -> None:
    shape = shape_of(hdag(), stored_offline(hdag()))
    drawn = session_graph(summaries(shape, {1: SegmentState.FAILED}), None, note="no shape", href=href, title="t")
    assert drawn.drawn_from == "chain" and drawn.edges == () and drawn.note == "no shape"
    assert [n.label for n in drawn.nodes] == ["segment 0", "segment 1", "segment 2", "segment 3"]
    assert all(n.mark is None for n in drawn.nodes) and drawn.root_causes == ()
    assert drawn.svg is not None and "data-edge" not in drawn.svg


def test_hostile_node_ids_are_text_never_markup_or_element_ids() -> None:
    graph = Hdag()
    sample = hdag()
    hostile = {"g0": '"><script>alert(1)</script>', "s1": "s1", "s2": "s2 & <b>", "s3": "s3"}
    for node in sample.nodes():
        graph.add_node(type(node)(hostile[node.id], node.level, node.content))
    for edge in sample.edges():
        graph.add_edge(hostile[edge.source], hostile[edge.target], edge.type)
    shape = shape_of(graph, stored_offline(graph))
    drawn = session_graph(summaries(shape, {}), shape, note="", href=href, title="t")
    assert drawn.svg is not None and "<script>" not in drawn.svg
    root = ET.fromstring(drawn.svg)
    assert {a.get("id") for a in root.iter(f"{SVG}a")} == {"node-s0", "node-s1", "node-s2", "node-s3"}


def test_a_graph_too_large_to_read_is_counted_instead_of_drawn() -> None:
    steps = [f"Step {i}." for i in range(MAX_DRAWN_NODES)]
    graph = from_steps("A long question?", steps)
    shape = shape_of(graph, stored_offline(graph))
    drawn = session_graph(summaries(shape, {}), shape, note="", href=href, title="t")
    assert drawn.svg is None and len(drawn.nodes) == MAX_DRAWN_NODES + 1 and drawn.fills == {"passed": 401}
