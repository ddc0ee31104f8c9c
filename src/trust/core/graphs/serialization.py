"""The HDAG JSON format, version 1: what the decomposition hands to the auditing network.

A document is one JSON object with exactly these fields (docs/graphs.md, section "HDAG JSON"):

    {"format": "trust.hdag", "version": 1,
     "nodes": [{"id", "level", "content", "content_hash", "difficulty", "domain", "stakes", "tier",
                "expression"}, ...],
     "edges": [{"source", "target", "type"}, ...]}

`level` is the level's name ("goal" ... "operation"), `difficulty` "easy" / "medium" / "hard", `tier`
the integer tier id (1 computational, 2 LLM, 3 human), `expression` a string or null, `type` one of
the five edge types, `content_hash` the lowercase hex SHA-256 of the UTF-8 content. Node ids are the
ids the graph was built with; they are never renumbered, so a node keeps its id across a round trip
and across refinement rounds.

Canonical form: `dumps` writes the fields in the order above, nodes and edges in the graph's insertion
order (insertion order carries meaning: it breaks ties in `trust.core.graphs.analysis`), no whitespace,
and only ASCII (anything else as a \\u escape). The same graph therefore always gives the same bytes,
and `dumps(loads(text)) == text` for any text that `dumps` wrote.

Reading is strict: `loads` refuses oversized input, malformed JSON, duplicate keys, unknown or missing
fields, other formats and versions, values of the wrong type or spelling (levels, difficulties and
edge types in exactly the written spelling), a `content_hash` that does not match its content,
duplicate node ids, edges to unknown nodes or breaking the hierarchy constraint, and finally any graph
that fails `trust.core.graphs.validation.validate`. Every error is a `GraphError` whose message starts with
the JSON path of the offending value, for example `nodes[3].level: unknown level 'stepp'`.

One node on its own (`node_to_dict`, `dumps_node`, ...) has the same shape as an entry of `nodes`.
That per-node document is the plaintext of one segment: it is what gets encrypted with the node's own
key and stored per node, so an auditor who decrypts it sees this node and nothing of the rest of the
graph. Its `content_hash` lets the reader check the content it decrypted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from itertools import accumulate
from typing import Any, TypeVar

from trust.core.graphs.hdag import Difficulty, EdgeType, Hdag, HdagNode, Level, Tier, content_hash
from trust.core.graphs.validation import validate
from trust.errors import GraphError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_NODES",
    "FORMAT",
    "VERSION",
    "dumps",
    "dumps_node",
    "loads",
    "loads_node",
    "node_from_dict",
    "node_to_dict",
    "parse_json",
]

FORMAT = "trust.hdag"
VERSION = 1

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
"""Largest document `loads` reads by default, in UTF-8 bytes (8 MiB)."""

DEFAULT_MAX_NODES = 4096
"""Most nodes `loads` accepts by default: the contracts' ceiling on segments per session."""

_DOCUMENT_FIELDS = ("format", "version", "nodes", "edges")
_NODE_FIELDS = ("id", "level", "content", "content_hash", "difficulty", "domain", "stakes", "tier", "expression")
_EDGE_FIELDS = ("source", "target", "type")


# ---------------------------------------------------------------------- writing


def node_to_dict(node: HdagNode) -> dict[str, Any]:
    """The JSON object of one node, fields in the canonical order."""
    return {
        "id": node.id,
        "level": node.level.label,
        "content": node.content,
        "content_hash": node.content_hash,
        "difficulty": node.difficulty.value,
        "domain": node.domain,
        "stakes": node.stakes,
        "tier": int(node.tier),
        "expression": node.expression,
    }


def _canonical(value: object) -> str:
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def dumps_node(node: HdagNode) -> str:
    """The canonical JSON text of one node (the plaintext of its encrypted segment)."""
    return _canonical(node_to_dict(node))


def dumps(hdag: Hdag) -> str:
    """The canonical JSON text of `hdag` (byte-stable; see the module docstring)."""
    document = {
        "format": FORMAT,
        "version": VERSION,
        "nodes": [node_to_dict(node) for node in hdag.nodes()],
        "edges": [{"source": e.source, "target": e.target, "type": e.type.value} for e in hdag.edges()],
    }
    return _canonical(document)


