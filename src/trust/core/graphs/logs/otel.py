"""OpenTelemetry spans that follow the GenAI semantic conventions (`gen_ai.*`).

Two span shapes: OTLP JSON (`{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`, spans
`{"traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano", "attributes": [{"key",
"value": {"stringValue": ...}}], "events": [...]}`, what the collector's file exporter and
`OTLPSpanExporter` write) and the Python SDK's `ReadableSpan.to_json()` (`{"name", "context":
{"span_id"}, "parent_id", "start_time", "attributes": {...}, "events": [...]}`). Accepted as an
OTLP export, a list of OTLP exports, or a plain list of spans of either shape.

What a span did is `gen_ai.operation.name`: `chat`, `text_completion`, `generate_content` (a model
call), `execute_tool` (a tool ran: `gen_ai.tool.name`, `gen_ai.tool.call.arguments`,
`gen_ai.tool.call.result`), `invoke_agent` / `create_agent` (an agent: `gen_ai.agent.name`).
Message text is read from whichever generation of the conventions the instrumentation emits:
`gen_ai.input.messages` / `gen_ai.output.messages` (JSON messages of `parts`, current),
`gen_ai.prompt` / `gen_ai.completion` (older, also as the attributes of `gen_ai.content.prompt` /
`gen_ai.content.completion` events), or the indexed `gen_ai.prompt.0.content` /
`gen_ai.completion.0.content` that OpenLLMetry writes.

The turns, in start-time order: a model call's output, spoken by the agent that the span or its
nearest ancestor names in `gen_ai.agent.name` (else the model, `gen_ai.request.model`); a tool
execution's result, spoken by the tool (role tool, its arguments as input); an `invoke_agent`
span's output when no model call or tool under it gave a turn (an agent instrumented only at its
boundary). Spans without `gen_ai.*` attributes or events (HTTP, database) are not turns. The task
is the first user message of the first model call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from trust.core.graphs.agent_log import AgentLog, LogLimits
from trust.core.graphs.cig import Role
from trust.core.graphs.logs.common import LogBuilder, expect_list, expect_object, message_text
from trust.errors import GraphError

__all__ = ["OTEL_GENAI", "otel_spans", "parse_otel_genai"]

OTEL_GENAI = "otel-genai"

_INFERENCE = frozenset({"chat", "text_completion", "generate_content", "completion"})
_AGENT = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})
_MAX_DEPTH = 256


class _Span:
    __slots__ = ("attributes", "events", "id", "name", "parent", "path", "start")

    def __init__(
        self,
        path: str,
        span_id: str | None,
        parent: str | None,
        name: str,
        start: tuple[int, int, str],
        attributes: Mapping[str, Any],
        events: Sequence[tuple[str, Mapping[str, Any]]],
    ) -> None:
        self.path = path
        self.id = span_id
        self.parent = parent
        self.name = name
        self.start = start
        self.attributes = attributes
        self.events = events

    def is_genai(self) -> bool:
        return any(key.startswith("gen_ai.") for key in self.attributes) or any(
            name.startswith("gen_ai.") or any(key.startswith("gen_ai.") for key in attrs) for name, attrs in self.events
        )


def otel_spans(data: object) -> tuple[Sequence[tuple[Any, str]], str] | None:
    """The raw spans, each with its path, when `data` has an OpenTelemetry shape, else None."""
    if isinstance(data, Mapping) and "resourceSpans" in data:
        return _otlp_spans([data], single=True), "otlp"
    if isinstance(data, list) and data and isinstance(data[0], Mapping):
        first = data[0]
        if "resourceSpans" in first:
            return _otlp_spans(data, single=False), "otlp"
        if "spanId" in first or ("context" in first and "attributes" in first):
            return [(span, f"spans[{index}]") for index, span in enumerate(data)], "spans"
    return None


def _otlp_spans(exports: Sequence[Any], *, single: bool) -> list[tuple[Any, str]]:
    found: list[tuple[Any, str]] = []
    for e, export in enumerate(exports):
        base = "" if single else f"[{e}]."
        export = expect_object(export, f"[{e}]")
        for r, resource in enumerate(expect_list(export.get("resourceSpans"), f"{base}resourceSpans")):
            rpath = f"{base}resourceSpans[{r}]"
            resource = expect_object(resource, rpath)
            for s, scope in enumerate(expect_list(resource.get("scopeSpans", []), f"{rpath}.scopeSpans")):
                spath = f"{rpath}.scopeSpans[{s}]"
                scope = expect_object(scope, spath)
                for i, span in enumerate(expect_list(scope.get("spans", []), f"{spath}.spans")):
                    found.append((span, f"{spath}.spans[{i}]"))
    return found


def parse_otel_genai(data: object, limits: LogLimits | None = None) -> AgentLog:
    found = otel_spans(data)
    if found is None:
        raise GraphError('not OpenTelemetry spans: expected {"resourceSpans": [...]} or a list of spans')
    raw_spans, _ = found
    spans = [_span(raw, path) for raw, path in raw_spans]
    genai = [span for span in spans if span.is_genai()]
    if not genai:
        raise GraphError(
            f"none of the {len(spans)} spans carries a gen_ai.* attribute or event: export the spans of a "
            "GenAI instrumentation (OpenTelemetry semantic conventions for generative AI)"
        )
    by_id = {span.id: span for span in spans if span.id}
    turns: list[tuple[_Span, str, str, Role | None, str]] = []
    covered: set[int] = set()
    task = ""
    for span in sorted(genai, key=lambda span: span.start):
        operation = span.attributes.get("gen_ai.operation.name")
        if operation == "execute_tool" or (operation is None and "gen_ai.tool.name" in span.attributes):
            tool = span.attributes.get("gen_ai.tool.name") or span.name.removeprefix("execute_tool").strip()
            result = _text(span.attributes.get("gen_ai.tool.call.result"))
            arguments = _text(span.attributes.get("gen_ai.tool.call.arguments"))
            turns.append((span, str(tool) or "tool", result, Role.TOOL, arguments))
        elif operation in _AGENT:
            continue
        else:
            output = _output_text(span)
            if not output and operation not in _INFERENCE:
                continue
            if not task:
                task = _first_user_message(span)
            turns.append((span, _agent_of(span, by_id), output, None, ""))
        covered.update(_ancestors(span, by_id))
    for span in genai:
        if span.attributes.get("gen_ai.operation.name") in _AGENT and id(span) not in covered:
            output = _output_text(span)
            name = span.attributes.get("gen_ai.agent.name")
            if output and isinstance(name, str) and name:
                turns.append((span, name, output, None, ""))
                if not task:
                    task = _first_user_message(span)
    builder = LogBuilder(OTEL_GENAI, limits)
    for span, agent, content, role, given_input in sorted(turns, key=lambda turn: turn[0].start):
        builder.turn(agent, content, path=span.path, role=role, input=given_input)
    return builder.build(task, what="the spans")


def _span(raw: object, path: str) -> _Span:
    span = expect_object(raw, path)
    name = span.get("name")
    name = name if isinstance(name, str) else ""
    if "spanId" in span or "startTimeUnixNano" in span:
        otlp_attributes = _otlp_attributes(span.get("attributes", []), f"{path}.attributes")
        otlp_events = [
            (
                str(event.get("name", "")),
                _otlp_attributes(event.get("attributes", []), f"{path}.events[{i}].attributes"),
            )
            for i, event in enumerate(expect_list(span.get("events", []), f"{path}.events"))
            if isinstance(event, Mapping)
        ]
        start = _nanos(span.get("startTimeUnixNano"), f"{path}.startTimeUnixNano")
        parent = span.get("parentSpanId") or None
        return _Span(path, _id(span.get("spanId")), _id(parent), name, (0, start, ""), otlp_attributes, otlp_events)
    attributes = expect_object(span.get("attributes", {}), f"{path}.attributes")
    events = [
        (str(event.get("name", "")), expect_object(event.get("attributes", {}), f"{path}.events[{i}].attributes"))
        for i, event in enumerate(expect_list(span.get("events", []), f"{path}.events"))
        if isinstance(event, Mapping)
    ]
    context = span.get("context")
    span_id = context.get("span_id") if isinstance(context, Mapping) else None
    start_time = span.get("start_time")
    return _Span(
        path, _id(span_id), _id(span.get("parent_id")), name, (1, 0, str(start_time or "")), attributes, events
    )


def _id(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def _nanos(value: object, path: str) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise GraphError(f"{path}: expected nanoseconds since the epoch, got {value!r}")


def _otlp_attributes(value: object, path: str) -> dict[str, Any]:
    """OTLP's `[{"key", "value": AnyValue}]` as a dict of plain values."""
    attributes: dict[str, Any] = {}
    for index, entry in enumerate(expect_list(value, path)):
        entry = expect_object(entry, f"{path}[{index}]")
        key = entry.get("key")
        if not isinstance(key, str):
            raise GraphError(f"{path}[{index}].key: expected a string, got {key!r}")
        attributes[key] = _any_value(entry.get("value"), 0)
    return attributes


