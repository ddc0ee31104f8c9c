"""`trust worker`: the auditor's daemon, its status and its money."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Annotated

import typer

from trust.cli.common import (
    HomeOption,
    PasswordFileOption,
    TierOption,
    console,
    keystore_address,
    keystore_password,
    settings_for,
)

worker_app = typer.Typer(
    help="The auditor worker: audits its seats with its own wallet and votes in time.", no_args_is_help=True
)


def _worker_logging(verbose: bool) -> logging.Logger:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)-7s %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        force=True,
    )
    for noisy in ("httpx", "httpcore", "web3", "urllib3", "asyncio", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return logging.getLogger("trust.worker")


@worker_app.command("run")
def worker_run_cmd(
    keystore: Annotated[Path, typer.Option("--keystore", help="the auditor's keystore file (its own wallet)")],
    tier: TierOption,
    rpc: Annotated[
        str | None, typer.Option("--rpc", help="JSON-RPC endpoint (default: TRUST_RPC_URL or the devnet)")
    ] = None,
    ipfs: Annotated[
        str | None, typer.Option("--ipfs", help="Kubo RPC API URL (default: TRUST_IPFS__API_URL or the local node)")
    ] = None,
    password_file: PasswordFileOption = None,
    encryption_key: Annotated[
        Path | None,
        typer.Option(
            "--encryption-key",
            help="X25519 key (PEM) registered for this wallet; default: beside the keystore, else from the wallet",
        ),
    ] = None,
    register: Annotated[
        bool, typer.Option("--register", help="register the wallet as an auditor of --tier if it is not")
    ] = False,
    stake: Annotated[str | None, typer.Option("--stake", help="tokens to stake (when registering), or to add")] = None,
    auto_claim: Annotated[
        bool, typer.Option("--auto-claim", help="claim each session's reward as soon as it is paid out")
    ] = False,
    adversary: Annotated[
        str | None,
        typer.Option(
            "--adversary", help="STRESS TESTS ONLY, refused but on a local chain: wrong, random, copy or silent"
        ),
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="state folder (default HOME/worker/<address>)")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="debug logging")] = False,
    home: HomeOption = None,
) -> None:
    """Run the auditor daemon: follow the chain, audit each seat, commit, reveal, finalize. Stops on SIGTERM."""
    from trust.chain.wallets import load_keystore
    from trust.graphs.hdag import Tier
    from trust.worker.adversary import Adversary
    from trust.worker.identity import parse_tokens
    from trust.worker.runner import WorkerOptions, run_worker

    settings = settings_for(home)
    if data_dir is not None:
        settings = settings.model_copy(update={"worker": settings.worker.model_copy(update={"data_dir": data_dir})})
    try:
        mode = None if adversary is None else Adversary(adversary)
    except ValueError:
        raise typer.BadParameter(f"{adversary!r}: expected one of {', '.join(a.value for a in Adversary)}") from None
    password = keystore_password(password_file)
    account = load_keystore(keystore, password)
    options = WorkerOptions(
        tier=Tier(tier),
        keystore=keystore,
        encryption_key=encryption_key,
        register=register,
        stake_units=None if stake is None else parse_tokens(stake),
        adversary=mode,
        auto_claim=auto_claim,
        rpc_url=rpc,
        ipfs_url=ipfs,
    )
    log = _worker_logging(verbose)
    asyncio.run(run_worker(settings, options, account, password, log=log))


@worker_app.command("status")
def worker_status_cmd(
    keystore: Annotated[
        Path | None, typer.Option("--keystore", help="the worker's keystore (only its address is read)")
    ] = None,
    address: Annotated[
        str | None, typer.Option("--address", help="the worker's address, instead of --keystore")
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="state folder (default HOME/worker/<address>)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    home: HomeOption = None,
) -> None:
    """Show a worker's seats, their states and deadlines, failures and its recent log (works while it
    runs). Without --keystore, --address or --data-dir: every worker under HOME/worker."""
    from trust.worker.status import find_states, render_status, status_report

    settings = settings_for(home)
    who = address or (keystore_address(keystore) if keystore is not None else None)
    reports = [status_report(path) for path in find_states(settings, who, data_dir)]
    if as_json:
        console.print_json(json.dumps(reports))
        return
    for report in reports:
        render_status(report, console)


@worker_app.command("withdraw")
def worker_withdraw_cmd(
    keystore: Annotated[Path, typer.Option("--keystore", help="the auditor's keystore file")],
    rpc: Annotated[
        str | None, typer.Option("--rpc", help="JSON-RPC endpoint (default: TRUST_RPC_URL or the devnet)")
    ] = None,
    password_file: PasswordFileOption = None,
    home: HomeOption = None,
) -> None:
    """Claim the rewards of every aligned seat and the staker reward."""
    from trust.chain.wallets import load_keystore
    from trust.worker.runner import withdraw

    settings = settings_for(home)
    account = load_keystore(keystore, keystore_password(password_file))
    with console.status("claiming rewards"):
        seats, staker = asyncio.run(withdraw(settings, account, rpc_url=rpc))
    console.print(f"seat rewards: {seats / 10**18:.6f} ETH; staker reward: {staker / 10**18:.6f} ETH")
