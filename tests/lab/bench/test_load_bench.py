"""`trust bench load` without its network (the run itself takes minutes of a model server: it is a
benchmark, run by hand): the traces it submits and the figures it sums."""

from __future__ import annotations

from trust.api.gateway.service import parse_trace
from trust.auditors.base import Outcome, request_for
from trust.auditors.tiers import computational_auditor
from trust.core.graphs.hdag import Hdag
from trust.lab.bench.load import LoadBench, TraceRun, WorkerRun, load_traces
from trust.services.sdk.client import segment_profiles
from trust.services.sdk.config import AuditConfig
from trust.settings import SandboxSettings


async def test_each_trace_brings_three_tier2_and_two_sound_tier1_segments() -> None:
    config = AuditConfig(auditor_tiers=["computational", "llm"])
    traces = load_traces(10)
    assert len({str(t) for t in traces}) == 10
    checker = computational_auditor(SandboxSettings())
    for trace in traces:
        graph = parse_trace("trace", trace, config)  # as the gateway reads it
        assert isinstance(graph, Hdag)
        tiers = {node_id: p.tier for node_id, p in segment_profiles(graph, config).items()}
        assert sorted(tiers.values()) == [1, 1, 2, 2, 2], tiers
        for node_id, tier in tiers.items():
            if tier == 1:
                verdict = await checker.audit(request_for(graph, node_id))
                assert verdict.vote is Outcome.PASS, (trace, verdict.critique)


def test_the_summary_counts_tier2_seats_and_every_honest_forfeit() -> None:
    def worker(address: str, tier: int, seats: int, committed: int, **more: int) -> WorkerRun:
        fields = {"forfeited_no_reveal": 0, "forfeited_against": 0, "left_draw": 0, "rejoined_draw": 0} | more
        return WorkerRun(address, tier, seats, committed, seats - committed, **fields)

    bench = LoadBench(
        backpressure=True,
        traces=(
            TraceRun(0, "a", "done", "VALID", {"passed": 5}, 12.0),
            TraceRun(1, "b", "done", "INVALID", {"passed": 2, "undetermined": 3}, 30.0),
            TraceRun(2, "c", "failed", None, {}, 50.0, "timeout: ..."),
        ),
        workers=(
            worker("0xA", 1, 6, 6),
            worker("0xB", 2, 4, 3, forfeited_no_reveal=1, forfeited_against=1, left_draw=2, rejoined_draw=1),
            worker("0xC", 2, 5, 5, left_draw=1, rejoined_draw=1),
        ),
        sessions=1,
        seats_by_tier={1: 6, 2: 9},
        undetermined_no_committee={2: 3},
        failed_draws=9,
        randomness_delay_blocks=20,
        commit_window_s=300,
        model="m",
        wall_s=61.0,
    )
    summary = bench.summary()
    assert summary["verdicts"] == {"INVALID": 1, "VALID": 1, "failed": 1}
    assert (summary["tier2_seats_drawn"], summary["tier2_seats_in_time"], summary["tier2_missed_commit_windows"]) == (
        9,
        8,
        1,
    )
    assert summary["missed_per_worker"] == {"0xB": 1, "0xC": 0}
    assert summary["honest_seats_forfeited_no_reveal"] == 1 and summary["honest_seats_forfeited_against_consensus"] == 1
    assert (summary["draw_exits"], summary["draw_returns"]) == (3, 2)
    assert summary["segments_undetermined_no_committee"] == {"2": 3}
    assert (summary["latency_s_median"], summary["latency_s_max"]) == (30.0, 50.0)
