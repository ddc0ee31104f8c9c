"""The ranking benchmark on a small data set: every fit agrees with choix and recovers the truth."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from trust.errors import ConfigError
from trust.lab.bench.ranking import render, run_ranking_benchmark


def test_a_small_run_agrees_with_choix_and_recovers_the_strengths() -> None:
    seen: list[str] = []
    bench = run_ranking_benchmark(items=60, comparisons=6_000, seed=4, repeat=1, progress=seen.append)
    tasks = [(row.task, row.method) for row in bench.rows]
    assert [task for task, _ in tasks].count("Elo replay") == 1 and len(tasks) == 7
    for row in bench.rows:
        assert row.seconds > 0 and row.records in (6_000, 1_500)
        assert row.correlation_with_truth > 0.9, row
        if row.method.startswith("trust") and row.task != "Elo replay":
            assert row.max_difference_to_choix is not None and row.max_difference_to_choix < 1e-5, row
    assert any("four-item" in message for message in seen)
    assert json.loads(json.dumps(bench.to_json()))["rows"][0]["method"] == "trust (Newton)"
    console = Console(width=140, record=True)
    render(bench, console)
    assert "Plackett-Luce, 4-item" in console.export_text()


def test_the_same_seed_gives_the_same_data() -> None:
    first = run_ranking_benchmark(items=20, comparisons=400, seed=1, repeat=1)
    second = run_ranking_benchmark(items=20, comparisons=400, seed=1, repeat=1)
    assert [r.correlation_with_truth for r in first.rows] == [r.correlation_with_truth for r in second.rows]


@pytest.mark.parametrize(("items", "comparisons", "repeat"), [(1, 10, 1), (50, 10, 1), (10, 100, 0)])
def test_sizes_that_cannot_be_fitted_are_refused(items: int, comparisons: int, repeat: int) -> None:
    with pytest.raises(ConfigError, match="need items >= 2"):
        run_ranking_benchmark(items=items, comparisons=comparisons, repeat=repeat)
