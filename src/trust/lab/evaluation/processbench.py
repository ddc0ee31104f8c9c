"""ProcessBench (GSM8K subset) scored with the HDAG pipeline (`trust eval processbench`).

Each item is a problem, a solution cut into steps, and `label`: the 0-based index of the earliest
wrong step, or -1 when every step is right (Zheng et al., 2024). The pipeline predicts the earliest
step it judges wrong, or -1 when it judges none wrong:

1. The steps are decomposed with `trust.core.decompose.rules.from_steps` (step `s{i+1}` is `steps[i]`);
   every closed calculation written in a step becomes an operation child with a checkable
   `expression`, which `trust.core.maths.arithmetic.check_expression` evaluates exactly (tier 1).
   A step with an operation that does not hold is wrong. An expression that cannot be evaluated
   judges nothing.
2. Any auditors passed in (`trust.auditors.base.Auditor`) judge each step as an agent turn: agent
   "solver", the problem as its input, the earlier steps as its parents, exactly as a seat would
   see it. A decided score below tau_node makes the step wrong. `trust eval processbench` passes
   the tier-2 auditor (`trust.auditors.tiers.llm_auditor`) when `Settings().auditor_llm` names an
   endpoint.

Scoring follows the published convention: accuracy on the erroneous items (the exact earliest-error
index), accuracy on the correct items (the prediction must be -1), and F1 = their harmonic mean
(0 when either is 0).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from trust.auditors.base import Auditor, AuditRequest, Check, Verdict
from trust.auditors.checks.arithmetic import ArithmeticCheck
from trust.auditors.checks.equations import EquationCheck
from trust.auditors.checks.provenance import AssumptionCheck, ProvenanceCheck
from trust.auditors.computational import ComputationalAuditor
from trust.core.decompose.rules import from_steps
from trust.core.graphs.cig import AgentTurn, Role
from trust.core.graphs.hdag import Hdag, Level
from trust.core.maths.arithmetic import check_expression
from trust.errors import ConfigError, GraphError

__all__ = [
    "PUBLISHED_F1",
    "MAX_FILE_BYTES",
    "Method",
    "ProcessBenchItem",
    "ProcessBenchReport",
    "ProcessBenchScore",
    "StepJudgement",
    "StepVerdicts",
    "evaluate_processbench",
    "judge_steps",
    "load_processbench",
    "predict",
    "render",
    "render_score",
    "score_processbench",
    "step_verdicts",
    "tier1_auditor",
    "tier1_checks",
]

MAX_FILE_BYTES = 512 * 1024 * 1024
SOLVER = "solver"


class Method(StrEnum):
    """How `trust eval processbench` judges the steps.

    `TIERS`: the tier-1 checks, and the tier-2 auditor when `Settings().auditor_llm` names an
    endpoint (what a worker would run); `TIER1`: the tier-1 checks alone, with no model, whatever
    is configured."""

    TIERS = "tiers"
    TIER1 = "tier1"


def tier1_checks() -> list[Check]:
    """The deterministic checks of a worked solution's step, in order: every calculation
    recomputed exactly, every operand traced to the problem, an earlier step or a constant, and
    no number brought in by an assumption the problem did not make."""
    return [ArithmeticCheck(), EquationCheck(), ProvenanceCheck(), AssumptionCheck()]


def tier1_auditor() -> ComputationalAuditor:
    """Tier 1 over `tier1_checks`: a step fails when any check fails."""
    return ComputationalAuditor(tier1_checks(), name="tier1")


@dataclass(frozen=True, slots=True)
class ProcessBenchItem:
    id: str
    problem: str
    steps: tuple[str, ...]
    label: int


@dataclass(frozen=True, slots=True)
class StepJudgement:
    """Why a step was judged wrong: the operations that do not hold and the auditors' critiques."""

    index: int
    wrong_operations: tuple[str, ...] = ()
    critiques: tuple[str, ...] = ()

    @property
    def wrong(self) -> bool:
        return bool(self.wrong_operations or self.critiques)


