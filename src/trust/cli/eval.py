"""`trust eval`: score the audit pipeline on public evaluation data."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from trust.cli.common import (
    HomeOption,
    PredictionsOption,
    console,
    err_console,
    settings_for,
    write_lines,
)

if TYPE_CHECKING:
    from trust.lab.evaluation.judges import JudgeChat
    from trust.lab.evaluation.processbench import ProcessBenchItem
    from trust.settings import Settings

T = TypeVar("T")

__all__ = [
    "PROCESSBENCH_METHODS",
    "WHOWHEN_METHODS",
    "eval_app",
    "eval_processbench_cmd",
    "eval_references_cmd",
    "eval_whowhen_cmd",
]

eval_app = typer.Typer(help="Score the audit pipeline on public evaluation data.", no_args_is_help=True)

DETERMINISTIC = "deterministic"
WHOWHEN_METHODS = (DETERMINISTIC, "all-at-once", "step-by-step", "binary-search", "combined")
"""`deterministic`: the CIG pipeline and Algorithm 1 (the network's auditors: tier 1, with tier 2 when an
auditor endpoint is set); the others: Who&When's judges and the combination
(`trust.lab.evaluation.judges.whowhen`)."""
PROCESSBENCH_METHODS = ("tiers", "tier1", "critic", "combined")
"""`tiers`: the HDAG pipeline and tier 1, with tier 2 when an auditor endpoint is set (what a worker
runs); `tier1`: the tier-1 checks alone, whatever is configured; `critic`: ProcessBench's critic
prompt; `combined`: tier 1 first, the critic where it is silent."""

LimitOption = Annotated[
    int | None,
    typer.Option("--limit", min=1, help="score only this many items, spread evenly over the file's order"),
]


def _checked_method(method: str, choices: tuple[str, ...], command: str) -> str:
    from trust.errors import ConfigError

    if method not in choices:
        raise ConfigError(f"--method {method!r}: `trust eval {command}` takes one of {', '.join(choices)}")
    return method


def _with_progress(title: str, total: int, work: Callable[[Callable[[str], None]], Coroutine[Any, Any, T]]) -> T:
    """Runs `work(advance)` under a progress bar of `total` items on stderr; `advance(name)` moves it
    one item on and shows the item's name."""
    from trust.lab.evaluation.progress import progress_bar

    with progress_bar(title, err_console) as bar:
        task = bar.add_task("", total=total)

        def advance(name: str) -> None:
            bar.update(task, advance=1, description=name)

        return asyncio.run(work(advance))


def _judge_note(endpoint: str, asked: int, cached: int, failures: list[str]) -> None:
    """What the judge ran on and how much was resumed from the cache, on stderr; endpoint failures
    are said, never hidden (each such item counts as wrong)."""
    err_console.print(f"judge: {endpoint}; {asked} question(s) asked, {cached} answered from the cache", soft_wrap=True)
    if failures:
        err_console.print(
            f"[yellow]{len(failures)} item(s) got no answer from the endpoint and count as wrong; "
            f"the first: {failures[0]}[/yellow]",
            soft_wrap=True,
        )


@eval_app.command("whowhen")
def eval_whowhen_cmd(
    directory: Annotated[Path, typer.Argument(help="folder of Who&When logs (*.json)")],
    method: Annotated[
        str, typer.Option("--method", help=f"one of {', '.join(WHOWHEN_METHODS)}", show_default=True)
    ] = DETERMINISTIC,
    limit: LimitOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON line of metrics")] = False,
    predictions: PredictionsOption = None,
    home: HomeOption = None,
) -> None:
    """Who&When failure attribution: predict (agent, step) per log and score it, with the CIG pipeline
    (deterministic) or a published LLM judging method on the endpoint the settings name."""

    from trust.auditors.tiers import offline_auditors
    from trust.lab.evaluation.sample import evenly_spaced
    from trust.lab.evaluation.whowhen import WhoWhenReport, evaluate_whowhen, log_files, render

    settings = settings_for(home)
    _checked_method(method, WHOWHEN_METHODS, "whowhen")
    files = evenly_spaced(log_files(directory), limit)
    if method != DETERMINISTIC:
        _judge_whowhen(files, method, settings, as_json=as_json, predictions=predictions)
        return

    async def run(advance: Callable[[str], None]) -> WhoWhenReport:
        async with AsyncExitStack() as stack:
            auditors = await offline_auditors(settings, stack)
            return await evaluate_whowhen(files, settings.audit, auditors, progress=advance)

    report = _with_progress("Who&When", len(files), run)
    if predictions is not None:
        write_lines(predictions, [item.prediction.as_dict() for item in report.items])
    if as_json:
        typer.echo(json.dumps(report.score.metrics()))
    else:
        render(report, console)


