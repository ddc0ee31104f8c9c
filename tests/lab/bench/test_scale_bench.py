"""`trust bench scale` (trust.lab.bench.scale): its figures and ratio, its checks on the sizes, and
one small run of the command on a real local network."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from trust.lab.bench.scale import ScaleBench, SizeRun, run_scale_benchmark
from trust.services.sdk.result import Verdict


def _run(nodes: int, overhead_s: float, *, right: bool = True) -> SizeRun:
    flawed = nodes // 2
    result = SimpleNamespace(
        verdict=Verdict.INVALID,
        root_causes=[SimpleNamespace(node_id=f"s{flawed if right else flawed + 1}")],
        overhead_s=overhead_s,
        seats=3 * nodes,
    )
    return SizeRun(nodes, flawed, result, wall_s=nodes / 4, gas=300_000 * nodes, ipfs_bytes=4_000 * nodes)  # type: ignore[arg-type]


def test_the_summary_gives_each_size_and_the_ratio_of_the_two_largest() -> None:
    bench = ScaleBench((_run(100, 20.0), _run(10, 3.0), _run(1000, 190.0)), workers=12)
    summary = bench.summary()
    assert list(summary["sizes"]) == ["10", "100", "1000"]
    assert summary["ratio_1000_100"] == 9.5
    assert summary["sizes"]["100"] == {
        "overhead_s": 20.0,
        "total_s": 25.0,
        "segments_per_s": 4.0,
        "seats": 300,
        "gas_per_seat": 100_000,
        "ipfs_bytes": 400_000,
        "right": True,
    }
    assert bench.all_right
    assert ScaleBench((_run(10, 3.0),), workers=3).summary().keys() == {"workers", "sizes"}


def test_a_wrong_root_cause_is_not_right() -> None:
    bench = ScaleBench((_run(10, 3.0), _run(100, 20.0, right=False)), workers=3)
    assert not bench.all_right and bench.summary()["ratio_100_10"] == 6.67


@pytest.mark.parametrize(
    ("sizes", "workers", "message"),
    [
        ((), 12, "at least one size"),
        ((10, 1), 12, "sizes must be 2 to 1024"),
        ((10, 2000), 12, "sizes must be 2 to 1024"),
        ((10, 10), 12, "each size once"),
        ((10,), 2, "at least 3 workers"),
    ],
)
def test_bad_sizes_are_refused_before_anything_starts(sizes: tuple[int, ...], workers: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        asyncio.run(run_scale_benchmark(sizes=sizes, workers=workers))


@pytest.mark.slow
def test_the_command_audits_each_size_and_ends_with_json(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trust", "bench", "scale", "--nodes", "6", "--nodes", "3", "--workers", "3"],
        env=dict(os.environ, TRUST_HOME=str(tmp_path), COLUMNS="200"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert list(summary["sizes"]) == ["3", "6"] and summary["ratio_6_3"] > 0
    for figures in summary["sizes"].values():
        assert figures["right"] is True and figures["seats"] > 0 and figures["gas_per_seat"] > 0
        assert figures["ipfs_bytes"] > 0 and figures["overhead_s"] > 0
    assert "overhead of 6 nodes / overhead of 3 nodes" in done.stdout
