"""The `trust` command: devnet, deploy, bench, graph, eval.

Only parses input, calls the library and renders output; the work lives in `trust.devnet`,
`trust.chain` and `trust.bench`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trust.cli_ranking import judge_app, rank_app
from trust.errors import TrustError
from trust.settings import Settings

__all__ = ["app", "main"]

app = typer.Typer(help="TRUST: a decentralized network that audits AI reasoning.", no_args_is_help=True)
devnet_app = typer.Typer(help="The local development network (Anvil + the deployed protocol).", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks that print figures.", no_args_is_help=True)
wallet_app = typer.Typer(help="Encrypted keystore wallets.", no_args_is_help=True)
graph_app = typer.Typer(help="Reasoning graphs: decompose traces into HDAGs, localize faults in agent logs.")
eval_app = typer.Typer(help="Score the audit pipeline on public evaluation data.")
app.add_typer(devnet_app, name="devnet")
app.add_typer(bench_app, name="bench")
app.add_typer(wallet_app, name="wallet")
app.add_typer(graph_app, name="graph", no_args_is_help=True)
app.add_typer(eval_app, name="eval", no_args_is_help=True)
ipfs_app = typer.Typer(help="The local IPFS node (Helia behind the Kubo RPC API).", no_args_is_help=True)
app.add_typer(ipfs_app, name="ipfs")
params_app = typer.Typer(
    help="Protocol parameters: those in force on chain, and the Safety-Profitability checks of paper section 4.",
    no_args_is_help=True,
)
app.add_typer(params_app, name="params")
worker_app = typer.Typer(
    help="The auditor worker: audits its seats with its own wallet and votes in time.", no_args_is_help=True
)
app.add_typer(worker_app, name="worker")
app.add_typer(rank_app, name="rank", no_args_is_help=True)
app.add_typer(judge_app, name="judge", no_args_is_help=True)

console = Console()
err_console = Console(stderr=True)


def _settings(home: Path | None) -> Settings:
    return Settings(home=home) if home else Settings()


HomeOption = Annotated[Path | None, typer.Option("--home", help="state folder (default ~/.trust, or TRUST_HOME)")]


@devnet_app.command("up")
def devnet_up_cmd(
    auditors: Annotated[int | None, typer.Option("--auditors", "-n", min=3, max=256, help="auditor accounts")] = None,
    home: HomeOption = None,
) -> None:
    """Start Anvil (state persisted), deploy the protocol, and fund, register and stake auditors."""
    from trust.devnet import devnet_up

    settings = _settings(home)
    with console.status("starting the devnet") as status:
        result = devnet_up(settings, auditors, progress=lambda msg: status.update(msg))
    what = "started" if result.started else "already running"
    console.print(f"[bold]devnet {what}[/bold] (pid {result.pid}, chain {result.chain_id})")
    console.print(f"RPC URL:         {result.rpc_url}")
    console.print(f"deployment file: {result.deployment_file}")
    for name, address in result.deployment.contracts.items():
        console.print(f"  {name:<20} {address}")
    console.print(f"treasury:        {result.treasury}")
    console.print(f"insurance fund:  {result.insurance_fund}")
    table = Table(title=f"{len(result.auditors)} auditors", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("address", no_wrap=True, min_width=42)
    table.add_column("tier", justify="center")
    table.add_column("stake (TRUST)", justify="right")
    for index, auditor in enumerate(result.auditors):
        table.add_row(str(index), auditor.address, str(auditor.tier), f"{auditor.stake / 10**18:,.0f}")
    console.print(table)
    console.print(f"keystores:       {settings.devnet_dir / 'keystores'}")
    console.print(f"password file:   {settings.devnet_dir / 'keystore-password'}")


@devnet_app.command("down")
def devnet_down_cmd(home: HomeOption = None) -> None:
    """Stop the devnet node; its chain state stays on disk for the next `up`."""
    from trust.devnet import devnet_down

    if devnet_down(_settings(home)):
        console.print("devnet stopped (state saved)")
    else:
        console.print("no devnet was running")


@bench_app.command("gas")
def bench_gas_cmd(
    segments: Annotated[int, typer.Option(min=1, max=64, help="segments in the session")] = 10,
    seats: Annotated[int, typer.Option(min=1, max=31, help="seats per segment")] = 5,
    auditors: Annotated[int, typer.Option(min=1, max=128, help="registered auditors")] = 15,
    runs: Annotated[int, typer.Option(min=1, max=50, help="sessions to average, each on a fresh chain")] = 5,
) -> None:
    """Gas per seat of a full session on a fresh Anvil: draw, commit, reveal, finalize, distribute."""
    from trust.bench.gas import render, run_gas_benchmark

    with console.status("running the gas benchmark on a fresh anvil"):
        report = asyncio.run(run_gas_benchmark(segments=segments, seats=seats, auditors=auditors, runs=runs))
    render(report, console)


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
    from trust.bench.ranking import render, run_ranking_benchmark

    with err_console.status("ranking benchmark") as status:
        bench = run_ranking_benchmark(
            items=items, comparisons=comparisons, seed=seed, repeat=repeat, progress=status.update
        )
    render(bench, console)
    print(json.dumps(bench.to_json()), flush=True)


RpcOption = Annotated[
    str | None, typer.Option("--rpc-url", help="JSON-RPC endpoint (default: TRUST_RPC_URL or the devnet)")
]
PasswordFileOption = Annotated[
    Path | None, typer.Option("--password-file", help="file whose first line unlocks the keystore")
]


def _password(password_file: Path | None, *, confirm: bool = False) -> str:
    from trust.chain.wallets import read_password

    password = read_password(password_file)
    if password is None:
        password = typer.prompt("keystore password", hide_input=True, confirmation_prompt=confirm)
    return password


@wallet_app.command("new")
def wallet_new_cmd(
    path: Annotated[Path, typer.Argument(help="where to write the keystore (refuses to overwrite)")],
    password_file: PasswordFileOption = None,
) -> None:
    """Create a new account in an encrypted keystore file (mode 0600) and print its address."""
    from trust.chain.wallets import create_keystore

    account = create_keystore(path, _password(password_file, confirm=True))
    console.print(f"{account.address}  {path}")


@app.command("deploy")
def deploy_cmd(
    keystore: Annotated[Path, typer.Option("--keystore", help="the deployer's keystore file")],
    password_file: PasswordFileOption = None,
    rpc_url: RpcOption = None,
    proposer: Annotated[
        list[str] | None, typer.Option("--proposer", help="timelock proposer and executor (repeat; default: deployer)")
    ] = None,
    treasury: Annotated[str | None, typer.Option(help="treasury account (default: the timelock)")] = None,
    insurance_fund: Annotated[str | None, typer.Option(help="insurance fund account (default: the timelock)")] = None,
    home: HomeOption = None,
) -> None:
    """Compile and deploy the protocol to any JSON-RPC endpoint, hand it to the governance timelock,
    and write the addresses to deploy/deployments/<chain id>.json."""
    from trust.chain.client import ChainClient
    from trust.chain.compiler import compile_protocol
    from trust.chain.deployment import deploy_protocol, hand_to_timelock
    from trust.chain.wallets import load_keystore
    from trust.toolchain import Toolchain

    settings = _settings(home)
    deployer = load_keystore(keystore, _password(password_file))
    toolchain = Toolchain.discover()
    url = rpc_url or settings.effective_rpc_url

    async def run() -> tuple[Path, dict[str, str]]:
        async with ChainClient(
            url, compile_protocol(toolchain), tx_timeout_seconds=settings.tx_timeout_seconds
        ) as chain:
            deployment = await deploy_protocol(
                chain,
                deployer,
                settings.protocol,
                settings.governance,
                treasury=treasury,
                insurance_fund=insurance_fund,
                proposers=proposer,
            )
            deployment = await hand_to_timelock(chain, deployer, deployment)
            return deployment.save(settings.deployments_path(toolchain.root)), deployment.contracts

    with console.status(f"deploying to {url}"):
        path, contracts = asyncio.run(run())
    for name, address in contracts.items():
        console.print(f"{name:<20} {address}")
    console.print(f"deployment file: {path}")


@params_app.command("show")
def params_show_cmd(rpc_url: RpcOption = None, home: HomeOption = None) -> None:
    """Print the protocol parameters in force on chain (they change only through the timelock)."""
    from trust.chain.client import ChainClient
    from trust.chain.compiler import compile_protocol
    from trust.chain.deployment import Deployment
    from trust.chain.protocol import Protocol
    from trust.toolchain import Toolchain

    settings = _settings(home)
    toolchain = Toolchain.discover()
    url = rpc_url or settings.effective_rpc_url

    async def run() -> tuple[int, dict[str, int]]:
        async with ChainClient(url, compile_protocol(toolchain)) as chain:
            deployment = Deployment.load(settings.deployments_path(toolchain.root), chain.chain_id)
            protocol = Protocol.bind(chain, deployment)
            return await protocol.params.version(), await protocol.params.params()

    version, values = asyncio.run(run())
    table = Table(title=f"protocol parameters, version {version}")
    table.add_column("parameter")
    table.add_column("value", justify="right")
    for name, value in values.items():
        table.add_row(name, f"{value:,}")
    console.print(table)


@graph_app.command("localize")
def graph_localize_cmd(
    log: Annotated[Path, typer.Argument(help="agent log: trust.agent-log JSON or a Who&When file")],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
    home: HomeOption = None,
) -> None:
    """Build the CIG of an agent log, audit every turn and message, and localize faults (Algorithm 1).

    The deterministic oracles always run; an LLM oracle joins them when TRUST_LLM__BASE_URL is set."""
    import json

    from trust.audit_log import localize_log_file, render

    report = localize_log_file(log, _settings(home))
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        render(report, console)


@graph_app.command("hdag")
def graph_hdag_cmd(
    file: Annotated[Path, typer.Argument(help="trace: raw chain-of-thought text, or JSON steps with --steps")],
    steps: Annotated[
        bool, typer.Option("--steps", help='FILE is JSON: a list of steps, or {"problem": ..., "steps": [...]}')
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the HDAG as JSON (trust.hdag v1)")] = False,
    home: HomeOption = None,
) -> None:
    """Decompose a reasoning trace into an HDAG (LLM endpoint when configured, else deterministic)."""
    from rich.markup import escape

    from trust.decomposition import decompose_file, render
    from trust.graphs.serialization import dumps

    result = asyncio.run(decompose_file(file, _settings(home), steps=steps))
    for warning in result.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)
    if as_json:
        typer.echo(dumps(result.hdag))
    else:
        render(result, console)


def _write_lines(path: Path, rows: list[dict[str, object]]) -> None:
    import json

    from trust.errors import ConfigError

    try:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the predictions ({exc.strerror})") from None


PredictionsOption = Annotated[
    Path | None, typer.Option("--predictions", help="also write one JSON line per item to this file")
]


@eval_app.command("whowhen")
def eval_whowhen_cmd(
    directory: Annotated[Path, typer.Argument(help="folder of Who&When logs (*.json)")],
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON line of metrics")] = False,
    predictions: PredictionsOption = None,
    home: HomeOption = None,
) -> None:
    """Who&When failure attribution: predict (agent, step) per log with the CIG pipeline and score it."""
    import json

    from trust.evaluation.progress import progress_bar
    from trust.evaluation.whowhen import (
        WhoWhenReport,
        evaluate_whowhen,
        evaluate_whowhen_with_model,
        log_files,
        render,
    )

    settings = _settings(home)
    files = log_files(directory)
    with progress_bar("Who&When", err_console) as bar:
        task = bar.add_task("", total=len(files))

        def advance(name: str) -> None:
            bar.update(task, advance=1, description=name)

        if settings.llm.configured:
            from trust.llm import LlmClient

            async def with_model() -> WhoWhenReport:
                async with LlmClient(settings.llm) as client:
                    return await evaluate_whowhen_with_model(files, settings.audit, client, progress=advance)

            report = asyncio.run(with_model())
        else:
            report = evaluate_whowhen(files, settings.audit, progress=advance)
    if predictions is not None:
        _write_lines(predictions, [item.prediction.as_dict() for item in report.items])
    if as_json:
        typer.echo(json.dumps(report.score.metrics()))
    else:
        render(report, console)


@eval_app.command("processbench")
def eval_processbench_cmd(
    file: Annotated[Path, typer.Argument(help="ProcessBench JSON file (e.g. processbench/gsm8k.json)")],
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON line of metrics")] = False,
    predictions: PredictionsOption = None,
    home: HomeOption = None,
) -> None:
    """ProcessBench: predict the earliest wrong step of each solution (-1: none) and score it."""
    import json

    from trust.evaluation.processbench import (
        ProcessBenchReport,
        evaluate_processbench,
        evaluate_processbench_with_model,
        load_processbench,
        render,
    )
    from trust.evaluation.progress import progress_bar

    settings = _settings(home)
    items = load_processbench(file)
    tau_node = settings.audit.tau_node
    with progress_bar("ProcessBench", err_console) as bar:
        task = bar.add_task("", total=len(items))

        def advance(item_id: str) -> None:
            bar.update(task, advance=1, description=item_id)

        if settings.llm.configured:
            from trust.llm import LlmClient

            async def with_model() -> ProcessBenchReport:
                async with LlmClient(settings.llm) as client:
                    return await evaluate_processbench_with_model(items, client, tau_node=tau_node, progress=advance)

            report = asyncio.run(with_model())
        else:
            report = evaluate_processbench(items, tau_node=tau_node, progress=advance)
    if predictions is not None:
        _write_lines(predictions, [{"id": item.id, "label": label} for item, label in report.predictions])
    if as_json:
        typer.echo(json.dumps(report.score.metrics()))
    else:
        render(report, console)


@bench_app.command("refinement")
def bench_refinement_cmd(
    branching: Annotated[int, typer.Option(min=1, max=64, help="children per node (1: a chain)")] = 2,
    depth: Annotated[int, typer.Option(min=1, max=40, help="levels of the tree, the root at depth 1")] = 12,
    home: HomeOption = None,
) -> None:
    """Proposition 2.1: nodes re-executed by surgical repair vs a global retry, by error depth."""
    from trust.bench.refinement import render, run_refinement_benchmark

    settings = _settings(home)
    try:
        with err_console.status("refining balanced trees") as status:
            bench = run_refinement_benchmark(
                branching,
                depth,
                audit_settings=settings.audit,
                refinement_settings=settings.refinement,
                progress=status.update,
            )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
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
    from trust.bench.graphs import DEFAULT_SIZES, render, run_graphs_benchmark

    audit = _settings(home).audit
    try:
        with err_console.status("timing the graph core") as status:
            bench = run_graphs_benchmark(
                tuple(size) if size else DEFAULT_SIZES,
                tau_node=audit.tau_node,
                tau_edge=audit.tau_edge,
                repeat=repeat,
                progress=status.update,
            )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
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

    from trust.bench.privacy import DEFAULT_AUDITORS, load_traces, render, run_privacy_benchmark

    if processbench is None and who_when is None:
        raise typer.BadParameter(
            "pass --processbench FILE (ProcessBench gsm8k.json) and/or --who-when DIR (Who&When "
            "algorithm_generated): the measurement runs on real traces"
        )
    protocol = _settings(home).protocol
    sizes = (
        k1 or protocol.committee_size(1),
        k2 or protocol.committee_size(2),
        k3 or protocol.committee_size(3),
    )
    with err_console.status("decomposing traces") as status:
        traces = load_traces(processbench, who_when, limit=limit, progress=status.update)
    try:
        with err_console.status("drawing committees") as status:
            bench = run_privacy_benchmark(
                traces,
                np.random.default_rng(seed),
                auditors=tuple(auditors) if auditors else DEFAULT_AUDITORS,
                committee_sizes=sizes,
                draws=draws,
                progress=status.update,
            )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
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

    from trust.bench.storage import DEFAULT_SIZES, StorageBench, render, run_storage_benchmark
    from trust.storage.kubo import KuboClient
    from trust.storage.node import IpfsNode

    settings = _settings(home)

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


ParamFile = Annotated[Path, typer.Argument(help="parameter file, YAML or JSON (format: docs/theory.md)")]


@params_app.command("check")
def params_check_cmd(
    file: ParamFile,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document instead of tables")] = False,
) -> None:
    """Check a parameter set against Theorem 4.1 (S1, E1, E2): margins, p_t, tail bounds, a verdict.

    Exits 1 when a condition fails.
    """
    from trust.theory.params import Parameters, check
    from trust.theory_report import load_parameter_file, render_check

    report = check(Parameters.from_mapping(load_parameter_file(file)))
    if as_json:
        typer.echo(json.dumps(report.to_json()))
    else:
        render_check(report, console)
    raise typer.Exit(0 if report.verdict == "ok" else 1)


@params_app.command("pass-probability")
def params_pass_probability_cmd(
    k: Annotated[int, typer.Option("--k", help="seats per segment (k >= 1)")],
    epsilon: Annotated[float, typer.Option("--epsilon", help="honest error rate, in [0, 1]")],
    rho: Annotated[float, typer.Option("--rho", help="adversarial fraction, in [0, 1]")] = 0.0,
    tau: Annotated[float, typer.Option("--tau", help="vote threshold, in (0, 1]; q = ceil(tau k)")] = 0.66,
) -> None:
    """Print the exact segment pass probability p_t of Lemma 4.1 (eq. 4.2)."""
    from trust.theory.consensus import pass_probability

    typer.echo(repr(pass_probability(k, epsilon, rho, tau)))


@params_app.command("recommend")
def params_recommend_cmd(
    file: Annotated[
        Path | None,
        typer.Option(
            "--file", help="take classes (k as the floor), tau, horizon, P and delta from this parameter file"
        ),
    ] = None,
    epsilon_l: Annotated[float | None, typer.Option("--epsilon-l", help="LLM auditor error rate")] = None,
    epsilon_h: Annotated[float | None, typer.Option("--epsilon-h", help="human auditor error rate")] = None,
    rho_h: Annotated[float | None, typer.Option("--rho-h", help="adversarial fraction among human seats")] = None,
    epsilon_target: Annotated[
        float | None, typer.Option("--epsilon-target", help="allowed probability that a valid trace fails in T")
    ] = None,
    k_min: Annotated[int, typer.Option("--k-min", min=1, help="smallest committee (without --file)")] = 3,
    safety_factor: Annotated[float, typer.Option("--safety-factor", help="margin on S1, E1 and E2")] = 2.0,
    beta_min: Annotated[float, typer.Option("--beta-min", help="lowest trace quorum allowed")] = 0.55,
    out: Annotated[Path | None, typer.Option("--out", help="write the recommended parameter file here")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document instead of tables")] = False,
) -> None:
    """The smallest committees, then beta, R, p_min and p_max that satisfy S1, E1 and E2 with the margin."""
    from dataclasses import replace

    from trust.theory.consensus import human_class
    from trust.theory.params import DEFAULT_PARAMETERS, Parameters
    from trust.theory.recommend import recommend
    from trust.theory_report import load_parameter_file, render_recommendation, write_parameter_file

    base = Parameters.from_mapping(load_parameter_file(file) if file else DEFAULT_PARAMETERS)
    overrides = {"L": {"epsilon": epsilon_l}, "H": {"epsilon": epsilon_h, "rho": rho_h}}
    classes = []
    for c in base.trace.classes:
        changes: dict[str, Any] = {k: v for k, v in overrides.get(c.name, {}).items() if v is not None}
        if file is None:
            changes["k"] = k_min
        classes.append(replace(c, **changes))
    result = recommend(
        classes,
        base.trace.tau,
        lam=base.lam,
        horizon=base.horizon,
        epsilon_target=epsilon_target if epsilon_target is not None else base.epsilon_target,
        delta=base.economics.delta,
        penalty=base.economics.penalty,
        # The H class's error rate (after --epsilon-h) when there is one, else the file's epsilon_H.
        epsilon_h=None if human_class(classes) is not None else base.economics.epsilon_h,
        safety_factor=safety_factor,
        beta_min=beta_min,
    )
    if out is not None:
        write_parameter_file(result.parameters, out)
    if as_json:
        document = {"parameters": result.parameters.to_mapping(), "seats_per_trace": result.seats_per_trace}
        typer.echo(json.dumps(document | result.report.to_json()))
    else:
        render_recommendation(result.report, result.seats_per_trace, console)
        if out is not None:
            console.print(f"written to {out}")


@params_app.command("simulate")
def params_simulate_cmd(
    file: Annotated[Path | None, typer.Argument(help="parameter file (default: the network's defaults)")] = None,
    traces: Annotated[
        int, typer.Option("--traces", min=1, help="simulated traces per (rho_H, epsilon_H) cell")
    ] = 20_000,
    paths: Annotated[int, typer.Option("--paths", min=2, help="simulated seats per payoff simulation")] = 2_000,
    gamma: Annotated[float, typer.Option("--gamma", help="reputation update rate (eq. 4.15)")] = 0.1,
    seed: Annotated[int, typer.Option(help="seed of the numpy generator")] = 0,
    plot: Annotated[Path | None, typer.Option("--plot", help="save the figures here (PNG)")] = None,
) -> None:
    """Monte Carlo over rho_H in [0, 0.30] and epsilon_H in [0.20, 0.40] (paper 4.8) against the exact
    values, and honest and malicious payoffs over the horizon; ends with one JSON line."""
    import numpy as np
    from rich.progress import Progress

    from trust.theory.consensus import human_class
    from trust.theory.montecarlo import EPSILON_GRID, RHO_GRID, expected_payoff, simulate_payoffs, sweep
    from trust.theory.params import DEFAULT_PARAMETERS, Parameters
    from trust.theory_report import load_parameter_file, plot_simulation, render_simulation

    parameters = Parameters.from_mapping(load_parameter_file(file) if file else DEFAULT_PARAMETERS)
    human = human_class(parameters.trace.classes)
    if human is None:
        raise typer.BadParameter("the sweep varies the human class: name it 'H' in the parameter file")
    rng = np.random.default_rng(seed)
    cells = len(RHO_GRID) * len(EPSILON_GRID)
    with Progress(console=err_console, transient=True) as progress:
        task = progress.add_task(f"sweep: {cells} cells x {traces:,} traces", total=cells)
        grid = sweep(
            parameters.trace,
            RHO_GRID,
            EPSILON_GRID,
            traces,
            rng,
            cls=human.name,
            progress=lambda done: progress.update(task, completed=done),
        )
        payoffs, expected = {}, {}
        for kind in ("honest", "malicious"):
            progress.update(task, description=f"{kind} payoffs: {paths:,} seats")
            malicious = kind == "malicious"
            payoffs[kind] = simulate_payoffs(
                parameters.economics, parameters.lam_t, paths, rng, gamma=gamma, malicious=malicious
            )
            expected[kind] = expected_payoff(parameters.economics, parameters.lam_t, gamma=gamma, malicious=malicious)
    if plot is not None:
        plot_simulation(plot, grid, parameters)
        err_console.print(f"figures saved to {plot}")
    render_simulation(grid, payoffs, expected, console)


@params_app.command("paper")
def params_paper_cmd() -> None:
    """The paper's published figures next to what its own formulas give (docs/theory.md has the reasons)."""
    from trust.theory.paper import paper_figures
    from trust.theory_report import render_paper

    render_paper(paper_figures(), console)


