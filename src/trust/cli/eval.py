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

__all__ = ["eval_app", "eval_processbench_cmd", "eval_references_cmd", "eval_whowhen_cmd"]

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
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="tiers: the tier-1 checks, and the tier-2 auditor when TRUST_AUDITOR_LLM__BASE_URL is set; "
            "tier1: the tier-1 checks alone (no model)",
        ),
    ] = "tiers",
    home: HomeOption = None,
) -> None:
    """ProcessBench: predict the earliest wrong step of each solution (-1: none) and score it."""

    from trust.auditors.base import Auditor
    from trust.auditors.tiers import llm_auditor
    from trust.lab.evaluation.processbench import (
        Method,
        ProcessBenchReport,
        evaluate_processbench,
        load_processbench,
        render,
        tier1_auditor,
    )

    try:
        chosen = Method(method)
    except ValueError:
        raise typer.BadParameter(
            f"{method!r} is not a method; use one of {', '.join(m.value for m in Method)}", param_hint="--method"
        ) from None
    from trust.lab.evaluation.progress import progress_bar

    settings = settings_for(home)
    items = load_processbench(file)
    tau_node = settings.audit.tau_node
    with progress_bar("ProcessBench", err_console) as bar:
        task = bar.add_task("", total=len(items))

        def advance(item_id: str) -> None:
            bar.update(task, advance=1, description=item_id)

        async def run() -> ProcessBenchReport:
            # Tier 1 is the exact operation check of the decomposed steps and the tier-1 checks of
            # each step; with `tiers`, the tier-2 auditor joins them when an endpoint is configured,
            # built as a worker builds it.
            async with AsyncExitStack() as stack:
                auditors: list[Auditor] = [tier1_auditor()]
                if chosen is Method.TIERS and settings.auditor_llm.configured:
                    auditors.append(await llm_auditor(settings, stack, share_server=False))
                return await evaluate_processbench(items, tau_node=tau_node, auditors=auditors, progress=advance)

        report = asyncio.run(run())
    if predictions is not None:
        write_lines(predictions, [{"id": item.id, "label": label} for item, label in report.predictions])
    if as_json:
        typer.echo(json.dumps(report.score.metrics()))
    else:
        render(report, console)


@eval_app.command("references")
def eval_references_cmd(
    file: Annotated[Path, typer.Argument(help="GSM8K JSONL file of reference solutions (e.g. gsm8k/test.jsonl)")],
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON line of metrics")] = False,
    predictions: PredictionsOption = None,
    keep_annotations: Annotated[
        bool, typer.Option("--keep-annotations", help="leave the <<a*b=c>> calculator annotations in the steps")
    ] = False,
    home: HomeOption = None,
) -> None:
    """Tier 1's false alarms: run the tier-1 checks alone on GSM8K's reference solutions (all sound)."""

    from trust.lab.evaluation.processbench import evaluate_processbench, tier1_auditor
    from trust.lab.evaluation.progress import progress_bar
    from trust.lab.evaluation.references import load_references

    tau_node = settings_for(home).audit.tau_node
    items = load_references(file, keep_annotations=keep_annotations)
    with progress_bar("GSM8K references", err_console) as bar:
        task = bar.add_task("", total=len(items))

        def advance(item_id: str) -> None:
            bar.update(task, advance=1, description=item_id)

        report = asyncio.run(
            evaluate_processbench(items, tau_node=tau_node, auditors=[tier1_auditor()], progress=advance)
        )
    flagged = [(item, label) for item, label in report.predictions if label != -1]
    if predictions is not None:
        write_lines(predictions, [{"id": item.id, "label": label} for item, label in report.predictions])
    metrics = {"false_alarm_rate": len(flagged) / len(items), "flagged": len(flagged), "n": len(items)}
    if as_json:
        typer.echo(json.dumps(metrics))
    else:
        console.print(
            f"GSM8K reference solutions: {len(flagged)} of {len(items)} flagged by tier 1 "
            f"(false-alarm rate {metrics['false_alarm_rate']:.2%})"
        )
