"""`trust bench ranking`: the rating fits at scale, against `choix` on the same data.

Synthetic data with known truth, generated from a seed: `items` log-strengths theta ~ N(0, 1) and
`comparisons` pairs drawn uniformly (a != b), each won by a with the Bradley-Terry probability
1 / (1 + exp(theta_b - theta_a)). On it:

- Bradley-Terry: `fit_bradley_terry` (Newton on the likelihood, from `Match` records) against
  `choix.ilsr_pairwise` (iterative Luce spectral ranking, from index pairs) at alpha = 0;
- Plackett-Luce: `fit_plackett_luce` (Hunter's MM) on the same won comparisons (two-item rankings),
  and on `comparisons / 4` four-item rankings drawn from the Plackett-Luce model (Gumbel-max: order
  theta + Gumbel noise), each against `choix.ilsr_rankings`;
- Elo: `replay_elo` over the comparisons in order (K = 32, every item starting at 1000); choix has no
  Elo, so its figure is the replay's speed and how well its final ratings order the items.

Each fit is timed `repeat` times and the median reported, from records already in memory (file
reading is not timed). Agreement with choix is the largest difference of centered log-strengths;
recovery of the truth is the Pearson correlation with theta (Spearman's for Elo).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import choix
import numpy as np
from numpy.typing import NDArray
from rich.console import Console
from rich.table import Table
from scipy import stats

from trust.core.ranking.bradley_terry import fit_bradley_terry
from trust.core.ranking.elo import EloConfig, replay_elo
from trust.core.ranking.plackett_luce import fit_plackett_luce
from trust.core.ranking.records import Match, Ranking
from trust.errors import ConfigError

__all__ = ["RankingBench", "RankingRow", "render", "run_ranking_benchmark"]

RANKING_SIZE = 4
"""Items per ranking in the Plackett-Luce ranking data (the arena's four-model battles)."""
ELO_K = 32.0
"""The judge document's K for new items."""


@dataclass(frozen=True, slots=True)
class RankingRow:
    """One method on one data set: its median seconds, agreement with choix and recovery of the truth."""

    task: str
    method: str
    records: int
    seconds: float
    max_difference_to_choix: float | None
    correlation_with_truth: float

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "method": self.method,
            "records": self.records,
            "seconds": round(self.seconds, 4),
            "max_difference_to_choix": None
            if self.max_difference_to_choix is None
            else float(f"{self.max_difference_to_choix:.3g}"),
            "correlation_with_truth": round(self.correlation_with_truth, 5),
        }


@dataclass(frozen=True, slots=True)
class RankingBench:
    items: int
    comparisons: int
    seed: int
    repeat: int
    rows: tuple[RankingRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "comparisons": self.comparisons,
            "seed": self.seed,
            "repeat": self.repeat,
            "rows": [row.to_json() for row in self.rows],
        }


