"""`trust graph`: decompose traces into HDAGs, localize faults in agent logs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from trust.cli.common import (
    HomeOption,
    console,
    err_console,
    settings_for,
)

__all__ = ["graph_app", "graph_hdag_cmd", "graph_localize_cmd"]

graph_app = typer.Typer(
    help="Reasoning graphs: decompose traces into HDAGs, localize faults in agent logs.", no_args_is_help=True
)


@graph_app.command("localize")
def graph_localize_cmd(
    log: Annotated[
        Path,
        typer.Argument(
            help="agent log JSON: trust.agent-log, Who&When, AutoGen, LangSmith, OpenAI Agents, CrewAI, OTel GenAI"
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
    home: HomeOption = None,
) -> None:
    """Build the CIG of an agent log, audit every turn and message, and localize faults (Algorithm 1).

    The network's auditors judge it, built as a worker builds them: tier 1 always, tier 2 when
    TRUST_AUDITOR_LLM__BASE_URL is set."""

    from trust.services.localize import localize_log_file, render

    report = localize_log_file(log, settings_for(home))
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        render(report, console)


@graph_app.command("hdag")
def graph_hdag_cmd(
    file: Annotated[Path, typer.Argument(help="trace: raw chain-of-thought text, or JSON steps with --steps")],
    steps: Annotated[
        bool, typer.Option("--steps", help='FILE is JSON: a list of steps, or {"problem": ..., "steps": [...]}')
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the HDAG as JSON (trust.hdag v1)")] = False,
    home: HomeOption = None,
) -> None:
    """Decompose a reasoning trace into an HDAG (LLM endpoint when configured, else deterministic)."""

    from trust.core.graphs.serialization import dumps
    from trust.services.decompose import decompose_file, render

    result = asyncio.run(decompose_file(file, settings_for(home), steps=steps))
    for warning in result.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)
    if as_json:
        typer.echo(dumps(result.hdag))
    else:
        render(result, console)
