"""`trust worker run`, `status` and `withdraw`: everything a worker needs, built from the settings.

The runner connects to the chain and IPFS, checks the wallet's registration (registering and
staking when asked), builds the tier's auditor with whatever it needs (the model endpoint of tier 2,
the review page of tier 3), opens the durable state and runs the daemon until SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import signal
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

from eth_account.signers.local import LocalAccount
from pydantic import SecretStr

from trust.adapters.chain.protocol import Protocol
from trust.adapters.storage.kubo import KuboClient
from trust.auditors.base import Auditor
from trust.auditors.computational import ComputationalAuditor
from trust.core.amounts import tokens_text
from trust.core.graphs.hdag import Tier
from trust.errors import ConfigError
from trust.services.worker.adversary import Adversary, ensure_local_chain
from trust.services.worker.daemon import Worker, claim_seat_rewards, taken_out_by_worker
from trust.services.worker.identity import AuditorIdentity, ensure_registered, resolve_encryption_key
from trust.services.worker.store import SeatKey, WorkerStore
from trust.settings import Settings

__all__ = ["WorkerOptions", "run_worker", "state_path", "withdraw"]

EventHook = Callable[[SeatKey, str, str], None]


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """What `trust worker run` was asked on its command line."""

    tier: Tier
    keystore: Path | None = None
    encryption_key: Path | None = None
    register: bool = False
    stake_units: int | None = None
    adversary: Adversary | None = None
    auto_claim: bool = False
    rpc_url: str | None = None
    ipfs_url: str | None = None


def state_path(settings: Settings, address: str, chain_id: int) -> Path:
    """The worker's SQLite file: one per wallet and chain."""
    base = settings.worker.data_dir or settings.home / "worker" / address.lower()
    return base / f"chain-{chain_id}.sqlite3"


async def _log_sandbox(settings: Settings, log: logging.Logger) -> None:
    """Says at start-up what isolation the code sandbox gets on this host, or that it has none.

    A sandbox that fails closed (no bubblewrap, no user namespaces) does not stop a tier-1 worker:
    its other checks (arithmetic, symbolic, schemas, grounding) still decide, and a node that needs
    code run is answered not applicable, so no vote is cast on it. Learning that per segment, from
    the verdicts, is too late for the operator, hence the warning here."""
    from trust.auditors.checks.sandbox import sandbox_layers

    try:
        layers = await sandbox_layers(settings.worker.sandbox)
    except ConfigError as exc:  # SandboxUnavailable is one
        log.warning("the code sandbox is unavailable (%s): nodes that need code run get no vote", exc)
        return
    log.info("code sandbox: %s", ", ".join(str(layer) for layer in layers))


async def _tier_auditor(
    tier: Tier, settings: Settings, stack: AsyncExitStack, address: str, log: logging.Logger
) -> tuple[Auditor, EventHook | None]:
    """The auditor of `tier`, with the resources it holds registered on `stack`."""
    if tier is Tier.COMPUTATIONAL or (tier is Tier.LLM and settings.worker.tier2_checks):
        from trust.auditors.tiers import computational_auditor

        if tier is Tier.LLM:
            log.warning("tier 2 audits with the tier-1 checks (TRUST_WORKER__TIER2_CHECKS): a benchmark setting")
        await _log_sandbox(settings, log)
        return computational_auditor(settings.worker.sandbox), None
    if tier is Tier.LLM:
        from trust.auditors.tiers import llm_auditor

        return await llm_auditor(settings, stack, log), None
    from trust.auditors.tiers import human_auditor

    review = settings.worker.review
    if review.password is None:
        password = secrets.token_urlsafe(12)
        review = review.model_copy(update={"password": SecretStr(password)})
        log.warning("review page password (generated; set TRUST_WORKER__REVIEW__PASSWORD to choose one): %s", password)
    auditor, hook, url = await human_auditor(review, stack, address)
    log.info("review page for the expert: %s", url)
    return auditor, hook


async def run_worker(
    settings: Settings,
    options: WorkerOptions,
    account: LocalAccount,
    password: str,
    *,
    stop: asyncio.Event | None = None,
    log: logging.Logger | None = None,
) -> None:
    """Runs the worker until `stop` is set (or SIGTERM / SIGINT arrives)."""
    log = log or logging.getLogger("trust.services.worker")
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with AsyncExitStack() as stack:
            protocol = await stack.enter_async_context(Protocol.connect(settings, options.rpc_url))
            chain = protocol.chain
            if options.adversary is not None:
                ensure_local_chain(chain.chain_id, chain.rpc_url)
            key, source = resolve_encryption_key(
                account,
                options.keystore,
                password,
                options.encryption_key,
                chain_id=chain.chain_id,
                registry=protocol.registry.address,
            )
            identity = AuditorIdentity(account, key, source)
            path = state_path(settings, identity.address, chain.chain_id)
            info = await ensure_registered(
                protocol,
                identity,
                options.tier,
                register=options.register,
                stake_units=options.stake_units,
                unavailable_ok=_taken_out_before(path),
            )
            log.info(
                "auditor %s: tier %d, stake %s, reputation %.3f, encryption key %s",
                identity.address,
                info.tier,
                tokens_text(info.stake),
                info.reputation,
                source,
            )
            ipfs = (
                settings.ipfs
                if options.ipfs_url is None
                else settings.ipfs.model_copy(update={"api_url": options.ipfs_url})
            )
            kubo = await stack.enter_async_context(KuboClient.from_settings(ipfs))
            auditor, hook = await _tier_auditor(options.tier, settings, stack, identity.address, log)
            if isinstance(auditor, ComputationalAuditor):
                started = time.perf_counter()
                await auditor.warm_up()
                log.info("tier-1 checks warmed up in %.2f s", time.perf_counter() - started)
            store = stack.enter_context(
                WorkerStore(
                    path,
                    chain_id=chain.chain_id,
                    audit_contract=protocol.audit.address,
                    auditor=identity.address,
                )
            )
            worker = Worker(
                protocol,
                kubo,
                identity,
                auditor,
                store,
                settings.worker,
                adversary=options.adversary,
                auto_claim=options.auto_claim,
                logger=log,
                on_event=hook,
            )
            await worker.run(stop)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


def _taken_out_before(path: Path) -> bool:
    """Whether the last run of this worker took its auditor out of the draw and left it out (then
    this run may start on an unavailable auditor and put it back in)."""
    if not path.is_file():
        return False
    with WorkerStore.open_existing(path) as store:
        return taken_out_by_worker(store)


async def withdraw(settings: Settings, account: LocalAccount, *, rpc_url: str | None = None) -> tuple[int, int, int]:
    """Claims every aligned seat's reward, the staker reward and what the audit contract credited the
    auditor (R for each seat released by `claimUndelivered`): (seat rewards, staker reward, credited)
    in wei."""
    async with AsyncExitStack() as stack:
        protocol = await stack.enter_async_context(Protocol.connect(settings, rpc_url))
        path = state_path(settings, account.address, protocol.chain.chain_id)
        if not path.is_file():
            raise ConfigError(f"no worker state at {path}: this wallet has not run a worker on this chain")
        store = stack.enter_context(
            WorkerStore(
                path, chain_id=protocol.chain.chain_id, audit_contract=protocol.audit.address, auditor=account.address
            )
        )
        seats = await claim_seat_rewards(protocol, account, store)
        staker = await protocol.registry.pending_staker_reward(account.address)
        if staker > 0:
            await protocol.registry.claim_staker_reward(account)
        credited = await protocol.audit.claimable(account.address)
        if credited > 0:
            await protocol.audit.withdraw(account)
        return seats, staker, credited
