"""`trust devnet`: the local development network, with a worker per auditor."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from trust.cli.common import (
    HomeOption,
    console,
    settings_for,
)
from trust.core.amounts import decimal_text

if TYPE_CHECKING:
    from trust.lab.devnet_processes import DevnetProcesses, WorkerState
    from trust.settings import Settings

__all__ = ["devnet_app"]

devnet_app = typer.Typer(
    help="The local development network (Anvil, the deployed protocol, a worker per auditor).", no_args_is_help=True
)

_TIER_NAMES = {1: "1 computational", 2: "2 LLM", 3: "3 human"}


def _shown(path: Path, folder: Path) -> str:
    """`path` relative to `folder` when it lies there (the table stays narrow), else in full."""
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


def _worker_word(worker: WorkerState) -> str:
    if worker.pid is None:
        return "[dim]none[/dim]"
    if not worker.running:
        return f"[red]dead[/red] (pid {worker.pid})"
    return f"{'started' if worker.started else 'running'} (pid {worker.pid})"


def _render_processes(processes: DevnetProcesses, folder: Path) -> None:
    table = Table(title=f"{len(processes.workers)} workers (logs under {folder})", show_lines=False)
    table.add_column("tier")
    table.add_column("address", no_wrap=True, min_width=42)
    table.add_column("worker")
    table.add_column("log")
    for worker in processes.workers:
        table.add_row(
            _TIER_NAMES.get(worker.tier, str(worker.tier)),
            worker.address,
            _worker_word(worker),
            _shown(worker.log_file, folder),
        )
    console.print(table)
    pages = [w for w in processes.workers if w.review is not None]
    if pages:
        console.print(f"[bold]tier 3: review pages[/bold] (passwords in {processes.review_pages_file}, mode 0600)")
        for worker in pages:
            assert worker.review is not None
            console.print(f"  {worker.review.url}  auditor {worker.address}")
        expert = processes.expert
        if expert is not None and expert.running:
            console.print(
                f"  voted by the [bold]scripted expert[/bold] {escape('[scripted expert, not a person]')} "
                f"(pid {expert.pid}, log {expert.log_file}); `trust devnet down` stops it"
            )
        else:
            console.print(
                "  voted by a person: sign in on the page with its password from that file and vote before the "
                "seat's commit deadline; a seat nobody votes on is silent, and a node nobody decides is "
                "undetermined"
            )
    if processes.beacon_signers:
        running = sum(1 for signer in processes.beacon_signers if signer.running)
        console.print(
            f"beacon signers:  {running} of {len(processes.beacon_signers)} running "
            f"(`trust beacon status`; logs under {folder.parent / 'beacon'})"
        )
    if processes.ipfs_url:
        console.print(f"IPFS API:        {processes.ipfs_url}")
    if processes.model_url:
        console.print(f"tier-2 model:    {processes.model_url} (embedded SmolLM2: proves the wiring, not the verdicts)")


def _randomness_words(kind: str, settings: Settings) -> str:
    if kind == "beacon":
        b = settings.beacon
        return f"ThresholdBeacon, a {b.threshold}-of-{b.signers} threshold BLS beacon (its signers run here)"
    return "BlockhashRandomness, the block hash: INSECURE (a block producer chooses it), for unit tests only"


@devnet_app.command("up")
def devnet_up_cmd(
    auditors: Annotated[int | None, typer.Option("--auditors", "-n", min=3, max=256, help="auditor accounts")] = None,
    no_workers: Annotated[
        bool, typer.Option("--no-workers", help="provision the auditors but run none of their workers")
    ] = False,
    scripted_expert: Annotated[
        bool,
        typer.Option(
            "--scripted-expert",
            help="also run the demo's scripted tier-3 expert (not a person) on the review pages; without it only a "
            "person votes on tier 3",
        ),
    ] = False,
    home: HomeOption = None,
) -> None:
    """Start Anvil (state persisted), deploy the protocol, fund, register and stake auditors, and run
    one worker per auditor (with the IPFS node and the tier-2 model they use)."""
    from trust.lab.devnet import devnet_up
    from trust.lab.devnet_processes import devnet_up_with_workers

    if no_workers and scripted_expert:
        raise typer.BadParameter("--scripted-expert votes through the tier-3 workers: drop --no-workers")
    settings = settings_for(home)
    processes: DevnetProcesses | None = None
    with console.status("starting the devnet") as status:
        if no_workers:
            result = devnet_up(settings, auditors, progress=lambda msg: status.update(msg))
        else:
            result, processes = devnet_up_with_workers(
                settings, auditors, scripted_expert=scripted_expert, progress=lambda msg: status.update(msg)
            )
    what = "started" if result.started else "already running"
    console.print(f"[bold]devnet {what}[/bold] (pid {result.pid}, chain {result.chain_id})")
    console.print(f"RPC URL:         {result.rpc_url}")
    console.print(f"deployment file: {result.deployment_file}")
    for name, address in result.deployment.contracts.items():
        console.print(f"  {name:<20} {address}")
    console.print(
        f"randomness:      {_randomness_words(result.deployment.extra.get('randomness', 'blockhash'), settings)}"
    )
    console.print(f"treasury:        {result.treasury}")
    console.print(f"insurance fund:  {result.insurance_fund}")
    table = Table(title=f"{len(result.auditors)} auditors", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("address", no_wrap=True, min_width=42)
    table.add_column("tier", justify="center")
    table.add_column("stake (TRUST)", justify="right")
    for index, auditor in enumerate(result.auditors):
        table.add_row(str(index), auditor.address, str(auditor.tier), decimal_text(auditor.stake))
    console.print(table)
    console.print(f"keystores:       {settings.devnet_dir / 'keystores'}")
    console.print(f"password file:   {settings.devnet_dir / 'keystore-password'}")
    if processes is None:
        console.print(
            "no workers started (--no-workers): audits wait until each auditor runs `trust worker run` (workers "
            "an earlier `up` started keep running: `trust devnet status` lists them)"
        )
        return
    _render_processes(processes, settings.devnet_dir.expanduser().resolve())
    console.print("ready: `trust submit FILE` audits a trace here; `trust devnet down` stops everything")


@devnet_app.command("down")
def devnet_down_cmd(home: HomeOption = None) -> None:
    """Stop the workers, the scripted expert, the node (its chain stays on disk for the next `up`),
    and the IPFS node and model server if `up` started them."""
    from trust.lab.devnet_processes import devnet_down_with_workers

    with console.status("stopping the devnet"):
        stopped, node = devnet_down_with_workers(settings_for(home))
    if stopped.expert:
        console.print("scripted expert stopped")
    if stopped.workers:
        console.print(f"{stopped.workers} workers stopped")
    if stopped.beacon_signers:
        console.print(f"{stopped.beacon_signers} beacon signers stopped")
    if stopped.model_server:
        console.print("model server stopped")
    if stopped.ipfs:
        console.print("IPFS node stopped")
    if node:
        console.print("devnet stopped (state saved)")
    else:
        console.print("no devnet was running")


@devnet_app.command("status")
def devnet_status_cmd(home: HomeOption = None) -> None:
    """Show the node, each worker (running or dead, with its log), the review pages and the scripted expert."""
    from trust.lab.devnet import devnet_node
    from trust.lab.devnet_processes import devnet_processes

    settings = settings_for(home)
    node = devnet_node(settings)
    if node.running:
        console.print(f"[bold]devnet running[/bold] (pid {node.pid}) at {node.rpc_url}")
    elif node.pid is not None:
        console.print(f"[bold red]devnet node dead[/bold red] (recorded pid {node.pid}); log {node.log_file}")
    else:
        console.print("no devnet node is running (`trust devnet up` starts one)")
    processes = devnet_processes(settings)
    if not processes.workers:
        console.print("no auditors provisioned yet")
        return
    _render_processes(processes, settings.devnet_dir.expanduser().resolve())
    dead = [w for w in processes.workers if w.pid is not None and not w.running]
    if dead:
        console.print(f"[red]{len(dead)} workers are not running[/red]: `trust devnet up` starts them again")
