"""`trust bench`: benchmarks that print figures."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from trust.cli.common import (
    HomeOption,
    console,
    err_console,
    settings_for,
)

if TYPE_CHECKING:
    from rich.status import Status

__all__ = ["bench_app"]

bench_app = typer.Typer(help="Benchmarks that print figures.", no_args_is_help=True)


@contextlib.contextmanager
def _measuring(what: str, *, param_hint: str | None = None) -> Iterator[Status]:
    """A spinner saying `what` on stderr while a benchmark runs (its `update` is the benchmark's
    progress); a ValueError from inside (an option value the benchmark refuses) becomes a usage error."""
    try:
        with err_console.status(what) as status:
            yield status
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=param_hint) from None


@bench_app.command("gas")
def bench_gas_cmd(
    segments: Annotated[int, typer.Option(min=1, max=64, help="segments in the session")] = 10,
    seats: Annotated[int, typer.Option(min=1, max=31, help="seats per segment")] = 5,
    auditors: Annotated[int, typer.Option(min=1, max=128, help="registered auditors")] = 15,
    runs: Annotated[int, typer.Option(min=1, max=50, help="runs to average, each on a fresh chain")] = 5,
    sessions: Annotated[
        int, typer.Option(min=1, max=20, help="sessions open at once, their seats committed and revealed together")
    ] = 1,
) -> None:
    """Gas per seat of a full session on a fresh Anvil: draw, commit, reveal, finalize, distribute.
    With --sessions N, N sessions run at once and each auditor commits, then reveals, its seats in
    all of them with one transaction each (as a worker batches every seat ready in a block)."""
    from trust.lab.bench.gas import render, run_gas_benchmark

    with console.status("running the gas benchmark on a fresh anvil"):
        report = asyncio.run(
            run_gas_benchmark(segments=segments, seats=seats, auditors=auditors, runs=runs, sessions=sessions)
        )
    render(report, console)


@bench_app.command("attacks")
def bench_attacks_cmd(
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="replay only this finding (H1 ... L4), repeatable (default: every one)"),
    ] = None,
    json_only: Annotated[bool, typer.Option("--json", help="print only the JSON line")] = False,
    home: HomeOption = None,
) -> None:
    """Replays each attack of the security review on a fresh Anvil through the real contracts and ends
    with one JSON line of verdicts and the gas per seat; exits 1 unless every finding is defended."""
    from trust.lab.bench.attacks import render, run_attacks

    settings = settings_for(home)
    with _measuring("replaying the attacks on fresh chains", param_hint="--only") as status:
        report = asyncio.run(run_attacks(settings, only=[name.upper() for name in only or []], progress=status.update))
    render(report, console, json_only=json_only)
    if not report.all_defended:
        raise typer.Exit(1)


@bench_app.command("ranking")
def bench_ranking_cmd(
    items: Annotated[int, typer.Option(min=2, help="items rated")] = 1_000,
    comparisons: Annotated[
        int, typer.Option(min=2, help="pairwise comparisons (and a quarter as many 4-item rankings)")
    ] = 100_000,
    seed: Annotated[int, typer.Option(help="seeds the synthetic strengths and outcomes")] = 0,
    repeat: Annotated[int, typer.Option(min=1, help="runs per fit; the median is reported")] = 3,
) -> None:
    """Bradley-Terry and Plackett-Luce fits and an Elo replay on synthetic comparisons with known
    strengths, against choix on the same data; ends with one JSON line."""
    from trust.lab.bench.ranking import render, run_ranking_benchmark

    with err_console.status("ranking benchmark") as status:
        bench = run_ranking_benchmark(
            items=items, comparisons=comparisons, seed=seed, repeat=repeat, progress=status.update
        )
    render(bench, console)
    print(json.dumps(bench.to_json()), flush=True)


@bench_app.command("refinement")
def bench_refinement_cmd(
    branching: Annotated[int, typer.Option(min=1, max=64, help="children per node (1: a chain)")] = 2,
    depth: Annotated[int, typer.Option(min=1, max=40, help="levels of the tree, the root at depth 1")] = 12,
    home: HomeOption = None,
) -> None:
    """Proposition 2.1: nodes re-executed by surgical repair vs a global retry, by error depth."""
    from trust.lab.bench.refinement import render, run_refinement_benchmark

    settings = settings_for(home)
    with _measuring("refining balanced trees") as status:
        bench = run_refinement_benchmark(
            branching,
            depth,
            audit_settings=settings.audit,
            refinement_settings=settings.refinement,
            progress=status.update,
        )
    render(bench, console)


@bench_app.command("graphs")
def bench_graphs_cmd(
    size: Annotated[
        list[int] | None, typer.Option("--size", min=1, help="nodes per graph, repeatable (default 1k, 10k, 100k)")
    ] = None,
    repeat: Annotated[int, typer.Option(min=1, max=50, help="runs per figure; the best is kept")] = 3,
    home: HomeOption = None,
) -> None:
    """Build, validate and localize HDAGs and CIGs at 1k, 10k and 100k nodes."""
    from trust.lab.bench.graphs import DEFAULT_SIZES, render, run_graphs_benchmark

    audit = settings_for(home).audit
    with _measuring("timing the graph core") as status:
        bench = run_graphs_benchmark(
            tuple(size) if size else DEFAULT_SIZES,
            tau_node=audit.tau_node,
            tau_edge=audit.tau_edge,
            repeat=repeat,
            progress=status.update,
        )
    render(bench, console)


@bench_app.command("privacy")
def bench_privacy_cmd(
    processbench: Annotated[
        Path | None, typer.Option("--processbench", help="ProcessBench JSON (e.g. processbench/gsm8k.json): HDAGs")
    ] = None,
    who_when: Annotated[
        Path | None, typer.Option("--who-when", help="folder of Who&When logs (algorithm_generated): CIGs")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="at most this many traces from each source")] = None,
    auditors: Annotated[
        list[int] | None, typer.Option("--auditors", min=3, help="auditor pool size, repeatable (default 30 and 300)")
    ] = None,
    draws: Annotated[int, typer.Option(min=1, max=1000, help="committee draws per trace and pool")] = 10,
    seed: Annotated[int, typer.Option(help="seed of the numpy generator")] = 0,
    k1: Annotated[int | None, typer.Option(min=1, help="tier-1 committee size (default: protocol settings)")] = None,
    k2: Annotated[int | None, typer.Option(min=1, help="tier-2 committee size (default: protocol settings)")] = None,
    k3: Annotated[int | None, typer.Option(min=1, help="tier-3 committee size (default: protocol settings)")] = None,
    home: HomeOption = None,
) -> None:
    """Paper 3.4.4: the share of a graph colluding auditors can decrypt, by the share of seats they hold."""
    import numpy as np

    from trust.lab.bench.privacy import DEFAULT_AUDITORS, load_traces, render, run_privacy_benchmark

    if processbench is None and who_when is None:
        raise typer.BadParameter(
            "pass --processbench FILE (ProcessBench gsm8k.json) and/or --who-when DIR (Who&When "
            "algorithm_generated): the measurement runs on real traces"
        )
    protocol = settings_for(home).protocol
    sizes = (
        k1 or protocol.committee_size(1),
        k2 or protocol.committee_size(2),
        k3 or protocol.committee_size(3),
    )
    with err_console.status("decomposing traces") as status:
        traces = load_traces(processbench, who_when, limit=limit, progress=status.update)
    with _measuring("drawing committees") as status:
        bench = run_privacy_benchmark(
            traces,
            np.random.default_rng(seed),
            auditors=tuple(auditors) if auditors else DEFAULT_AUDITORS,
            committee_sizes=sizes,
            draws=draws,
            progress=status.update,
        )
    render(bench, console)


@bench_app.command("storage")
def bench_storage_cmd(
    size: Annotated[
        list[int] | None, typer.Option("--size", min=69, help="nodes per trace, repeatable (default 100 and 1000)")
    ] = None,
    node_bytes: Annotated[int, typer.Option("--node-bytes", min=1, help="text bytes per node")] = 2_048,
    concurrency: Annotated[int, typer.Option(min=1, max=256, help="IPFS requests at a time")] = 8,
    api_url: Annotated[
        str | None,
        typer.Option("--api-url", help="a running Kubo RPC endpoint (default: a fresh local node in a temporary repo)"),
    ] = None,
    home: HomeOption = None,
) -> None:
    """Seal + upload + pin, and fetch + verify + open, of 100- and 1000-node traces: seconds and MB/s."""
    import tempfile

    from trust.adapters.local.ipfs import IpfsNode
    from trust.adapters.storage.kubo import KuboClient
    from trust.lab.bench.storage import DEFAULT_SIZES, StorageBench, render, run_storage_benchmark

    settings = settings_for(home)

    async def measure(url: str) -> StorageBench:
        ipfs = settings.ipfs.model_copy(update={"api_url": url})
        async with KuboClient.from_settings(ipfs) as client:
            with err_console.status("timing segments through IPFS") as status:
                return await run_storage_benchmark(
                    client,
                    tuple(size) if size else DEFAULT_SIZES,
                    node_bytes=node_bytes,
                    concurrency=concurrency,
                    progress=status.update,
                )

    if api_url:
        bench = asyncio.run(measure(api_url))
    else:
        with tempfile.TemporaryDirectory(prefix="trust-bench-ipfs-") as repo:
            with err_console.status("starting a local IPFS node"):
                node = IpfsNode.start(Path(repo), node_binary=settings.ipfs.node_binary)
            with node:
                bench = asyncio.run(measure(node.api_url))
    render(bench, console)


@bench_app.command("theory")
def bench_theory_cmd(
    traces: Annotated[int, typer.Option("--traces", min=1, help="traces in the Monte Carlo run")] = 1_000_000,
    seed: Annotated[int, typer.Option(help="seed of the numpy generator")] = 0,
) -> None:
    """Exact p_t for k = 1..101 (ms per call) and a 10^6-trace Monte Carlo (seconds), against their targets."""
    import numpy as np

    from trust.lab.bench.theory import render, run_theory_benchmark

    with err_console.status("timing the theory toolkit") as status:
        bench = run_theory_benchmark(np.random.default_rng(seed), traces=traces, progress=status.update)
    render(bench, console)


@bench_app.command("worker")
def bench_worker_cmd(
    seats: Annotated[
        list[int] | None, typer.Option("--seats", min=2, help="seats of a full-worker run on a fresh chain (repeat)")
    ] = None,
    tier2_segments: Annotated[int, typer.Option(min=0, help="segments the tier-2 model audits (0: skip)")] = 6,
    tier2_seats: Annotated[int, typer.Option(min=0, help="seats of a full tier-2 worker run (0: skip)")] = 0,
    through_finalize: Annotated[bool, typer.Option(help="also time the first reveal and finalization")] = False,
    poll_seconds: Annotated[float | None, typer.Option(min=0.05, help="the worker's poll interval")] = None,
    home: HomeOption = None,
) -> None:
    """Seats per second per tier (the auditors alone, and one worker on a fresh chain and IPFS node)
    and the time from a committee's draw to the worker's commit; ends with one JSON line."""
    from trust.lab.bench.worker import DEFAULT_PIPELINE_SEATS, render, run_worker_benchmark

    settings = settings_for(home)
    with _measuring("benchmarking the worker") as status:  # ParameterError included: a bad combination of options
        bench = asyncio.run(
            run_worker_benchmark(
                settings,
                tier2_segments=tier2_segments,
                pipeline_seats=tuple(seats or DEFAULT_PIPELINE_SEATS),
                tier2_pipeline_seats=tier2_seats,
                through_finalize=through_finalize,
                poll_seconds=poll_seconds,
                progress=status.update,
            )
        )
    render(bench, console)


@bench_app.command("e2e")
def bench_e2e_cmd(
    runs: Annotated[int, typer.Option(min=1, max=50, help="audits of the trace on one network")] = 3,
    home: HomeOption = None,
) -> None:
    """A 10-node tier-1/2 trace audited on a local network: Table-3 phases, overhead, gas per seat;
    ends with one JSON line {"overhead_s", "seats", "gas_per_seat", ...}."""
    from trust.lab.bench.e2e import render, run_e2e_benchmark

    with err_console.status("end-to-end benchmark") as status:
        bench = asyncio.run(run_e2e_benchmark(settings_for(home), runs=runs, progress=status.update))
    render(bench, console)
    print(json.dumps(bench.summary()), flush=True)


@bench_app.command("throughput")
def bench_throughput_cmd(
    sessions: Annotated[int, typer.Option("--sessions", min=1, max=200, help="audits submitted at once")] = 20,
    workers: Annotated[int, typer.Option("--workers", min=3, max=64, help="tier-1 workers")] = 12,
    nodes: Annotated[int, typer.Option("--nodes", min=2, max=1024, help="nodes of each trace")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="print only the final JSON line")] = False,
    home: HomeOption = None,
) -> None:
    """Audits at once through the SDK on a local network of tier-1 workers: per trace its verdict
    (sound and flawed running totals) and latency; sessions per minute, segments per second, p50
    and p95 latency, gas per seat; ends with one JSON line {"sessions_per_min", "p95_s", ...}.
    Exits 1 when a verdict is wrong."""
    from trust.lab.bench.throughput import render, run_throughput_benchmark

    with err_console.status("throughput benchmark") as status:
        bench = asyncio.run(
            run_throughput_benchmark(
                settings_for(home), sessions=sessions, workers=workers, nodes=nodes, progress=status.update
            )
        )
    if not as_json:
        render(bench, console)
    print(json.dumps(bench.summary()), flush=True)
    if not bench.all_right:
        raise typer.Exit(1)


@bench_app.command("scale")
def bench_scale_cmd(
    nodes: Annotated[
        list[int] | None,
        typer.Option("--nodes", min=2, max=1024, help="a trace size; repeat for several (default: 10, 100, 1000)"),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=3, max=64, help="tier-1 workers")] = 12,
    as_json: Annotated[bool, typer.Option("--json", help="print only the final JSON line")] = False,
) -> None:
    """One flawed trace of each size end to end on a local network of tier-1 workers: per size the
    overhead, segments per second, gas per seat and IPFS bytes, and the ratio of the largest size's
    overhead to the next one's; ends with one JSON line {"sizes": {...}, "ratio_1000_100": ...}.
    Exits 1 when a verdict is wrong."""
    from trust.lab.bench.scale import DEFAULT_SIZES, render, run_scale_benchmark

    sizes = nodes or list(DEFAULT_SIZES)
    try:
        with err_console.status("scale benchmark") as status:
            bench = asyncio.run(run_scale_benchmark(sizes=sizes, workers=workers, progress=status.update))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--nodes") from exc
    if not as_json:
        render(bench, console)
    print(json.dumps(bench.summary()), flush=True)
    if not bench.all_right:
        raise typer.Exit(1)


@bench_app.command("load")
def bench_load_cmd(
    traces: Annotated[int, typer.Option("--traces", min=1, max=64, help="sound traces submitted at once")] = 10,
    workers: Annotated[int, typer.Option("--workers", min=3, max=32, help="tier-2 workers (one model server)")] = 8,
    backpressure: Annotated[
        bool, typer.Option("--backpressure/--no-backpressure", help="the workers leave the draw when overloaded")
    ] = True,
    randomness_delay_blocks: Annotated[
        int, typer.Option(min=1, max=128, help="blocks from a session's opening to its draw's randomness")
    ] = 20,
    epoch_traces: Annotated[
        int, typer.Option(min=1, max=1024, help="traces per gateway epoch (one session each epoch)")
    ] = 16,
    keep: Annotated[
        Path | None, typer.Option("--keep", help="run the network in this folder and keep it (workers' logs)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print only the final JSON line")] = False,
    home: HomeOption = None,
) -> None:
    """Traces at once through the gateway against tier-2 workers sharing one model server: per trace
    the verdict and latency; seats drawn, committed in time and missed per honest worker, forfeits,
    draw exits and returns, segments left without a committee; ends with one JSON line."""
    from trust.lab.bench.load import render, run_load_benchmark

    with err_console.status("load benchmark") as status:
        bench = asyncio.run(
            run_load_benchmark(
                settings_for(home),
                traces=traces,
                workers=workers,
                backpressure=backpressure,
                randomness_delay_blocks=randomness_delay_blocks,
                epoch_traces=epoch_traces,
                folder=keep,
                progress=status.update,
            )
        )
    if not as_json:
        render(bench, console)
    print(json.dumps(bench.summary()), flush=True)


@bench_app.command("byzantine")
def bench_byzantine_cmd(
    segments: Annotated[
        int, typer.Option("--segments", min=10, help="tier-1 segments audited per rho (veto: in all)")
    ] = 200,
    pool: Annotated[
        int | None, typer.Option("--pool", min=4, help="tier-1 auditors eligible in every phase (wrong only; 20)")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="fixes the generated claims")] = 0,
    keep: Annotated[
        Path | None, typer.Option("--keep", help="run the network in this folder and keep it (workers' logs)")
    ] = None,
    adversary: Annotated[
        str,
        typer.Option(
            "--adversary",
            help="wrong: adversaries holding rho of tier 1 vote the opposite; veto: one vetoer blocks tier-1 "
            "rounds, which escalate to tier 2",
        ),
    ] = "wrong",
) -> None:
    """Adversarial auditors on a local network against the exact theory; ends with one JSON line.

    `wrong`: the worker's `wrong` mode holding rho = 0.1, 0.2 and 0.3 of a tier: observed correct /
    wrong / undetermined verdicts against the consensus toolkit's exact probabilities, and every
    auditor's money before and after; exits 1 when an observed rate disagrees or the adversaries did
    not lose. `veto`: one vetoer (6x the floor among honest 1x and 2x stakes, a third of tier 1,
    committees of five draws) blocks the rounds where it won 2 or 3 of the 5 votes, which escalate
    to 11 draws of tier 2's seven auditors (auditing with the tier-1 checks, so that it decides
    exactly); the escalated rate, the verdicts, the vetoer's slashes and
    reputation against `trust.core.theory.veto`, and each role's payoff beside its expected figure and the
    old rule's; exits 1 when a figure disagrees, the vetoer did not lose or an honest auditor did not
    gain."""
    from trust.lab.bench.byzantine import (
        ADVERSARIES,
        VETO,
        render,
        render_veto,
        run_byzantine_benchmark,
        run_veto_benchmark,
    )

    if adversary not in ADVERSARIES:
        raise typer.BadParameter(f"{adversary!r}: expected one of {', '.join(ADVERSARIES)}", param_hint="--adversary")
    if adversary == VETO:
        if pool is not None:
            raise typer.BadParameter(
                "the veto run's tier 1 is fixed (eight honest auditors and the vetoer); drop --pool",
                param_hint="--pool",
            )
        with err_console.status("Byzantine benchmark (veto)") as status:
            veto = asyncio.run(run_veto_benchmark(segments=segments, seed=seed, folder=keep, progress=status.update))
        render_veto(veto, console)
        print(json.dumps(veto.summary()), flush=True)
        if not veto.passed:
            raise SystemExit(1)
        return
    with err_console.status("Byzantine benchmark") as status:
        bench = asyncio.run(
            run_byzantine_benchmark(
                pool=20 if pool is None else pool,
                segments_per_rho=segments,
                seed=seed,
                folder=keep,
                progress=status.update,
            )
        )
    render(bench, console)
    print(json.dumps(bench.summary()), flush=True)
    if not (bench.agrees and bench.adversaries_lost and bench.honest_gained):
        raise SystemExit(1)
