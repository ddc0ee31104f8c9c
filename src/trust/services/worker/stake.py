"""Joining and leaving the auditor pool without running the worker: register (with a stake), add
stake, request an unstake and execute it after the unbonding delay, and read where a stake stands.

The registry's rules (`AuditorRegistry.requestUnstake` / `executeUnstake`):
- an unstake request takes stake out of the draw at once (its draw weight drops from the next
  block; draws whose randomness block came before keep the old weight), and the amount stays
  slashable while it unbonds;
- it is refused while any stake is locked by open seats (`RegistryHasOpenSeats`), while an earlier
  request still unbonds (`RegistryUnbondingPending`), above the stake (`RegistryExceedsStake`), and
  when what stays is above zero but below the tier's minimum (`RegistryInsufficientStake`): an
  auditor keeps at least the minimum or leaves entirely;
- the unbonded tokens are withdrawn with `executeUnstake` once the chain's clock passes
  `unbondingReadyAt` (`RegistryUnbondingNotReady` before, `RegistryNothingUnbonding` without one)
  and the chain is past `unbondingReachBlock` (`RegistryUnbondingInReach` before): until then a
  committee draw on a stake snapshot taken before the request may still charge the stake.

Every rule is checked here first with the chain's own numbers (the tier minimum and the unbonding
delay from `ProtocolParams`, the auditor's stake, locks and unbonding from the registry), so the
user reads what to do instead of a revert. A revert that still happens (the state moved between
the read and the transaction) is decoded into the same words. Time is the chain's: the pending
block's timestamp, which is when a transaction sent now runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eth_account.signers.local import LocalAccount

from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import AuditorInfo
from trust.core.graphs.hdag import Tier
from trust.core.times import utc_text
from trust.errors import ConfigError, ContractReverted
from trust.services.worker.identity import (
    AuditorIdentity,
    check_registration,
    credential_missing,
    ensure_registered,
    format_tokens,
)
from trust.services.worker.store import AVAILABILITY_KEY, WorkerStore

__all__ = [
    "AvailabilityChange",
    "Registration",
    "StakePosition",
    "UnstakeRequest",
    "add_stake",
    "chain_time",
    "describe_duration",
    "execute_unstake",
    "register_auditor",
    "request_unstake",
    "set_availability",
    "stake_position",
]

_TIER3 = int(Tier.HUMAN)


def describe_duration(seconds: int) -> str:
    """`3725` -> "1 h 2 min 5 s": a wait in words a person reads at a glance."""
    seconds = max(0, seconds)
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    parts.append(f"{secs} s" if secs or not any(parts) else "")
    return " ".join(part for part in parts if part)


async def chain_time(protocol: Protocol) -> int:
    """The chain's clock for a transaction sent now: the pending block's timestamp (a chain that
    mines only on demand leaves the latest block's far behind), never earlier than the latest's."""
    w3 = protocol.chain.w3
    latest = int((await w3.eth.get_block("latest"))["timestamp"])
    try:
        pending = int((await w3.eth.get_block("pending"))["timestamp"])
    except Exception:  # noqa: BLE001 - a node without a pending block: the latest is the best we have
        return latest
    return max(latest, pending)


@dataclass(frozen=True, slots=True)
class StakePosition:
    """An auditor's standing in the registry, read at one moment. Amounts in token base units (the
    staking token has 18 decimals) or wei; times in the chain's unix seconds."""

    info: AuditorInfo
    minimum_stake: int
    """The minimum stake of the auditor's tier (0 when it is not registered)."""
    unbonding_delay_seconds: int
    now: int
    block: int
    """The chain's latest block when this was read."""
    token_balance: int
    eth_balance_wei: int
    pending_reward_wei: int
    """The stakers' share claimable now: it streams (each fee's share is paid out over a week, pro
    rata to stake and to the time staked), so it grows while the auditor stays staked."""
    reward_stream_finish: int
    """When the running stream of the stakers' share ends (unix seconds; in the past when none runs)."""
    penalty_per_seat: int = 0
    """P, the stake each committee draw the auditor wins locks until its seat settles (token base
    units; 0 when not read)."""

    @property
    def unlocked(self) -> int:
        return self.info.stake - self.info.locked

    @property
    def unbonding_ready(self) -> bool:
        return self.info.unbonding > 0 and self.now >= self.info.unbonding_ready_at and self.blocks_to_ready == 0

    @property
    def blocks_to_ready(self) -> int:
        """Blocks still to be mined before draws that counted the unbonding stake are out of reach."""
        return max(0, self.info.unbonding_reach_block + 1 - self.block) if self.info.unbonding else 0

    @property
    def seconds_to_ready(self) -> int:
        return max(0, self.info.unbonding_ready_at - self.now) if self.info.unbonding else 0

    @property
    def not_drawn_because(self) -> str | None:
        """Why the registry gives this auditor no draw weight, None when it may be drawn."""
        info = self.info
        if not info.registered:
            return "not registered"
        if not info.available:
            return "marked unavailable"
        if info.tier == _TIER3 and not info.credentialed:
            return "no tier-3 credential"
        if info.stake < self.minimum_stake:
            return (
                f"stake {format_tokens(info.stake)} is below tier {info.tier}'s minimum "
                f"{format_tokens(self.minimum_stake)}"
            )
        return None

    @property
    def draw_weight(self) -> int:
        """The auditor's weight in draws from the next block on: each of a committee's draws lands
        on it with probability draw_weight / the tier's total, whatever it won before (committees
        are drawn with replacement). Not its voting weight: a seat votes with the draws it won
        (its units), each backed by P of locked stake."""
        return self.info.stake if self.not_drawn_because is None else 0

    @property
    def free_units(self) -> int | None:
        """How many more committee draws the unlocked stake backs (one P each): a draw that lands
        on the auditor once it backs none passes it over. None when P was not read."""
        return self.unlocked // self.penalty_per_seat if self.penalty_per_seat > 0 else None

    def as_json(self) -> dict[str, Any]:
        """Amounts as exact decimal strings of tokens or ETH (never floats), with the raw units beside."""
        info = self.info
        return {
            "address": info.address,
            "registered": info.registered,
            "tier": info.tier if info.registered else None,
            "available": info.available,
            "credentialed": info.credentialed,
            "stake": format_tokens(info.stake),
            "stake_units": str(info.stake),
            "locked": format_tokens(info.locked),
            "locked_units": str(info.locked),
            "unlocked": format_tokens(self.unlocked),
            "minimum_stake": format_tokens(self.minimum_stake),
            "unbonding": format_tokens(info.unbonding),
            "unbonding_units": str(info.unbonding),
            "unbonding_ready_at": info.unbonding_ready_at or None,
            "unbonding_ready": self.unbonding_ready,
            "seconds_to_ready": self.seconds_to_ready,
            "unbonding_reach_block": self.info.unbonding_reach_block or None,
            "blocks_to_ready": self.blocks_to_ready,
            "block": self.block,
            "unbonding_delay_seconds": self.unbonding_delay_seconds,
            "draw_weight": format_tokens(self.draw_weight),
            "free_units": self.free_units,
            "not_drawn_because": self.not_drawn_because,
            "reputation": str(info.reputation_wad / 10**18),
            "token_balance": format_tokens(self.token_balance),
            "eth_balance_wei": str(self.eth_balance_wei),
            "pending_staker_reward_wei": str(self.pending_reward_wei),
            "staker_reward_streaming_until": self.reward_stream_finish
            if self.reward_stream_finish > self.now
            else None,
            "chain_time": self.now,
        }


