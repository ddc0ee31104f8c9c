"""`trust eval`: score the audit pipeline on public evaluation data."""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Annotated

import typer

from trust.cli.common import (
    HomeOption,
    PredictionsOption,
    console,
    err_console,
    settings_for,
    write_lines,
)

__all__ = ["eval_app", "eval_processbench_cmd", "eval_whowhen_cmd"]

eval_app = typer.Typer(help="Score the audit pipeline on public evaluation data.", no_args_is_help=True)


@eval_app.command("whowhen")
def eval_whowhen_cmd(
    directory: Annotated[Path, typer.Argument(help="folder of Who&When logs (*.json)")],
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON line of metrics")] = False,
    predictions: PredictionsOption = None,
    home: HomeOption = None,
) -> None:
    """Who&When failure attribution: predict (agent, step) per log with the CIG pipeline and score it."""

    from trust.auditors.tiers import offline_auditors
    from trust.lab.evaluation.progress import progress_bar
    from trust.lab.evaluation.whowhen import WhoWhenReport, evaluate_whowhen, log_files, render

    settings = settings_for(home)
    files = log_files(directory)
    with progress_bar("Who&When", err_console) as bar:
        task = bar.add_task("", total=len(files))

        def advance(name: str) -> None:
            bar.update(task, advance=1, description=name)

        async def run() -> WhoWhenReport:
            async with AsyncExitStack() as stack:
                auditors = await offline_auditors(settings, stack)
                return await evaluate_whowhen(files, settings.audit, auditors, progress=advance)

        report = asyncio.run(run())
    if predictions is not None:
        write_lines(predictions, [item.prediction.as_dict() for item in report.items])
    if as_json:
        typer.echo(json.dumps(report.score.metrics()))
    else:
        render(report, console)


@eval_app.command("processbench")
def eval_processbench_cmd(
    file: Annotated[Path, typer.Argument(help="ProcessBench JSON file (e.g. processbench/gsm8k.json)")],
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON line of metrics")] = False,
    predictions: PredictionsOption = None,
    home: HomeOption = None,
) -> None:
    """ProcessBench: predict the earliest wrong step of each solution (-1: none) and score it."""

    from trust.auditors.tiers import llm_auditor
    from trust.lab.evaluation.processbench import ProcessBenchReport, evaluate_processbench, load_processbench, render
    from trust.lab.evaluation.progress import progress_bar

    settings = settings_for(home)
    items = load_processbench(file)
    tau_node = settings.audit.tau_node
    with progress_bar("ProcessBench", err_console) as bar:
        task = bar.add_task("", total=len(items))

        def advance(item_id: str) -> None:
            bar.update(task, advance=1, description=item_id)

        async def run() -> ProcessBenchReport:
            # The exact operation check of the decomposed steps is tier 1 here; the tier-2 auditor
            # joins it when an endpoint is configured, built as a worker builds it.
            async with AsyncExitStack() as stack:
                auditors = (
                    [await llm_auditor(settings, stack, share_server=False)] if settings.auditor_llm.configured else []
                )
                return await evaluate_processbench(items, tau_node=tau_node, auditors=auditors, progress=advance)

        report = asyncio.run(run())
    if predictions is not None:
        write_lines(predictions, [{"id": item.id, "label": label} for item, label in report.predictions])
    if as_json:
        typer.echo(json.dumps(report.score.metrics()))
    else:
        render(report, console)
