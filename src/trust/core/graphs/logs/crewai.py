"""CrewAI task outputs.

A crew's result (`CrewOutput`, dumped with `model_dump()`) is `{"raw", "pydantic", "json_dict",
"tasks_output": [...], "token_usage"}`; each task's (`TaskOutput`) is `{"description", "name",
"expected_output", "summary", "raw", "pydantic", "json_dict", "agent", "output_format"}`, where
`agent` is the role of the agent that did the task. Accepted as a CrewOutput, as a list of
TaskOutputs, or as one TaskOutput.

One turn per task, in the order the crew ran them: spoken by `agent`, its content the task's `raw`
output (or its `json_dict` when `raw` is empty), its input the task's `description` (what the agent
was asked). A TaskOutput does not record the tool calls an agent made while working (they stay
inside the agent's executor), so a crew's log has no tool turns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from trust.core.graphs.agent_log import AgentLog, LogLimits
from trust.core.graphs.logs.common import LogBuilder, expect_list, expect_object, type_name
from trust.errors import GraphError

__all__ = ["CREWAI", "crewai_tasks", "parse_crewai"]

CREWAI = "crewai"


def crewai_tasks(data: object) -> tuple[Sequence[Any], str] | None:
    """The task outputs and their path when `data` has CrewAI's shape, else None."""
    if isinstance(data, Mapping):
        if "tasks_output" in data:
            return expect_list(data["tasks_output"], "tasks_output"), "tasks_output"
        if _is_task_output(data):
            return [data], "task"
        return None
    if isinstance(data, list) and data and _is_task_output(data[0]):
        return data, "tasks"
    return None


def _is_task_output(value: object) -> bool:
    return isinstance(value, Mapping) and {"agent", "raw", "description"} <= set(value)


def parse_crewai(data: object, limits: LogLimits | None = None) -> AgentLog:
    found = crewai_tasks(data)
    if found is None:
        raise GraphError('not a CrewAI output: expected {"tasks_output": [...]} or task outputs')
    tasks, root = found
    builder = LogBuilder(CREWAI, limits)
    for index, raw in enumerate(tasks):
        path = root if root == "task" else f"{root}[{index}]"
        task = expect_object(raw, path)
        agent = task.get("agent")
        if not isinstance(agent, str) or not agent.strip():
            raise GraphError(f"{path}.agent: expected the role of the agent that did the task, got {agent!r}")
        content = task.get("raw")
        if content is None or content == "":
            content = json.dumps(task["json_dict"], ensure_ascii=False) if task.get("json_dict") else ""
        if not isinstance(content, str):
            raise GraphError(f"{path}.raw: expected a string, got {type_name(content)}")
        description = task.get("description", "")
        if not isinstance(description, str):
            raise GraphError(f"{path}.description: expected a string, got {type_name(description)}")
        builder.turn(agent.strip(), content, path=path, input=description)
    return builder.build("", what=f"the {root}")
