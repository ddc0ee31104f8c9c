"""`trust bench theory`: the figures' shape and the final JSON line (no timing asserts)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from rich.console import Console

from trust.core.theory.montecarlo import default_trace_model
from trust.errors import ParameterError
from trust.lab.bench import theory
from trust.lab.bench.theory import DEFAULT_KS, render, run_theory_benchmark


def test_exported_names_exist() -> None:
    assert all(hasattr(theory, name) for name in theory.__all__)


def test_small_run_has_every_figure_and_ends_with_the_json_line() -> None:
    seen: list[str] = []
    bench = run_theory_benchmark(np.random.default_rng(0), traces=2_000, calls=2, payoff_paths=50, progress=seen.append)
    assert len(seen) == 3
    assert [t.k for t in bench.pass_probability] == list(DEFAULT_KS) == list(range(1, 102))
    assert all(t.ms > 0 for t in bench.pass_probability)
    assert bench.traces == bench.monte_carlo.n == bench.monte_carlo.failed.trials == 2_000
    assert bench.monte_carlo_s > 0 and bench.payoff_s > 0 and bench.payoff.n_paths == 50
    assert bench.exact_failure == default_trace_model().failure_probability()
    assert bench.monte_carlo.failed.contains(bench.exact_failure)

    summary = bench.summary()
    assert {
        "pass_probability_mean_ms",
        "pass_probability_max_ms",
        "pass_probability_max_k",
        "monte_carlo_s",
        "monte_carlo_traces",
        "monte_carlo_failure_rate",
        "monte_carlo_failure_high",
        "exact_failure_probability",
        "payoff_s",
    } <= set(summary)
    assert summary["monte_carlo_traces"] == 2_000
    assert summary["pass_probability_max_ms"] >= summary["pass_probability_mean_ms"] > 0
    assert 1 <= summary["pass_probability_max_k"] <= 101

    out = io.StringIO()
    render(bench, Console(file=out, width=120, force_terminal=False))
    lines = out.getvalue().strip().splitlines()
    assert json.loads(lines[-1]) == summary
    assert any("Monte Carlo of 2,000 traces" in line for line in lines)


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ParameterError, match="^traces "):
        run_theory_benchmark(np.random.default_rng(0), traces=0)
    with pytest.raises(ParameterError, match="^payoff_paths "):
        run_theory_benchmark(np.random.default_rng(0), payoff_paths=1)
