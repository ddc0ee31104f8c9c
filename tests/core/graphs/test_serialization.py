"""The HDAG JSON format, version 1: canonical writing, strict reading with errors that name the JSON path."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.graphs.hdag_strategies import hdag_nodes, node_ids, valid_hdags
from trust.core.graphs import (
    EdgeType,
    Hdag,
    HdagNode,
    Level,
    Tier,
    content_hash,
    dumps,
    dumps_node,
    loads,
    loads_node,
    node_from_dict,
    node_to_dict,
    validate,
)
from trust.errors import GraphError, GraphValidationError

DOCS = Path(__file__).resolve().parents[3] / "docs" / "graphs.md"


def sample() -> Hdag:
    hdag = Hdag()
    hdag.add_node(HdagNode("g", Level.GOAL, "Compute 3 * 4 + 1"))
    hdag.add_node(HdagNode("s", Level.STEP, "Multiply, then add one", tier=Tier.LLM))
    hdag.add_node(HdagNode("o", Level.OPERATION, "3 * 4 = 12", tier=Tier.COMPUTATIONAL, expression="3 * 4 = 12"))
    hdag.add_edge("g", "s", EdgeType.DECOMPOSES_TO)
    hdag.add_edge("s", "o", EdgeType.DEPENDS_ON)
    return hdag


def document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(dumps(sample()))
    return loaded


def error_of(value: object, **limits: int) -> str:
    text = value if isinstance(value, str | bytes) else json.dumps(value)
    with pytest.raises(GraphError) as caught:
        loads(text, **limits)
    return str(caught.value)


def same_graph(a: Hdag, b: Hdag) -> bool:
    return list(a.nodes()) == list(b.nodes()) and list(a.edges()) == list(b.edges())


# ---------------------------------------------------------------------- writing


def test_the_canonical_text_of_a_small_graph() -> None:
    def entry(node_id: str, level: str, content: str, tier: int, expression: str) -> str:
        return (
            f'{{"id":"{node_id}","level":"{level}","content":"{content}","content_hash":"{content_hash(content)}",'
            f'"difficulty":"medium","domain":"general","stakes":"low","tier":{tier},"expression":{expression}}}'
        )

    expected = (
        '{"format":"trust.hdag","version":1,"nodes":['
        + entry("g", "goal", "Compute 3 * 4 + 1", 2, "null")
        + ","
        + entry("s", "step", "Multiply, then add one", 2, "null")
        + ","
        + entry("o", "operation", "3 * 4 = 12", 1, '"3 * 4 = 12"')
        + '],"edges":[{"source":"g","target":"s","type":"decomposes_to"},'
        '{"source":"s","target":"o","type":"depends_on"}]}'
    )
    assert dumps(sample()) == expected


def test_non_ascii_text_is_escaped_so_the_output_is_ascii() -> None:
    hdag = Hdag()
    hdag.add_node(HdagNode("ziel", Level.GOAL, "∫ x² eˣ dx"))
    hdag.add_node(HdagNode("schritt", Level.STEP, "u = x²"))
    hdag.add_edge("ziel", "schritt", EdgeType.DECOMPOSES_TO)
    text = dumps(hdag)
    assert text.isascii()
    assert "\\u222b x\\u00b2" in text
    assert same_graph(loads(text), hdag)


def test_insertion_order_is_kept() -> None:
    hdag = sample()
    hdag.add_node(HdagNode("a", Level.OPERATION, "1 + 12 = 13", tier=Tier.COMPUTATIONAL))
    hdag.add_edge("s", "a", EdgeType.DEPENDS_ON)
    ids = [node["id"] for node in json.loads(dumps(hdag))["nodes"]]
    assert ids == ["g", "s", "o", "a"]


@given(valid_hdags())
def test_random_graphs_round_trip_byte_for_byte(hdag: Hdag) -> None:
    text = dumps(hdag)
    again = loads(text)
    assert same_graph(again, hdag)
    assert dumps(again) == text
    assert text.isascii()


@given(st.data())
def test_single_nodes_round_trip(data: st.DataObject) -> None:
    node = data.draw(hdag_nodes(data.draw(node_ids), data.draw(st.sampled_from(list(Level)))))
    assert node_from_dict(node_to_dict(node)) == node
    assert loads_node(dumps_node(node)) == node
    assert json.loads(dumps_node(node)) == node_to_dict(node)


def test_a_node_entry_of_the_document_is_the_per_node_document() -> None:
    hdag = sample()
    entries = json.loads(dumps(hdag))["nodes"]
    assert entries == [json.loads(dumps_node(node)) for node in hdag.nodes()]


# ---------------------------------------------------------------------- reading: errors name the path


def test_an_unknown_level_is_named_with_its_path() -> None:
    doc = document()
    doc["nodes"][1]["level"] = "stepp"
    assert error_of(doc) == (
        "nodes[1].level: unknown level 'stepp'; expected one of goal, strategy, tactic, step, operation"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="trust.cig"), "format: 'trust.cig' is not an HDAG document; expected 'trust.hdag'"),
        (lambda d: d.update(format=1), "format: the number 1 is not an HDAG document; expected 'trust.hdag'"),
        (lambda d: d.update(version=2), "version: unsupported version 2; this reader knows version 1 only"),
        (lambda d: d.update(version="1"), "version: expected an integer, got a string"),
        (lambda d: d.update(version=True), "version: expected an integer, got a boolean"),
        (lambda d: d.update(extra=[]), "document: unknown field 'extra'; expected only format, version, nodes, edges"),
        (lambda d: d.pop("edges"), "edges: missing field"),
        (lambda d: d.update(nodes={}), "nodes: expected an array, got an object"),
        (lambda d: d.update(edges=None), "edges: expected an array, got null"),
        (lambda d: d["nodes"].append(5), "nodes[3]: expected a JSON object, got the number 5"),
        (
            lambda d: d["nodes"][0].update(colour="red"),
            "nodes[0]: unknown field 'colour'; expected only id, level, "
            "content, content_hash, difficulty, domain, stakes, tier, expression",
        ),
        (lambda d: d["nodes"][2].pop("expression"), "nodes[2].expression: missing field"),
        (lambda d: d["nodes"][0].update(id=""), "nodes[0].id: must not be empty"),
        (lambda d: d["nodes"][0].update(id=7), "nodes[0].id: expected a string, got the number 7"),
        (
            lambda d: d["nodes"][1].update(difficulty="Hard"),
            "nodes[1].difficulty: unknown difficulty 'Hard'; expected one of easy, medium, hard",
        ),
        (
            lambda d: d["nodes"][1].update(tier=4),
            "nodes[1].tier: expected one of the tier ids 1, 2, 3, got the number 4",
        ),
        (
            lambda d: d["nodes"][1].update(tier=True),
            "nodes[1].tier: expected one of the tier ids 1, 2, 3, got a boolean",
        ),
        (
            lambda d: d["nodes"][1].update(tier=2.0),
            "nodes[1].tier: expected one of the tier ids 1, 2, 3, got the number 2.0",
        ),
        (lambda d: d["nodes"][2].update(expression=12), "nodes[2].expression: expected a string, got the number 12"),
        (lambda d: d["nodes"][1].update(domain=None), "nodes[1].domain: expected a string, got null"),
        (lambda d: d["nodes"].append(dict(d["nodes"][1])), "nodes[3].id: duplicate id 's' (first at nodes[1])"),
        (
            lambda d: d["edges"][0].update(type="depends"),
            "edges[0].type: unknown edge type 'depends'; expected one of "
            "decomposes_to, depends_on, enables, validates, contradicts",
        ),
        (
            lambda d: d["edges"][1].update(target="v99"),
            "edges[1].target: unknown node 'v99'; every edge must join two listed nodes",
        ),
        (
            lambda d: d["edges"][1].update(weight=1),
            "edges[1]: unknown field 'weight'; expected only source, target, type",
        ),
        (lambda d: d["edges"].append(d["edges"][0]), "edges[2]: edge 'g' -> 's': already present"),
        (
            lambda d: d["edges"].append({"source": "o", "target": "s", "type": "enables"}),
            "edges[2]: edge 'o' -> 's' (enables) goes up from operation to step: "
            "the hierarchy constraint needs level(source) <= level(target)",
        ),
        (
            lambda d: d["edges"].append({"source": "s", "target": "s", "type": "enables"}),
            "edges[2]: edge 's' -> 's': a node cannot point to itself",
        ),
    ],
)
def test_malformed_documents_are_refused_naming_the_path(change: Any, message: str) -> None:
    doc = document()
    change(doc)
    assert error_of(doc) == message


def test_a_content_hash_that_does_not_match_is_refused() -> None:
    doc = document()
    doc["nodes"][2]["content"] = "3 * 4 = 13"
    message = error_of(doc)
    assert message.startswith(
        f"nodes[2].content_hash: {content_hash('3 * 4 = 12')!r} is not the SHA-256 of the content"
    )
    assert content_hash("3 * 4 = 13") in message


def test_text_that_is_not_json_or_not_an_object_is_refused() -> None:
    assert (
        error_of("{")
        == "document: not valid JSON (Expecting property name enclosed in double quotes at line 1, column 2)"
    )
    assert error_of("[]") == "document: expected a JSON object, got an array"
    assert error_of(b"\xff\xfe\x00") == "document: not UTF-8 text (invalid start byte at byte 0)"
    assert error_of('{"format": NaN}') == "NaN is not a JSON number: write finite numbers only"
    assert error_of('{"version": 1' + "0" * 5000 + "}").startswith("document: unreadable JSON value")


def test_deep_nesting_is_refused_before_parsing() -> None:
    deep = "[" * 32 + "]" * 32
    assert error_of(deep) == "document: expected a JSON object, got an array"
    assert error_of("[" + deep + "]") == "document: JSON nested more than 32 deep; an HDAG document nests 3 deep"
    brackets_in_a_string = '{"a": "' + "[" * 100 + '"}'
    assert error_of(brackets_in_a_string) == "document: unknown field 'a'; expected only format, version, nodes, edges"


def test_deep_nesting_cannot_crash_the_interpreter_under_a_raised_recursion_limit() -> None:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:  # without the depth check the C parser overflows the stack here and the process dies
        assert "nested more than 32 deep" in error_of("[" * 1_000_000 + "]" * 1_000_000)
    finally:
        sys.setrecursionlimit(limit)


def test_duplicate_keys_are_refused() -> None:
    text = dumps(sample()).replace('"version":1', '"version":1,"version":1')
    assert error_of(text) == "duplicate key 'version' in a JSON object: each field may appear once"


def test_lone_surrogates_are_refused() -> None:
    doc = document()
    doc["nodes"][1]["content"] = "\ud800"
    doc["nodes"][1]["content_hash"] = "0" * 64
    assert error_of(doc) == "nodes[1].content: not valid Unicode text (a lone surrogate at offset 0)"


def test_size_and_node_limits() -> None:
    text = dumps(sample())
    assert loads(text, max_bytes=len(text), max_nodes=3)
    assert error_of(text, max_bytes=len(text) - 1) == (
        f"document: {len(text)} bytes is over the limit of {len(text) - 1}; split the trace or raise max_bytes"
    )
    assert error_of(text, max_nodes=2) == "nodes: 3 nodes is over the limit of 2; raise max_nodes to read it"
    wide = text.replace("Compute 3 * 4 + 1", "é" * 10)  # counted in UTF-8 bytes, not characters
    assert "bytes is over the limit" in error_of(wide, max_bytes=len(wide))


def test_a_document_that_parses_but_breaks_the_structure_lists_every_violation() -> None:
    doc = document()
    doc["edges"] = []
    with pytest.raises(GraphValidationError) as caught:
        loads(json.dumps(doc))
    assert caught.value.violations == [
        "node 'g' (goal) is a leaf: only step and operation nodes may end the reasoning; decompose it or remove it",
        "node 's' (step) is an orphan: no edge leads to it",
        "node 'o' (operation) is an orphan: no edge leads to it",
    ]


def test_loads_node_reports_under_node() -> None:
    entry = node_to_dict(sample().node("o"))
    entry["level"] = "opperation"
    with pytest.raises(GraphError, match=r"^node\.level: unknown level 'opperation'"):
        loads_node(json.dumps(entry))


def test_huge_values_are_cut_short_in_messages() -> None:
    doc = document()
    doc["nodes"][0]["level"] = "x" * 100_000
    message = error_of(doc)
    assert len(message) < 300
    assert "(100000 characters)" in message


# ---------------------------------------------------------------------- mutated input: GraphError, never a traceback

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def loads_or_graph_error(text: str | bytes) -> None:
    try:
        hdag = loads(text)
    except GraphError:
        return
    validate(hdag)  # whatever loads accepts is a valid HDAG


@given(valid_hdags(max_nodes=5), st.data())
def test_text_mutations_give_graph_errors(hdag: Hdag, data: st.DataObject) -> None:
    text = dumps(hdag)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        start = data.draw(st.integers(min_value=0, max_value=len(text)))
        end = data.draw(st.integers(min_value=start, max_value=min(len(text), start + 8)))
        text = text[:start] + data.draw(st.text(max_size=4) | st.sampled_from(['"', "{", "]", ",", "\\u"])) + text[end:]
    loads_or_graph_error(text)


@given(valid_hdags(max_nodes=5), st.data())
def test_byte_mutations_give_graph_errors(hdag: Hdag, data: st.DataObject) -> None:
    raw = bytearray(dumps(hdag).encode())
    position = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    raw[position] = data.draw(st.integers(min_value=0, max_value=255))
    loads_or_graph_error(bytes(raw))


def _containers(value: Any, found: list[Any]) -> list[Any]:
    if isinstance(value, dict | list):
        found.append(value)
        for child in value.values() if isinstance(value, dict) else value:
            _containers(child, found)
    return found


@given(valid_hdags(max_nodes=5), st.data())
def test_structural_mutations_give_graph_errors(hdag: Hdag, data: st.DataObject) -> None:
    doc = json.loads(dumps(hdag))
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        target = data.draw(st.sampled_from(_containers(doc, [])))
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if isinstance(target, dict):
            keys = list(target)
            if action == "add" or not keys:
                target[data.draw(st.text(max_size=8) | st.sampled_from(keys or ["id"]))] = data.draw(json_values)
            elif action == "delete":
                del target[data.draw(st.sampled_from(keys))]
            else:
                target[data.draw(st.sampled_from(keys))] = data.draw(json_values)
        elif action == "add" or not target:
            target.append(data.draw(json_values))
        elif action == "delete":
            target.pop(data.draw(st.integers(min_value=0, max_value=len(target) - 1)))
        else:
            target[data.draw(st.integers(min_value=0, max_value=len(target) - 1))] = data.draw(json_values)
    loads_or_graph_error(json.dumps(doc))


@given(valid_hdags(max_nodes=5), st.data())
def test_swapping_node_and_edge_fields_keeps_the_reader_honest(hdag: Hdag, data: st.DataObject) -> None:
    """Well-typed but wrong values (another node's content, a different level) are caught or still valid."""
    doc = json.loads(dumps(hdag))
    node = data.draw(st.sampled_from(doc["nodes"]))
    field = data.draw(st.sampled_from(["level", "content", "id", "tier", "difficulty"]))
    other = data.draw(st.sampled_from(doc["nodes"]))
    node[field] = other[field]
    loads_or_graph_error(json.dumps(doc))


# ---------------------------------------------------------------------- the documented example


def test_the_example_in_the_docs_loads_and_is_canonical() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## HDAG JSON", 1)[1]
    block = re.search(r"```json\n(.*?)\n```", section, re.DOTALL)
    assert block is not None, "docs/graphs.md lost its HDAG JSON example"
    example = block.group(1)
    hdag = loads(example)
    assert dumps(hdag) == json.dumps(json.loads(example), ensure_ascii=True, separators=(",", ":"))
