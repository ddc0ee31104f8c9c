"""`trust wallet`: encrypted keystore wallets, and the devnet's faucet."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trust.cli.common import (
    HomeOption,
    PasswordFileOption,
    RpcOption,
    console,
    keystore_password,
    settings_for,
)

__all__ = ["wallet_app"]

wallet_app = typer.Typer(help="Encrypted keystore wallets.", no_args_is_help=True)


@wallet_app.command("new")
def wallet_new_cmd(
    path: Annotated[Path, typer.Argument(help="where to write the keystore (refuses to overwrite)")],
    password_file: PasswordFileOption = None,
) -> None:
    """Create a new account in an encrypted keystore file (mode 0600) and print its address."""
    from trust.adapters.chain.wallets import create_keystore

    account = create_keystore(path, keystore_password(password_file, confirm=True))
    console.print(f"{account.address}  {path}")


@wallet_app.command("fund")
def wallet_fund_cmd(
    address: Annotated[str, typer.Argument(help="the account to fund (0x and 40 hex digits)")],
    eth: Annotated[str, typer.Option("--eth", help="ETH to send, for gas (0: none)")] = "10",
    tokens: Annotated[str, typer.Option("--tokens", help="staking tokens to send (0: none)")] = "1000",
    rpc_url: RpcOption = None,
    home: HomeOption = None,
) -> None:
    """The devnet's faucet: send ETH and staking tokens from the devnet's funder (refused on any other chain)."""
    from trust.lab.devnet import fund, parse_units, whole_units

    settings = settings_for(home)
    eth_wei, token_units = parse_units(eth, "--eth"), parse_units(tokens, "--tokens")
    with console.status(f"funding {address}"):
        funded = fund(settings, address, eth_wei=eth_wei, tokens=token_units, rpc_url=rpc_url)
    console.print(
        f"sent {whole_units(funded.sent_wei)} ETH and {whole_units(funded.sent_tokens)} tokens to {funded.address} "
        f"from the devnet funder {funded.funder}"
    )
    console.print(f"balance: {whole_units(funded.balance_wei)} ETH, {whole_units(funded.balance_tokens)} tokens")
