"""`trust worker`: the auditor's daemon, its status, its money, and joining and leaving the pool."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
from trust.core.amounts import eth_text
from trust.core.times import utc_text

if TYPE_CHECKING:
    from trust.services.worker.stake import StakePosition, UnstakeRequest

__all__ = ["worker_app"]

worker_app = typer.Typer(
    help="The auditor worker: audits its seats with its own wallet and votes in time.", no_args_is_help=True
)

AuditorKeystoreOption = Annotated[Path, typer.Option("--keystore", help="the auditor's keystore file")]


def _worker_logging(verbose: bool) -> logging.Logger:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s.%(msecs)03d %(levelname)-7s %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        force=True,
    )
    for noisy in ("httpx", "httpcore", "web3", "urllib3", "asyncio", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return logging.getLogger("trust.services.worker")


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
            "--adversary",
            help="STRESS TESTS ONLY, refused but on a local chain: wrong, veto, random, copy or silent",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="state folder (default HOME/worker/<address>)")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="debug logging")] = False,
    home: HomeOption = None,
) -> None:
    """Run the auditor daemon: follow the chain, audit each seat, commit, reveal, finalize. Stops on SIGTERM."""
    from trust.adapters.chain.wallets import load_keystore
    from trust.core.graphs.hdag import Tier
    from trust.services.worker.adversary import Adversary
    from trust.services.worker.identity import parse_tokens
    from trust.services.worker.runner import WorkerOptions, run_worker

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
    from trust.services.worker.status import find_states, render_status, status_report

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
    keystore: AuditorKeystoreOption,
    rpc: Annotated[
        str | None, typer.Option("--rpc", help="JSON-RPC endpoint (default: TRUST_RPC_URL or the devnet)")
    ] = None,
    password_file: PasswordFileOption = None,
    home: HomeOption = None,
) -> None:
    """Claim the rewards of every aligned seat, the staker reward and the compensation of seats whose
    key envelope never came."""
    from trust.adapters.chain.wallets import load_keystore
    from trust.services.worker.runner import withdraw

    settings = settings_for(home)
    account = load_keystore(keystore, keystore_password(password_file))
    with console.status("claiming rewards"):
        seats, staker, credited = asyncio.run(withdraw(settings, account, rpc_url=rpc))
    console.print(
        f"seat rewards: {eth_text(seats)}; staker reward: {eth_text(staker)}; "
        f"undelivered seats' compensation: {eth_text(credited)}"
    )


# -- joining and leaving: registration and stake, without running the worker ---------------------

WorkerRpcOption = Annotated[
    str | None,
    typer.Option("--rpc-url", "--rpc", help="JSON-RPC endpoint (default: TRUST_RPC_URL or the devnet)"),
]


def _tokens_line(units: int) -> str:
    from trust.services.worker.identity import format_tokens

    return f"{format_tokens(units)} tokens"


def _render_position(position: StakePosition) -> None:
    from trust.services.worker.identity import format_tokens
    from trust.services.worker.stake import describe_duration

    info = position.info
    console.print(f"[bold]auditor {info.address}[/bold]", soft_wrap=True)
    if not info.registered:
        console.print("  registered:   no (`trust worker register --tier T --stake N` registers it)")
    else:
        state = "available" if info.available else "unavailable"
        credential = ", credentialed" if info.credentialed else ""
        console.print(
            f"  tier:         {info.tier} ({state}{credential}), reputation {info.reputation_wad / 10**18:.3f}"
        )
        console.print(
            f"  stake:        {_tokens_line(info.stake)} (tier minimum {format_tokens(position.minimum_stake)})"
        )
        console.print(f"  locked:       {_tokens_line(info.locked)} by open seats")
        reason = position.not_drawn_because
        weight = "0 (not drawn: " + reason + ")" if reason else _tokens_line(position.draw_weight)
        console.print(f"  draw weight:  {weight}")
        if position.free_units is not None:
            # Each committee draw won locks P: the free stake bounds the seats still to come.
            console.print(
                f"  backs:        {position.free_units} more committee draws "
                f"({format_tokens(position.penalty_per_seat)} tokens locked per draw won)"
            )
    if info.unbonding:
        when = (
            "ready now: `trust worker unstake --execute` withdraws it"
            if position.unbonding_ready
            else f"ready at {utc_text(info.unbonding_ready_at)}, in {describe_duration(position.seconds_to_ready)}"
            if position.seconds_to_ready
            else f"ready after block {info.unbonding_reach_block} ({position.blocks_to_ready} more blocks: draws "
            "that counted it may still charge it until then)"
        )
        console.print(f"  unbonding:    {_tokens_line(info.unbonding)}, {when}; slashable until withdrawn")
    else:
        console.print(f"  unbonding:    none (the delay is {describe_duration(position.unbonding_delay_seconds)})")
    console.print(f"  wallet:       {_tokens_line(position.token_balance)}, {_eth(position.eth_balance_wei)}")
    if position.pending_reward_wei:
        console.print(f"  staker reward: {_eth(position.pending_reward_wei)} (`trust worker withdraw` claims it)")
    if position.reward_stream_finish > position.now:
        until = utc_text(position.reward_stream_finish)
        console.print(f"  stakers' share: streaming until {until}; stake earns it for the time it stays staked")


def _eth(wei: int) -> str:
    return eth_text(wei)


@worker_app.command("register")
def worker_register_cmd(
    keystore: Annotated[Path, typer.Option("--keystore", help="the auditor's keystore file (its own wallet)")],
    tier: TierOption,
    stake: Annotated[
        str | None, typer.Option("--stake", help="tokens to stake, in whole tokens (default: the tier's minimum)")
    ] = None,
    password_file: PasswordFileOption = None,
    encryption_key: Annotated[
        Path | None,
        typer.Option(
            "--encryption-key",
            help="X25519 key (PEM) to register; default: beside the keystore, else derived from the wallet",
        ),
    ] = None,
    rpc: WorkerRpcOption = None,
    home: HomeOption = None,
) -> None:
    """Register the wallet as an auditor of --tier and stake, without running the worker (`trust worker
    run` then starts without --register). An auditor already registered is reported, nothing sent."""
    from trust.adapters.chain.protocol import Protocol
    from trust.adapters.chain.wallets import load_keystore
    from trust.core.graphs.hdag import Tier
    from trust.services.worker.identity import AuditorIdentity, parse_tokens, resolve_encryption_key
    from trust.services.worker.stake import register_auditor, stake_position

    settings = settings_for(home)
    stake_units = None if stake is None else parse_tokens(stake)
    password = keystore_password(password_file)
    account = load_keystore(keystore, password)

    async def run() -> tuple[bool, str, StakePosition]:
        async with Protocol.connect(settings, rpc) as protocol:
            key, source = resolve_encryption_key(
                account,
                keystore,
                password,
                encryption_key,
                chain_id=protocol.chain.chain_id,
                registry=protocol.registry.address,
            )
            done = await register_auditor(protocol, AuditorIdentity(account, key, source), Tier(tier), stake_units)
            return done.newly_registered, source, await stake_position(protocol, account.address)

    with console.status("registering"):
        newly, source, position = asyncio.run(run())
    if newly:
        console.print(f"registered {account.address} as a tier-{tier} auditor", soft_wrap=True)
    else:
        console.print(
            f"{account.address} is already a registered tier-{position.info.tier} auditor: nothing was sent",
            soft_wrap=True,
        )
    _render_position(position)
    console.print(f"  encryption key: {source}", soft_wrap=True)
    if not newly and stake is not None:
        console.print(
            f"note: --stake {stake} was not added to a registered auditor; "
            f"`trust worker stake --keystore {keystore} --add {stake}` adds it",
            soft_wrap=True,
        )
    console.print(f"next: trust worker run --keystore {keystore} --tier {position.info.tier}", soft_wrap=True)


@worker_app.command("stake")
def worker_stake_cmd(
    keystore: AuditorKeystoreOption,
    add: Annotated[str, typer.Option("--add", help="tokens to add to the stake, in whole tokens")],
    password_file: PasswordFileOption = None,
    rpc: WorkerRpcOption = None,
    home: HomeOption = None,
) -> None:
    """Add tokens to a registered auditor's stake (more weight in the draw, more seats it can hold)."""
    from trust.adapters.chain.protocol import Protocol
    from trust.adapters.chain.wallets import load_keystore
    from trust.services.worker.identity import parse_tokens
    from trust.services.worker.stake import add_stake

    settings = settings_for(home)
    amount = parse_tokens(add, "--add")
    account = load_keystore(keystore, keystore_password(password_file))

    async def run() -> StakePosition:
        async with Protocol.connect(settings, rpc) as protocol:
            return await add_stake(protocol, account, amount)

    with console.status("staking"):
        position = asyncio.run(run())
    console.print(f"added {_tokens_line(amount)} to the stake")
    _render_position(position)


