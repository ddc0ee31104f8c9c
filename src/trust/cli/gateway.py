"""`trust gateway`: the HTTP gateway for providers, and its accounts (`trust gateway keys ...`).

`trust gateway [options]` serves; `trust gateway keys create|list|revoke` manage the API keys in the
gateway's home (`TRUST_GATEWAY__DATA_DIR`, default `<home>/gateway`), also while it runs.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from trust.cli.app import app
from trust.cli.common import (
    HomeOption,
    PasswordFileOption,
    RpcOption,
    console,
    err_console,
    keystore_password,
    settings_for,
)

__all__ = ["gateway_app", "gateway_cmd", "keys_app"]

gateway_app = typer.Typer(
    help="The provider gateway: `trust gateway` with its options serves it; `trust gateway keys ...` manages its API keys.",
    invoke_without_command=True,
)
keys_app = typer.Typer(help="The gateway's API keys (one per provider), stored hashed in the gateway's home.")
gateway_app.add_typer(keys_app, name="keys", no_args_is_help=True)
app.add_typer(gateway_app, name="gateway")


@gateway_app.callback()
def gateway_cmd(
    ctx: typer.Context,
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
    anonymization) and the explorer (/explorer/). Every /v1 request needs an API key (`trust gateway keys
    create`). Unset options take the defaults of docs/gateway.md."""
    if ctx.invoked_subcommand is not None:
        return
    import uvicorn

    from trust.api.access import AccessControl
    from trust.api.app import DEFAULT_GATEWAY_PORT, create_app, gateway_account
    from trust.api.gateway import GatewayOptions

    settings = settings_for(home)
    access = AccessControl.from_settings(settings)
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
    api = create_app(
        account, settings, rpc_url=url, ipfs_url=ipfs_url, options=options, explorer=explorer, access=access
    )
    listen = port or DEFAULT_GATEWAY_PORT
    err_console.print(
        f"gateway {account.address}: http://{host}:{listen}/v1/audits (epochs of {options.epoch_seconds:g} s or "
        f"{options.max_traces_per_epoch} traces)" + (f", explorer http://{host}:{listen}/explorer/" if explorer else "")
    )
    keys = [key for key in access.store.list() if key.active]
    err_console.print(
        f"{len(keys)} active API keys in {access.store.path}"
        + ("" if keys else ": create one with `trust gateway keys create --name NAME`")
    )
    uvicorn.run(api, host=host, port=listen, log_level="info")


# ---------------------------------------------------------------------------------------- keys


def _when(seconds: float | None) -> str:
    return "" if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


@keys_app.command("create")
def keys_create_cmd(
    name: Annotated[str, typer.Option("--name", help="whom the key is for (shown in `keys list`)")],
    provider: Annotated[
        str | None,
        typer.Option("--provider", help="the provider address whose escrow pays for this key's traces (billing)"),
    ] = None,
    rate: Annotated[
        str | None, typer.Option("--rate", help='submissions per window, e.g. "10/minute" (default: the settings\')')
    ] = None,
    quota: Annotated[
        str | None,
        typer.Option("--quota", help='accepted traces: "1000/day" (moving window) or "5000" (in total)'),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the key and its record as one JSON object")] = False,
    home: HomeOption = None,
) -> None:
    """Create an API key. The key is printed once, here, and stored only as its SHA-256: keep it."""
    from trust.api.access import parse_quota, parse_rate
    from trust.api.keys import KeyStore

    if rate is not None:
        parse_rate(rate, "--rate")
        rate = rate.strip()
    if quota is not None:
        quota = parse_quota(quota, "--quota").text
    settings = settings_for(home)
    key, token = KeyStore(settings.gateway_dir).create(name, provider=provider, rate=rate, quota=quota)
    if as_json:
        print(json.dumps({"key": token, **key.to_json()}))
        return
    limits = f"rate {key.rate or settings.gateway.default_rate + ' (default)'}, "
    limits += f"quota {key.quota or settings.gateway.default_quota + ' (default)'}"
    payer = (
        f", billed to {key.provider}" if key.provider else ", no provider address (cannot submit while billing is on)"
    )
    err_console.print(f"key {key.key_id} for {key.name}: {limits}{payer}")
    err_console.print("the key (shown once, stored only hashed):")
    print(token)


@keys_app.command("list")
def keys_list_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per key")] = False,
    home: HomeOption = None,
) -> None:
    """List the gateway's keys (ids, names, providers, limits; never the keys themselves)."""
    from trust.api.keys import KeyStore

    settings = settings_for(home)
    keys = KeyStore(settings.gateway_dir).list()
    if as_json:
        for key in keys:
            print(json.dumps(key.to_json()))
        return
    table = Table("id", "name", "provider", "rate", "quota", "created", "revoked")
    for key in keys:
        table.add_row(
            key.key_id,
            key.name,
            key.provider or "",
            key.rate or f"{settings.gateway.default_rate} (default)",
            key.quota or f"{settings.gateway.default_quota} (default)",
            _when(key.created_at),
            _when(key.revoked_at),
        )
    console.print(table)


@keys_app.command("revoke")
def keys_revoke_cmd(
    key_id: Annotated[str, typer.Argument(help="the key's id (`trust gateway keys list`)")],
    home: HomeOption = None,
) -> None:
    """Revoke a key: refused with 401 from its next request on, by a running gateway too."""
    from trust.api.keys import KeyStore

    key = KeyStore(settings_for(home).gateway_dir).revoke(key_id)
    err_console.print(f"revoked key {key.key_id} ({key.name}) at {_when(key.revoked_at)}")
