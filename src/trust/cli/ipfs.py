"""`trust ipfs`: the local IPFS node."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trust.cli.common import (
    HomeOption,
    console,
    settings_for,
)

ipfs_app = typer.Typer(help="The local IPFS node (Helia behind the Kubo RPC API).", no_args_is_help=True)


@ipfs_app.command("up")
def ipfs_up_cmd(
    repo: Annotated[Path | None, typer.Option("--repo", help="blocks and pins (default HOME/ipfs)")] = None,
    port: Annotated[int | None, typer.Option("--port", min=1, max=65535, help="API port (default 5101)")] = None,
    home: HomeOption = None,
) -> None:
    """Start the local IPFS node (detached; blobs and pins persist in the repo) and print its API URL."""
    from trust.storage.node import ipfs_up

    status = ipfs_up(settings_for(home), repo=repo, port=port)
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

    if ipfs_down(settings_for(home)):
        console.print("IPFS node stopped")
    else:
        console.print("no IPFS node was running")
