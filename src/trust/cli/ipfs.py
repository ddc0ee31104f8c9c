"""`trust ipfs`: the local IPFS node."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from trust.cli.common import (
    HomeOption,
    console,
    settings_for,
)

__all__ = ["ipfs_app", "ipfs_down_cmd", "ipfs_up_cmd"]

ipfs_app = typer.Typer(help="The local IPFS node (Helia behind the Kubo RPC API).", no_args_is_help=True)


@ipfs_app.command("up")
def ipfs_up_cmd(
    repo: Annotated[Path | None, typer.Option("--repo", help="blocks and pins (default HOME/ipfs)")] = None,
    port: Annotated[int | None, typer.Option("--port", min=1, max=65535, help="API port (default 5101)")] = None,
    home: HomeOption = None,
) -> None:
    """Start this home's IPFS node (detached; blobs and pins persist in the repo) and print its API URL.
    A port held by another home's node is an error naming it; that node is left alone."""
    from trust.adapters.local.ipfs import ipfs_up

    settings = settings_for(home)
    status = ipfs_up(settings, repo=repo, port=port)
    what = "started" if status.started else "already running"
    console.print(f"[bold]IPFS node {what}[/bold] (pid {status.pid})")
    console.print(f"API URL: {status.api_url}")
    console.print(f"repo:    {status.repo}")
    if status.log_file:
        console.print(f"log:     {status.log_file}")
    if settings.ipfs.api_url != status.api_url:
        # --port only moves the node: the other commands still read TRUST_IPFS__PORT (or __API_URL).
        console.print(
            f"note: this home's other commands use {settings.ipfs.api_url}; "
            f"set TRUST_IPFS__PORT={urlsplit(status.api_url).port} for them to use this node",
            soft_wrap=True,
        )


@ipfs_app.command("down")
def ipfs_down_cmd(home: HomeOption = None) -> None:
    """Stop this home's IPFS node; its blobs and pins stay in the repo for the next `up`. Another
    home's node is never stopped."""
    from trust.adapters.local.ipfs import ipfs_down

    stopped = ipfs_down(settings_for(home))
    if stopped.stopped:
        console.print("IPFS node stopped")
    else:
        console.print("no IPFS node was running for this home")
    if stopped.note:
        console.print(f"note: {stopped.note}", soft_wrap=True)
