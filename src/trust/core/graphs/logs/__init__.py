"""Readers of the agent logs people have, one module per format, and the detector that picks one.

Every reader turns its format into the one `trust.core.graphs.agent_log.AgentLog` that
`build_cig` makes a CIG of: which agent spoke (tools as agents of role tool), to whom when the
format says, what it said, in order. `read_log` detects the format and reads it; it is what
`trust.core.graphs.agent_log.parse_log` calls. docs/graphs.md documents each format.
"""

from trust.core.graphs.logs.autogen import AUTOGEN, parse_autogen
from trust.core.graphs.logs.crewai import CREWAI, parse_crewai
from trust.core.graphs.logs.detect import LOG_FORMATS, LogFormat, detect_log_format, read_log
from trust.core.graphs.logs.langsmith import LANGSMITH, parse_langsmith
from trust.core.graphs.logs.openai_agents import OPENAI_AGENTS, parse_openai_agents
from trust.core.graphs.logs.otel import OTEL_GENAI, parse_otel_genai

__all__ = [
    "AUTOGEN",
    "CREWAI",
    "LANGSMITH",
    "LOG_FORMATS",
    "OPENAI_AGENTS",
    "OTEL_GENAI",
    "LogFormat",
    "detect_log_format",
    "parse_autogen",
    "parse_crewai",
    "parse_langsmith",
    "parse_openai_agents",
    "parse_otel_genai",
    "read_log",
]
