"""Who&When failure attribution scored with the CIG pipeline (`trust eval whowhen`).

Each log of the algorithm-generated split (Zhang et al., ICML 2025) names the agent that made the
decisive mistake (`mistake_agent`) and the step where it happened (`mistake_step`, a 0-based index
into `history`, stored as a string). The pipeline audits the log without looking at the labels
(`trust.services.localize.audit_agent_log`: CIG, the network's auditors on every turn and message,
Algorithm 1) and predicts one
(agent, step).

Prediction rule (decision; the paper localizes a set of root causes, the benchmark wants one):
`trust.core.graphs.attribution.attribute`, which takes the earlier of Algorithm 1's earliest
Invalid_Root (a cascade starts at its first root, and Who&When labels the *decisive* first mistake)
and the turn where the log's wrong final answer was first stated, and, when neither exists, the
first turn that reasons (a prior, not a finding). Each prediction says which signal chose it
(`WhoWhenPrediction.basis`, shown in the table, never in the predictions file), so the share the
auditors found stays visible.

Stationarity (decision): the audits keep the lexical similarity whatever `AuditSettings.similarity`
says, unless a caller passes another: the score reads only the localization, so loading the
embedding model would cost seconds and change no figure.

Scoring follows the published convention: the agent matches when the names are equal ignoring case
(and surrounding blanks), the step when the indices are equal as integers. A step is never matched
as a substring ("1" does not match "10").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from trust.auditors.base import Auditor
from trust.core.graphs.agent_log import AgentLog, MistakeLabel
from trust.core.graphs.attribution import Basis, attribute
from trust.core.graphs.cig import Cig
from trust.core.graphs.localize import Localization
from trust.core.graphs.stationarity import Similarity
from trust.core.graphs.status import NodeStatus
from trust.errors import ConfigError, GraphError
from trust.services.localize import audit_agent_log, read_agent_log
from trust.settings import AuditSettings

__all__ = [
    "PUBLISHED_BASELINES",
    "WhoWhenItem",
    "WhoWhenPrediction",
    "WhoWhenReport",
    "WhoWhenScore",
    "agent_matches",
    "evaluate_whowhen",
    "log_files",
    "predict",
    "render",
    "score_whowhen",
    "step_matches",
]


@dataclass(frozen=True, slots=True)
class WhoWhenPrediction:
    """The predicted culprit of one log; `agent` and `step` are None when nothing was found.
    `basis` is the signal that chose it (`Basis`); it is not part of the predictions file."""

    id: str
    agent: str | None
    step: int | None
    basis: Basis | None = None

    def as_dict(self) -> dict[str, object]:
        return {"id": self.id, "agent": self.agent, "step": self.step}


@dataclass(frozen=True, slots=True)
class WhoWhenItem:
    """One scored log: the gold label next to the prediction."""

    id: str
    gold_agent: str
    gold_step: int
    prediction: WhoWhenPrediction

    @property
    def agent_correct(self) -> bool:
        return agent_matches(self.prediction.agent, self.gold_agent)

    @property
    def step_correct(self) -> bool:
        return step_matches(self.prediction.step, self.gold_step)


@dataclass(frozen=True, slots=True)
class WhoWhenScore:
    agent_accuracy: float
    step_accuracy: float
    n: int
    predicted: int

    def metrics(self) -> dict[str, float | int]:
        """The CLI's JSON line."""
        return {"agent_accuracy": self.agent_accuracy, "step_accuracy": self.step_accuracy, "n": self.n}


@dataclass(frozen=True, slots=True)
class WhoWhenReport:
    items: tuple[WhoWhenItem, ...]
    score: WhoWhenScore


def agent_matches(predicted: str | None, gold: str) -> bool:
    """Exact agent name, case-insensitive."""
    return predicted is not None and predicted.strip().casefold() == gold.strip().casefold()


def _index(value: int | str | None) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.isdigit() or (text.startswith("-") and text[1:].isdigit()):
        return int(text)
    return None


def step_matches(predicted: int | str | None, gold: int | str) -> bool:
    """Exact step index: both sides read as integers ("10" == 10), never as substrings."""
    want = _index(gold)
    got = _index(predicted)
    return want is not None and got is not None and got == want


def score_whowhen(items: Sequence[WhoWhenItem]) -> WhoWhenScore:
    """Accuracies over all items (an item without a prediction is wrong); 0.0 for an empty set."""
    n = len(items)
    if n == 0:
        return WhoWhenScore(0.0, 0.0, 0, 0)
    return WhoWhenScore(
        agent_accuracy=sum(item.agent_correct for item in items) / n,
        step_accuracy=sum(item.step_correct for item in items) / n,
        n=n,
        predicted=sum(item.prediction.agent is not None for item in items),
    )