def _any_value(value: object, depth: int) -> Any:
    if not isinstance(value, Mapping) or depth > 16:
        return None
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        raw = value["intValue"]
        return int(raw) if isinstance(raw, str) and raw.lstrip("-").isdigit() else raw
    if "arrayValue" in value:
        array = value["arrayValue"]
        items = array.get("values", []) if isinstance(array, Mapping) else []
        return [_any_value(item, depth + 1) for item in items] if isinstance(items, list) else []
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"]
        items = kvlist.get("values", []) if isinstance(kvlist, Mapping) else []
        return {
            str(item.get("key")): _any_value(item.get("value"), depth + 1)
            for item in items
            if isinstance(item, Mapping)
        }
    return None


def _text(value: object) -> str:
    """An attribute's text: a JSON string of messages or parts is read as messages."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("[", "{"):
            try:
                parsed = json.loads(stripped)
            except (ValueError, RecursionError):
                return value
            return message_text(parsed) or value
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    return message_text(value)


def _indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenLLMetry's `prefix.N.role` / `prefix.N.content` / `prefix.N.tool_calls.M.name` attributes
    as messages, in index order."""
    messages: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        index, _, field = key[len(prefix) + 1 :].partition(".")
        if not index.isdigit() or not field:
            continue
        message = messages.setdefault(int(index), {})
        if field.startswith("tool_calls."):
            call_index, _, call_field = field[len("tool_calls.") :].partition(".")
            calls = message.setdefault("tool_calls", {})
            calls.setdefault(call_index, {})[call_field] = value
        else:
            message[field] = value
    result = []
    for position in sorted(messages):
        message = messages[position]
        if "tool_calls" in message:
            message["tool_calls"] = list(message["tool_calls"].values())
        result.append(message)
    return result


