"""The layered drawing of trust.api.explorer.graph_svg: layers, crossings, coordinates without overlaps, the
SVG it writes (links, fills, marks, edge styles, escaping) and the grid for graphs without edges."""

from __future__ import annotations

import itertools
import random
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from trust.api.explorer.graph_svg import (
    LAYER_PITCH,
    MAX_VIRTUAL_POINTS,
    NODE_GAP,
    NODE_HEIGHT,
    NODE_WIDTH,
    EdgeStyle,
    Fill,
    GraphEdge,
    GraphNode,
    Mark,
    bounded_layers,
    count_crossings,
    grid_layout,
    layers_by_longest_path,
    layout,
    legend_svg,
    order_layers,
    render_svg,
)
from trust.errors import GraphError

SVG = "{http://www.w3.org/2000/svg}"
STYLES = {
    "solid": EdgeStyle("solid edge", "#333333"),
    "dashed": EdgeStyle("dashed edge", "#2446a6", "7 4"),
}


def nodes_of(keys: list[str], fill: Fill = Fill.PASSED) -> list[GraphNode]:
    return [GraphNode(k, k, f"sub {k}", fill, href=f"/segments/{k}") for k in keys]


def random_dag(count: int, edges: int, seed: int) -> tuple[list[GraphNode], list[GraphEdge]]:
    """A random DAG: edges only from a lower to a higher index, so it cannot have a cycle."""
    rng = random.Random(seed)
    keys = [f"n{i}" for i in range(count)]
    pairs = {tuple(sorted(rng.sample(range(count), 2))) for _ in range(edges)}
    return nodes_of(keys), [GraphEdge(keys[a], keys[b], rng.choice(["solid", "dashed"])) for a, b in sorted(pairs)]


def brute_crossings(layers: list[list[str]], edges: list[tuple[str, str]]) -> int:
    position = {k: (d, i) for d, layer in enumerate(layers) for i, k in enumerate(layer)}
    count = 0
    for (a, b), (c, d) in itertools.combinations(edges, 2):
        (la, ia), (lb, ib) = position[a], position[b]
        (lc, ic), (ld, id_) = position[c], position[d]
        if lb == la + 1 and ld == lc + 1 and la == lc and (ia - ic) * (ib - id_) < 0:
            count += 1
    return count


# ---------------------------------------------------------------------------------------- layers


def test_layers_are_longest_paths_from_the_sources() -> None:
    edges = [("goal", "a"), ("goal", "b"), ("a", "c"), ("b", "c"), ("c", "d"), ("goal", "d")]
    layer = layers_by_longest_path(["goal", "a", "b", "c", "d", "lone"], edges)
    assert layer == {"goal": 0, "a": 1, "b": 1, "c": 2, "d": 3, "lone": 0}


def test_a_wide_level_continues_on_the_rows_below() -> None:
    keys = ["goal"] + [f"s{i}" for i in range(20)] + ["end"]
    edges = [("goal", f"s{i}") for i in range(20)] + [("s19", "end")]
    layer = bounded_layers(keys, edges, width=8)
    rows = Counter(layer.values())
    assert rows == {0: 1, 1: 8, 2: 8, 3: 4, 4: 1}  # 20 children in rows of 8, 8 and 4; end below s19
    assert all(layer[target] > layer[source] for source, target in edges)
    assert [layer[f"s{i}"] for i in range(20)] == sorted(layer[f"s{i}"] for i in range(20))  # kept in order
    # A graph that fits keeps its longest-path layers.
    assert bounded_layers(["a", "b", "c"], [("a", "b"), ("a", "c")]) == {"a": 0, "b": 1, "c": 1}
    with pytest.raises(ValueError, match="at least one node"):
        bounded_layers(["a"], [], width=0)


def test_a_cycle_or_an_unknown_end_is_refused_by_name() -> None:
    with pytest.raises(GraphError, match="cycle through 'a', 'b', 'c'"):
        layers_by_longest_path(["a", "b", "c", "x"], [("x", "a"), ("a", "b"), ("b", "c"), ("c", "a")])
    with pytest.raises(GraphError, match="'ghost', which is not a node"):
        layers_by_longest_path(["a"], [("a", "ghost")])
    with pytest.raises(GraphError, match="share a key"):
        layout(nodes_of(["a", "a"]), [])


# ---------------------------------------------------------------------------------------- ordering


@pytest.mark.parametrize("seed", range(6))
def test_crossings_are_counted_exactly(seed: int) -> None:
    rng = random.Random(seed)
    layers = [[f"{d}:{i}" for i in range(rng.randint(1, 7))] for d in range(4)]
    edges = [(rng.choice(layers[d]), rng.choice(layers[d + 1])) for d in range(3) for _ in range(rng.randint(0, 12))]
    edges = list(dict.fromkeys(edges))
    assert count_crossings(layers, edges) == brute_crossings(layers, edges)