@worker_app.command("unstake")
def worker_unstake_cmd(
    keystore: AuditorKeystoreOption,
    amount: Annotated[str | None, typer.Option("--amount", help="tokens to unstake, in whole tokens")] = None,
    unstake_all: Annotated[
        bool, typer.Option("--all", help="unstake everything: leave the draw (the wallet stays registered)")
    ] = False,
    execute: Annotated[
        bool, typer.Option("--execute", help="withdraw the tokens of an earlier request once its delay has passed")
    ] = False,
    password_file: PasswordFileOption = None,
    rpc: WorkerRpcOption = None,
    home: HomeOption = None,
) -> None:
    """Unstake in two steps: --amount N or --all requests it (the tokens leave the draw at once and
    unbond for the registry's delay, slashable meanwhile); --execute withdraws them after the delay."""
    from trust.adapters.chain.protocol import Protocol
    from trust.adapters.chain.wallets import load_keystore
    from trust.services.worker.identity import parse_tokens
    from trust.services.worker.stake import describe_duration, execute_unstake, request_unstake

    chosen = [
        flag for flag, on in (("--amount", amount is not None), ("--all", unstake_all), ("--execute", execute)) if on
    ]
    if len(chosen) != 1:
        raise typer.BadParameter(
            "give exactly one of --amount N, --all (request) or --execute (withdraw after the delay)"
            + (f", not {' and '.join(chosen)}" if chosen else "")
        )
    settings = settings_for(home)
    units = None if amount is None else parse_tokens(amount, "--amount")
    account = load_keystore(keystore, keystore_password(password_file))

    if execute:

        async def withdraw_unbonded() -> tuple[int, StakePosition]:
            async with Protocol.connect(settings, rpc) as protocol:
                return await execute_unstake(protocol, account)

        with console.status("withdrawing the unbonded stake"):
            withdrawn, position = asyncio.run(withdraw_unbonded())
        console.print(f"withdrew {_tokens_line(withdrawn)} to {account.address}", soft_wrap=True)
        _render_position(position)
        return

    async def request() -> UnstakeRequest:
        async with Protocol.connect(settings, rpc) as protocol:
            return await request_unstake(protocol, account, units)

    with console.status("requesting the unstake"):
        done = asyncio.run(request())
    after = done.after
    console.print(
        f"unbonding {_tokens_line(done.amount)}: withdraw them with `trust worker unstake --keystore {keystore} "
        f"--execute` from {utc_text(done.ready_at)} (in {describe_duration(after.seconds_to_ready)}, chain time) "
        "once the "
        f"chain is past block {after.info.unbonding_reach_block} (draws on stake snapshots taken before now may still "
        "charge them until then)",
        soft_wrap=True,
    )
    console.print(
        f"they left the draw now and stay slashable until withdrawn; {_tokens_line(after.info.stake)} stay staked",
        soft_wrap=True,
    )
    if after.info.stake == 0:
        console.print(
            "out of the draw: the wallet stays registered, and `trust worker stake --add N` brings it back",
            soft_wrap=True,
        )
    _render_position(after)


