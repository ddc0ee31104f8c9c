"""`trust eval`: score the audit pipeline on public evaluation data."""

from __future__ import annotations

import asyncio
import json
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

    from trust.lab.evaluation.progress import progress_bar
    from trust.lab.evaluation.whowhen import (
        WhoWhenReport,
        evaluate_whowhen,
        evaluate_whowhen_with_model,
        log_files,
        render,
    )

    settings = settings_for(home)
    files = log_files(directory)
    with progress_bar("Who&When", err_console) as bar:
        task = bar.add_task("", total=len(files))

        def advance(name: str) -> None:
            bar.update(task, advance=1, description=name)

        if settings.llm.configured:
            from trust.adapters.llm.client import LlmClient

            async def with_model() -> WhoWhenReport:
                async with LlmClient(settings.llm) as client:
                    return await evaluate_whowhen_with_model(files, settings.audit, client, progress=advance)

            report = asyncio.run(with_model())
        else:
            report = evaluate_whowhen(files, settings.audit, progress=advance)
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

    from trust.lab.evaluation.processbench import (
        ProcessBenchReport,
        evaluate_processbench,
        evaluate_processbench_with_model,
        load_processbench,
        render,
    )
    from trust.lab.evaluation.progress import progress_bar

    settings = settings_for(home)
    items = load_processbench(file)
    tau_node = settings.audit.tau_node
    with progress_bar("ProcessBench", err_console) as bar:
        task = bar.add_task("", total=len(items))

        def advance(item_id: str) -> None:
            bar.update(task, advance=1, description=item_id)

        if settings.llm.configured:
            from trust.adapters.llm.client import LlmClient

            async def with_model() -> ProcessBenchReport:
                async with LlmClient(settings.llm) as client:
                    return await evaluate_processbench_with_model(items, client, tau_node=tau_node, progress=advance)

            report = asyncio.run(with_model())
        else:
            report = evaluate_processbench(items, tau_node=tau_node, progress=advance)
    if predictions is not None:
        write_lines(predictions, [{"id": item.id, "label": label} for item, label in report.predictions])
    if as_json:
        typer.echo(json.dumps(report.score.metrics()))
    else:
        render(report, console)
