"""The gas benchmark runs end to end; its figures are printed, not asserted against a budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from trust.bench.gas import run_gas_benchmark

pytestmark = [pytest.mark.chain, pytest.mark.slow]


async def test_small_session_reports_every_phase() -> None:
    report = await run_gas_benchmark(segments=2, seats=3, auditors=4, runs=2)
    summary = report.summary()
    assert set(summary) == {"gas_per_seat", "draw", "commit", "reveal", "finalize"}
    assert all(isinstance(v, int) and v > 0 for v in summary.values())
    assert summary["gas_per_seat"] == summary["draw"] + summary["commit"] + summary["reveal"] + summary["finalize"]
    assert report.runs == 2 and report.transactions["draw"] == 2 and len(report.run_totals) == 2
    # One commit, one reveal and one claim per auditor holding seats (3 or 4 of the 4, per run).
    holders = report.transactions["commit"]
    assert report.transactions["reveal"] == report.transactions["claim"] == holders
    assert 2 * 3 <= holders <= 2 * 4


def test_cli_ends_with_the_json_line() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "trust",
            "bench",
            "gas",
            "--segments",
            "2",
            "--seats",
            "3",
            "--auditors",
            "3",
            "--runs",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, COLUMNS="120"),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(last) == {"gas_per_seat", "draw", "commit", "reveal", "finalize"}
