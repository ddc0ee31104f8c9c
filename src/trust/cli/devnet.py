"""`trust devnet`: the local development network."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from trust.cli.common import (
    HomeOption,
    console,
    settings_for,
)

devnet_app = typer.Typer(help="The local development network (Anvil + the deployed protocol).", no_args_is_help=True)


@devnet_app.command("up")
def devnet_up_cmd(
    auditors: Annotated[int | None, typer.Option("--auditors", "-n", min=3, max=256, help="auditor accounts")] = None,
    home: HomeOption = None,
) -> None:
    """Start Anvil (state persisted), deploy the protocol, and fund, register and stake auditors."""
    from trust.devnet import devnet_up

    settings = settings_for(home)
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

    if devnet_down(settings_for(home)):
        console.print("devnet stopped (state saved)")
    else:
        console.print("no devnet was running")
