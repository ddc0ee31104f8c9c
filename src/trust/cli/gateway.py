"""`trust gateway`: the HTTP gateway for providers, and its accounts (`trust gateway keys ...`).

`trust gateway [options]` serves; `trust gateway keys create|list|revoke` manage the API keys in the
gateway's home (`TRUST_GATEWAY__DATA_DIR`, default `<home>/gateway`), also while it runs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
from trust.errors import ConfigError
from trust.settings import Settings

if TYPE_CHECKING:
    from eth_account.signers.local import LocalAccount

    from trust.adapters.chain.escrow import EscrowContract

__all__ = [
    "gateway_app",
    "gateway_authorize_cmd",
    "gateway_balance_cmd",
    "gateway_cmd",
    "gateway_deposit_cmd",
    "gateway_withdraw_cmd",
    "keys_app",
]

gateway_app = typer.Typer(
    help="The provider gateway: `trust gateway` with its options serves it; `keys`, `deposit`, `authorize`, "
    "`withdraw` and `balance` manage its accounts.",
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
    billing: Annotated[
        bool | None,
        typer.Option(
            "--billing/--no-billing",
            help="providers pay their share of each fee from their escrow (default: TRUST_GATEWAY__BILLING, on)",
        ),
    ] = None,
    home: HomeOption = None,
) -> None:
    """Serve the provider gateway (/v1/audits: traces batched per epoch into one session each, for source
    anonymization) and the explorer (/explorer/). Every /v1 request needs an API key (`trust gateway keys
    create`). Unset options take the defaults of docs/gateway.md."""
    if ctx.invoked_subcommand is not None:
        return
    import uvicorn

    from trust.api.app import DEFAULT_GATEWAY_PORT, create_app, gateway_account
    from trust.api.gateway.access import AccessControl
    from trust.api.gateway.service import GatewayOptions

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
    bills = settings.gateway.billing if billing is None else billing
    api = create_app(
        account,
        settings,
        rpc_url=url,
        ipfs_url=ipfs_url,
        options=options,
        explorer=explorer,
        access=access,
        billing=bills,
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
        + (
            f"; billing on: providers deposit and authorize {account.address} (`trust gateway deposit`, `authorize`)"
            if bills
            else "; billing off: this wallet pays every key holder's fees"
        )
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
    from trust.api.gateway.access import parse_quota, parse_rate
    from trust.api.gateway.keys import KeyStore

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
    from trust.api.gateway.keys import KeyStore

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
    from trust.api.gateway.keys import KeyStore

    key = KeyStore(settings_for(home).gateway_dir).revoke(key_id)
    err_console.print(f"revoked key {key.key_id} ({key.name}) at {_when(key.revoked_at)}")


# ---------------------------------------------------------------------------------------- the escrow

KeystoreOption = Annotated[
    Path | None,
    typer.Option("--keystore", help="the provider's wallet (local chain without one: Anvil's account 3)"),
]


def _provider(
    home: Path | None, rpc_url: str | None, keystore: Path | None, password_file: Path | None
) -> tuple[Settings, str, LocalAccount]:
    """The settings of `home`, the RPC URL to use and the provider's wallet, for an escrow command."""
    from trust.services.sdk.provider import provider_account

    settings = settings_for(home)
    url = rpc_url or settings.effective_rpc_url
    password = keystore_password(password_file) if keystore else None
    return settings, url, provider_account(settings, url, keystore, password)


def _escrow_run(
    settings: Settings, rpc_url: str, action: Callable[[EscrowContract], Awaitable[str]], *, raw: bool = False
) -> None:
    """Runs `action` on the deployment's escrow and prints what it returns (`raw`: as is, for JSON)."""
    from trust.api.gateway.billing import open_escrow

    async def run() -> str:
        async with open_escrow(settings, rpc_url) as (_protocol, escrow):
            return await action(escrow)

    text = asyncio.run(run())
    if raw:
        print(text)
    else:
        console.print(text, soft_wrap=True)


@gateway_app.command("deposit")
def gateway_deposit_cmd(
    amount: Annotated[str, typer.Option("--amount", help="ETH to deposit, e.g. 0.5")],
    keystore: KeystoreOption = None,
    password_file: PasswordFileOption = None,
    rpc_url: RpcOption = None,
    home: HomeOption = None,
) -> None:
    """Deposit ETH into the providers' escrow, from which a gateway you authorize takes your traces' fees."""
    from trust.core.amounts import eth_text, parse_amount

    wei = parse_amount(amount, "--amount", unit="ETH")
    settings, url, provider = _provider(home, rpc_url, keystore, password_file)

    async def act(escrow: EscrowContract) -> str:
        sent = await escrow.deposit(provider, wei)
        account = await escrow.account(provider.address)
        return (
            f"deposited {eth_text(wei)} for {provider.address} in {escrow.address} ({sent.tx_hash}); "
            f"deposit {eth_text(account.balance_wei)}, available {eth_text(account.available_wei)}"
        )

    _escrow_run(settings, url, act)


