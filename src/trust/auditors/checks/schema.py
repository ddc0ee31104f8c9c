"""The schema check: does a node's output meet the JSON Schema it was given (paper 3.1.1: tier-1
auditors "validate data formats, confirm API response schemas").

A JSON Schema is given in the audit question (a JSON object in its text with "$schema", or with
"type" and "properties") or in a parent's text inside a ```json-schema fenced block. The output must
then be JSON: the whole output, or a fenced block (```json or a plain ```) anywhere in it. A JSON
value buried in prose without a fence is prose ("Here it is: {...}"): a consumer that parses the
output fails on it. The value is validated with the `jsonschema` library: the draft the schema
declares in "$schema", Draft 2020-12 when it declares none, with format assertions on ("format":
"date" is checked). A schema that is itself invalid is not the node's fault: the check says so and
does not decide. `SchemaCheck` is not applicable when no schema is given.

Which layer judges a format a parent asks for (decision, from the paper's 2.2.4 and Algorithm 1): a
CIG turn's reply to a message is Layer 2, protocol compliance of the edge, so a reply contract
(the log's `expects`), a worded request for JSON and a parent's ```json-schema block are all the
edge-layer `trust.auditors.checks.messages.ContractCheck`'s, never this check's: one broken reply is
one fault, charged to the edge it crossed (its receiver becomes Invalid_Root for a protocol breach at
its boundary, even below an invalid parent). Here a parent's schema binds only what sends no reply:
an HDAG node (its parents are steps, not messages) and a CIG tool turn (it executes what it is sent;
its output, an API response, is judged against the schema its caller gave).

Failures are protocol errors (`ErrorType.PROTOCOL`): "format mismatch" (prose where JSON was asked)
and "schema violation", each violation named by its JSON path ("$.items[0].price: -1 is less than
the minimum of 0"). The JSON readers and `schema_violations` are shared with `ContractCheck`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from trust.auditors.base import AuditRequest, CheckResult, Node, Outcome, node_text
from trust.core.graphs.cig import AgentTurn, Role
from trust.core.graphs.refinement import ErrorType
from trust.core.maths.text import CODE_BLOCK

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_SCHEMA_ERRORS",
    "SchemaCheck",
    "json_kind",
    "json_output",
    "schema_in_question",
    "schema_in_text",
    "schema_violations",
]

MAX_SCHEMA_ERRORS: Final = 10
"""How many schema violations a failure lists (all of them are counted)."""
MAX_JSON_DEPTH: Final = 256
"""The deepest JSON nesting read. Deeper text is not parsed at all: the C JSON decoder recurses once
per level, and where a library has raised the recursion limit (py_ecc, under web3, sets it to
100,000) a deep enough document overflows the C stack and kills the process instead of raising."""
_MAX_OBJECT_STARTS: Final = 200
"""How many "{" of a question are tried as the start of a JSON Schema."""
_PREVIEW_CHARS: Final = 80

_JSON_LANGUAGES: Final = frozenset({"", "json", "jsonc"})


def _nesting(text: str, start: int = 0) -> int:
    """The deepest bracket nesting of JSON text from `start`, strings skipped (a linear scan)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text[start:]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _loads(text: str) -> tuple[bool, Any]:
    if _nesting(text) > MAX_JSON_DEPTH:
        return False, None
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def json_output(text: str) -> tuple[Any, str] | None:
    """The JSON value an output holds, and how: ("bare") the whole output, ("fenced") the first
    ```json (or plain ```) block that parses. None when it holds neither (prose), or only JSON
    nested deeper than `MAX_JSON_DEPTH`."""
    parsed, value = _loads(text.strip())
    if parsed:
        return value, "bare"
    for block in CODE_BLOCK.finditer(text):
        if block.group(1).lower() in _JSON_LANGUAGES:
            parsed, value = _loads(block.group(2))
            if parsed:
                return value, "fenced"
    return None


def _is_schema(value: Any) -> bool:
    return isinstance(value, dict) and ("$schema" in value or ("type" in value and "properties" in value))


def _objects(text: str) -> Iterator[Any]:
    if _nesting(text) > MAX_JSON_DEPTH:
        return
    decoder = json.JSONDecoder()
    start = text.find("{")
    tried = 0
    while start != -1 and tried < _MAX_OBJECT_STARTS:
        tried += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            start = text.find("{", start + 1)
            continue
        yield value
        start = text.find("{", end)