@dataclass(frozen=True, slots=True)
class ProcessBenchScore:
    error_acc: float
    correct_acc: float
    f1: float
    n: int
    n_error: int
    n_correct: int

    def metrics(self) -> dict[str, float | int]:
        """The CLI's JSON line."""
        return {"error_acc": self.error_acc, "correct_acc": self.correct_acc, "f1": self.f1, "n": self.n}


@dataclass(frozen=True, slots=True)
class ProcessBenchReport:
    predictions: tuple[tuple[ProcessBenchItem, int], ...]
    score: ProcessBenchScore


def _item(entry: object, index: int, path: Path) -> ProcessBenchItem:
    where = f"{path}: item [{index}]"
    if not isinstance(entry, dict):
        raise GraphError(f"{where}: expected an object, got {type(entry).__name__}")
    for key in ("id", "problem", "steps", "label"):
        if key not in entry:
            raise GraphError(f"{where}: missing field {key!r}")
    item_id, problem, steps, label = entry["id"], entry["problem"], entry["steps"], entry["label"]
    if not isinstance(item_id, str) or not item_id:
        raise GraphError(f"{where}.id: expected a non-empty string, got {item_id!r}")
    where = f"{path}: item {item_id!r}"
    if not isinstance(problem, str):
        raise GraphError(f"{where}.problem: expected a string, got {type(problem).__name__}")
    if not isinstance(steps, list) or not steps:
        raise GraphError(f"{where}.steps: expected a non-empty list of strings")
    for position, step in enumerate(steps):
        if not isinstance(step, str) or not step.strip():
            raise GraphError(f"{where}.steps[{position}]: expected a non-empty string, got {step!r}")
    if isinstance(label, bool) or not isinstance(label, int) or not -1 <= label < len(steps):
        raise GraphError(f"{where}.label: expected -1 or a step index in 0..{len(steps) - 1}, got {label!r}")
    return ProcessBenchItem(item_id, problem, tuple(steps), label)


