"""`trust bench graphs`: the synthetic HDAG, the figures' shape and the CLI's final JSON line (no timing asserts)."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.core.graphs.hdag import Level
from trust.core.graphs.validation import violations
from trust.lab.bench.graphs import run_graphs_benchmark, synthetic_hdag


@settings(max_examples=25, deadline=None)
@given(st.integers(69, 600))
def test_synthetic_hdag_has_exactly_n_nodes_and_is_valid(n: int) -> None:
    hdag = synthetic_hdag(n, random.Random(n))
    assert len(hdag) == n and violations(hdag) == []
    assert {node.level for node in hdag.nodes()} == set(Level)


def test_too_small_a_graph_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        synthetic_hdag(68, random.Random(0))
    with pytest.raises(ValueError, match="below the smallest"):
        run_graphs_benchmark([5], tau_node=0.8, tau_edge=0.8)


def test_figures_at_two_sizes() -> None:
    seen: list[str] = []
    bench = run_graphs_benchmark([100, 1_000], tau_node=0.8, tau_edge=0.8, repeat=1, progress=seen.append)
    assert [t.nodes for t in bench.sizes] == [100, 1_000] and len(seen) == 2
    for timing in bench.sizes:
        assert timing.hdag_edges >= timing.nodes - 1 and timing.cig_edges >= timing.nodes - 1
        assert 0 <= timing.pruned <= timing.nodes
        assert min(timing.hdag_build_s, timing.validate_s, timing.localize_s, timing.plan_repair_s) >= 0
    summary = bench.summary()
    assert {"localize_1k_s", "validate_1k_s", "localize_100_s", "plan_repair_1k_s"} <= set(summary)
    assert summary["repeat"] == 1


def test_cli_ends_with_the_json_line() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "trust", "bench", "graphs", "--size", "200", "--size", "1000", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    assert isinstance(figures["localize_1k_s"], float) and isinstance(figures["validate_1k_s"], float)
    assert "localize_200_s" in figures
