"""The `trust` command: devnet, deploy, bench.

Only parses input, calls the library and renders output; the work lives in `trust.devnet`,
`trust.chain` and `trust.bench`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from trust.errors import TrustError
from trust.settings import Settings

__all__ = ["app", "main"]

app = typer.Typer(help="TRUST: a decentralized network that audits AI reasoning.", no_args_is_help=True)
devnet_app = typer.Typer(help="The local development network (Anvil + the deployed protocol).", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks that print figures.", no_args_is_help=True)
app.add_typer(devnet_app, name="devnet")
app.add_typer(bench_app, name="bench")

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


def main() -> None:
    try:
        app()
    except TrustError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        raise SystemExit(1) from None
