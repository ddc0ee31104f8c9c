"""`trust beacon`: the threshold BLS randomness beacon's signer processes of this home."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from trust.cli.common import HomeOption, RpcOption, console, settings_for

if TYPE_CHECKING:
    from trust.adapters.local.beacon.processes import SignerState

__all__ = ["beacon_app"]

beacon_app = typer.Typer(
    help="The randomness beacon: t-of-n threshold BLS signers that produce each committee's seed.",
    no_args_is_help=True,
)


@beacon_app.command("up")
def beacon_up_cmd(rpc_url: RpcOption = None, home: HomeOption = None) -> None:
    """Start this home's signers that do not run (the group is dealt and the beacon deployed by
    `trust devnet up`, which runs them too)."""
    from trust.adapters.local.beacon.processes import beacon_up
    from trust.adapters.local.toolchain import Toolchain

    settings = settings_for(home)
    url = rpc_url or settings.effective_rpc_url
    with console.status("starting the beacon signers") as status:
        signers = beacon_up(
            settings,
            url,
            settings.deployments_path(Toolchain.discover().root),
            progress=lambda msg: status.update(msg),
        )
    _render(signers, settings.beacon_dir)


@beacon_app.command("down")
def beacon_down_cmd(home: HomeOption = None) -> None:
    """Stop this home's signers (their keys stay; `trust beacon up` starts them again)."""
    from trust.adapters.local.beacon.processes import beacon_down

    stopped = beacon_down(settings_for(home))
    console.print(f"{stopped} beacon signers stopped" if stopped else "no beacon signer was running")


@beacon_app.command("status")
def beacon_status_cmd(home: HomeOption = None) -> None:
    """Show each signer of this home's group: its account, whether it runs, its log."""
    from trust.adapters.local.beacon.processes import beacon_status

    settings = settings_for(home)
    signers = beacon_status(settings)
    if not signers:
        console.print(f"no beacon group in {settings.beacon_dir} (`trust devnet up` deals one)")
        return
    _render(signers, settings.beacon_dir)


@beacon_app.command("run")
def beacon_run_cmd(
    key_file: Annotated[Path, typer.Option("--key-file", help="this signer's key file (signer-<i>.json)")],
    rpc_url: RpcOption = None,
    home: HomeOption = None,
) -> None:
    """Run one signer in the foreground: sign each requested block once mined, post the share,
    publish the group signature from t valid shares. Stops on SIGTERM. (`trust beacon up` runs one
    per signer.)"""
    from trust.services.beacon.signer import run_signer

    settings = settings_for(home)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%Y-%m-%d %H:%M:%S")
    logger = logging.getLogger("trust.services.beacon")
    asyncio.run(run_signer(settings, key_file, rpc_url or settings.effective_rpc_url, logger.info))


def _render(signers: list[SignerState], folder: Path) -> None:
    table = Table(title=f"{len(signers)} beacon signers (keys and logs under {folder})")
    table.add_column("#", justify="right")
    table.add_column("operator", no_wrap=True, min_width=42)
    table.add_column("process")
    table.add_column("log")
    for signer in signers:
        if signer.pid is None:
            word = "[dim]none[/dim]"
        elif not signer.running:
            word = f"[red]dead[/red] (pid {signer.pid})"
        else:
            word = f"{'started' if signer.started else 'running'} (pid {signer.pid})"
        table.add_row(str(signer.index), signer.operator, word, signer.log_file.name)
    console.print(table)
