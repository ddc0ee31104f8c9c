"""LangChain / LangGraph run trees as LangSmith exports them.

A run is `{"id", "name", "run_type", "inputs", "outputs", "start_time", "parent_run_id", "error",
"extra": {"metadata": {...}}, "child_runs": [...]}` (`langsmith.schemas.Run`); `run_type` is one of
chain, llm, tool, retriever, prompt, parser, embedding. Accepted as one root run with nested
`child_runs`, as a flat list of runs linked by `parent_run_id` (what `Client.list_runs` returns),
or as `{"runs": [...]}`.

The turns are the runs that speak: every `llm` run (a model's reply, its tool calls as `call
name(args)` lines) and every `tool` run (the tool's output, spoken by the tool, role tool), in the
order of the tree (children by `start_time`, a parent before its children). A trace with neither
takes its leaf runs instead. The agent of a model run is the LangGraph node that ran it: the first
segment of `metadata.langgraph_checkpoint_ns` (the top-level node: a supervisor's sub-agent keeps
its own name although its inner node is called "agent"), else `metadata.langgraph_node`, else the
root's child the run sits under (a LangChain AgentExecutor step), else the run's own name. The
task is the root run's input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trust.core.graphs.agent_log import AgentLog, LogLimits
from trust.core.graphs.cig import Role
from trust.core.graphs.logs.common import LogBuilder, expect_object, message_text
from trust.errors import GraphError

__all__ = ["LANGSMITH", "langsmith_runs", "parse_langsmith"]

LANGSMITH = "langsmith"

_SPEAKING = frozenset({"llm", "tool"})
_MAX_DEPTH = 256


def langsmith_runs(data: object) -> tuple[Sequence[Any], str] | None:
    """The runs and their path when `data` has the shape of a LangSmith export, else None."""
    if isinstance(data, Mapping):
        if "run_type" in data:
            return [data], "run"
        runs = data.get("runs")
        if isinstance(runs, list) and runs and isinstance(runs[0], Mapping) and "run_type" in runs[0]:
            return runs, "runs"
        return None
    if isinstance(data, list) and data and isinstance(data[0], Mapping) and "run_type" in data[0]:
        return data, "runs"
    return None


class _Run:
    __slots__ = ("children", "data", "parent", "path")

    def __init__(self, data: Mapping[str, Any], path: str, parent: _Run | None) -> None:
        self.data = data
        self.path = path
        self.parent = parent
        self.children: list[_Run] = []


def parse_langsmith(data: object, limits: LogLimits | None = None) -> AgentLog:
    found = langsmith_runs(data)
    if found is None:
        raise GraphError('not a LangSmith export: expected runs with "run_type"')
    raw_runs, root_path = found
    roots = _tree(raw_runs, root_path)
    ordered: list[_Run] = []
    stack = [(run, 0) for run in reversed(_by_start(roots))]
    while stack:
        run, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise GraphError(f"{run.path}: runs nested more than {_MAX_DEPTH} deep")
        ordered.append(run)
        stack.extend((child, depth + 1) for child in reversed(_by_start(run.children)))
    speaking = [run for run in ordered if run.data.get("run_type") in _SPEAKING]
    if not speaking:
        speaking = [run for run in ordered if not run.children and run.parent is not None]

    builder = LogBuilder(LANGSMITH, limits)
    for run in speaking:
        name = _name(run)
        error = run.data.get("error")
        if run.data.get("run_type") == "tool":
            text = _output_text(run.data.get("outputs"))
            if isinstance(error, str) and error:
                text = f"{text}\nerror: {error}".strip()
            builder.turn(name, text, path=run.path, role=Role.TOOL, input=_input_text(run.data.get("inputs")))
        else:
            text = _output_text(run.data.get("outputs"))
            if isinstance(error, str) and error:
                text = f"{text}\nerror: {error}".strip()
            builder.turn(_agent_of(run), text, path=run.path)
    task = _input_text(roots[0].data.get("inputs")) if roots else ""
    return builder.build(task, what="the run tree")


def _tree(raw_runs: Sequence[Any], root_path: str) -> list[_Run]:
    """The root runs, children attached from `child_runs` and from `parent_run_id`."""
    everything: list[_Run] = []
    stack: list[tuple[Any, str, _Run | None, int]] = [
        (raw, f"{root_path}[{index}]" if root_path == "runs" else root_path, None, 0)
        for index, raw in reversed(list(enumerate(raw_runs)))
    ]
    while stack:
        raw, path, parent, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise GraphError(f"{path}: runs nested more than {_MAX_DEPTH} deep")
        entry = expect_object(raw, path)
        if "run_type" not in entry:
            raise GraphError(f"{path}: missing field 'run_type' (a LangSmith run is chain, llm, tool, ...)")
        run = _Run(entry, path, parent)
        everything.append(run)
        if parent is not None:
            parent.children.append(run)
        children = entry.get("child_runs") or []
        if not isinstance(children, list):
            raise GraphError(f"{path}.child_runs: expected an array of runs")
        stack.extend(
            (child, f"{path}.child_runs[{i}]", run, depth + 1) for i, child in reversed(list(enumerate(children)))
        )
    by_id = {str(run.data["id"]): run for run in everything if run.data.get("id") is not None}
    roots: list[_Run] = []
    for run in everything:
        if run.parent is not None:
            continue
        parent_id = run.data.get("parent_run_id")
        parent = by_id.get(str(parent_id)) if parent_id is not None else None
        if parent is None or parent is run or _is_below(parent, run):
            roots.append(run)
        else:
            run.parent = parent
            parent.children.append(run)
    return roots


def _is_below(run: _Run, ancestor: _Run) -> bool:
    """Whether `ancestor` is above `run` already (linking would close a cycle)."""
    seen = 0
    node: _Run | None = run
    while node is not None and seen <= _MAX_DEPTH:
        if node is ancestor:
            return True
        node = node.parent
        seen += 1
    return False


def _by_start(runs: list[_Run]) -> list[_Run]:
    """Runs by `start_time` (ISO 8601 strings of one format sort as text), ties in file order."""
    return sorted(runs, key=lambda run: str(run.data.get("start_time") or ""))


def _name(run: _Run) -> str:
    name = run.data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise GraphError(f"{run.path}.name: expected the run's name, got {name!r}")
    return name.strip()


def _agent_of(run: _Run) -> str:
    metadata = _metadata(run)
    namespace = metadata.get("langgraph_checkpoint_ns")
    if isinstance(namespace, str) and namespace.strip():
        top = namespace.split("|", 1)[0].split(":", 1)[0].strip()
        if top:
            return top
    node = metadata.get("langgraph_node")
    if isinstance(node, str) and node.strip():
        return node.strip()
    step = run
    while step.parent is not None and step.parent.parent is not None:
        step = step.parent
    return _name(step)


def _metadata(run: _Run) -> Mapping[str, Any]:
    extra = run.data.get("extra")
    metadata = extra.get("metadata") if isinstance(extra, Mapping) else None
    if isinstance(metadata, Mapping):
        return metadata
    metadata = run.data.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def _output_text(outputs: object) -> str:
    """A model run's reply (`generations[0][0]`: its text, or its message with the tool calls), a
    tool run's `output`, or whatever text the outputs hold."""
    if isinstance(outputs, Mapping):
        generations = outputs.get("generations")
        if isinstance(generations, list) and generations:
            first = generations[0]
            generation = first[0] if isinstance(first, list) and first else first
            if isinstance(generation, Mapping):
                message = generation.get("message")
                text = message_text(message) if message is not None else ""
                return text or message_text(generation.get("text"))
        for key in ("output", "messages"):
            if key in outputs:
                value = outputs[key]
                return message_text(value[-1] if key == "messages" and isinstance(value, list) and value else value)
        return message_text(dict(outputs))
    return message_text(outputs)


def _input_text(inputs: object) -> str:
    """The first human input among a run's inputs: `input`, `question`, `query`, the first of
    `messages` (LangChain wraps a chat's messages in one more list), or the inputs' text."""
    if not isinstance(inputs, Mapping):
        return message_text(inputs)
    for key in ("input", "question", "query", "task"):
        if isinstance(inputs.get(key), str):
            return str(inputs[key])
    messages = inputs.get("messages")
    if isinstance(messages, list) and messages:
        first = messages[0]
        if isinstance(first, list) and first:
            first = first[0]
        return message_text(first)
    return message_text(dict(inputs))