def test_barycentre_ordering_undoes_a_crossed_input_order() -> None:
    # Two chains given in crossed order: the middle layer swaps them, the last swaps them back.
    layers = [["a0", "b0"], ["b1", "a1"], ["a2", "b2"]]
    edges = [("a0", "a1"), ("b0", "b1"), ("a1", "a2"), ("b1", "b2")]
    assert count_crossings(layers, edges) == 2
    ordered = order_layers(layers, edges)
    assert count_crossings(ordered, edges) == 0
    assert sorted(map(sorted, ordered)) == sorted(map(sorted, layers))  # same nodes in each layer


@pytest.mark.parametrize("seed", range(4))
def test_ordering_never_adds_crossings(seed: int) -> None:
    nodes, edges = random_dag(40, 70, seed)
    keys = [n.key for n in nodes]
    pairs = [(e.source, e.target) for e in edges]
    layer = layers_by_longest_path(keys, pairs)
    adjacent = [p for p in pairs if layer[p[1]] == layer[p[0]] + 1]
    layers = [[k for k in keys if layer[k] == d] for d in range(max(layer.values()) + 1)]
    assert count_crossings(order_layers(layers, adjacent), adjacent) <= count_crossings(layers, adjacent)


# ---------------------------------------------------------------------------------------- coordinates


@pytest.mark.parametrize(("count", "edges", "seed"), [(12, 18, 1), (60, 110, 2), (150, 260, 3)])
def test_nodes_never_overlap_and_every_edge_points_down(count: int, edges: int, seed: int) -> None:
    nodes, links = random_dag(count, edges, seed)
    placed = layout(nodes, links)
    boxes = {
        key: (x - NODE_WIDTH / 2, y - NODE_HEIGHT / 2, x + NODE_WIDTH / 2, y + NODE_HEIGHT / 2)
        for key, (x, y) in placed.centres.items()
    }
    assert set(boxes) == {n.key for n in nodes}
    for (a, box_a), (b, box_b) in itertools.combinations(boxes.items(), 2):
        apart = box_a[2] <= box_b[0] or box_b[2] <= box_a[0] or box_a[3] <= box_b[1] or box_b[3] <= box_a[1]
        assert apart, (a, b, box_a, box_b)
    for row in placed.layers:  # one layer, in order: nodes a node and a gap apart, bends clear of nodes
        xs = [placed.slots[k][0] for k in row]
        assert xs == sorted(xs)
        nodes_x = [placed.slots[k][0] for k in row if not k.startswith("\0")]
        assert all(b - a >= NODE_WIDTH + NODE_GAP - 1e-6 for a, b in itertools.pairwise(nodes_x))
        for bend in (placed.slots[k][0] for k in row if k.startswith("\0")):
            assert all(abs(bend - x) >= NODE_WIDTH / 2 + NODE_GAP - 1e-6 for x in nodes_x)
    for edge in links:
        top, bottom = placed.centres[edge.source], placed.centres[edge.target]
        assert bottom[1] - top[1] >= LAYER_PITCH
        bends = placed.routes[(edge.source, edge.target)]
        assert len(bends) == round((bottom[1] - top[1]) / LAYER_PITCH) - 1  # one bend per layer crossed
    assert all(0 <= left and right <= placed.width for left, _, right, _ in boxes.values())
    assert all(0 <= top and bottom <= placed.height for _, top, _, bottom in boxes.values())


def test_the_layout_is_deterministic_and_parents_sit_above_children() -> None:
    nodes, links = random_dag(50, 80, 9)
    first = render_svg(nodes, links, STYLES, layout(nodes, links), title="t")
    again = render_svg(nodes, links, STYLES, layout(nodes, links), title="t")
    assert first == again
    # A chain stays a vertical line: each child right under its only parent.
    chain = nodes_of(["a", "b", "c", "d"])
    placed = layout(chain, [GraphEdge(x, y, "solid") for x, y in itertools.pairwise("abcd")])
    assert len({x for x, _ in placed.centres.values()}) == 1 and placed.crossings == 0


def test_very_long_edges_are_drawn_straight_beyond_the_virtual_point_budget() -> None:
    # A chain of 120 nodes where each node also points back to the first: the long edges would need
    # about 7,000 virtual points, more than the budget.
    keys = [f"t{i}" for i in range(120)]
    links = [GraphEdge(a, b, "solid") for a, b in itertools.pairwise(keys)]
    links += [GraphEdge(keys[0], k, "dashed") for k in keys[2:]]
    assert sum(range(1, 119)) > MAX_VIRTUAL_POINTS
    placed = layout(nodes_of(keys), links)
    assert all(bends == () for bends in placed.routes.values())
    assert len(placed.layers) == 120


# ---------------------------------------------------------------------------------------- SVG


def parse(svg: str) -> ET.Element:
    """The SVG parsed as XML: it must be well formed (an unescaped '<' or '&' would not be)."""
    return ET.fromstring(svg)


