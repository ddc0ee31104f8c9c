"""A whole TRUST network on this machine, for the demo, the end-to-end benchmark and the tests.

`LocalNetwork` starts, in a folder of its own:

- Anvil in mixed mining (every transaction mined at once, an empty block every `block_seconds`), with
  the protocol deployed under `protocol` (short windows, small committees) and its deployment file
  written where worker processes find it;
- the local IPFS node (`ipfs/`);
- with `randomness="beacon"`, the threshold BLS randomness beacon: a t-of-n group dealt under
  `<folder>/home/beacon`, its `ThresholdBeacon` deployed and one `trust beacon run` process per
  signer (`trust.adapters.local.beacon.processes`); the default is the block hash (INSECURE: for tests);
- one auditor per `WorkerSpec`, each with its own keystore, X25519 key, ETH for gas and staked
  tokens, registered at its tier (tier-3 auditors credentialed first), and one `trust worker run`
  process per auditor, started with that auditor's keystore only;
- for tier-2 workers, one local model server (SmolLM2, `trust.adapters.local.llama`) they share,
  unless `llm` names an OpenAI-compatible endpoint or `tier2_checks` has them audit with the tier-1
  checks (a benchmark of the economics, where tier 2 must decide exactly);
- for tier-3 workers, each worker's review page on a port of its own with a password of its own
  (`review_pages`), for a person, or for the scripted expert of `trust.lab.demo.expert`.

The provider is account `provider_index` of Anvil's development mnemonic. Everything stops, in
reverse order, when the context exits; the folder keeps the logs (`workers/*.log`, `anvil.log`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eth_account.signers.local import LocalAccount

from trust.adapters.chain.deployment import Deployment, deploy_protocol
from trust.adapters.chain.protocol import Protocol, open_chain
from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.anvil import AnvilNode
from trust.adapters.local.beacon.keys import deal_group
from trust.adapters.local.beacon.processes import SignerState, beacon_down, beacon_up
from trust.adapters.local.ipfs import IpfsNode
from trust.adapters.local.llama import LocalModelServer
from trust.adapters.local.processes import alive
from trust.adapters.local.toolchain import Toolchain
from trust.adapters.local.workers import (
    ReviewPage,
    StartedProcess,
    start_process,
    stop_processes,
    wait_ready,
    worker_command,
    worker_environment,
)
from trust.errors import ConfigError, DevnetError
from trust.lab.devnet import AuditorAccount, provision_auditors
from trust.settings import DevnetSettings, GovernanceSettings, LlmSettings, ProtocolSettings, Settings

__all__ = ["LOCAL_PROTOCOL", "LocalNetwork", "ReviewPage", "WorkerSpec"]

log = logging.getLogger("trust.lab.localnet")

LOCAL_PROTOCOL = ProtocolSettings(
    committee_size_tier1=3,
    committee_size_tier2=3,
    committee_size_tier3=3,
    max_rounds=2,
    commit_window_seconds=300,
    reveal_window_seconds=120,
    randomness_delay_blocks=1,
    unbonding_delay_seconds=60,
)
"""The protocol of a local network: the paper's thresholds, fees and penalties, committees of three,
two rounds, a commit window of five minutes (long enough for three tier-2 auditors sharing the
embedded CPU model; a committee that has all committed reveals at once, so honest audits never wait
it out), a reveal window of two minutes and the randomness of the next block."""

_EMBEDDED_MODEL_TIMEOUT_SECONDS = 300.0
_KEYSTORE_PASSWORD_BYTES = 18
_WORKER_STOP_SECONDS = 20.0
_READY_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """One auditor and its worker process: its tier, and an adversarial mode (`trust worker run
    --adversary`: wrong, veto, random, copy or silent) or None for an honest worker."""

    tier: int
    adversary: str | None = None
    stake_multiple: int | None = None
    """Its stake in multiples of the tier's floor (the minimum stake, or P times `seat_capacity`);
    None: the network's default (1, 2, 3 times in turn, or 2 with `equal_stakes`)."""

    def __post_init__(self) -> None:
        if self.stake_multiple is not None and self.stake_multiple < 1:
            raise ConfigError(f"stake_multiple = {self.stake_multiple}: a worker stakes at least its tier's floor (1)")


@dataclass
class _Worker:
    spec: WorkerSpec
    auditor: AuditorAccount
    process: subprocess.Popen[bytes]
    log_file: Path
    review: ReviewPage | None = None

    def started(self) -> StartedProcess:
        return StartedProcess(self.auditor.address, self.process.pid, self.log_file, self.process)