@bench_app.command("theory")
def bench_theory_cmd(
    traces: Annotated[int, typer.Option("--traces", min=1, help="traces in the Monte Carlo run")] = 1_000_000,
    seed: Annotated[int, typer.Option(help="seed of the numpy generator")] = 0,
) -> None:
    """Exact p_t for k = 1..101 (ms per call) and a 10^6-trace Monte Carlo (seconds), against their targets."""
    import numpy as np

    from trust.bench.theory import render, run_theory_benchmark

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
    from trust.bench.worker import DEFAULT_PIPELINE_SEATS, render, run_worker_benchmark

    settings = _settings(home)
    try:
        with err_console.status("benchmarking the worker") as status:
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
    except ValueError as exc:  # ParameterError included: a bad combination of options
        raise typer.BadParameter(str(exc)) from None
    render(bench, console)


@ipfs_app.command("up")
def ipfs_up_cmd(
    repo: Annotated[Path | None, typer.Option("--repo", help="blocks and pins (default HOME/ipfs)")] = None,
    port: Annotated[int | None, typer.Option("--port", min=1, max=65535, help="API port (default 5101)")] = None,
    home: HomeOption = None,
) -> None:
    """Start the local IPFS node (detached; blobs and pins persist in the repo) and print its API URL."""
    from trust.storage.node import ipfs_up

    status = ipfs_up(_settings(home), repo=repo, port=port)
    what = "started" if status.started else "already running"
    console.print(f"[bold]IPFS node {what}[/bold] (pid {status.pid})")
    console.print(f"API URL: {status.api_url}")
    console.print(f"repo:    {status.repo}")
    if status.log_file:
        console.print(f"log:     {status.log_file}")