def predict(item_id: str, localization: Localization, cig: Cig | None = None, task: str = "") -> WhoWhenPrediction:
    """With the CIG, the culprit `attribute` names (see the module docstring); without it, the
    earliest Invalid_Root alone, and no prediction when there is none."""
    if cig is not None:
        found = attribute(cig, localization, task)
        return WhoWhenPrediction(item_id, found.agent, found.step, found.basis)
    for cause in localization.root_causes:  # in time order
        if cause.status is NodeStatus.INVALID_ROOT:
            return WhoWhenPrediction(item_id, cause.agent, cause.step, Basis.ROOT_CAUSE)
    return WhoWhenPrediction(item_id, None, None)


def _sort_key(path: Path) -> tuple[int, int | str]:
    return (0, int(path.stem)) if path.stem.isdigit() else (1, path.stem)


def log_files(directory: Path) -> list[Path]:
    """The `*.json` logs of a Who&When folder, numerically ordered ("2.json" before "10.json")."""
    if not directory.exists():
        raise ConfigError(f"{directory}: no such folder; pass the Who&When folder (e.g. who_when/algorithm_generated)")
    if not directory.is_dir():
        raise ConfigError(f"{directory}: not a folder; pass the folder that holds the Who&When *.json logs")
    files = sorted((path for path in directory.glob("*.json") if path.is_file()), key=_sort_key)
    if not files:
        raise ConfigError(f"{directory}: holds no *.json log")
    return files


def _labelled(path: Path) -> tuple[AgentLog, MistakeLabel]:
    log = read_agent_log(path)
    if log.label is None:
        raise GraphError(f"{path}: missing field 'mistake_agent' and 'mistake_step': the log has no label to score")
    return log, log.label


async def evaluate_whowhen(
    files: Iterable[Path],
    settings: AuditSettings,
    auditors: Sequence[Auditor],
    *,
    similarity: Similarity | None = None,
    progress: Callable[[str], None] | None = None,
) -> WhoWhenReport:
    """Audits every log with `auditors` (`trust.auditors.tiers.offline_auditors` in `trust eval
    whowhen`: what `trust graph localize` runs) and scores the predictions. Logs are audited one
    after the other; within a log, turns then edges, a few at once (`trust.auditors.graph`).

    Raises `GraphError` naming the file and the field for a malformed log or one without labels.
    """
    items: list[WhoWhenItem] = []
    for path in files:
        log, label = _labelled(path)
        audit = await audit_agent_log(log, settings, auditors, similarity=similarity)
        prediction = predict(path.name, audit.localization, audit.cig, log.task)
        items.append(WhoWhenItem(path.name, label.agent, label.step, prediction))
        if progress is not None:
            progress(path.name)
    return WhoWhenReport(tuple(items), score_whowhen(items))


PUBLISHED_BASELINES: dict[str, tuple[float, float]] = {
    "GPT-4o all-at-once": (0.5433, 0.1250),
    "GPT-4o step-by-step": (0.3520, 0.2551),
    "GPT-4o binary search": (0.4413, 0.2398),
    "random": (0.2910, 0.1906),
}
"""(agent, step) accuracy on the algorithm-generated split with ground truth given (Zhang et al.,
ICML 2025; /work/shared/data/README.md)."""


def render(report: WhoWhenReport, console: Console, *, method: str | None = None) -> None:
    """The score beside the published baselines; `method` names a judging method (None: the CIG pipeline)."""
    score = report.score
    table = Table(title=f"Who&When (algorithm-generated), {score.n} logs")
    table.add_column("method")
    table.add_column("agent accuracy", justify="right")
    table.add_column("step accuracy", justify="right")
    if method is None:
        bases = Counter(item.prediction.basis for item in report.items)
        chosen = ", ".join(f"{bases[basis]} {basis.value.replace('_', ' ')}" for basis in Basis if bases[basis])
        name = f"TRUST CIG + Algorithm 1 + answer origin ({chosen or 'no prediction'})"
    else:
        name = f"{method} ({score.predicted} of {score.n} with a prediction)"
    table.add_row(
        name,
        f"{score.agent_accuracy:.2%}",
        f"{score.step_accuracy:.2%}",
    )
    for name, (agent, step) in PUBLISHED_BASELINES.items():
        table.add_row(f"[dim]{name} (published)[/dim]", f"[dim]{agent:.2%}[/dim]", f"[dim]{step:.2%}[/dim]")
    console.print(table)