async def stake_position(protocol: Protocol, address: str) -> StakePosition:
    """Where `address` stands: registration, stake, locks, unbonding, balances and the chain's clock."""
    registry = protocol.registry
    info = await registry.auditor(address)
    params = await protocol.params.params()
    minimum = int(params[f"minStakeTier{info.tier}"]) if info.registered else 0
    return StakePosition(
        info=info,
        minimum_stake=minimum,
        unbonding_delay_seconds=int(params["unbondingDelaySeconds"]),
        now=await chain_time(protocol),
        block=await protocol.chain.block_number(),
        token_balance=await protocol.token.balance_of(address),
        eth_balance_wei=await protocol.chain.balance(address),
        pending_reward_wei=await registry.pending_staker_reward(address),
        reward_stream_finish=(await registry.staker_reward_stream()).period_finish,
        penalty_per_seat=int(params["penaltyPerSeat"]),
    )


def _explain(exc: ContractReverted, position: StakePosition) -> ConfigError:
    """A registry revert in the words of the checks below (the state moved after they ran)."""
    args, address = exc.error_args, position.info.address
    name = exc.error_name
    if name == "RegistryNotRegistered":
        return _not_registered(address)
    if name == "RegistryHasOpenSeats":
        return _locked(address, int(args.get("locked", position.info.locked)))
    if name == "RegistryUnbondingPending":
        return _pending(address, int(args.get("amount", 0)), int(args.get("readyAt", 0)), position.now)
    if name == "RegistryExceedsStake":
        return ConfigError(
            f"{format_tokens(int(args.get('amount', 0)))} tokens is more than {address}'s stake of "
            f"{format_tokens(int(args.get('available', 0)))} tokens"
        )
    if name == "RegistryInsufficientStake":
        stake, needed = int(args.get("stake", 0)), int(args.get("needed", 0))
        return ConfigError(
            f"that would leave {format_tokens(stake)} tokens staked, below the tier's minimum of "
            f"{format_tokens(needed)}: keep at least the minimum, or leave entirely with --all"
        )
    if name == "RegistryUnbondingNotReady":
        ready_at, now = int(args.get("readyAt", 0)), int(args.get("nowSeconds", position.now))
        return _not_ready(address, position.info.unbonding, ready_at, now)
    if name == "RegistryUnbondingInReach":
        return _in_reach(address, position.info.unbonding, int(args.get("reachBlock", 0)), position.block)
    if name == "RegistryNothingUnbonding":
        return _nothing_unbonding(address)
    if name == "RegistryCredentialRequired":
        return credential_missing(address)
    return ConfigError(f"the registry refused: {exc}")