@dataclass
class LocalNetwork:
    """See the module docstring. Use as `async with LocalNetwork(folder, workers) as network:`."""

    folder: Path
    workers: Sequence[WorkerSpec]
    protocol_settings: ProtocolSettings = LOCAL_PROTOCOL
    block_seconds: float = 0.25
    worker_poll_seconds: float = 0.2
    worker_block_poll_seconds: float | None = None
    """Between reads, each worker looks this often for a new block (`WorkerSettings.block_poll_seconds`).
    Off by default: on two cores the extra reads of every worker cost more than they save (a 10-node
    trace's overhead went from 2.4 s to 3.2 s with 0.05), see docs/performance.md."""
    provider_index: int = 3
    llm: LlmSettings | None = None
    equal_stakes: bool = False
    seat_capacity: int = 64
    """Committee draws (units) each auditor's stake can back at once: each draw won locks the
    penalty P until its seat settles, and a seat weighs the draws its member won (up to the
    committee size). The tier minimum backs only 12 tier-1 units, and a committee of three locks
    three units among its members on every segment: two traces at once would leave committees
    unseated (`CommitteeUnavailable`)."""
    rpc_port: int | None = None
    ipfs_port: int | None = None
    deployments_dir: Path | None = None
    idle_auditors: Sequence[int] = ()
    """Tiers of further auditors registered and staked with no worker: drawn like the others, they
    never vote (silent seats), for tests of rounds nobody decides."""
    keep_chain_state: bool = False
    """Anvil keeps its chain in `<folder>/anvil-state.json` (written when it stops), so that
    `stop_anvil` then `start_anvil` bring the same chain back on the same port, as a restarted
    devnet does: for tests of a provider or a worker losing its RPC for a while."""
    worker_env: Mapping[str, str] = field(default_factory=dict)
    """Further `TRUST_*` settings of every worker (a benchmark's switches, such as
    `TRUST_WORKER__BACKPRESSURE`), applied after the network's own."""
    randomness: str = "blockhash"
    """The randomness source deployed: "beacon" (`trust demo`) runs the beacon's signers beside the
    workers; "blockhash" (the default of tests and benchmarks) needs none but is insecure."""
    beacon_poll_seconds: float = 0.2
    """How often each beacon signer reads the chain (`BeaconSettings.poll_seconds`, 0.5 s by
    default): a draw waits for two shares and their publication, each seen on a signer's next read,
    so on blocks every 0.25 s the default's reads were most of the assignment phase."""
    tier2_checks: bool = False
    """Tier-2 workers audit with the tier-1 checks (`WorkerSettings.tier2_checks`) and no model is
    started: for `trust bench byzantine --adversary veto`, whose escalated rounds must decide exactly."""
    settings: Settings = field(init=False)
    provider: LocalAccount = field(init=False)
    auditors: list[AuditorAccount] = field(init=False, default_factory=list)
    deployment: Deployment = field(init=False)
    rpc_url: str = field(init=False, default="")
    ipfs_url: str = field(init=False, default="")
    _anvil: AnvilNode | None = field(init=False, default=None)
    _ipfs: IpfsNode | None = field(init=False, default=None)
    _model: LocalModelServer | None = field(init=False, default=None)
    _workers: list[_Worker] = field(init=False, default_factory=list)
    _password: str = field(init=False, default="")
    _signers: list[SignerState] = field(init=False, default_factory=list)

    @property
    def review_pages(self) -> list[ReviewPage]:
        return [w.review for w in self._workers if w.review is not None]

    @property
    def worker_logs(self) -> dict[str, Path]:
        return {w.auditor.address: w.log_file for w in self._workers}

    @property
    def worker_states(self) -> dict[str, Path]:
        """Auditor address -> its worker's SQLite state (`WorkerStore.open_existing` reads it while
        the worker runs)."""
        from trust.services.worker.runner import state_path

        return {
            w.auditor.address: state_path(self.settings, w.auditor.address, self.deployment.chain_id)
            for w in self._workers
        }

    def adversaries(self) -> dict[str, str]:
        """Auditor address -> adversarial mode, for the workers that have one."""
        return {w.auditor.address: w.spec.adversary for w in self._workers if w.spec.adversary}

    async def __aenter__(self) -> LocalNetwork:
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _start(self) -> None:
        folder = self.folder
        folder.mkdir(parents=True, exist_ok=True)
        toolchain = Toolchain.discover()
        mnemonic = DevnetSettings().mnemonic
        self._password = secrets.token_urlsafe(_KEYSTORE_PASSWORD_BYTES)
        (folder / "keystore-password").write_text(self._password + "\n")
        os.chmod(folder / "keystore-password", 0o600)
        self._anvil = self._start_anvil(toolchain, self.rpc_port)
        self.rpc_url = self._anvil.rpc_url
        self._ipfs = await asyncio.to_thread(IpfsNode.start, folder / "ipfs", port=self.ipfs_port)
        self.ipfs_url = self._ipfs.api_url
        deployments = self.deployments_dir or folder / "deployments"
        self.settings = Settings(
            home=folder / "home",
            deployments_dir=deployments,
            rpc_url=self.rpc_url,
            ipfs={"api_url": self.ipfs_url},
            beacon={"poll_seconds": self.beacon_poll_seconds},
        )
        self.provider = dev_account(mnemonic, self.provider_index)
        deployer = dev_account(mnemonic, 0)
        beacon = self.settings.beacon
        group = (
            deal_group(self.settings.beacon_dir, beacon.threshold, beacon.signers)
            if self.randomness == "beacon"
            else None
        )
        async with open_chain(self.rpc_url) as chain:
            self.deployment = await deploy_protocol(
                chain,
                deployer,
                self.protocol_settings,
                GovernanceSettings(),
                treasury=dev_account(mnemonic, 1).address,
                insurance_fund=dev_account(mnemonic, 2).address,
                randomness=self.randomness,
                beacon_group=group,
            )
            self.deployment.save(deployments)
            for operator in group.operators if group is not None else ():
                await chain.send_value(deployer, operator, beacon.operator_funding_wei)
            protocol = Protocol.bind(chain, self.deployment)
            params = await protocol.params.params()
            floor = {
                tier: max(int(params[f"minStakeTier{tier}"]), int(params["penaltyPerSeat"]) * self.seat_capacity)
                for tier in (1, 2, 3)
            }

            def stake_for(index: int, tier: int) -> int:
                given = self.workers[index].stake_multiple if index < len(self.workers) else None
                if given is not None:
                    return floor[tier] * given
                # Unequal by default (1, 2, 3 times the floor in turn) so that stake weighting matters.
                return floor[tier] * (2 if self.equal_stakes else 1 + index % 3)

            self.auditors = await provision_auditors(
                protocol,
                deployer,
                [spec.tier for spec in self.workers] + list(self.idle_auditors),
                folder / "keystores",
                self._password,
                stake_for=stake_for,
                scrypt_n=2**10,
            )
        if any(spec.tier == 2 for spec in self.workers) and self.llm is None and not self.tier2_checks:
            self._model = await asyncio.to_thread(LocalModelServer.ensure, folder / "llm")
            # The embedded server answers one request at a time: a worker's parallel audits would
            # only queue there (and time out behind each other), so each tier-2 worker audits one
            # seat at a time and waits as long as the queue of the others may take.
            self.llm = self._model.endpoint_settings(timeout_seconds=_EMBEDDED_MODEL_TIMEOUT_SECONDS)
        if group is not None:
            self._signers = await asyncio.to_thread(beacon_up, self.settings, self.rpc_url, deployments)
        for spec, auditor in zip(self.workers, self.auditors[: len(self.workers)], strict=True):
            self._workers.append(self._spawn(spec, auditor))
        await self._wait_ready()

    def _start_anvil(self, toolchain: Toolchain, port: int | None) -> AnvilNode:
        return AnvilNode.start(
            toolchain,
            port=port,
            mnemonic=DevnetSettings().mnemonic,
            log_file=self.folder / "anvil.log",
            block_seconds=self.block_seconds,
            state_file=self.folder / "anvil-state.json" if self.keep_chain_state else None,
        )

    def stop_anvil(self) -> None:
        """Stops the chain (it writes its state first, with `keep_chain_state`); workers and clients
        see the RPC go away."""
        if self._anvil is None:
            raise DevnetError("the local network's chain is not running")
        if not self.keep_chain_state:
            raise DevnetError("stopping the chain would lose it: start the network with keep_chain_state=True")
        self._anvil.stop()
        self._anvil = None

    def start_anvil(self) -> None:
        """Starts the chain again from its state file, on the same port."""
        if self._anvil is not None:
            raise DevnetError("the local network's chain is already running")
        port = int(self.rpc_url.rsplit(":", 1)[1])
        self._anvil = self._start_anvil(Toolchain.discover(), port)

    def stop_ipfs(self) -> None:
        """Stops the IPFS node (its repo stays on disk)."""
        if self._ipfs is None:
            raise DevnetError("the local network's IPFS node is not running")
        self._ipfs.stop()
        self._ipfs = None

    def start_ipfs(self) -> None:
        """Starts the IPFS node again on its repo and port: every blob it held is back."""
        if self._ipfs is not None:
            raise DevnetError("the local network's IPFS node is already running")
        port = int(self.ipfs_url.rsplit(":", 1)[1])
        self._ipfs = IpfsNode.start(self.folder / "ipfs", port=port)

    def _environment(self, spec: WorkerSpec, review: ReviewPage | None) -> dict[str, str]:
        # The network's own settings only: none of the caller's TRUST_* values reach its workers.
        base = {key: value for key, value in os.environ.items() if not key.startswith("TRUST_")}
        env = {
            "TRUST_HOME": str(self.folder / "home"),
            "TRUST_DEPLOYMENTS_DIR": str(self.settings.deployments_path(self.folder)),
            "TRUST_WORKER__POLL_SECONDS": str(self.worker_poll_seconds),
            **(
                {"TRUST_WORKER__BLOCK_POLL_SECONDS": str(self.worker_block_poll_seconds)}
                if self.worker_block_poll_seconds is not None
                else {}
            ),
            "TRUST_WORKER__BACKOFF_SECONDS": "0.5",
            "TRUST_WORKER__START_BLOCK": "0",
            "TRUST_IPFS__API_URL": self.ipfs_url,
        }
        if spec.tier == 2 and self.tier2_checks:
            env["TRUST_WORKER__TIER2_CHECKS"] = "true"
        elif spec.tier == 2 and self.llm is not None:
            env |= {
                "TRUST_AUDITOR_LLM__BASE_URL": str(self.llm.base_url),
                "TRUST_AUDITOR_LLM__MODEL": self.llm.model,
                "TRUST_AUDITOR_LLM__STRUCTURED_OUTPUT": self.llm.structured_output,
                "TRUST_AUDITOR_LLM__TIMEOUT_SECONDS": str(self.llm.timeout_seconds),
            }
            if self.llm.api_key:
                env["TRUST_AUDITOR_LLM__API_KEY"] = self.llm.api_key
            if self._model is not None:
                env["TRUST_WORKER__AUDITS_IN_PARALLEL"] = "1"
        env |= self.worker_env
        return worker_environment(base, env, review)

    def _spawn(self, spec: WorkerSpec, auditor: AuditorAccount) -> _Worker:
        review = ReviewPage.new(auditor.address) if spec.tier == 3 else None
        command = worker_command(
            keystore=Path(auditor.keystore),
            password_file=self.folder / "keystore-password",
            tier=spec.tier,
            rpc_url=self.rpc_url,
            ipfs_url=self.ipfs_url,
            adversary=spec.adversary,
        )
        log_file = self.folder / "workers" / f"{auditor.address.lower()}.log"
        process = start_process(command, self._environment(spec, review), log_file, detached=False)
        return _Worker(spec, auditor, process, log_file, review)

    async def _wait_ready(self) -> None:
        """Until every worker logged its start (its auditor line), or one died."""
        await wait_ready(
            [w.started() for w in self._workers],
            _READY_TIMEOUT_SECONDS,
            describe={w.auditor.address: f"worker {w.auditor.address} (tier {w.spec.tier})" for w in self._workers},
        )

    async def stop(self) -> None:
        await asyncio.to_thread(stop_processes, [w.started() for w in self._workers], _WORKER_STOP_SECONDS)
        self._workers.clear()
        # `settings` exists once `_start` got that far; the signers were recorded under its home.
        if self.randomness == "beacon" and hasattr(self, "settings"):
            await asyncio.to_thread(beacon_down, self.settings)
            for signer in self._signers:
                if signer.process is not None:
                    await asyncio.to_thread(signer.process.wait)  # reaped: stopped by beacon_down
            self._signers.clear()
        if self._model is not None:
            await asyncio.to_thread(self._model.stop)
            self._model = None
        if self._ipfs is not None:
            await asyncio.to_thread(self._ipfs.stop)
            self._ipfs = None
        if self._anvil is not None:
            self._anvil.stop()
            self._anvil = None

    def alive_workers(self) -> int:
        return sum(1 for w in self._workers if w.process.poll() is None and alive(w.process.pid))
