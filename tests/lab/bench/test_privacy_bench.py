"""`trust bench privacy`: committee draws, coalition figures and the CLI's final JSON line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from trust.core.decompose.rules import from_steps
from trust.lab.bench.privacy import (
    AuditorPool,
    PrivacyTrace,
    draw_committees,
    load_traces,
    make_pool,
    measure_trace,
    run_privacy_benchmark,
    trace_from_graph,
)

PROCESSBENCH = Path("/work/shared/data/processbench/gsm8k.json")
WHO_WHEN = Path("/work/shared/data/who_when/algorithm_generated")


def _chain(n: int, tier: int = 2) -> PrivacyTrace:
    """n nodes in a chain: node i's need-to-know is {i, i - 1}."""
    masks = tuple((1 << i) | ((1 << (i - 1)) if i else 0) for i in range(n))
    return PrivacyTrace(f"chain{n}", "cig", (tier,) * n, masks)


def test_an_hdag_becomes_masks_of_need_to_know_with_routed_tiers() -> None:
    hdag = from_steps("How many?", ["2 + 3 = 5", "So 5."])
    trace = trace_from_graph("x", hdag)
    ids = [node.id for node in hdag.nodes()]
    assert trace.nodes == len(ids) and trace.kind == "hdag"
    assert trace.tiers == tuple(int(node.tier) for node in hdag.nodes())
    for i, node_id in enumerate(ids):
        members = {ids[b] for b in range(len(ids)) if trace.need_masks[i] >> b & 1}
        assert members == {node_id, *hdag.parents(node_id)}


def test_committees_seat_at_most_k_distinct_auditors_of_the_nodes_tier() -> None:
    rng = np.random.default_rng(1)
    pool = make_pool(30, rng)
    trace = PrivacyTrace("t", "hdag", (1, 2, 3, 2) * 50, (1, 2, 4, 8) * 50)
    sizes = (3, 5, 4)
    seen = set()
    for members, tier in zip(draw_committees(trace, pool, sizes, rng), trace.tiers, strict=True):
        assert 1 <= len(members) == len(set(members.tolist())) <= sizes[tier - 1]
        assert set(pool.tiers[members].tolist()) == {tier}
        seen.add(len(members))
    assert min(seen) < max(seen)  # members drawn twice hold one seat: some committees have fewer


def test_the_draw_is_stake_weighted_with_replacement() -> None:
    # Two draws from auditors with stakes 1, 2, 7: a member drawn twice holds one seat. The exact
    # probability of each seating under independent stake-proportional draws (the registry's rule)
    # against 40k sampled committees.
    stakes = np.array([1.0, 2.0, 7.0])
    pool = AuditorPool(np.array([2, 2, 2]), stakes)
    trace = PrivacyTrace("t", "cig", (2,) * 40_000, (1,) * 40_000)
    seats = draw_committees(trace, pool, (1, 2, 1), np.random.default_rng(5))
    counts = Counter(tuple(sorted(m.tolist())) for m in seats)
    share = stakes / stakes.sum()
    for a in range(3):
        assert counts[(a,)] / len(seats) == pytest.approx(share[a] ** 2, abs=0.01)
    for a, b in combinations(range(3), 2):
        assert counts[(a, b)] / len(seats) == pytest.approx(2 * share[a] * share[b], abs=0.01)
    # One auditor per tier seats every committee, whatever its size.
    lone = AuditorPool(np.array([1, 2, 3]), np.array([1.0, 1.0, 1.0]))
    assert [
        m.tolist()
        for m in draw_committees(PrivacyTrace("t", "cig", (2, 2), (1, 2)), lone, (3, 5, 5), np.random.default_rng(0))
    ] == [[1], [1]]


def test_coalitions_read_their_seats_and_the_parents_and_never_exceed_their_share() -> None:
    rng = np.random.default_rng(3)
    pool = make_pool(30, rng)
    fractions = (0.1, 0.2, 1 / 3, 0.5, 1.0)
    for _ in range(20):
        randoms, greedies = measure_trace(_chain(12), pool, (3, 5, 5), fractions, rng)
        for fraction, r, g in zip(fractions, randoms, greedies, strict=True):
            for outcome in (r, g):
                assert outcome.seat_share <= fraction + 1e-9
                assert outcome.seated <= outcome.readable
                assert outcome.full == (outcome.readable == 1.0)
                assert not outcome.seated_full or outcome.full
        assert randoms[-1].full and greedies[-1].full and randoms[-1].seat_share == 1.0


def test_the_benchmark_reports_rows_per_pool_and_the_claim_verdict() -> None:
    traces = [_chain(n) for n in (4, 9, 20)]
    bench = run_privacy_benchmark(traces, np.random.default_rng(0), auditors=(15, 60), draws=5)
    assert [pool.auditors for pool in bench.pools] == [15, 60]
    summary = bench.summary()
    pools = summary["pools"]
    assert isinstance(pools, dict) and set(pools) == {"15", "60"}
    for pool in bench.pools:
        assert [round(row.fraction, 2) for row in pool.rows] == [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.33, 0.4, 0.5]
        assert all(row.mean_seated <= row.mean_readable <= row.max_readable <= 1 for row in pool.rows)
        assert all(0 <= row.traces_ever_full <= 3 for row in pool.rows)
        assert all(np.isnan(row.hdag_full_rate) for row in pool.rows)
    assert summary["no_full_reconstruction_below_third"] == bench.claim_holds()
    json.dumps(summary, allow_nan=False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"auditors": (2,)}, "at least one auditor per tier"),
        ({"committee_sizes": (3, 5)}, "committee sizes"),
        ({"draws": 0}, "draws"),
        ({"fractions": (0.0,)}, "seat fractions"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_privacy_benchmark([_chain(3)], np.random.default_rng(0), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no traces"):
        run_privacy_benchmark([], np.random.default_rng(0))


needs_data = pytest.mark.skipif(
    not (PROCESSBENCH.exists() and WHO_WHEN.exists()), reason="public evaluation data not found in /work/shared/data"
)


@needs_data
def test_real_traces_load_from_both_sources() -> None:
    traces = load_traces(PROCESSBENCH, WHO_WHEN, limit=3)
    assert [t.kind for t in traces] == ["hdag"] * 3 + ["cig"] * 3
    assert all(t.nodes >= 2 for t in traces)


@needs_data
def test_cli_prints_the_tables_and_ends_with_the_json_line() -> None:
    run = subprocess.run(
        [
            sys.executable, "-m", "trust", "bench", "privacy", "--processbench", str(PROCESSBENCH),
            "--who-when", str(WHO_WHEN), "--limit", "4", "--draws", "2", "--auditors", "30",
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "30 auditors (10 per tier)" in run.stdout
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["traces"] == 8 and summary["committee_sizes"] == [3, 5, 5]
    assert isinstance(summary["no_full_reconstruction_below_third"], bool)


def test_cli_without_traces_says_what_to_pass() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "trust", "bench", "privacy"], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 2
    assert "--processbench" in run.stderr