def test_nodes_are_links_with_their_fill_mark_and_tooltip() -> None:
    nodes = [
        GraphNode("s0", "g0", "#0 · goal", Fill.PASSED, None, "/explorer/sessions/1/segments/0", "goal passed"),
        GraphNode("s1", "s1", "#1 · step", Fill.FAILED, Mark.ROOT_CAUSE, "/explorer/sessions/1/segments/1", "x"),
        GraphNode("s2", "s2", "#2 · step", Fill.PASSED, Mark.CASCADE, "/explorer/sessions/1/segments/2", "y"),
        GraphNode("c3", "user", "context", Fill.NOT_AUDITED, None, None, "context only"),
    ]
    edges = [GraphEdge("s0", "s1", "solid"), GraphEdge("s1", "s2", "dashed"), GraphEdge("c3", "s1", "dashed")]
    root = parse(render_svg(nodes, edges, STYLES, layout(nodes, edges), title="a session"))
    assert root.find(f"{SVG}title").text == "a session"  # type: ignore[union-attr]
    links = {a.get("id"): a for a in root.iter(f"{SVG}a")}
    assert set(links) == {"node-s0", "node-s1", "node-s2"}  # the context node is no link
    assert links["node-s1"].get("href") == "/explorer/sessions/1/segments/1"
    fills = {g.get("id"): r.get("data-fill") for g in root.iter() if (g.get("id") or "").startswith("node-")
             for r in g.iter(f"{SVG}rect") if r.get("data-fill")}  # fmt: skip
    assert fills == {"node-s0": "passed", "node-s1": "failed", "node-s2": "passed", "node-c3": "not audited"}
    marks = {g.get("id"): r.get("data-mark") for g in root.iter() if (g.get("id") or "").startswith("node-")
             for r in g.iter(f"{SVG}rect") if r.get("data-mark")}  # fmt: skip
    assert marks == {"node-s1": "root cause", "node-s2": "cascade"}
    tags = [t.text for t in links["node-s1"].iter(f"{SVG}text")]
    assert tags[0] == "root cause" and "s1" in tags
    assert links["node-s0"].find(f"{SVG}title").text == "goal passed"  # type: ignore[union-attr]
    paths = {p.get("data-edge"): p for p in root.iter(f"{SVG}path") if p.get("data-edge")}
    assert paths["s1->s2"].get("stroke-dasharray") == "7 4" and paths["s0->s1"].get("stroke-dasharray") is None
    assert paths["s1->s2"].get("marker-end") == "url(#arrow-dashed)"
    assert {m.get("id") for m in root.iter(f"{SVG}marker")} == {"arrow-solid", "arrow-dashed"}
    # No style attribute anywhere: a strict Content-Security-Policy would drop it.
    assert all(element.get("style") is None for element in root.iter())


def test_every_text_is_escaped() -> None:
    hostile = '<script>alert(1)</script> & "quotes"'
    nodes = [GraphNode("a", hostile, hostile, Fill.VOTING, href='/x?a=1&b="2"', tooltip=hostile)]
    svg = render_svg(nodes, [], STYLES, layout(nodes, []), title=hostile)
    assert "<script>" not in svg
    root = parse(svg)
    assert root.find(f"{SVG}title").text == hostile  # type: ignore[union-attr]
    link = next(root.iter(f"{SVG}a"))
    assert link.get("href") == '/x?a=1&b="2"'
    assert link.find(f"{SVG}title").text == hostile  # type: ignore[union-attr]
    assert [t.text for t in link.iter(f"{SVG}text")][0] == hostile[:15] + "…"  # long labels are cut


def test_an_edge_of_an_unknown_style_is_refused() -> None:
    nodes = nodes_of(["a", "b"])
    edges = [GraphEdge("a", "b", "wavy")]
    with pytest.raises(GraphError, match="edge style 'wavy' is not one of dashed, solid"):
        render_svg(nodes, edges, STYLES, layout(nodes, edges), title="t")


def test_the_legend_names_every_fill_mark_and_edge_style() -> None:
    root = parse(legend_svg(STYLES, list(Fill), list(Mark)))
    words = [t.text for t in root.iter(f"{SVG}text")]
    assert words == [f.value for f in Fill] + [m.value for m in Mark] + ["solid edge", "dashed edge"]
    dashes = {line.get("data-style"): line.get("stroke-dasharray") for line in root.iter(f"{SVG}line")}
    assert dashes == {"solid": None, "dashed": "7 4"}


def test_an_empty_graph_is_an_empty_drawing() -> None:
    placed = layout([], [])
    assert placed.centres == {} and placed.crossings == 0
    parse(render_svg([], [], STYLES, placed, title="nothing"))


def test_a_grid_places_nodes_in_rows() -> None:
    nodes = nodes_of([f"s{i}" for i in range(10)])
    placed = grid_layout(nodes, 4)
    assert [len(row) for row in placed.layers] == [4, 4, 2]
    xs = sorted({x for x, _ in placed.centres.values()})
    ys = sorted({y for _, y in placed.centres.values()})
    assert len(xs) == 4 and len(ys) == 3
    assert all(b - a >= NODE_WIDTH + NODE_GAP for a, b in itertools.pairwise(xs))
    assert all(b - a >= NODE_HEIGHT for a, b in itertools.pairwise(ys))
    assert placed.width >= max(xs) + NODE_WIDTH / 2 and placed.height >= max(ys) + NODE_HEIGHT / 2
    parse(render_svg(nodes, [], STYLES, placed, title="grid"))
    with pytest.raises(ValueError, match="at least one column"):
        grid_layout(nodes, 0)