def load_processbench(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> list[ProcessBenchItem]:
    """Reads a ProcessBench JSON file (a list of items); errors name the file, the item and the field."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; pass ProcessBench's gsm8k.json") from None
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; pass ProcessBench's gsm8k.json")
    if size > max_bytes:
        raise GraphError(f"{path}: {size:,} bytes, above the limit of {max_bytes:,}")
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise GraphError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise GraphError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, list):
        raise GraphError(f"{path}: expected a JSON list of items, got {type(data).__name__}")
    items = [_item(entry, index, path) for index, entry in enumerate(data)]
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise GraphError(f"{path}: item id {item.id!r} appears twice")
        seen.add(item.id)
    return items


def _wrong_operations(hdag: Hdag, step_id: str) -> tuple[str, ...]:
    wrong = []
    for child in hdag.children(step_id):
        node = hdag.node(child)
        if node.level is Level.OPERATION and node.expression is not None:
            if check_expression(node.expression).holds is False:
                wrong.append(node.content)
    return tuple(wrong)


def _turn(item: ProcessBenchItem, index: int, text: str) -> AgentTurn:
    return AgentTurn(f"t{index}", index, SOLVER, Role.EXPERT, text, item.problem)


StepVerdicts = Mapping[int, Sequence[tuple[str, Verdict]]]
"""Per step index, each auditor's (name, verdict) on that step (`step_verdicts`)."""


async def step_verdicts(item: ProcessBenchItem, auditors: Sequence[Auditor]) -> dict[int, list[tuple[str, Verdict]]]:
    """Every auditor's verdict on every step (see the module docstring)."""
    turns = [_turn(item, index, text) for index, text in enumerate(item.steps)]
    found: dict[int, list[tuple[str, Verdict]]] = {}
    for index, turn in enumerate(turns):
        request = AuditRequest(turn, tuple(turns[:index]))
        found[index] = [(auditor.name, await auditor.audit(request)) for auditor in auditors]
    return found


def judge_steps(
    item: ProcessBenchItem,
    *,
    verdicts: StepVerdicts | None = None,
    tau_node: float,
    check_operations: bool = True,
    stop_at_first: bool = True,
) -> list[StepJudgement]:
    """The judgement of each step in order (up to the first wrong one with `stop_at_first`), from
    the operation check and the auditors' `verdicts`."""
    hdag = from_steps(item.problem, list(item.steps)) if check_operations else None
    judgements: list[StepJudgement] = []
    for index, _ in enumerate(item.steps):
        wrong = _wrong_operations(hdag, f"s{index + 1}") if hdag is not None else ()
        critiques = tuple(
            f"{name}: {verdict.critique}" if verdict.critique else name
            for name, verdict in (verdicts or {}).get(index, ())
            if verdict.score is not None and verdict.score < tau_node
        )
        judgement = StepJudgement(index, wrong, critiques)
        judgements.append(judgement)
        if stop_at_first and judgement.wrong:
            break
    return judgements


def predict(
    item: ProcessBenchItem,
    *,
    verdicts: StepVerdicts | None = None,
    tau_node: float,
    check_operations: bool = True,
) -> int:
    """The earliest step judged wrong, -1 when none is."""
    for judgement in judge_steps(item, verdicts=verdicts, tau_node=tau_node, check_operations=check_operations):
        if judgement.wrong:
            return judgement.index
    return -1


def score_processbench(pairs: Iterable[tuple[int | None, int]]) -> ProcessBenchScore:
    """Scores (predicted, gold) pairs: error_acc over gold != -1, correct_acc over gold == -1. A
    predicted None (a judge gave no usable answer) matches nothing."""
    error_hits = error_n = correct_hits = correct_n = 0
    for predicted, gold in pairs:
        if gold == -1:
            correct_n += 1
            correct_hits += predicted == -1
        else:
            error_n += 1
            error_hits += predicted == gold
    error_acc = error_hits / error_n if error_n else 0.0
    correct_acc = correct_hits / correct_n if correct_n else 0.0
    f1 = 2 * error_acc * correct_acc / (error_acc + correct_acc) if error_acc + correct_acc > 0 else 0.0
    return ProcessBenchScore(error_acc, correct_acc, f1, error_n + correct_n, error_n, correct_n)


async def evaluate_processbench(
    items: Sequence[ProcessBenchItem],
    *,
    tau_node: float,
    auditors: Sequence[Auditor] = (),
    check_operations: bool = True,
    progress: Callable[[str], None] | None = None,
) -> ProcessBenchReport:
    """Predicts every item (the operation check and the `auditors`) and scores the predictions."""
    if not check_operations and not auditors:
        raise ConfigError("nothing judges the steps: enable the operation check or pass at least one auditor")
    predictions: list[tuple[ProcessBenchItem, int]] = []
    for item in items:
        verdicts = await step_verdicts(item, auditors) if auditors else None
        try:
            label = predict(item, verdicts=verdicts, tau_node=tau_node, check_operations=check_operations)
        except GraphError as exc:
            raise GraphError(f"item {item.id!r}: {exc}") from None
        predictions.append((item, label))
        if progress is not None:
            progress(item.id)
    score = score_processbench((label, item.label) for item, label in predictions)
    return ProcessBenchReport(tuple(predictions), score)


PUBLISHED_F1: dict[str, float] = {
    "Qwen2.5-7B-Instruct": 0.365,
    "Llama-3.1-70B-Instruct": 0.749,
    "GPT-4o": 0.792,
    "o1-mini": 0.932,
}
"""F1 on ProcessBench's GSM8K subset (Zheng et al., 2024; /work/shared/data/README.md)."""


def render(report: ProcessBenchReport, console: Console) -> None:
    render_score(report.score, console)


def render_score(score: ProcessBenchScore, console: Console, *, method: str | None = None) -> None:
    """The score beside the published F1s; `method` names a judging method (None: the HDAG pipeline)."""
    table = Table(title=f"ProcessBench GSM8K, {score.n} items ({score.n_error} erroneous, {score.n_correct} correct)")
    table.add_column("method")
    table.add_column("error acc", justify="right")
    table.add_column("correct acc", justify="right")
    table.add_column("F1", justify="right")
    figures = (f"{score.error_acc:.2%}", f"{score.correct_acc:.2%}", f"{score.f1:.2%}")
    table.add_row(method or "TRUST HDAG + auditors", *figures)
    for name, f1 in PUBLISHED_F1.items():
        table.add_row(f"[dim]{name} (published)[/dim]", "", "", f"[dim]{f1:.1%}[/dim]")
    console.print(table)