def _not_registered(address: str) -> ConfigError:
    return ConfigError(
        f"{address} is not a registered auditor: nothing is staked (register with `trust worker register`)"
    )


def _locked(address: str, locked: int) -> ConfigError:
    return ConfigError(
        f"{address} has {format_tokens(locked)} tokens locked by open seats, and the registry accepts no unstake "
        f"while any seat is open (their penalties must stay backed). Keep the worker running until its seats are "
        f"settled (`trust worker info` shows the locked stake; `trust worker status` the seats), then run this "
        f"again. A worker that stops now is still drawn and forfeits those seats' stake for silence"
    )


def _pending(address: str, amount: int, ready_at: int, now: int) -> ConfigError:
    when = (
        "ready now: run `trust worker unstake --execute` first"
        if now >= ready_at
        else f"ready at {utc_text(ready_at)}, in {describe_duration(ready_at - now)}; execute it then with "
        f"`trust worker unstake --execute`"
    )
    return ConfigError(
        f"{address} already unbonds {format_tokens(amount)} tokens ({when}); the registry takes one unstake at a time"
    )


def _not_ready(address: str, amount: int, ready_at: int, now: int) -> ConfigError:
    return ConfigError(
        f"the {format_tokens(amount)} tokens unbonding for {address} are ready at {utc_text(ready_at)} (chain time), "
        f"in {describe_duration(ready_at - now)}; run `trust worker unstake --execute` again then"
    )


def _in_reach(address: str, amount: int, reach_block: int, block: int) -> ConfigError:
    return ConfigError(
        f"the {format_tokens(amount)} tokens unbonding for {address} can still be charged by committee draws "
        f"that counted them until block {reach_block} (the chain is at block {block}): run "
        "`trust worker unstake --execute` again after that block"
    )


def _nothing_unbonding(address: str) -> ConfigError:
    return ConfigError(
        f"{address} has nothing unbonding: request an unstake first with `trust worker unstake --amount N` (or --all)"
    )


@dataclass(frozen=True, slots=True)
class Registration:
    """What `register_auditor` found or did."""

    info: AuditorInfo
    newly_registered: bool


async def register_auditor(
    protocol: Protocol, identity: AuditorIdentity, tier: Tier, stake_units: int | None
) -> Registration:
    """Registers `identity` as an auditor of `tier` staking `stake_units` (the tier minimum when
    None), by the worker's own path (`ensure_registered`), without running the worker.

    Idempotent: an auditor already registered is returned as it is (nothing is staked; adding stake
    is `add_stake`), after checking it is of `tier` and registered `identity`'s encryption key."""
    info = await protocol.registry.auditor(identity.address)
    if info.registered:
        check_registration(info, identity, tier)
        return Registration(info, newly_registered=False)
    if tier is Tier.HUMAN and not info.credentialed:
        raise credential_missing(identity.address)
    # ensure_registered goes on to check what the worker needs to be drawn (stake at the minimum,
    # available), which a fresh registration always satisfies.
    info = await ensure_registered(protocol, identity, tier, register=True, stake_units=stake_units)
    return Registration(info, newly_registered=True)


async def add_stake(protocol: Protocol, account: LocalAccount, amount: int) -> StakePosition:
    """Adds `amount` base units to a registered auditor's stake (approve, then `stake`)."""
    address = str(account.address)
    position = await stake_position(protocol, address)
    if not position.info.registered:
        raise _not_registered(address)
    if position.eth_balance_wei == 0:
        raise ConfigError(f"{address} holds no ETH to pay gas on chain {protocol.chain.chain_id}; fund it first")
    if position.token_balance < amount:
        raise ConfigError(
            f"{address} holds {format_tokens(position.token_balance)} staking tokens, less than the "
            f"{format_tokens(amount)} to add"
        )
    try:
        await protocol.token.approve(account, protocol.registry.address, amount)
        await protocol.registry.stake(account, amount)
    except ContractReverted as exc:
        raise _explain(exc, position) from exc
    return await stake_position(protocol, address)


