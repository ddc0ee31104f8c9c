"""`trust bench throughput` (trust.lab.bench.throughput): its traces, its arithmetic, and one small run
of the command on a real local network."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from trust.auditors.base import AuditRequest
from trust.auditors.tiers import computational_auditor
from trust.core.graphs.hdag import Tier
from trust.core.graphs.validation import violations
from trust.lab.bench.throughput import ThroughputBench, running_total_trace
from trust.lab.bench.worker import Latency
from trust.settings import SandboxSettings


@pytest.mark.parametrize("nodes", [2, 10, 101])
def test_a_running_total_has_exactly_the_nodes_asked_and_tier1_decides_each(nodes: int) -> None:
    sound = running_total_trace(nodes, random.Random(nodes))
    flawed = running_total_trace(nodes, random.Random(nodes), flawed_step=nodes - 1)
    auditor = computational_auditor(SandboxSettings())
    for trace, wrong in ((sound, set()), (flawed, {f"s{nodes - 1}"})):
        assert len(trace) == nodes and violations(trace) == []
        assert all(node.tier is Tier.COMPUTATIONAL for node in trace.nodes())
        scores = {
            node.id: asyncio.run(
                auditor.audit(AuditRequest(node, tuple(trace.node(p) for p in trace.parents(node.id))))
            ).score
            for node in trace.nodes()
        }
        assert {node_id for node_id, score in scores.items() if score == 0.0} == wrong
        assert all(score in (0.0, 1.0) for score in scores.values()), scores


def test_only_the_flawed_step_is_wrong_the_later_steps_carry_its_total_on() -> None:
    trace = running_total_trace(6, random.Random(3), flawed_step=2)
    steps = [trace.node(f"s{i}").content for i in range(1, 6)]
    totals = [int(step.split(" = ")[1]) for step in steps]
    assert [int(step.split(" + ")[0]) for step in steps[1:]] == totals[:-1]
    with pytest.raises(ValueError, match="flawed_step must be a step"):
        running_total_trace(6, random.Random(3), flawed_step=6)
    with pytest.raises(ValueError, match="at least one step"):
        running_total_trace(1, random.Random(3))


def test_the_summary_uses_the_benchmarks_one_latency_summary() -> None:
    """p50 and p95 are `trust.lab.bench.worker.Latency`'s (the inclusive method), as in `trust bench
    worker`; sessions per minute and segments per second are over the makespan."""
    latencies = [float(i) for i in range(1, 21)]
    runs = tuple(
        SimpleNamespace(latency_s=seconds, right=True, result=SimpleNamespace(seats=3)) for seconds in latencies
    )
    bench = ThroughputBench(runs, workers=3, nodes=10, makespan_s=30.0, gas=600)  # type: ignore[arg-type]
    summary = bench.summary()
    expected = Latency.of(latencies)
    assert summary["p50_s"] == round(expected.median_s, 3) == 10.5
    assert summary["p95_s"] == round(expected.p95_s, 3) == 19.05
    assert summary["sessions_per_min"] == 40.0 and summary["segments_per_s"] == round(200 / 30, 2)
    assert summary["seats"] == 60 and summary["gas_per_seat"] == 10 and summary["all_right"] is True


@pytest.mark.slow
def test_the_command_audits_sound_and_flawed_traces_at_once_and_ends_with_json(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trust", "bench", "throughput", "--sessions", "2", "--workers", "3", "--nodes", "3"],
        env=dict(os.environ, TRUST_HOME=str(tmp_path), COLUMNS="200"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["sessions"] == 2 and summary["all_right"] is True and summary["right_verdicts"] == 2
    assert summary["seats"] > 0 and summary["gas_per_seat"] > 0 and summary["p95_s"] >= summary["p50_s"] > 0
    assert "VALID" in done.stdout and "INVALID" in done.stdout
