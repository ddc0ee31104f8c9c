"""`trust bench worker`: the segment mix and the trace it audits, the auditor timing, and a small run of
the whole benchmark on Anvil and the local IPFS node (complete and consistent; no timing asserts)."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest
from rich.console import Console

from trust.auditors.base import Outcome, request_for
from trust.auditors.tiers import computational_auditor
from trust.core.graphs.validation import violations
from trust.errors import ParameterError, VerificationError
from trust.lab.bench.worker import (
    BenchSegment,
    Latency,
    benchmark_segments,
    pipeline_trace,
    render,
    run_worker_benchmark,
    time_auditor,
    window_seconds,
)
from trust.settings import SandboxSettings, Settings

KINDS = {"arithmetic", "symbolic", "grounding", "sandbox"}
SEATS = 3
COMMIT_WINDOW_SECONDS = 25
REVEAL_WINDOW_SECONDS = 10


def test_the_mix_covers_every_tier1_check_with_sound_and_flawed_segments() -> None:
    mix = benchmark_segments()
    assert {s.kind for s in mix} == KINDS
    for kind in KINDS:
        assert {s.expected for s in mix if s.kind == kind} == {Outcome.PASS, Outcome.FAIL}
    # Interleaved: the first four segments (what a short tier-2 run takes) hold one of each kind.
    assert {s.kind for s in mix[:4]} == KINDS
    assert len({s.request.node_id for s in mix}) == len(mix)


@pytest.mark.parametrize("seats", [2, 3, 10, 51])
async def test_the_worker_trace_has_exactly_the_asked_segments_all_decidable_by_tier1(seats: int) -> None:
    graph = pipeline_trace(seats)
    assert len(graph) == seats and violations(graph) == []
    auditor = computational_auditor(SandboxSettings())
    for node in graph.nodes():
        verdict = await auditor.audit(request_for(graph, node.id))
        assert verdict.vote is Outcome.PASS, (node.id, verdict.critique)
    with pytest.raises(ParameterError, match="at least 2 segments"):
        pipeline_trace(1)


async def test_tier1_timing_checks_every_verdict() -> None:
    mix = benchmark_segments()
    bench = await time_auditor(computational_auditor(SandboxSettings()), mix, rounds=2, concurrency=3)
    assert bench.tier == 1 and bench.audits == 2 * len(mix) and bench.concurrency == 3
    assert {kind for kind, _ in bench.by_kind} == KINDS
    assert sum(latency.count for _, latency in bench.by_kind) == bench.audits
    fails = sum(1 for s in mix if s.expected is Outcome.FAIL)
    assert dict(bench.votes) == {"pass": 2 * (len(mix) - fails), "fail": 2 * fails}
    assert bench.seats_per_s > 0 and bench.seats_per_s_sequential > 0

    # A segment whose verdict is not the expected one aborts the run: no figure from a broken auditor.
    wrong = BenchSegment("arithmetic", mix[0].request, Outcome.FAIL)
    with pytest.raises(VerificationError, match="must get fail"):
        await time_auditor(computational_auditor(SandboxSettings()), [wrong])
    with pytest.raises(ParameterError, match="at least 1"):
        await time_auditor(computational_auditor(SandboxSettings()), mix, rounds=0)


def test_latency_summary() -> None:
    latency = Latency.of([0.4, 0.1, 0.3, 0.2, 1.0])
    assert (latency.count, latency.median_s, latency.max_s) == (5, 0.3, 1.0)
    assert 0.4 < latency.p95_s <= 1.0
    assert Latency.of([2.0]) == Latency(1, 2.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="no durations"):
        Latency.of([])


async def test_bad_arguments_are_named() -> None:
    with pytest.raises(ParameterError, match="pipeline_seats"):
        await run_worker_benchmark(Settings(), pipeline_seats=(10, 0))
    with pytest.raises(ParameterError, match="tier2_segments"):
        await run_worker_benchmark(Settings(), tier2_segments=-1)
    with pytest.raises(ValueError, match="poll_seconds"):
        await run_worker_benchmark(Settings(), poll_seconds=0)


@pytest.mark.chain
@pytest.mark.slow
async def test_a_small_run_is_complete_and_consistent(ipfs_api_url: str) -> None:
    bench = await run_worker_benchmark(
        Settings(),
        tier1_rounds=1,
        tier2_segments=0,
        pipeline_seats=(SEATS,),
        through_finalize=True,
        poll_seconds=0.3,
        commit_window_seconds=COMMIT_WINDOW_SECONDS,
        reveal_window_seconds=REVEAL_WINDOW_SECONDS,
        ipfs_api_url=ipfs_api_url,
    )
    env = bench.environment
    assert env.poll_seconds == 0.3 and env.tier2_model is None and env.cpu_count >= 1
    (tier1,) = bench.auditors
    assert tier1.tier == 1 and tier1.audits == len(benchmark_segments())

    (run,) = bench.pipelines
    assert (run.tier, run.seats, run.commit_window_seconds) == (1, SEATS, COMMIT_WINDOW_SECONDS)
    assert sorted(s.segment_id for s in run.live) == list(range(SEATS))
    assert run.backlog_s > 0 and run.seats_per_s > 0 and run.live_seats_per_s > 0
    assert run.deliver_keys_s > 0 and run.store_trace_s > 0
    for seat in run.live:
        # The chain's order: drawn, then the seat's envelope, then the worker's commit.
        assert seat.draw_chain <= seat.envelope_chain <= seat.commit_chain
        assert seat.draw_to_commit_chain_s > 0
        # The worker's order, on its own records; it commits only after the provider's draw returned.
        assert seat.drawn_at <= seat.voted_at <= seat.committed_at
        assert seat.draw_to_commit_s > 0
        assert seat.draw_to_commit_s == pytest.approx(
            seat.draw_to_seen_s + seat.seen_to_voted_s + seat.voted_to_committed_s
        )
    # Revealing waits for the commit window to close, and finalizing for a reveal.
    assert run.first_revealed_s is not None and run.first_finalized_s is not None
    assert min(s.draw_to_commit_s for s in run.live) < run.first_revealed_s <= run.first_finalized_s

    out = io.StringIO()
    render(bench, Console(file=out, width=200))
    lines = out.getvalue().strip().splitlines()
    figures = json.loads(lines[-1])
    assert figures == bench.summary()
    prefix = f"worker_tier1_n{SEATS}"
    for key in (
        "cpu_count",
        "poll_seconds",
        "tier1_audit_seats_per_s",
        "tier1_audit_median_s",
        "tier1_audit_p95_s",
        *(f"tier1_{kind}_median_s" for kind in KINDS),
        f"{prefix}_seats_per_s",
        f"{prefix}_draw_to_commit_chain_median_s",
        f"{prefix}_draw_to_commit_wall_max_s",
        f"{prefix}_seen_to_voted_median_s",
        f"{prefix}_voted_to_committed_median_s",
        f"{prefix}_deliver_keys_s",
        f"{prefix}_first_finalized_s",
    ):
        assert figures[key] is not None and figures[key] >= 0, key
    assert figures[f"{prefix}_seats"] == SEATS
    assert any("draw → commit, chain time" in line for line in lines)

    # Skipping a part leaves it out of the table and of the JSON line.
    tier1_only = dataclasses.replace(bench, pipelines=())
    assert not any(key.startswith("worker_") for key in tier1_only.summary())


def test_the_default_window_holds_both_sessions() -> None:
    assert window_seconds(1, 50) > 2 * 50  # about a block per segment to deliver the keys, twice
    assert window_seconds(2, 3) > window_seconds(1, 3)