@gateway_app.command("withdraw")
def gateway_withdraw_cmd(
    amount: Annotated[str, typer.Option("--amount", help="ETH to withdraw (at most what no reservation holds)")],
    keystore: KeystoreOption = None,
    password_file: PasswordFileOption = None,
    rpc_url: RpcOption = None,
    home: HomeOption = None,
) -> None:
    """Withdraw unspent ETH from the escrow (what a pending reservation holds stays until it is charged or lapses)."""
    from trust.core.amounts import eth_text, parse_amount

    wei = parse_amount(amount, "--amount", unit="ETH")
    settings, url, provider = _provider(home, rpc_url, keystore, password_file)

    async def act(escrow: EscrowContract) -> str:
        available = (await escrow.account(provider.address)).available_wei
        if wei > available:
            raise ConfigError(
                f"--amount {amount} ETH is more than the {eth_text(available)} available to {provider.address} "
                "(the deposit less what pending reservations hold); nothing was sent"
            )
        sent = await escrow.withdraw(provider, wei)
        return f"withdrew {eth_text(wei)} to {provider.address} ({sent.tx_hash})"

    _escrow_run(settings, url, act)


@gateway_app.command("authorize")
def gateway_authorize_cmd(
    operator: Annotated[str, typer.Option("--operator", help="the gateway's address (it prints it at start)")],
    max_per_charge: Annotated[str, typer.Option("--max-per-charge", help="ETH one trace may cost at most")],
    allowance: Annotated[str, typer.Option("--allowance", help="ETH the gateway may take in all from now on")],
    keystore: KeystoreOption = None,
    password_file: PasswordFileOption = None,
    rpc_url: RpcOption = None,
    home: HomeOption = None,
) -> None:
    """Let a gateway charge your escrow (replaces the previous authorization; 0 and 0 revoke it)."""
    from eth_utils import is_address

    from trust.core.amounts import eth_text, parse_amount

    if not is_address(operator):
        raise ConfigError(f"--operator {operator!r} is not an Ethereum address (0x and 40 hex digits)")
    cap = parse_amount(max_per_charge, "--max-per-charge", unit="ETH", allow_zero=True)
    total = parse_amount(allowance, "--allowance", unit="ETH", allow_zero=True)
    settings, url, provider = _provider(home, rpc_url, keystore, password_file)

    async def act(escrow: EscrowContract) -> str:
        sent = await escrow.authorize(provider, operator, cap, total)
        return (
            f"{provider.address} lets {operator} charge up to {eth_text(cap)} per trace and {eth_text(total)} "
            f"in all ({sent.tx_hash})"
        )

    _escrow_run(settings, url, act)


@gateway_app.command("balance")
def gateway_balance_cmd(
    provider: Annotated[str, typer.Option("--provider", help="the provider's address")],
    operator: Annotated[
        str | None, typer.Option("--operator", help="also show what this gateway may still charge")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object, amounts in wei")] = False,
    rpc_url: RpcOption = None,
    home: HomeOption = None,
) -> None:
    """Show a provider's escrow: its deposit, what reservations hold, and a gateway's authorization."""
    from eth_utils import is_address

    from trust.core.amounts import eth_text

    for name, value in (("--provider", provider), ("--operator", operator)):
        if value is not None and not is_address(value):
            raise ConfigError(f"{name} {value!r} is not an Ethereum address (0x and 40 hex digits)")
    settings = settings_for(home)
    url = rpc_url or settings.effective_rpc_url

    async def act(escrow: EscrowContract) -> str:
        account = await escrow.account(provider)
        auth = None if operator is None else await escrow.authorization(provider, operator)
        if as_json:
            row: dict[str, object] = {
                "escrow": escrow.address,
                "provider": provider,
                "balance_wei": str(account.balance_wei),
                "reserved_wei": str(account.reserved_wei),
                "available_wei": str(account.available_wei),
            }
            if auth is not None:
                row |= {
                    "operator": operator,
                    "max_per_charge_wei": str(auth.max_per_charge_wei),
                    "allowance_wei": str(auth.allowance_wei),
                }
            return json.dumps(row)
        text = (
            f"{provider} in {escrow.address}: deposit {eth_text(account.balance_wei)}, reserved "
            f"{eth_text(account.reserved_wei)}, available {eth_text(account.available_wei)}"
        )
        if auth is not None:
            text += (
                f"; {operator} may charge {eth_text(auth.max_per_charge_wei)} per trace, "
                f"{eth_text(auth.allowance_wei)} in all"
            )
        return text

    _escrow_run(settings, url, act, raw=as_json)