@dataclass(frozen=True, slots=True)
class UnstakeRequest:
    """An unstake request that went through: `amount` unbonds until `ready_at` (chain time), and
    `after` is where the auditor stands once it is mined."""

    amount: int
    ready_at: int
    after: StakePosition


async def request_unstake(protocol: Protocol, account: LocalAccount, amount: int | None) -> UnstakeRequest:
    """Starts unbonding `amount` base units of the caller's stake, or all of it when None (leaving
    the draw). Refuses, before sending anything, whatever the registry would refuse."""
    address = str(account.address)
    position = await stake_position(protocol, address)
    info = position.info
    if not info.registered:
        raise _not_registered(address)
    if amount is None:
        if info.stake == 0:
            raise ConfigError(f"{address} has no stake left to unstake")
        amount = info.stake
    if info.locked:
        raise _locked(address, info.locked)
    if info.unbonding:
        raise _pending(address, info.unbonding, info.unbonding_ready_at, position.now)
    if amount > info.stake:
        raise ConfigError(
            f"{format_tokens(amount)} tokens is more than {address}'s stake of {format_tokens(info.stake)} tokens"
        )
    remaining = info.stake - amount
    if 0 < remaining < position.minimum_stake:
        most = info.stake - position.minimum_stake
        room = f"unstake at most {format_tokens(most)} tokens" if most > 0 else "nothing can be unstaked partly"
        raise ConfigError(
            f"unstaking {format_tokens(amount)} tokens would leave {format_tokens(remaining)} staked, below tier "
            f"{info.tier}'s minimum of {format_tokens(position.minimum_stake)}: {room}, or leave entirely with --all"
        )
    if position.eth_balance_wei == 0:
        raise ConfigError(f"{address} holds no ETH to pay gas on chain {protocol.chain.chain_id}; fund it first")
    try:
        await protocol.registry.request_unstake(account, amount)
    except ContractReverted as exc:
        raise _explain(exc, position) from exc
    after = await stake_position(protocol, address)
    return UnstakeRequest(amount, after.info.unbonding_ready_at, after)


async def execute_unstake(protocol: Protocol, account: LocalAccount) -> tuple[int, StakePosition]:
    """Withdraws the caller's unbonded tokens to its wallet once the delay has passed: (amount, where
    it stands after). Before that, the error says when."""
    address = str(account.address)
    position = await stake_position(protocol, address)
    info = position.info
    if info.unbonding == 0:
        raise _nothing_unbonding(address)
    if position.now < info.unbonding_ready_at:
        raise _not_ready(address, info.unbonding, info.unbonding_ready_at, position.now)
    if position.blocks_to_ready:
        raise _in_reach(address, info.unbonding, info.unbonding_reach_block, position.block)
    try:
        await protocol.registry.execute_unstake(account)
    except ContractReverted as exc:
        raise _explain(exc, position) from exc
    return info.unbonding, await stake_position(protocol, address)


@dataclass(frozen=True, slots=True)
class AvailabilityChange:
    """What `set_availability` did: whether a transaction was sent (False: the chain already said
    so), whether a worker's state file was told, and where the auditor stands after."""

    sent: bool
    worker_told: bool
    position: StakePosition


async def set_availability(
    protocol: Protocol, account: LocalAccount, available: bool, *, state_file: Path | None = None
) -> AvailabilityChange:
    """The operator takes its auditor out of the draw (`available` False) or puts it back.

    Out of the draw, no new seat is drawn for it from draws whose randomness block comes after the
    transaction; seats already drawn still lock stake and must be audited, so the worker keeps
    running until they settle (`trust worker info` shows the locked stake) and only then may the
    stake leave (`unstake`). `state_file` is the worker's state on this chain: the choice is recorded
    there as the operator's, so that a running worker, whose backpressure puts back only what it took
    out itself, leaves it as it is (the worker re-reads the record at its next health check)."""
    address = str(account.address)
    before = await stake_position(protocol, address)
    if not before.info.registered:
        raise _not_registered(address)
    sent = before.info.available != available
    if sent:
        try:
            await protocol.registry.set_available(account, available)
        except ContractReverted as exc:
            raise _explain(exc, before) from exc
    told = False
    if state_file is not None and state_file.is_file():
        with WorkerStore(
            state_file, chain_id=protocol.chain.chain_id, audit_contract=protocol.audit.address, auditor=address
        ) as store:
            record = dict(store.meta_json(AVAILABILITY_KEY) or {})
            record.update(by_worker=False, reason=None if available else "taken out by its operator", since=time.time())
            store.set_meta_json(AVAILABILITY_KEY, record)
        told = True
    return AvailabilityChange(sent, told, await stake_position(protocol, address))
