"""Decomposing a trace file into an HDAG: the use case behind `trust graph hdag`.

Reads a trace (raw chain-of-thought text, or JSON steps), decomposes it with the configured LLM
endpoint when there is one (`Settings().llm.configured`) and with the deterministic decomposer
otherwise or when the model fails (`trust.core.decompose.model.decompose_with_model`), and renders
the result as a tree.

Accepted step files (`steps=True`): a JSON array of strings, or an object with a `steps` array and
an optional `problem` (or `question`) string; other fields are ignored, so a ProcessBench item
saved on its own is a valid step file. Without `steps`, a file is read as what it claims to be
(`trust.services.sdk.inputs`): a file that opens with `{` or `[`, or is named `*.json`, must be JSON and a
steps or trust.hdag document, never decomposed as prose.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from trust.adapters.llm.client import LlmClient
from trust.core.decompose.model import DecompositionResult, decompose_with_model
from trust.core.decompose.rules import DecompositionLimits, Trace
from trust.core.graphs.analysis import topological_order
from trust.core.graphs.hdag import EdgeType, Hdag
from trust.errors import ConfigError, GraphError
from trust.services.sdk.inputs import read_json, steps_trace, trace_from_text
from trust.settings import Settings

__all__ = ["decompose_file", "decompose_trace", "load_trace", "read_trace", "render"]

_BYTES_PER_CHAR = 4  # UTF-8 needs at most four bytes per character


def read_trace(path: Path, *, steps: bool, limits: DecompositionLimits | None = None) -> Trace | Hdag:
    """The trace in `path`, read as what it claims to be (`trust.services.sdk.inputs`): prose, or, when the
    text opens with `{` or `[` or the file is named `*.json`, JSON that must parse (the error names
    the line, column and character) and be a steps document or a trust.hdag document. With `steps`
    the file must be a steps document."""
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
        return trace_from_text(text, str(path), name=path.name)
    try:
        document = read_json(text, str(path))
    except GraphError as exc:
        raise GraphError(f"--steps needs JSON: {exc}; drop --steps for a raw text trace") from None
    return steps_trace(document, str(path))


def load_trace(path: Path, *, steps: bool, limits: DecompositionLimits | None = None) -> Trace:
    """`read_trace` for decomposition: a trust.hdag document is already decomposed, so it is refused
    with a pointer to what takes it."""
    trace = read_trace(path, steps=steps, limits=limits)
    if isinstance(trace, Hdag):
        raise GraphError(
            f"{path} is a trust.hdag document: it is decomposed already, there is nothing to decompose "
            "(audit it as it is with `trust submit`)"
        )
    return trace


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