def schema_in_question(question: str) -> dict[str, Any] | None:
    """The first JSON object of the question that is a JSON Schema ("$schema", or "type" and
    "properties"); None when there is none."""
    return next((value for value in _objects(question) if _is_schema(value)), None)


def schema_in_text(text: str) -> dict[str, Any] | None:
    """The JSON object of the first ```json-schema fenced block of a text; None when there is none."""
    for block in CODE_BLOCK.finditer(text):
        if block.group(1).lower() == "json-schema":
            parsed, value = _loads(block.group(2))
            if parsed and isinstance(value, dict):
                return value
    return None


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 3] + "..."


def json_kind(value: Any) -> str:
    """What kind of JSON value `value` is, as a sentence names it ("an object", "an array", ...)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"


def schema_violations(schema: dict[str, Any], source: str, value: Any) -> tuple[Outcome, str] | None:
    """Whether `value` meets `schema` (named `source` in the detail): None when it does; (FAIL, the
    violations, each by its JSON path, at most `MAX_SCHEMA_ERRORS` listed) when it does not;
    (NOT_APPLICABLE, why) when the schema itself is invalid, which is not the output's fault."""
    validator_class = validator_for(schema, default=Draft202012Validator)
    try:
        validator_class.check_schema(schema)
    except SchemaError as exc:
        where = exc.json_path if hasattr(exc, "json_path") else "$"
        return (
            Outcome.NOT_APPLICABLE,
            f"{source} is not a valid JSON Schema ({where}: {exc.message}); the output cannot be judged by it",
        )
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    errors = sorted(
        validator.iter_errors(value), key=lambda error: (list(map(str, error.absolute_path)), error.message)
    )
    if not errors:
        return None
    listed = "; ".join(f"{error.json_path}: {error.message}" for error in errors[:MAX_SCHEMA_ERRORS])
    more = f"; and {len(errors) - MAX_SCHEMA_ERRORS} more" if len(errors) > MAX_SCHEMA_ERRORS else ""
    return Outcome.FAIL, f"{len(errors)} violation(s) of {source}: {listed}{more}"


def _replies(node: Node) -> bool:
    """Whether `node` replies to its parents' messages (a CIG turn other than a tool), so that what
    they ask of its format is judged on the edge layer (see the module docstring)."""
    return isinstance(node, AgentTurn) and node.role is not Role.TOOL


@dataclass(frozen=True, slots=True)
class SchemaCheck:
    """Checks a node's output against the JSON Schema of the question or of a parent; see the
    module docstring."""

    @property
    def name(self) -> str:
        return "schema"

    async def check(self, request: AuditRequest) -> CheckResult:
        schema, source = self._schema(request)
        if schema is None:
            return CheckResult(
                self.name,
                Outcome.NOT_APPLICABLE,
                "no JSON Schema was given: neither the question nor a parent holds one"
                + (
                    " (what a parent's message asks of this reply is judged on the edge layer)"
                    if _replies(request.node)
                    else ""
                ),
            )
        found = json_output(request.text)
        if found is None:
            return self._fail(
                "format mismatch",
                f"{source} asks for JSON; the output is prose: {_preview(request.text)!r}",
                "JSON, bare or in a ```json block",
            )
        value, how = found
        violated = schema_violations(schema, source, value)
        if violated is None:
            return CheckResult(self.name, Outcome.PASS, f"the output is JSON ({how}) and meets {source}")
        outcome, detail = violated
        if outcome is Outcome.NOT_APPLICABLE:
            return CheckResult(self.name, outcome, detail)
        return self._fail("schema violation", detail, None)

    def _schema(self, request: AuditRequest) -> tuple[dict[str, Any] | None, str]:
        schema = schema_in_question(request.question)
        if schema is not None:
            return schema, "the JSON Schema of the question"
        if _replies(request.node):
            return None, ""
        for parent in request.parents:
            schema = schema_in_text(node_text(parent))
            if schema is not None:
                return schema, f"the JSON Schema of {parent.id}"
        return None, ""

    def _fail(self, fault: str, detail: str, expected: str | None) -> CheckResult:
        return CheckResult(
            self.name, Outcome.FAIL, detail, fault=fault, error_type=ErrorType.PROTOCOL, expected=expected
        )
