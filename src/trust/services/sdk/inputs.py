"""What a provider's input claims to be, read as exactly that, or one clear error.

A trace reaches the SDK as text (`audit_trace(str)`, `trust submit FILE`, the gateway's `trace`
field) and the text says what it is: text whose first non-space character is `{` or `[`, or a file
named `*.json`, claims to be JSON, and JSON that does not parse is a `GraphError` naming the line,
the column, the character and what the parser expected there, raised before anything is uploaded or
paid. It is never audited as prose instead: a truncated `trust.hdag` file decomposed as text would
open a paid session over a few lines of broken JSON and could come back VALID.

JSON that parses must be one of the documents a trace can be:

- a `trust.hdag` document (`"format": "trust.hdag"`): the provider's own HDAG, read strictly by
  `trust.core.graphs.serialization.loads`;
- a steps document: `{"problem": ..., "steps": [...]}` (`question` is read as `problem`; other
  fields are ignored, so a ProcessBench item saved on its own is accepted) or a bare list of step
  strings. A steps document is audited as steps whether or not `--steps` was given: it claims to be
  steps, and reading its JSON as prose would audit the brackets and quotes.

Anything else (an agent log, another format, an object without `steps`, a number) is an error that
names what the JSON is and what is accepted; an agent log is pointed to `audit_agents` / `--agents`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trust.core.decompose.rules import Trace
from trust.core.graphs.agent_log import FORMAT_NAME as AGENT_LOG_FORMAT
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.serialization import FORMAT as HDAG_FORMAT
from trust.core.graphs.serialization import loads as loads_hdag
from trust.errors import GraphError, GraphValidationError

__all__ = [
    "ACCEPTED_TRACES",
    "claims_json",
    "describe_json",
    "read_json",
    "steps_trace",
    "trace_document",
    "trace_from_text",
]

ACCEPTED_TRACES = (
    'a trace is text, a trust.hdag document, {"problem": ..., "steps": [...]} or a JSON list of step strings'
)
"""What the error messages say a trace may be."""

_JSON_OPENERS = ("{", "[")
_JSON_SUFFIX = ".json"


def claims_json(text: str, name: str | None = None) -> bool:
    """Whether `text` (from a file called `name`, if any) claims to be JSON: its first non-space
    character opens an object or an array, or the file is named `*.json`."""
    if name is not None and name.lower().endswith(_JSON_SUFFIX):
        return True
    return text.lstrip().startswith(_JSON_OPENERS)


def read_json(text: str, what: str) -> Any:
    """`text` parsed as JSON; otherwise a `GraphError` naming `what`, the line, the column and the
    character where parsing stopped and what the parser expected there (and saying so when the text
    ends there: a document cut short, the most common way a file breaks)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        ended = exc.pos >= len(text.rstrip())
        tail = "; the text ends there, so it looks cut short" if ended else ""
        raise GraphError(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno} "
            f"(character {exc.pos}){tail}. Fix the JSON (nothing was submitted)"
        ) from None
    except RecursionError:
        raise GraphError(f"{what} is JSON nested too deeply to read; nothing was submitted") from None
    except ValueError as exc:  # an integer literal with more digits than Python converts
        raise GraphError(f"{what} holds an unreadable JSON value ({exc}); nothing was submitted") from None


def describe_json(value: object) -> str:
    """A few words on what a JSON value is, for messages: `a JSON object with the fields ['a', 'b']`."""
    if isinstance(value, Mapping):
        fields = sorted(str(key) for key in value)
        shown = ", ".join(repr(f) for f in fields[:8]) + (", ..." if len(fields) > 8 else "")
        return f"a JSON object with the fields [{shown}]" if fields else "an empty JSON object"
    if isinstance(value, list):
        kinds = sorted({_kind(item) for item in value})
        return f"a JSON array of {len(value)} items ({', '.join(kinds)})" if value else "an empty JSON array"
    return f"a JSON {_kind(value)}"


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def steps_trace(document: object, what: str) -> Trace:
    """The `Trace` of a steps document (see the module docstring); `GraphError` naming the field."""
    problem: object = None
    steps = document
    if isinstance(document, Mapping):
        if "steps" not in document:
            raise GraphError(
                f'{what}: the JSON object has no "steps" field and is not a trust.hdag document '
                f"({describe_json(document)}); {ACCEPTED_TRACES}"
            )
        problem = document.get("problem", document.get("question"))
        steps = document["steps"]
    if not isinstance(steps, list):
        raise GraphError(f"{what}: steps must be a JSON array of strings, got {_kind(steps)}")
    if not steps:
        raise GraphError(f"{what}: steps is an empty array: there is nothing to audit")
    for index, step in enumerate(steps):
        if not isinstance(step, str):
            raise GraphError(f"{what}: steps[{index}] must be a string, got {_kind(step)}")
    if problem is not None and not isinstance(problem, str):
        raise GraphError(f"{what}: problem must be a string, got {_kind(problem)}")
    return Trace(steps=tuple(steps), problem=problem)


def trace_document(document: object, what: str, *, text: str | None = None) -> Hdag | Trace:
    """The trace a parsed JSON document is (see the module docstring). `text`, when given, is the
    document's own text: a trust.hdag document is then read from it (strictly: duplicate keys and
    NaN are refused there, which parsed values can no longer show)."""
    if isinstance(document, Mapping) and "format" in document:
        stated = document["format"]
        if stated == HDAG_FORMAT:
            source = text if text is not None else json.dumps(document, ensure_ascii=False)
            try:
                return loads_hdag(source)
            except GraphValidationError:
                raise  # lists every broken rule, each naming its node or edge
            except GraphError as exc:
                raise GraphError(f"{what} (a trust.hdag document): {exc}") from None
        if stated == AGENT_LOG_FORMAT:
            raise GraphError(
                f"{what} is a multi-agent log ({AGENT_LOG_FORMAT!r}), not a trace: audit it as an agent log "
                '(`trust submit --agents`, `TrustClient.audit_agents`, or "kind": "agents" at the gateway)'
            )
        raise GraphError(
            f"{what} is a JSON document of format {stated!r}, which is not a trace format; {ACCEPTED_TRACES}"
        )
    if isinstance(document, Mapping) and "history" in document and "steps" not in document:
        raise GraphError(
            f"{what} looks like a Who&When multi-agent log (it has a history), not a trace: audit it as an agent "
            'log (`trust submit --agents`, `TrustClient.audit_agents`, or "kind": "agents" at the gateway)'
        )
    if isinstance(document, Mapping | list):
        return steps_trace(document, what)
    raise GraphError(f"{what} is {describe_json(document)}, not a trace; {ACCEPTED_TRACES}")


def trace_from_text(text: str, what: str, *, name: str | None = None) -> Hdag | Trace:
    """What a trace's text claims to be: prose (a `Trace` of text) unless it claims to be JSON
    (`claims_json`), in which case it must parse and be a trace document (`trace_document`)."""
    if not claims_json(text, name):
        return Trace(text=text)
    return trace_document(read_json(text, what), what, text=text)