def _timed(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    seconds = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result


def _centered(values: NDArray[np.float64]) -> NDArray[np.float64]:
    return values - values.mean()


def _ours(ratings: dict[str, float], names: list[str]) -> NDArray[np.float64]:
    return _centered(np.array([ratings[name] for name in names]))


def _distinct_rows(rng: np.random.Generator, items: int, count: int) -> NDArray[np.int64]:
    """`count` rows of RANKING_SIZE distinct items, uniformly: rows with a repeat are drawn again."""
    rows = rng.integers(0, items, (count, RANKING_SIZE))
    while True:
        ordered = np.sort(rows, axis=1)
        repeated = np.any(ordered[:, 1:] == ordered[:, :-1], axis=1)
        if not repeated.any():
            return rows
        rows[repeated] = rng.integers(0, items, (int(repeated.sum()), RANKING_SIZE))


def run_ranking_benchmark(
    *,
    items: int = 1_000,
    comparisons: int = 100_000,
    seed: int = 0,
    repeat: int = 3,
    progress: Callable[[str], None] | None = None,
) -> RankingBench:
    """Generates the data and times every fit (see the module docstring)."""
    if items < 2 or comparisons < items or repeat < 1:
        raise ConfigError(
            f"need items >= 2, comparisons >= items and repeat >= 1, got {items}, {comparisons} and {repeat}"
        )
    say = progress or (lambda _: None)
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, items)
    names = [f"item{i:05d}" for i in range(items)]
    a = rng.integers(0, items, comparisons)
    b = (a + rng.integers(1, items, comparisons)) % items
    a_won = rng.random(comparisons) < 1.0 / (1.0 + np.exp(theta[b] - theta[a]))
    winners, losers = np.where(a_won, a, b), np.where(a_won, b, a)
    matches = [Match(names[w], names[lo], 1.0) for w, lo in zip(winners.tolist(), losers.tolist(), strict=True)]
    pairs = list(zip(winners.tolist(), losers.tolist(), strict=True))
    # Four distinct items per ranking, ordered by theta plus Gumbel noise (a Plackett-Luce draw).
    chosen = _distinct_rows(rng, items, comparisons // RANKING_SIZE)
    noisy = theta[chosen] + rng.gumbel(size=chosen.shape)
    ranked = np.take_along_axis(chosen, np.argsort(-noisy, axis=1), axis=1)
    rankings = [Ranking(tuple(names[i] for i in row)) for row in ranked.tolist()]
    index_rankings = [tuple(row) for row in ranked.tolist()]

    rows: list[RankingRow] = []

    def row(task: str, method: str, records: int, seconds: float, estimate: NDArray[np.float64], ref: Any) -> None:
        difference = None if ref is None else float(np.max(np.abs(_centered(estimate) - _centered(ref))))
        rows.append(
            RankingRow(task, method, records, seconds, difference, float(stats.pearsonr(estimate, theta).statistic))
        )

    say("Bradley-Terry: choix I-LSR")
    choix_bt_seconds, choix_bt = _timed(repeat, lambda: choix.ilsr_pairwise(items, pairs, alpha=0.0))
    say("Bradley-Terry: trust")
    bt_seconds, bt = _timed(repeat, lambda: fit_bradley_terry(matches, ties="half"))
    row("Bradley-Terry, 2-item", "trust (Newton)", comparisons, bt_seconds, _ours(bt.ratings(), names), choix_bt)
    row("Bradley-Terry, 2-item", "choix ilsr_pairwise", comparisons, choix_bt_seconds, np.asarray(choix_bt), None)

    say("Plackett-Luce on the comparisons: choix I-LSR")
    two = [tuple(p) for p in pairs]
    choix_pl2_seconds, choix_pl2 = _timed(repeat, lambda: choix.ilsr_rankings(items, two, alpha=0.0))
    say("Plackett-Luce on the comparisons: trust")
    pl2_seconds, pl2 = _timed(repeat, lambda: fit_plackett_luce(matches))
    row("Plackett-Luce, 2-item", "trust (MM)", comparisons, pl2_seconds, _ours(pl2.ratings(), names), choix_pl2)
    row("Plackett-Luce, 2-item", "choix ilsr_rankings", comparisons, choix_pl2_seconds, np.asarray(choix_pl2), None)

    say(f"Plackett-Luce on {len(rankings)} four-item rankings: choix I-LSR")
    choix_pl4_seconds, choix_pl4 = _timed(repeat, lambda: choix.ilsr_rankings(items, index_rankings, alpha=0.0))
    say(f"Plackett-Luce on {len(rankings)} four-item rankings: trust")
    pl4_seconds, pl4 = _timed(repeat, lambda: fit_plackett_luce(rankings))
    row("Plackett-Luce, 4-item", "trust (MM)", len(rankings), pl4_seconds, _ours(pl4.ratings(), names), choix_pl4)
    row("Plackett-Luce, 4-item", "choix ilsr_rankings", len(rankings), choix_pl4_seconds, np.asarray(choix_pl4), None)

    say("Elo replay")
    config = EloConfig(k=ELO_K)
    elo_seconds, elo = _timed(repeat, lambda: replay_elo(matches, config))
    elo_ratings = np.array([elo.ratings.get(name, config.initial_rating) for name in names])
    rows.append(
        RankingRow(
            "Elo replay",
            "trust (K 32)",
            comparisons,
            elo_seconds,
            None,
            float(stats.spearmanr(elo_ratings, theta).statistic),
        )
    )
    return RankingBench(items, comparisons, seed, repeat, tuple(rows))


def render(bench: RankingBench, console: Console) -> None:
    table = Table(
        title=(
            f"Ratings at scale: {bench.comparisons:,} comparisons among {bench.items:,} items "
            f"(seed {bench.seed}, median of {bench.repeat})"
        )
    )
    for column in ("task", "method", "records", "seconds", "max |diff| to choix", "corr. with truth"):
        table.add_column(column, justify="left" if column in ("task", "method") else "right")
    for row in bench.rows:
        table.add_row(
            row.task,
            row.method,
            f"{row.records:,}",
            f"{row.seconds:.3f}",
            "-" if row.max_difference_to_choix is None else f"{row.max_difference_to_choix:.2e}",
            f"{row.correlation_with_truth:.4f}",
        )
    console.print(table)
