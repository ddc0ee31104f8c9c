"""OpenAI Agents SDK traces.

The SDK's exporters write each trace as `{"object": "trace", "id", "workflow_name", "group_id",
"metadata"}` and each span as `{"object": "trace.span", "id", "trace_id", "parent_id",
"started_at", "ended_at", "span_data": {...}, "error"}` (`Trace.export()`, `Span.export()`; the
backend exporter posts them as `{"data": [...]}`). Accepted as that list, as `{"data": [...]}`, or
as `{"trace": {...}, "spans": [...]}`.

`span_data.type` says what happened: `agent` (an agent ran; `name`, `handoffs`, `tools`),
`generation` (a Chat Completions call: `input` and `output` messages), `response` (a Responses API
call: only its `response_id` is exported, no text), `function` (a tool ran: `name`, `input`,
`output`), `handoff` (`from_agent`, `to_agent`), `guardrail`, `custom`, ...

The turns, in span order (`started_at`, then file order): a generation's output, spoken by the
agent whose span encloses it; a function's output, spoken by the tool (role tool, its arguments as
input). A handoff marks the handing agent's latest turn as addressed to the receiver, or becomes
that agent's own turn ("handoff to X") when it has not spoken yet. Response spans carry no text
and give no turn; a trace made only of them has no readable turn and is refused. The task is the
first user message of the first generation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trust.core.graphs.agent_log import AgentLog, LogLimits
from trust.core.graphs.cig import Role
from trust.core.graphs.logs.common import LogBuilder, expect_object, message_text
from trust.errors import GraphError

__all__ = ["OPENAI_AGENTS", "openai_agents_items", "parse_openai_agents"]

OPENAI_AGENTS = "openai-agents"

_MAX_DEPTH = 256


def openai_agents_items(data: object) -> tuple[Sequence[Any], str] | None:
    """The trace's items (trace and spans) and their path when `data` has the SDK's shape, else None."""
    if isinstance(data, Mapping):
        if isinstance(data.get("data"), list) and _looks_like_items(data["data"]):
            return data["data"], "data"
        if isinstance(data.get("spans"), list) and _looks_like_items(data["spans"]):
            return data["spans"], "spans"
        return None
    if isinstance(data, list) and _looks_like_items(data):
        return data, "items"
    return None


def _looks_like_items(items: Sequence[Any]) -> bool:
    return any(
        isinstance(item, Mapping) and (item.get("object") in ("trace", "trace.span") or "span_data" in item)
        for item in items[:4]
    )


def parse_openai_agents(data: object, limits: LogLimits | None = None) -> AgentLog:
    found = openai_agents_items(data)
    if found is None:
        raise GraphError('not an OpenAI Agents SDK trace: expected spans with "span_data"')
    items, root = found
    spans: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = []
    for index, raw in enumerate(items):
        path = f"{root}[{index}]"
        item = expect_object(raw, path)
        if item.get("object") == "trace":
            continue
        span_data = expect_object(item.get("span_data"), f"{path}.span_data")
        if not isinstance(span_data.get("type"), str):
            raise GraphError(f"{path}.span_data: missing field 'type' (agent, generation, function, handoff, ...)")
        spans.append((path, item, span_data))
    order = sorted(range(len(spans)), key=lambda i: (str(spans[i][1].get("started_at") or ""), i))
    by_id = {str(item["id"]): (path, item, span_data) for path, item, span_data in spans if item.get("id") is not None}

    builder = LogBuilder(OPENAI_AGENTS, limits)
    task = ""
    for position in order:
        path, item, span_data = spans[position]
        kind = span_data["type"]
        if kind == "generation":
            if not task:
                task = _first_user_message(span_data.get("input"))
            text = _error_text(message_text(span_data.get("output")), item)
            builder.turn(_agent_of(item, by_id, path), text, path=path)
        elif kind == "function":
            name = span_data.get("name")
            if not isinstance(name, str) or not name.strip():
                raise GraphError(f"{path}.span_data.name: expected the function's name, got {name!r}")
            text = _error_text(message_text(span_data.get("output")), item)
            builder.turn(name.strip(), text, path=path, role=Role.TOOL, input=message_text(span_data.get("input")))
        elif kind == "handoff":
            source, target = span_data.get("from_agent"), span_data.get("to_agent")
            if not isinstance(target, str) or not target:
                continue
            speaker = source if isinstance(source, str) and source else _agent_of(item, by_id, path)
            if not builder.address_last(speaker, target):
                builder.turn(speaker, f"handoff to {target}", path=path, recipient=target)
        elif kind == "response" and ("output" in span_data or "response" in span_data):
            # The SDK exports only the response id; a custom exporter may add the response itself.
            text = _error_text(message_text(span_data.get("output", span_data.get("response"))), item)
            builder.turn(_agent_of(item, by_id, path), text, path=path)
    return builder.build(task, what="the trace (its generation, function and handoff spans)")


def _agent_of(
    item: Mapping[str, Any], by_id: Mapping[str, tuple[str, Mapping[str, Any], Mapping[str, Any]]], path: str
) -> str:
    """The name of the agent span that encloses `item` (parent links, bounded)."""
    parent = item.get("parent_id")
    for _ in range(_MAX_DEPTH):
        if parent is None or str(parent) not in by_id:
            break
        _, span, span_data = by_id[str(parent)]
        if span_data.get("type") == "agent" and isinstance(span_data.get("name"), str) and span_data["name"]:
            return str(span_data["name"])
        parent = span.get("parent_id")
    raise GraphError(f"{path}: no enclosing agent span names who spoke (parent_id leads to no span of type 'agent')")


def _first_user_message(messages: object) -> str:
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, Mapping) and message.get("role") == "user":
                return message_text(message)
    return ""


def _error_text(text: str, item: Mapping[str, Any]) -> str:
    error = item.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        return f"{text}\nerror: {error['message']}".strip()
    return text
