"""The progress bar of long evaluations, drawn on the console it is given (the CLI's stderr)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

__all__ = ["progress_bar"]


def progress_bar(what: str, console: Console) -> Progress:
    """A transient bar: `what`, the bar, done/total, time left, and the item being scored."""
    return Progress(
        TextColumn(f"[bold]{what}[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
    )