@ipfs_app.command("down")
def ipfs_down_cmd(home: HomeOption = None) -> None:
    """Stop the local IPFS node; its blobs and pins stay in the repo for the next `up`."""
    from trust.storage.node import ipfs_down

    if ipfs_down(_settings(home)):
        console.print("IPFS node stopped")
    else:
        console.print("no IPFS node was running")


TierOption = Annotated[int, typer.Option("--tier", min=1, max=3, help="1 computational, 2 LLM, 3 human expert")]


def _worker_logging(verbose: bool) -> logging.Logger:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)-7s %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        force=True,
    )
    for noisy in ("httpx", "httpcore", "web3", "urllib3", "asyncio", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return logging.getLogger("trust.worker")


@worker_app.command("run")
def worker_run_cmd(
    keystore: Annotated[Path, typer.Option("--keystore", help="the auditor's keystore file (its own wallet)")],
    tier: TierOption,
    rpc: Annotated[
        str | None, typer.Option("--rpc", help="JSON-RPC endpoint (default: TRUST_RPC_URL or the devnet)")
    ] = None,
    ipfs: Annotated[
        str | None, typer.Option("--ipfs", help="Kubo RPC API URL (default: TRUST_IPFS__API_URL or the local node)")
    ] = None,
    password_file: PasswordFileOption = None,
    encryption_key: Annotated[
        Path | None,
        typer.Option(
            "--encryption-key",
            help="X25519 key (PEM) registered for this wallet; default: beside the keystore, else from the wallet",
        ),
    ] = None,
    register: Annotated[
        bool, typer.Option("--register", help="register the wallet as an auditor of --tier if it is not")
    ] = False,
    stake: Annotated[str | None, typer.Option("--stake", help="tokens to stake (when registering), or to add")] = None,
    auto_claim: Annotated[
        bool, typer.Option("--auto-claim", help="claim each session's reward as soon as it is paid out")
    ] = False,
    adversary: Annotated[
        str | None,
        typer.Option(
            "--adversary", help="STRESS TESTS ONLY, refused but on a local chain: wrong, random, copy or silent"
        ),
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="state folder (default HOME/worker/<address>)")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="debug logging")] = False,
    home: HomeOption = None,
) -> None:
    """Run the auditor daemon: follow the chain, audit each seat, commit, reveal, finalize. Stops on SIGTERM."""
    from trust.chain.wallets import load_keystore
    from trust.graphs.hdag import Tier
    from trust.worker.adversary import Adversary
    from trust.worker.identity import parse_tokens
    from trust.worker.runner import WorkerOptions, run_worker

    settings = _settings(home)
    if data_dir is not None:
        settings = settings.model_copy(update={"worker": settings.worker.model_copy(update={"data_dir": data_dir})})
    try:
        mode = None if adversary is None else Adversary(adversary)
    except ValueError:
        raise typer.BadParameter(f"{adversary!r}: expected one of {', '.join(a.value for a in Adversary)}") from None
    password = _password(password_file)
    account = load_keystore(keystore, password)
    options = WorkerOptions(
        tier=Tier(tier),
        keystore=keystore,
        encryption_key=encryption_key,
        register=register,
        stake_units=None if stake is None else parse_tokens(stake),
        adversary=mode,
        auto_claim=auto_claim,
        rpc_url=rpc,
        ipfs_url=ipfs,
    )
    log = _worker_logging(verbose)
    asyncio.run(run_worker(settings, options, account, password, log=log))