def _availability(
    keystore: Path, available: bool, password_file: Path | None, rpc: str | None, home: Path | None
) -> None:
    from trust.adapters.chain.protocol import Protocol
    from trust.adapters.chain.wallets import load_keystore
    from trust.services.worker.runner import state_path
    from trust.services.worker.stake import AvailabilityChange, set_availability

    settings = settings_for(home)
    account = load_keystore(keystore, keystore_password(password_file))

    async def switch() -> AvailabilityChange:
        async with Protocol.connect(settings, rpc) as protocol:
            path = state_path(settings, account.address, protocol.chain.chain_id)
            return await set_availability(protocol, account, available, state_file=path)

    with console.status("setting the auditor " + ("available" if available else "unavailable")):
        change = asyncio.run(switch())
    word = "back in the draw" if available else "out of the draw"
    console.print(f"{account.address} is {word}" + ("" if change.sent else " (it already was)"), soft_wrap=True)
    if change.worker_told:
        console.print("  recorded in the worker's state: a running worker follows it at its next health check")
    if not available:
        locked = change.position.info.locked
        console.print(
            "  no new seats from draws after this block; seats already drawn still need the worker until they settle"
            + (f" ({_tokens_line(locked)} locked by open seats now)" if locked else " (none is open now)"),
            soft_wrap=True,
        )
        console.print(
            "  once nothing is locked, `trust worker unstake --all` lets the stake leave; "
            "`trust worker resume` puts the auditor back",
            soft_wrap=True,
        )