@eval_app.command("processbench")
def eval_processbench_cmd(
    file: Annotated[Path, typer.Argument(help="ProcessBench JSON file (e.g. processbench/gsm8k.json)")],
    method: Annotated[
        str, typer.Option("--method", help=f"one of {', '.join(PROCESSBENCH_METHODS)}", show_default=True)
    ] = "tiers",
    limit: LimitOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON line of metrics")] = False,
    predictions: PredictionsOption = None,
    home: HomeOption = None,
) -> None:
    """ProcessBench: predict the earliest wrong step of each solution (-1: none) and score it, with the
    HDAG pipeline (deterministic) or ProcessBench's critic prompt on the endpoint the settings name."""

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
    from trust.lab.evaluation.sample import evenly_spaced

    settings = settings_for(home)
    _checked_method(method, PROCESSBENCH_METHODS, "processbench")
    items = evenly_spaced(load_processbench(file), limit)
    if method not in {m.value for m in Method}:
        _judge_processbench(items, method, settings, as_json=as_json, predictions=predictions)
        return
    tau_node = settings.audit.tau_node

    async def run(advance: Callable[[str], None]) -> ProcessBenchReport:
        # Tier 1 is the exact operation check of the decomposed steps and the tier-1 checks of each
        # step; with `tiers`, the tier-2 auditor joins them when an endpoint is configured, built as
        # a worker builds it.
        async with AsyncExitStack() as stack:
            auditors: list[Auditor] = [tier1_auditor()]
            if method == Method.TIERS and settings.auditor_llm.configured:
                auditors.append(await llm_auditor(settings, stack, share_server=False))
            return await evaluate_processbench(items, tau_node=tau_node, auditors=auditors, progress=advance)

    report = _with_progress("ProcessBench", len(items), run)
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
    from trust.lab.evaluation.references import load_references

    tau_node = settings_for(home).audit.tau_node
    items = load_references(file, keep_annotations=keep_annotations)
    report = _with_progress(
        "GSM8K references",
        len(items),
        lambda advance: evaluate_processbench(items, tau_node=tau_node, auditors=[tier1_auditor()], progress=advance),
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


def _judged(
    title: str, total: int, settings: Settings, judge: Callable[[JudgeChat, Callable[[str], None]], Awaitable[T]]
) -> tuple[T, JudgeChat, str]:
    """Runs `judge` with a chat on the judge's endpoint (its answers cached under the home) and a
    progress bar of `total` items; returns its result, the chat (for its counts) and the endpoint."""
    from trust.lab.evaluation.judges import AnswerCache, JudgeChat, default_cache_path, judge_model

    async def run(advance: Callable[[str], None]) -> tuple[T, JudgeChat, str]:
        async with AsyncExitStack() as stack:
            endpoint = await judge_model(settings, stack)
            cache = stack.enter_context(AnswerCache(default_cache_path(settings.home)))
            chat = JudgeChat(endpoint.model, cache)
            return await judge(chat, advance), chat, endpoint.source

    return _with_progress(title, total, run)


def _judge_whowhen(
    files: list[Path], method: str, settings: Settings, *, as_json: bool, predictions: Path | None
) -> None:
    from trust.auditors.tiers import computational_auditor
    from trust.lab.evaluation.judges import judge_whowhen
    from trust.lab.evaluation.whowhen import render

    # combined: the tier-1 checks of the deterministic method (no tier-2 model: the judge is the
    # model here, and a second opinion of the same model would count it twice).
    auditors = [computational_auditor(settings.worker.sandbox)]
    (report, judged), chat, source = _judged(
        f"Who&When {method}",
        len(files),
        settings,
        lambda chat, advance: judge_whowhen(
            files, method, chat, settings=settings.audit, auditors=auditors, progress=advance
        ),
    )
    _judge_note(source, chat.asked, chat.cached, [j.attribution.error for j in judged if j.attribution.error])
    if predictions is not None:
        write_lines(predictions, [entry.as_dict() for entry in judged])
    if as_json:
        typer.echo(json.dumps(report.score.metrics() | {"method": method}))
    else:
        render(report, console, method=method)


def _judge_processbench(
    items: list[ProcessBenchItem], method: str, settings: Settings, *, as_json: bool, predictions: Path | None
) -> None:
    from trust.lab.evaluation.judges import judge_processbench
    from trust.lab.evaluation.processbench import render_score

    (score, critiques), chat, source = _judged(
        f"ProcessBench {method}",
        len(items),
        settings,
        lambda chat, advance: judge_processbench(
            items, method, chat, tau_node=settings.audit.tau_node, progress=advance
        ),
    )
    _judge_note(source, chat.asked, chat.cached, [c.error for c in critiques if c.error])
    if predictions is not None:
        write_lines(predictions, [critique.as_dict() for critique in critiques])
    if as_json:
        typer.echo(json.dumps(score.metrics() | {"method": method}))
    else:
        render_score(score, console, method=method)