def _output_text(span: _Span) -> str:
    for key in ("gen_ai.output.messages", "gen_ai.completion"):
        if key in span.attributes:
            return _text(span.attributes[key])
    indexed = _indexed(span.attributes, "gen_ai.completion")
    if indexed:
        return message_text(indexed)
    for name, attributes in span.events:
        for key in ("gen_ai.output.messages", "gen_ai.completion"):
            if key in attributes:
                return _text(attributes[key])
        if name == "gen_ai.choice":
            return _text(attributes.get("message", attributes.get("content")))
    return ""


def _input_messages(span: _Span) -> list[Any]:
    for key in ("gen_ai.input.messages", "gen_ai.prompt"):
        if key in span.attributes:
            return _as_messages(span.attributes[key])
    indexed = _indexed(span.attributes, "gen_ai.prompt")
    if indexed:
        return indexed
    messages: list[Any] = []
    for name, attributes in span.events:
        for key in ("gen_ai.input.messages", "gen_ai.prompt"):
            if key in attributes:
                return _as_messages(attributes[key])
        if name == "gen_ai.user.message":
            messages.append({"role": "user", "content": _text(attributes.get("content"))})
    return messages


def _as_messages(value: object) -> list[Any]:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return [{"role": "user", "content": value}]
        value = parsed
    if isinstance(value, list):
        return value
    return [value]


def _first_user_message(span: _Span) -> str:
    for message in _input_messages(span):
        if isinstance(message, Mapping) and message.get("role") in ("user", "human"):
            return message_text(message.get("parts", message.get("content")))
    return ""


def _agent_of(span: _Span, by_id: Mapping[str, _Span]) -> str:
    node: _Span | None = span
    for _ in range(_MAX_DEPTH):
        if node is None:
            break
        name = node.attributes.get("gen_ai.agent.name")
        if isinstance(name, str) and name.strip():
            return name.strip()
        node = by_id.get(node.parent) if node.parent else None
    model = span.attributes.get("gen_ai.request.model") or span.attributes.get("gen_ai.response.model")
    return str(model) if model else "assistant"


def _ancestors(span: _Span, by_id: Mapping[str, _Span]) -> list[int]:
    found: list[int] = []
    node = by_id.get(span.parent) if span.parent else None
    for _ in range(_MAX_DEPTH):
        if node is None:
            break
        found.append(id(node))
        node = by_id.get(node.parent) if node.parent else None
    return found
