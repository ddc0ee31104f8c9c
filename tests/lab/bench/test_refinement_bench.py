"""`trust bench refinement` (Proposition 2.1): the loop's re-executions match the closed form."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.lab.bench.refinement import balanced_tree, run_refinement_benchmark, subtree_size, tree_size
from trust.settings import AuditSettings, RefinementSettings

AUDIT = AuditSettings()
REFINE = RefinementSettings()


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6))
def test_tree_shape(branching: int, depth: int) -> None:
    cig = balanced_tree(branching, depth)
    assert len(cig) == tree_size(branching, depth)
    graph = cig.graph
    assert sum(graph.in_degree(n) == 0 for n in graph) == 1
    leaves = [n for n in graph if graph.out_degree(n) == 0]
    assert len(leaves) == branching ** (depth - 1)
    assert all(graph.out_degree(n) in (0, branching) for n in graph)


def test_binary_tree_savings_by_depth() -> None:
    progress: list[str] = []
    bench = run_refinement_benchmark(2, 6, audit_settings=AUDIT, refinement_settings=REFINE, progress=progress.append)
    assert bench.nodes == 63 and len(progress) == 6
    for cost in bench.costs:
        assert cost.reexecuted == cost.expected == subtree_size(2, 6, cost.error_depth)
        assert cost.repaired and cost.rounds == 1
    summary = bench.summary()
    assert summary["savings"] == {
        "root": 0.0,
        "mid": pytest.approx(1 - 15 / 63, abs=1e-6),
        "leaf": pytest.approx(1 - 1 / 63, abs=1e-6),
    }
    assert summary["by_depth"]["2"] == pytest.approx(1 - 31 / 63, abs=1e-6)
    assert summary["matches_closed_form"] is True and summary["all_repaired"] is True


def test_a_chain_saves_linearly() -> None:
    bench = run_refinement_benchmark(1, 4, audit_settings=AUDIT, refinement_settings=REFINE)
    assert [round(cost.savings, 6) for cost in bench.costs] == [0.0, 0.25, 0.5, 0.75]


def test_bounds() -> None:
    with pytest.raises(ValueError, match="above"):
        run_refinement_benchmark(10, 10, audit_settings=AUDIT, refinement_settings=REFINE)
    with pytest.raises(ValueError, match="branching >= 1"):
        balanced_tree(0, 3)


def test_cli_ends_with_the_json_line() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "trust", "bench", "refinement", "--branching", "2", "--depth", "5"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    assert figures["nodes"] == 31 and set(figures["savings"]) == {"root", "mid", "leaf"}
    assert figures["savings"]["root"] == 0.0 and figures["savings"]["leaf"] > 0.96
    assert len(figures["by_depth"]) == 5