@worker_app.command("pause")
def worker_pause_cmd(
    keystore: AuditorKeystoreOption,
    password_file: PasswordFileOption = None,
    rpc: WorkerRpcOption = None,
    home: HomeOption = None,
) -> None:
    """Take the auditor out of the draw (setAvailable(false)) as its operator: no new seats; a running
    worker finishes the seats it holds and does not put the auditor back by itself."""
    _availability(keystore, False, password_file, rpc, home)


@worker_app.command("resume")
def worker_resume_cmd(
    keystore: AuditorKeystoreOption,
    password_file: PasswordFileOption = None,
    rpc: WorkerRpcOption = None,
    home: HomeOption = None,
) -> None:
    """Put the auditor back in the draw (setAvailable(true)); a running worker's backpressure may take
    it out again while it has more seats than it can audit in time."""
    _availability(keystore, True, password_file, rpc, home)


@worker_app.command("info")
def worker_info_cmd(
    keystore: Annotated[
        Path | None, typer.Option("--keystore", help="the auditor's keystore (only its address is read)")
    ] = None,
    address: Annotated[
        str | None, typer.Option("--address", help="the auditor's address, instead of --keystore")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (amounts as exact decimal strings)")] = False,
    rpc: WorkerRpcOption = None,
    home: HomeOption = None,
) -> None:
    """An auditor's standing on chain: registration, tier, stake, locked stake, draw weight, unbonding
    and when it can be withdrawn, wallet balances and the pending staker reward."""
    from eth_utils import is_address, to_checksum_address

    from trust.adapters.chain.protocol import Protocol
    from trust.services.worker.stake import stake_position

    if (keystore is None) == (address is None):
        raise typer.BadParameter("give --keystore or --address (one of them)")
    if address is not None and not is_address(address):
        raise typer.BadParameter(f"--address {address!r} is not an Ethereum address (0x and 40 hex digits)")
    who = to_checksum_address(address) if address is not None else keystore_address(keystore)  # type: ignore[arg-type]
    settings = settings_for(home)

    async def read() -> StakePosition:
        async with Protocol.connect(settings, rpc) as protocol:
            return await stake_position(protocol, who)

    position = asyncio.run(read())
    if as_json:
        console.print_json(json.dumps(position.as_json()))
        return
    _render_position(position)
