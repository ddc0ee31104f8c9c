"""`trust gateway`: the HTTP gateway for providers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trust.cli.app import app
from trust.cli.common import (
    HomeOption,
    PasswordFileOption,
    RpcOption,
    err_console,
    keystore_password,
    settings_for,
)

__all__ = ["gateway_cmd"]


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

    settings = settings_for(home)
    url = rpc_url or settings.effective_rpc_url
    default = GatewayOptions()
    options = GatewayOptions(
        epoch_seconds=default.epoch_seconds if epoch_seconds is None else epoch_seconds,
        max_traces_per_epoch=max_traces_per_epoch or default.max_traces_per_epoch,
        max_segments_per_epoch=max_segments_per_epoch or default.max_segments_per_epoch,
        max_body_bytes=max_body_bytes or default.max_body_bytes,
        session_timeout_seconds=session_timeout or default.session_timeout_seconds,
    )
    account = gateway_account(settings, url, keystore, keystore_password(password_file) if keystore else None)
    api = create_app(account, settings, rpc_url=url, ipfs_url=ipfs_url, options=options, explorer=explorer)
    listen = port or DEFAULT_GATEWAY_PORT
    err_console.print(
        f"gateway {account.address}: http://{host}:{listen}/v1/audits (epochs of {options.epoch_seconds:g} s or "
        f"{options.max_traces_per_epoch} traces)" + (f", explorer http://{host}:{listen}/explorer/" if explorer else "")
    )
    uvicorn.run(api, host=host, port=listen, log_level="info")
