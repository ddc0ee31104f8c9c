"""`trust deploy`: the protocol on any JSON-RPC endpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from trust.cli.app import app
from trust.cli.common import (
    HomeOption,
    PasswordFileOption,
    RpcOption,
    console,
    keystore_password,
    settings_for,
)

__all__ = ["deploy_cmd"]


@app.command("deploy")
def deploy_cmd(
    keystore: Annotated[Path, typer.Option("--keystore", help="the deployer's keystore file")],
    password_file: PasswordFileOption = None,
    rpc_url: RpcOption = None,
    proposer: Annotated[
        list[str] | None, typer.Option("--proposer", help="timelock proposer and executor (repeat; default: deployer)")
    ] = None,
    treasury: Annotated[str | None, typer.Option(help="treasury account (default: the timelock)")] = None,
    insurance_fund: Annotated[str | None, typer.Option(help="insurance fund account (default: the timelock)")] = None,
    home: HomeOption = None,
) -> None:
    """Compile and deploy the protocol to any JSON-RPC endpoint, hand it to the governance timelock,
    and write the addresses to deploy/deployments/<chain id>.json."""
    from trust.adapters.chain.deployment import deploy_protocol, hand_to_timelock
    from trust.adapters.chain.protocol import open_chain
    from trust.adapters.chain.wallets import load_keystore
    from trust.adapters.local.toolchain import Toolchain

    settings = settings_for(home)
    deployer = load_keystore(keystore, keystore_password(password_file))
    toolchain = Toolchain.discover()
    url = rpc_url or settings.effective_rpc_url

    async def run() -> tuple[Path, dict[str, str]]:
        async with open_chain(url, tx_timeout_seconds=settings.tx_timeout_seconds) as chain:
            deployment = await deploy_protocol(
                chain,
                deployer,
                settings.protocol,
                settings.governance,
                treasury=treasury,
                insurance_fund=insurance_fund,
                proposers=proposer,
            )
            deployment = await hand_to_timelock(chain, deployer, deployment)
            return deployment.save(settings.deployments_path(toolchain.root)), deployment.contracts

    with console.status(f"deploying to {url}"):
        path, contracts = asyncio.run(run())
    for name, address in contracts.items():
        console.print(f"{name:<20} {address}")
    console.print(f"deployment file: {path}")
