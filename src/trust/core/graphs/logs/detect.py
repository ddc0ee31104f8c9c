"""Which format an agent log is in, and the reader for it.

Detection looks only at the shape of the decoded JSON, never at its text, and each test names a
field that its format's exporter always writes and the other formats never put in the same place:
a `format` key (our own), `history` (Who&When), `resourceSpans` or span ids with attributes
(OpenTelemetry), `span_data` / `"object": "trace.span"` (OpenAI Agents SDK), `run_type` (LangSmith),
`tasks_output` or a task output's `agent` + `raw` + `description` (CrewAI), messages with `content`
and a speaker (AutoGen/AG2, tried last: its test is the loosest). A log that passes none gets one
`GraphError` that lists every readable format with the keys that identify it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from trust.core.graphs.agent_log import (
    FORMAT_NAME,
    WHO_WHEN,
    AgentLog,
    LogLimits,
    parse_agent_log,
    parse_who_when,
)
from trust.core.graphs.logs.autogen import AUTOGEN, autogen_messages, parse_autogen
from trust.core.graphs.logs.common import type_name
from trust.core.graphs.logs.crewai import CREWAI, crewai_tasks, parse_crewai
from trust.core.graphs.logs.langsmith import LANGSMITH, langsmith_runs, parse_langsmith
from trust.core.graphs.logs.openai_agents import OPENAI_AGENTS, openai_agents_items, parse_openai_agents
from trust.core.graphs.logs.otel import OTEL_GENAI, otel_spans, parse_otel_genai
from trust.errors import GraphError

__all__ = ["LOG_FORMATS", "LogFormat", "detect_log_format", "read_log"]


@dataclass(frozen=True, slots=True)
class LogFormat:
    """One readable format: its name (`AgentLog.source`), what people call it, the keys that
    identify it (for the error message), whether `data` has its shape, and its reader."""

    name: str
    title: str
    shape: str
    matches: Callable[[object], bool]
    read: Callable[[object, LogLimits | None], AgentLog]


def _is_ours(data: object) -> bool:
    return isinstance(data, Mapping) and data.get("format") == FORMAT_NAME


def _is_who_when(data: object) -> bool:
    return isinstance(data, Mapping) and "history" in data


LOG_FORMATS: tuple[LogFormat, ...] = (
    LogFormat(
        FORMAT_NAME, "TRUST agent log", '{"format": "trust.agent-log", "turns": [...]}', _is_ours, parse_agent_log
    ),
    LogFormat(
        WHO_WHEN, "Who&When", '{"question", "history": [{"name"?, "role", "content"}]}', _is_who_when, parse_who_when
    ),
    LogFormat(
        OTEL_GENAI,
        "OpenTelemetry GenAI spans",
        '{"resourceSpans": [...]} or a list of spans with gen_ai.* attributes',
        lambda data: otel_spans(data) is not None,
        parse_otel_genai,
    ),
    LogFormat(
        OPENAI_AGENTS,
        "OpenAI Agents SDK trace",
        'a list of {"object": "trace.span", "span_data"}, or {"data": [...]}',
        lambda data: openai_agents_items(data) is not None,
        parse_openai_agents,
    ),
    LogFormat(
        LANGSMITH,
        "LangChain/LangGraph run tree (LangSmith)",
        'a run {"run_type", "child_runs"} or a list of runs with "parent_run_id"',
        lambda data: langsmith_runs(data) is not None,
        parse_langsmith,
    ),
    LogFormat(
        CREWAI,
        "CrewAI output",
        '{"tasks_output": [{"agent", "description", "raw"}]}',
        lambda data: crewai_tasks(data) is not None,
        parse_crewai,
    ),
    LogFormat(
        AUTOGEN,
        "AutoGen/AG2 messages",
        'a list of {"name"|"source", "content"}, or {"messages": [...]}',
        lambda data: autogen_messages(data) is not None,
        parse_autogen,
    ),
)


def _format_of(data: object) -> LogFormat:
    if isinstance(data, Mapping) and "format" in data and data["format"] != FORMAT_NAME:
        raise GraphError(f"format: {data['format']!r} is not an agent-log format; expected {FORMAT_NAME!r}")
    for log_format in LOG_FORMATS:
        if log_format.matches(data):
            return log_format
    if isinstance(data, Mapping):
        keys = ", ".join(sorted(map(str, data))[:8]) or "none"
        found = f"an object with keys {keys}"
    elif isinstance(data, list):
        found = f"an array whose first item is {type_name(data[0])}" if data else "an empty array"
    else:
        found = type_name(data)
    readable = "; ".join(f"{log_format.title}: {log_format.shape}" for log_format in LOG_FORMATS)
    raise GraphError(f"unrecognised agent log ({found}). Readable formats: {readable}")


def detect_log_format(data: object) -> str:
    """The name of `data`'s format (an `AgentLog.source` value); `GraphError` listing the readable
    formats when it has none of their shapes."""
    return _format_of(data).name


def read_log(data: object, limits: LogLimits | None = None) -> AgentLog:
    """`data` read by the reader of its format."""
    return _format_of(data).read(data, limits)
