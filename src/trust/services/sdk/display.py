"""Showing an audit in a terminal: live progress bars, and the result as tables (rich)."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from trust.core.graphs.status import NodeStatus
from trust.services.sdk.progress import STAGES, ProgressEvent
from trust.services.sdk.result import PHASES, AuditResult, Outcome

__all__ = ["ProgressBars", "render_phases", "render_result"]

_STATUS_STYLE = {
    NodeStatus.VALID: "green",
    NodeStatus.INVALID_ROOT: "bold red",
    NodeStatus.INVALID_CASCADE: "yellow",
    NodeStatus.NEGLIGENT: "magenta",
    NodeStatus.UNDETERMINED: "cyan",
}


class ProgressBars:
    """A `ProgressCallback` drawing one bar per stage on `console` (stderr by default); a context manager."""

    def __init__(self, console: Console | None = None, *, title: str = "") -> None:
        self._title = f"{title} " if title else ""
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[note]}", style="dim"),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}
        self._labels = dict(STAGES)

    def __enter__(self) -> ProgressBars:
        self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._progress.stop()

    def __call__(self, event: ProgressEvent) -> None:
        task = self._tasks.get(event.stage)
        label = f"{self._title}{self._labels.get(event.stage, event.stage)}"
        if task is None:
            task = self._progress.add_task(label, total=max(event.total, 1), note="")
            self._tasks[event.stage] = task
        self._progress.update(task, completed=event.done, total=max(event.total, 1), note=escape(event.message[:60]))


def render_phases(results: dict[str, AuditResult], console: Console) -> None:
    """The Table-3 layout: one column of seconds per audit."""
    table = Table(title="Latency per phase (paper Table 3), seconds")
    table.add_column("Component")
    for name in results:
        table.add_column(name, justify="right")
    table.add_column("Parallelizable")
    for key, row, parallel in PHASES:
        cells = []
        for result in results.values():
            value = result.phases.seconds.get(key)
            cells.append("-" if value is None else f"{value:.3f}")
        table.add_row(row, *cells, parallel)
    table.add_row("Total", *(f"{r.phases.total_s:.3f}" for r in results.values()), "")
    table.add_row("Protocol overhead (total minus evaluation)", *(f"{r.overhead_s:.3f}" for r in results.values()), "")
    console.print(table)


def render_result(result: AuditResult, console: Console, *, title: str = "") -> None:
    """Verdict, every node with its status, the root causes with critiques, and the proof."""
    colour = "green" if result.valid else "red"
    heading = f"{title}: " if title else ""
    console.print(f"[bold]{escape(heading)}[{colour}]{result.verdict}[/{colour}][/bold] (session {result.session_id})")
    table = Table(show_edge=False)
    for column in ("node", "tier", "outcome", "status", "pass share", "rounds"):
        table.add_column(column)
    for node_id, node in result.nodes.items():
        style = _STATUS_STYLE.get(node.status, "")
        table.add_row(
            escape(node_id),
            str(node.tier),
            str(node.outcome),
            f"[{style}]{node.status}[/]",
            f"{node.pass_share:.2f}",
            str(node.rounds),
        )
    console.print(table)
    for cause in result.root_causes:
        console.print(f"  [bold red]root cause[/] {escape(cause.node_id)} ({cause.status}): {escape(cause.reason)}")
        for critique in cause.critiques:
            console.print(f"    tier {critique.tier} {escape(critique.auditor[:10])}..: {escape(critique.critique)}")
    for unit in (*result.contradictions, *result.edges):
        if unit.outcome is not Outcome.PASSED:
            what = "contradiction" if unit.kind == "contradiction" else "message"
            ended = "confirmed" if unit.kind == "contradiction" and unit.outcome is Outcome.FAILED else unit.outcome
            console.print(
                f"  [bold red]{what}[/] {escape(unit.source)} -> {escape(unit.target)} {ended} (tier {unit.tier})"
            )
    for pair in result.stationary:
        console.print(
            f"  [bold yellow]stuck in a loop[/] {escape(pair.agent)}: {escape(pair.later)} repeats "
            f"{escape(pair.earlier)} (similarity {pair.similarity:.2f})"
        )
    for node_id in result.undetermined:
        reason = result.nodes[node_id].reason or "undetermined"
        console.print(f"  [bold cyan]undetermined[/] {escape(node_id)}: {escape(reason)}")
    for reason in result.failure_reasons:
        console.print(f"  [dim]- {escape(reason)}[/]")
    proof = result.proof
    console.print(
        f"  proof: chain {proof.chain_id}, audit contract {proof.audit_contract}, session {proof.session_id}, "
        f"trace root {proof.trace_root}, finalized in block {proof.finalized_block} ({proof.finalize_tx})"
    )
    for name, hashes in result.transactions.items():
        shown = ", ".join(hashes[:3]) + (f" and {len(hashes) - 3} more" if len(hashes) > 3 else "")
        console.print(f"  {name}: {shown}")