def _keystore_address(keystore: Path) -> str:
    from eth_utils import to_checksum_address

    from trust.errors import WalletError

    try:
        return str(to_checksum_address("0x" + json.loads(keystore.read_text())["address"].removeprefix("0x")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WalletError(f"cannot read the address of keystore {keystore}: {exc}") from exc


@worker_app.command("status")
def worker_status_cmd(
    keystore: Annotated[
        Path | None, typer.Option("--keystore", help="the worker's keystore (only its address is read)")
    ] = None,
    address: Annotated[
        str | None, typer.Option("--address", help="the worker's address, instead of --keystore")
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="state folder (default HOME/worker/<address>)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    home: HomeOption = None,
) -> None:
    """Show a worker's seats, their states and deadlines, failures and its recent log (works while it
    runs). Without --keystore, --address or --data-dir: every worker under HOME/worker."""
    from trust.worker.status import find_states, render_status, status_report

    settings = _settings(home)
    who = address or (_keystore_address(keystore) if keystore is not None else None)
    reports = [status_report(path) for path in find_states(settings, who, data_dir)]
    if as_json:
        console.print_json(json.dumps(reports))
        return
    for report in reports:
        render_status(report, console)


@worker_app.command("withdraw")
def worker_withdraw_cmd(
    keystore: Annotated[Path, typer.Option("--keystore", help="the auditor's keystore file")],
    rpc: Annotated[
        str | None, typer.Option("--rpc", help="JSON-RPC endpoint (default: TRUST_RPC_URL or the devnet)")
    ] = None,
    password_file: PasswordFileOption = None,
    home: HomeOption = None,
) -> None:
    """Claim the rewards of every aligned seat and the staker reward."""
    from trust.chain.wallets import load_keystore
    from trust.worker.runner import withdraw

    settings = _settings(home)
    account = load_keystore(keystore, _password(password_file))
    with console.status("claiming rewards"):
        seats, staker = asyncio.run(withdraw(settings, account, rpc_url=rpc))
    console.print(f"seat rewards: {seats / 10**18:.6f} ETH; staker reward: {staker / 10**18:.6f} ETH")


@app.command("audit-segment")
def audit_segment_cmd(
    path: Annotated[Path, typer.Argument(help="a segment file: the node JSON with its parents (docs/auditors.md)")],
    tier: TierOption,
    as_json: Annotated[bool, typer.Option("--json", help="print {vote, score, critique, ...} as JSON")] = False,
    home: HomeOption = None,
) -> None:
    """Audit one plaintext segment locally with a tier's auditor and print its verdict."""
    from trust.auditors.base import loads_request
    from trust.auditors.tiers import audit_once
    from trust.errors import ConfigError

    settings = _settings(home)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the segment file {path}: {exc.strerror or exc}") from exc
    request = loads_request(text)
    verdict = asyncio.run(audit_once(request, tier, settings))
    if as_json:
        print(json.dumps(verdict.to_json(), ensure_ascii=False))
        return
    colour = {"pass": "green", "fail": "red"}.get(verdict.vote.value, "yellow")
    score = "-" if verdict.score is None else f"{verdict.score:.2f}"
    console.print(f"[bold {colour}]{verdict.vote.value}[/] (score {score}) {escape(verdict.critique)}")
    for check in verdict.checks:
        console.print(f"  {check.check:<12} {check.outcome.value:<15} {escape(check.detail)}")


@app.command("submit")
def submit_cmd(
    path: Annotated[
        Path | None,
        typer.Argument(help="a trace (text, steps JSON or trust.hdag JSON) or, with --agents, an agent log"),
    ] = None,
    agents: Annotated[
        bool, typer.Option("--agents", help="the file is a multi-agent log (trust.agent-log or Who&When)")
    ] = False,
    steps: Annotated[
        bool, typer.Option("--steps", help="the file is a JSON list of steps or {problem, steps}")
    ] = False,
    tiers: Annotated[
        list[str] | None, typer.Option("--tier", help="tiers to pay for: 1/2/3 or computational/llm/human (repeat)")
    ] = None,
    keystore: Annotated[
        Path | None,
        typer.Option("--keystore", help="the provider's keystore (default on a local chain: Anvil's account 3)"),
    ] = None,
    password_file: Annotated[
        Path | None, typer.Option("--password-file", help="first line: the keystore password")
    ] = None,
    rpc_url: RpcOption = None,
    ipfs_url: Annotated[
        str | None, typer.Option("--ipfs", help="Kubo RPC API URL (default: the local IPFS node)")
    ] = None,
    max_latency_s: Annotated[float, typer.Option("--max-latency", min=1, help="seconds to wait for the verdict")] = 600,
    resume: Annotated[
        int | None, typer.Option("--resume", min=1, help="finish session N opened earlier instead")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the AuditResult as JSON (progress goes to stderr)")
    ] = False,
    home: HomeOption = None,
) -> None:
    """Audit one trace or agent log on the running network and print the result."""
    from trust.decomposition import load_trace
    from trust.errors import ConfigError
    from trust.sdk.client import TrustClient
    from trust.sdk.config import AuditConfig
    from trust.sdk.display import ProgressBars, render_phases, render_result
    from trust.sdk.provider import provider_account

    settings = _settings(home)
    if (path is None) == (resume is None):
        raise typer.BadParameter("give a FILE to audit, or --resume SESSION (not both)")
    try:
        config = AuditConfig(auditor_tiers=tiers or (1, 2, 3), max_latency_ms=int(max_latency_s * 1000))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    url = rpc_url or settings.effective_rpc_url
    account = provider_account(settings, url, keystore, _password(password_file) if keystore else None)
    with ProgressBars(err_console) as bars:
        client = TrustClient(url, ipfs_url, account=account, settings=settings, progress=bars)
        if resume is not None:
            result = client.resume_sync(resume, config)
        elif agents:
            assert path is not None
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"cannot read the agent log {path}: {exc.strerror or exc}") from None
            result = client.audit_agents_sync(text, config)
        else:
            assert path is not None
            trace = load_trace(path, steps=steps)
            result = client.audit_trace_sync(trace.text if trace.text is not None else trace, config)
    if as_json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
        return
    render_result(result, console)
    render_phases({"this audit": result}, console)


@app.command("gateway")
def gateway_cmd(
    host: Annotated[str, typer.Option("--host", help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int | None, typer.Option("--port", min=1, max=65535, help="port (default 8600)")] = None,
    epoch_seconds: Annotated[
        float | None, typer.Option("--epoch-seconds", min=0.001, help="an epoch closes this long after its first trace")
    ] = None,
    max_traces_per_epoch: Annotated[
        int | None, typer.Option("--max-traces-per-epoch", min=1, help="or when it holds this many traces")
    ] = None,
    max_segments_per_epoch: Annotated[
        int | None, typer.Option("--max-segments-per-epoch", min=1, help="segments of one batch session")
    ] = None,
    max_body_bytes: Annotated[int | None, typer.Option("--max-body-bytes", min=1, help="largest request body")] = None,
    session_timeout: Annotated[
        float | None, typer.Option("--session-timeout", min=1, help="seconds a batch session is driven at most")
    ] = None,
    keystore: Annotated[
        Path | None,
        typer.Option("--keystore", help="the gateway's wallet, paying every batch (local chain: Anvil's account 4)"),
    ] = None,
    password_file: PasswordFileOption = None,
    rpc_url: RpcOption = None,
    ipfs_url: Annotated[
        str | None, typer.Option("--ipfs", help="Kubo RPC API URL (default: the local IPFS node)")
    ] = None,
    explorer: Annotated[bool, typer.Option("--explorer/--no-explorer", help="serve the explorer too")] = True,
    home: HomeOption = None,
) -> None:
    """Serve the provider gateway (/v1/audits: traces batched per epoch into one session each, for source
    anonymization) and the explorer (/explorer/). Unset options take the defaults of docs/gateway.md."""
    import uvicorn

    from trust.api.app import DEFAULT_GATEWAY_PORT, create_app, gateway_account
    from trust.api.gateway import GatewayOptions

    settings = _settings(home)
    url = rpc_url or settings.effective_rpc_url
    default = GatewayOptions()
    options = GatewayOptions(
        epoch_seconds=default.epoch_seconds if epoch_seconds is None else epoch_seconds,
        max_traces_per_epoch=max_traces_per_epoch or default.max_traces_per_epoch,
        max_segments_per_epoch=max_segments_per_epoch or default.max_segments_per_epoch,
        max_body_bytes=max_body_bytes or default.max_body_bytes,
        session_timeout_seconds=session_timeout or default.session_timeout_seconds,
    )
    account = gateway_account(settings, url, keystore, _password(password_file) if keystore else None)
    api = create_app(account, settings, rpc_url=url, ipfs_url=ipfs_url, options=options, explorer=explorer)
    listen = port or DEFAULT_GATEWAY_PORT
    err_console.print(
        f"gateway {account.address}: http://{host}:{listen}/v1/audits (epochs of {options.epoch_seconds:g} s or "
        f"{options.max_traces_per_epoch} traces)" + (f", explorer http://{host}:{listen}/explorer/" if explorer else "")
    )
    uvicorn.run(api, host=host, port=listen, log_level="info")


@app.command("demo")
def demo_cmd(
    explorer: Annotated[bool, typer.Option("--explorer/--no-explorer", help="serve the explorer until Ctrl-C")] = True,
    home: HomeOption = None,
) -> None:
    """The paper's clinical example audited end to end on a local network; ends with one JSON line."""
    from trust.demo.run import run_demo

    asyncio.run(run_demo(_settings(home), console, explorer=explorer))


@bench_app.command("e2e")
def bench_e2e_cmd(
    runs: Annotated[int, typer.Option(min=1, max=50, help="audits of the trace on one network")] = 3,
    home: HomeOption = None,
) -> None:
    """A 10-node tier-1/2 trace audited on a local network: Table-3 phases, overhead, gas per seat;
    ends with one JSON line {"overhead_s", "seats", "gas_per_seat", ...}."""
    from trust.bench.e2e import render, run_e2e_benchmark

    with err_console.status("end-to-end benchmark") as status:
        bench = asyncio.run(run_e2e_benchmark(_settings(home), runs=runs, progress=status.update))
    render(bench, console)
    print(json.dumps(bench.summary()), flush=True)


@bench_app.command("byzantine")
def bench_byzantine_cmd(
    segments: Annotated[int, typer.Option("--segments", min=10, help="tier-1 segments audited per rho")] = 200,
    pool: Annotated[int, typer.Option("--pool", min=4, help="tier-1 auditors eligible in every phase")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="fixes the generated claims")] = 0,
    keep: Annotated[
        Path | None, typer.Option("--keep", help="run the network in this folder and keep it (workers' logs)")
    ] = None,
) -> None:
    """Adversarial auditors (the worker's `wrong` mode) holding rho = 0.1, 0.2 and 0.3 of a tier on a
    local network: observed correct / wrong / undetermined verdicts against the consensus toolkit's
    exact probabilities, and every auditor's money before and after; ends with one JSON line and
    exits 1 when an observed rate disagrees or the adversaries did not lose."""
    from trust.bench.byzantine import render, run_byzantine_benchmark

    with err_console.status("Byzantine benchmark") as status:
        bench = asyncio.run(
            run_byzantine_benchmark(
                pool=pool, segments_per_rho=segments, seed=seed, folder=keep, progress=status.update
            )
        )
    render(bench, console)
    print(json.dumps(bench.summary()), flush=True)
    if not (bench.agrees and bench.adversaries_lost and bench.honest_gained):
        raise SystemExit(1)


def main() -> None:
    try:
        app()
    except TrustError as exc:
        # Escaped (messages quote values such as ['beta']) and unwrapped (paths stay whole for copying).
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise SystemExit(1) from None
