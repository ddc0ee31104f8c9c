"""The gas benchmark runs end to end; its figures are printed, not asserted against a budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from trust.lab.bench.gas import run_gas_benchmark

pytestmark = [pytest.mark.chain, pytest.mark.slow]


async def test_small_session_reports_every_phase() -> None:
    report = await run_gas_benchmark(segments=2, seats=3, auditors=4, runs=2, delivery_sets=())
    assert report.delivery is None
    summary = report.summary()
    assert set(summary) == {"sessions", "gas_per_seat", "draw", "commit", "reveal", "finalize"}
    assert summary["sessions"] == 1
    assert all(isinstance(v, int) and v > 0 for v in summary.values())
    assert summary["gas_per_seat"] == summary["draw"] + summary["commit"] + summary["reveal"] + summary["finalize"]
    assert report.runs == 2 and report.transactions["draw"] == 2 and len(report.run_totals) == 2
    # One commit, one reveal and one claim per auditor holding seats (1 to 4 of the 4 per run: six
    # draws with replacement).
    holders = report.transactions["commit"]
    assert report.transactions["reveal"] == report.transactions["claim"] == holders
    assert 2 * 1 <= holders <= 2 * 4


async def test_sessions_at_once_share_one_commit_and_one_reveal_per_auditor() -> None:
    """With three sessions open at once each auditor commits (and reveals) every seat it holds in
    all three with one transaction, so a seat's share of the transaction's base cost falls."""
    alone = await run_gas_benchmark(segments=2, seats=3, auditors=4, runs=1, delivery_sets=())
    together = await run_gas_benchmark(segments=2, seats=3, auditors=4, runs=1, sessions=3, delivery_sets=())
    assert together.seats == 3 * alone.seats == 18
    assert together.transactions["draw"] == together.transactions["create"] == 3
    # At most one commit and one reveal per auditor, whatever the sessions ...
    assert together.transactions["commit"] == together.transactions["reveal"] <= 4
    # ... so a seat's commit and reveal cost less than in a session alone. Per seat held: a commit
    # pays per distinct seat, and the draws (with replacement) give each run a different share of
    # repeats, so a figure per nominal seat compares the draws rather than the batching.
    assert together.per_distinct_seat("commit") + together.per_distinct_seat("reveal") < alone.per_distinct_seat(
        "commit"
    ) + alone.per_distinct_seat("reveal")
    assert together.summary()["sessions"] == 3
    with pytest.raises(ValueError, match="sessions must be at least 1"):
        await run_gas_benchmark(segments=1, seats=3, auditors=3, runs=1, sessions=0, delivery_sets=())


async def test_key_delivery_in_batches_costs_less_per_set_than_one_call_each() -> None:
    report = await run_gas_benchmark(segments=1, seats=3, auditors=3, runs=1, delivery_sets=(1, 4, 12))
    delivery = report.delivery
    assert delivery is not None
    assert (delivery.seats_per_set, delivery.single_transactions) == (3, 12)
    assert [(b.sets, b.seats_per_set) for b in delivery.batches] == [(1, 3), (4, 3), (12, 3)]
    single, *batches = delivery.batches
    # One set alone costs what publishEnvelopes costs, give or take its struct's calldata ...
    assert abs(single.gas - delivery.single_gas) < delivery.single_gas // 20
    # ... and each further set spares a transaction and a session read.
    per_set = [b.per_set for b in delivery.batches]
    assert per_set == sorted(per_set, reverse=True) and per_set[0] > per_set[-1]
    assert all(delivery.saving_bps(b) > 0 for b in batches)
    assert all(abs(b.per_envelope * 3 - b.per_set) <= 2 for b in delivery.batches)


async def test_delivery_sets_are_checked() -> None:
    with pytest.raises(ValueError, match="at least one set per batch"):
        await run_gas_benchmark(segments=1, seats=3, auditors=3, runs=1, delivery_sets=(10, 0))
    with pytest.raises(ValueError, match=r"exceeds the contract's MAX_BATCH_ENVELOPES \(256\); measure at most 85"):
        await run_gas_benchmark(segments=1, seats=3, auditors=3, runs=1, delivery_sets=(86,))


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
    assert "key delivery (provider)" in result.stdout and "publishEnvelopesBatch" in result.stdout
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(last) == {"sessions", "gas_per_seat", "draw", "commit", "reveal", "finalize"}