# ---------------------------------------------------------------------- reading


def _fields(value: object, path: str, fields: tuple[str, ...]) -> Mapping[str, Any]:
    """`value` as an object holding exactly `fields`; names the first missing or unknown one."""
    where = path or "document"
    if not isinstance(value, dict):
        raise GraphError(f"{where}: expected a JSON object, got {_kind(value)}")
    for name in value:
        if name not in fields:
            raise GraphError(f"{where}: unknown field {_show(name)}; expected only {', '.join(fields)}")
    for name in fields:
        if name not in value:
            raise GraphError(f"{_join(path, name)}: missing field")
    return value


def _show(text: str, limit: int = 80) -> str:
    """`repr` of a string from the input, cut short so a huge value cannot flood an error message."""
    shown = repr(text)
    return shown if len(shown) <= limit else f"{shown[: limit - 5]}...' ({len(text)} characters)"


def _join(path: str, name: str) -> str:
    return name if not path else f"{path}.{name}"


def _kind(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    if isinstance(value, int | float) and not isinstance(value, bool):
        shown = repr(value)
        return f"the number {shown if len(shown) <= 40 else shown[:30] + '...'}"
    return names.get(type(value), type(value).__name__)


def _text(value: object, path: str, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise GraphError(f"{path}: expected a string, got {_kind(value)}")
    if not empty and not value:
        raise GraphError(f"{path}: must not be empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise GraphError(f"{path}: not valid Unicode text (a lone surrogate at offset {exc.start})") from None
    return value


_Choice = TypeVar("_Choice", Level, Difficulty, EdgeType)


def _choice(value: object, path: str, what: str, spelled: dict[str, _Choice]) -> _Choice:
    text = _text(value, path)
    if text not in spelled:
        raise GraphError(f"{path}: unknown {what} {_show(text)}; expected one of {', '.join(spelled)}")
    return spelled[text]


_LEVELS = {level.label: level for level in Level}
_DIFFICULTIES = {difficulty.value: difficulty for difficulty in Difficulty}
_EDGE_TYPES = {edge.value: edge for edge in EdgeType}


def node_from_dict(data: object, *, path: str = "node") -> HdagNode:
    """The node a `node_to_dict` object describes; `GraphError` naming `path` and the field otherwise.

    Checks every field's type and spelling and that `content_hash` is the SHA-256 of `content`.
    """
    fields = _fields(data, path, _NODE_FIELDS)
    content = _text(fields["content"], _join(path, "content"))
    stated = _text(fields["content_hash"], _join(path, "content_hash"))
    actual = content_hash(content)
    if stated != actual:
        raise GraphError(
            f"{_join(path, 'content_hash')}: {_show(stated)} is not the SHA-256 of the content ({actual!r}); "
            "the content was changed after hashing, or the hash is stale"
        )
    tier = fields["tier"]
    if not isinstance(tier, int) or isinstance(tier, bool) or tier not in {int(t) for t in Tier}:
        known = ", ".join(str(int(t)) for t in Tier)
        raise GraphError(f"{_join(path, 'tier')}: expected one of the tier ids {known}, got {_kind(tier)}")
    expression = fields["expression"]
    return HdagNode(
        id=_text(fields["id"], _join(path, "id"), empty=False),
        level=_choice(fields["level"], _join(path, "level"), "level", _LEVELS),
        content=content,
        difficulty=_choice(fields["difficulty"], _join(path, "difficulty"), "difficulty", _DIFFICULTIES),
        domain=_text(fields["domain"], _join(path, "domain")),
        stakes=_text(fields["stakes"], _join(path, "stakes")),
        tier=Tier(tier),
        expression=None if expression is None else _text(expression, _join(path, "expression")),
    )


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise GraphError(f"duplicate key {_show(key)} in a JSON object: each field may appear once")
        result[key] = value
    return result


def _reject_constant(name: str) -> None:
    raise GraphError(f"{name} is not a JSON number: write finite numbers only")


_MAX_DEPTH = 32
"""Deepest JSON nesting `loads` parses (a document nests 3 deep). Checked before parsing: the
standard parser recurses on the C stack and, with a raised recursion limit, deep input can crash the
interpreter instead of raising `RecursionError`."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _depth(text: str) -> int:
    """The deepest bracket nesting outside string literals (an upper bound for malformed text)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def parse_json(text: str | bytes, max_bytes: int, what: str) -> Any:
    """Strict JSON for untrusted documents: at most `max_bytes`, UTF-8, nested at most 32 deep
    (checked before parsing), no duplicate keys, no NaN or Infinity. `GraphError` starting with
    `what` otherwise."""
    if isinstance(text, bytes):
        if len(text) > max_bytes:
            raise GraphError(
                f"{what}: {len(text)} bytes is over the limit of {max_bytes}; split the trace or raise max_bytes"
            )
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GraphError(f"{what}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    elif not isinstance(text, str):
        raise GraphError(f"{what}: expected JSON text (str or bytes), got {type(text).__name__}")
    size = len(text) if len(text) > max_bytes else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise GraphError(f"{what}: {size} bytes is over the limit of {max_bytes}; split the trace or raise max_bytes")
    if _depth(text) > _MAX_DEPTH:
        raise GraphError(f"{what}: JSON nested more than {_MAX_DEPTH} deep; an HDAG document nests 3 deep")
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise GraphError(f"{what}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:  # for example an integer literal with more digits than Python converts
        raise GraphError(f"{what}: unreadable JSON value ({exc})") from None


def loads_node(text: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> HdagNode:
    """The node a `dumps_node` text describes (for example a decrypted segment); `GraphError` otherwise."""
    return node_from_dict(parse_json(text, max_bytes, "node"), path="node")


def loads(
    text: str | bytes,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Hdag:
    """The validated HDAG a `dumps` text describes; `GraphError` naming the JSON path otherwise.

    A structurally invalid graph raises `GraphValidationError` (a `GraphError`) listing every
    violation. `max_bytes` bounds the UTF-8 size of the text, `max_nodes` the number of nodes.
    """
    document = _fields(parse_json(text, max_bytes, "document"), "", _DOCUMENT_FIELDS)
    stated = document["format"]
    if stated != FORMAT:
        shown = _show(stated) if isinstance(stated, str) else _kind(stated)
        raise GraphError(f"format: {shown} is not an HDAG document; expected {FORMAT!r}")
    version = document["version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise GraphError(f"version: expected an integer, got {_kind(version)}")
    if version != VERSION:
        raise GraphError(f"version: unsupported version {version}; this reader knows version {VERSION} only")
    nodes, edges = document["nodes"], document["edges"]
    if not isinstance(nodes, list):
        raise GraphError(f"nodes: expected an array, got {_kind(nodes)}")
    if not isinstance(edges, list):
        raise GraphError(f"edges: expected an array, got {_kind(edges)}")
    if len(nodes) > max_nodes:
        raise GraphError(f"nodes: {len(nodes)} nodes is over the limit of {max_nodes}; raise max_nodes to read it")

    hdag = Hdag()
    first_at: dict[str, int] = {}
    for index, entry in enumerate(nodes):
        node = node_from_dict(entry, path=f"nodes[{index}]")
        if node.id in first_at:
            raise GraphError(f"nodes[{index}].id: duplicate id {_show(node.id)} (first at nodes[{first_at[node.id]}])")
        first_at[node.id] = index
        hdag.add_node(node)

    for index, entry in enumerate(edges):
        path = f"edges[{index}]"
        fields = _fields(entry, path, _EDGE_FIELDS)
        source = _text(fields["source"], f"{path}.source")
        target = _text(fields["target"], f"{path}.target")
        kind = _choice(fields["type"], f"{path}.type", "edge type", _EDGE_TYPES)
        for end, name in ((source, "source"), (target, "target")):
            if end not in hdag:
                raise GraphError(f"{path}.{name}: unknown node {_show(end)}; every edge must join two listed nodes")
        try:
            hdag.add_edge(source, target, kind)
        except GraphError as exc:
            raise GraphError(f"{path}: {exc}") from None

    validate(hdag)
    return hdag
