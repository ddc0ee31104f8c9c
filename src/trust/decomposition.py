"""Decomposing a trace file into an HDAG: the use case behind `trust graph hdag`.

Reads a trace (raw chain-of-thought text, or JSON steps), decomposes it with the configured LLM
endpoint when there is one (`Settings().llm.configured`) and with the deterministic decomposer
otherwise or when the model fails (`trust.graphs.llm_decompose.decompose_with_model`), and renders
the result as a tree.

Accepted step files (`steps=True`): a JSON array of strings, or an object with a `steps` array and
an optional `problem` (or `question`) string; other fields are ignored, so a ProcessBench item
saved on its own is a valid step file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from trust.errors import ConfigError, GraphError
from trust.graphs.analysis import topological_order
from trust.graphs.decompose import DecompositionLimits, Trace
from trust.graphs.hdag import EdgeType, Hdag
from trust.graphs.llm_decompose import DecompositionResult, decompose_with_model
from trust.llm import LlmClient
from trust.settings import Settings

__all__ = ["decompose_file", "decompose_trace", "load_trace", "render"]

_BYTES_PER_CHAR = 4  # UTF-8 needs at most four bytes per character


def load_trace(path: Path, *, steps: bool, limits: DecompositionLimits | None = None) -> Trace:
    """The trace in `path`: raw text, or with `steps` a JSON list of steps or {"problem", "steps"}."""
    limits = limits or DecompositionLimits()
    try:
        size = path.stat().st_size
        if size > limits.max_chars * _BYTES_PER_CHAR:
            raise GraphError(
                f"trace file {path} is {size:,} bytes, too large for the limit of {limits.max_chars:,} characters: "
                "split the trace"
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"trace file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"trace file {path} is a directory; pass a file") from None
    except UnicodeDecodeError as exc:
        raise GraphError(f"trace file {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"cannot read trace file {path}: {exc.strerror or exc}") from None
    if not steps:
        return Trace(text=text)
    return _steps_trace(text, path)


def _steps_trace(text: str, path: Path) -> Trace:
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphError(
            f"{path}: --steps needs JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "drop --steps for a raw text trace"
        ) from None
    except RecursionError:
        raise GraphError(f"{path}: JSON nested too deeply") from None
    problem: object = None
    if isinstance(document, dict):
        problem = document.get("problem", document.get("question"))
        if "steps" not in document:
            raise GraphError(
                f'{path}: the JSON object has no "steps" field; expected {{"problem": ..., "steps": [...]}}'
            )
        document = document["steps"]
    if not isinstance(document, list):
        raise GraphError(f"{path}: steps must be a JSON array of strings, got {type(document).__name__}")
    for index, step in enumerate(document):
        if not isinstance(step, str):
            raise GraphError(f"{path}: steps[{index}] must be a string, got {type(step).__name__}")
    if problem is not None and not isinstance(problem, str):
        raise GraphError(f"{path}: problem must be a string, got {type(problem).__name__}")
    return Trace(steps=tuple(document), problem=problem)


async def decompose_trace(
    trace: Trace, settings: Settings, *, limits: DecompositionLimits | None = None
) -> DecompositionResult:
    """The HDAG of `trace`, by the configured LLM endpoint when set, else deterministically."""
    if not settings.llm.configured:
        return await decompose_with_model(
            trace,
            None,
            temperature=settings.llm.decomposition_temperature,
            limits=limits,
            unavailable="no LLM endpoint configured (TRUST_LLM__BASE_URL is unset)",
        )
    async with LlmClient(settings.llm) as client:
        return await decompose_with_model(
            trace, client, temperature=settings.llm.decomposition_temperature, limits=limits
        )


async def decompose_file(path: Path, settings: Settings, *, steps: bool) -> DecompositionResult:
    """`load_trace` then `decompose_trace`."""
    return await decompose_trace(load_trace(path, steps=steps), settings)


def _label(hdag: Hdag, node_id: str, width: int) -> str:
    node = hdag.node(node_id)
    content = " ".join(node.content.split())
    if len(content) > width:
        content = content[: width - 3] + "..."
    text = (
        f"[bold]{escape(node.id)}[/bold] {node.level.label} · tier {int(node.tier)} · {node.difficulty.value}: "
        f"{escape(content)}"
    )
    if node.expression:
        text += f"  [cyan]⟨{escape(node.expression)}⟩[/cyan]"
    relations = [
        f"{hdag.edge_type(source, node_id).value} {escape(source)}"  # type: ignore[union-attr]
        for source in hdag.parents(node_id)
        if hdag.edge_type(source, node_id) is not EdgeType.DECOMPOSES_TO
    ]
    if relations:
        text += f"  [dim]({', '.join(relations)})[/dim]"
    return text


def render(result: DecompositionResult, console: Console, *, width: int = 90) -> None:
    """A readable tree: each node under its first decomposes_to parent, other edges noted on the node."""
    hdag = result.hdag
    goal = hdag.goals()[0]
    first = hdag.node(goal)
    console.print(
        f"HDAG by the {result.method} decomposer: {len(hdag)} nodes, {len(list(hdag.edges()))} edges, "
        f"domain {first.domain} (stakes {first.stakes})"
    )
    tree = Tree(_label(hdag, goal, width))
    branches = {goal: tree}
    for node_id in topological_order(hdag):
        node = hdag.node(node_id)
        if node.id == goal:
            continue
        parents = [p for p in hdag.parents(node.id) if hdag.edge_type(p, node.id) is EdgeType.DECOMPOSES_TO]
        home = next((branches[p] for p in parents if p in branches), None)
        if home is None:  # reached only through other edges: hang it under its first parent
            home = next((branches[p] for p in hdag.parents(node.id) if p in branches), tree)
        branches[node.id] = home.add(_label(hdag, node.id, width))
    console.print(tree)
