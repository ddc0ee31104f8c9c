"""The local development network: Anvil with persisted state, the protocol deployed, and auditor
accounts of all three tiers funded, registered and staked, each with its own keystore.

Layout of the devnet folder (`Settings.home / "devnet"`):

    anvil.pid, anvil.log      the node process and its log
    anvil-state.json          the chain, written every second and on exit (a restart loses nothing)
    devnet.json               the auditors provisioned so far (address, tier, keystore)
    keystores/                one encrypted keystore and one encrypted X25519 key per auditor
    keystore-password         the password of the devnet keystores (mode 0600; test funds only)

`up` is idempotent: a second call finds the running node, the deployment and the auditors, and
only adds auditors when more are asked for.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account import Account
from eth_account.signers.local import LocalAccount

from trust.chain.anvil import AnvilNode
from trust.chain.client import ChainClient
from trust.chain.compiler import compile_protocol
from trust.chain.deployment import Deployment, deploy_protocol, hand_to_timelock
from trust.chain.protocol import Protocol
from trust.chain.wallets import create_keystore, load_keystore, write_keystore
from trust.errors import DeploymentNotFound, DevnetError
from trust.settings import Settings
from trust.toolchain import Toolchain

__all__ = [
    "AuditorAccount",
    "DevnetStatus",
    "dev_account",
    "devnet_down",
    "devnet_up",
    "provision_auditors",
    "tier_plan",
]

Progress = Callable[[str], None]

ETH = 10**18
AUDITOR_GAS_FUNDING_WEI = 10 * ETH


def dev_account(mnemonic: str, index: int) -> LocalAccount:
    """Account `index` of a development mnemonic (Anvil's default accounts)."""
    Account.enable_unaudited_hdwallet_features()
    account: LocalAccount = Account.from_mnemonic(mnemonic, account_path=f"m/44'/60'/0'/0/{index}")
    return account


def tier_plan(count: int) -> list[int]:
    """Tiers for `count` auditors: about 1/4 computational, 3/8 LLM, 3/8 human, at least one each.

    Humans are over-represented compared with the paper's traffic shares (Table 2) because an
    escalated segment needs 2k+1 of them: with the devnet's k = 3, twenty auditors give the seven
    human seats of a second round.
    """
    if count < 3:
        raise DevnetError(f"a devnet needs at least 3 auditors (one per tier), not {count}")
    human = max(1, count * 3 // 8)
    computational = max(1, count // 4)
    llm = count - human - computational
    plan = [1] * computational + [2] * llm + [3] * human
    return plan


@dataclass(frozen=True, slots=True)
class AuditorAccount:
    """A provisioned auditor: its address, tier, stake and where its keys are stored."""

    address: str
    tier: int
    stake: int
    keystore: str
    encryption_key_file: str
    encryption_public_key: str


def _encryption_public_key(path: Path, password: str) -> bytes:
    """The X25519 public key of the auditor key stored at `path`, creating the key pair if needed.

    The private key is stored encrypted (PKCS#8, mode 0600); workers use it to unwrap segment keys.
    """
    if path.exists():
        private = serialization.load_pem_private_key(path.read_bytes(), password.encode())
        if not isinstance(private, X25519PrivateKey):
            raise DevnetError(f"{path} does not hold an X25519 key")
        return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    private = X25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password.encode()),
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


async def provision_auditors(
    protocol: Protocol,
    funder: LocalAccount,
    tiers: Sequence[int],
    keystore_dir: Path,
    password: str,
    *,
    first_index: int = 0,
    stake_for: Callable[[int, int], int] | None = None,
    grant_credentials: Callable[[list[str]], Awaitable[None]] | None = None,
    new_account: Callable[[int], LocalAccount] | None = None,
    scrypt_n: int = 2**14,
    progress: Progress | None = None,
) -> list[AuditorAccount]:
    """Creates, funds and registers one auditor per entry of `tiers`, each with its own wallet.

    `funder` pays gas money and staking tokens. Tier-3 auditors need a credential before they can
    register: `grant_credentials` grants it (by default the funder grants it directly, which works
    while it still owns the registry; after the hand-over it must go through the timelock). The
    default stake is the tier minimum times 1, 2 or 3 in turn, so that stake weighting matters.
    `new_account(index)` supplies the key of a new auditor (random by default; the benchmark
    derives them from a mnemonic so that its runs are reproducible).
    """
    params = await protocol.params.params()
    minimum = {1: params["minStakeTier1"], 2: params["minStakeTier2"], 3: params["minStakeTier3"]}

    def default_stake(index: int, tier: int) -> int:
        return minimum[tier] * (1 + index % 3)

    async def grant_directly(accounts: list[str]) -> None:
        for account in accounts:
            await protocol.registry.grant_credential(funder, account)

    stake_of = stake_for or default_stake
    keystore_dir.mkdir(parents=True, exist_ok=True)
    created: list[tuple[LocalAccount, AuditorAccount]] = []
    for offset, tier in enumerate(tiers):
        index = first_index + offset
        keystore = keystore_dir / f"auditor-{index:03d}.json"
        key_file = keystore_dir / f"auditor-{index:03d}.x25519.pem"
        # An earlier run that stopped half-way left its keys: reuse them rather than orphan them.
        if keystore.exists():
            account = load_keystore(keystore, password)
        elif new_account is not None:
            account = new_account(index)
            write_keystore(keystore, account, password, scrypt_n=scrypt_n)
        else:
            account = create_keystore(keystore, password, scrypt_n=scrypt_n)
        public = _encryption_public_key(key_file, password)
        info = AuditorAccount(
            address=account.address,
            tier=tier,
            stake=stake_of(index, tier),
            keystore=str(keystore),
            encryption_key_file=str(key_file),
            encryption_public_key="0x" + public.hex(),
        )
        created.append((account, info))
        if (await protocol.registry.auditor(account.address)).registered:
            continue
        # The funder's transactions are sequential (one nonce); each auditor then acts on its own.
        if await protocol.chain.balance(account.address) < AUDITOR_GAS_FUNDING_WEI // 2:
            await protocol.chain.send_value(funder, account.address, AUDITOR_GAS_FUNDING_WEI)
        held = await protocol.token.balance_of(account.address)
        if held < info.stake:
            await protocol.token.transfer(funder, account.address, info.stake - held)
        if progress:
            progress(f"funded auditor {index} ({account.address}, tier {tier})")
    registered = {info.address for _, info in created if (await protocol.registry.auditor(info.address)).registered}
    created_new = [(a, i) for a, i in created if i.address not in registered]
    humans = [
        info.address
        for _, info in created_new
        if info.tier == 3 and not (await protocol.registry.auditor(info.address)).credentialed
    ]
    if humans:
        await (grant_credentials or grant_directly)(humans)

    async def register(account: LocalAccount, info: AuditorAccount) -> None:
        await protocol.token.approve(account, protocol.registry.address, info.stake)
        await protocol.registry.register(
            account,
            info.tier,
            bytes.fromhex(info.encryption_public_key[2:]),
            f"devnet:auditor:{info.address}",
            info.stake,
        )

    # One after another: the chain then sees the same transactions in the same order on every run.
    for account, info in created_new:
        await register(account, info)
    if progress:
        progress(f"registered {len(created)} auditors")
    return [info for _, info in created]


@dataclass(frozen=True, slots=True)
class DevnetStatus:
    """What `devnet up` started or found."""

    rpc_url: str
    chain_id: int
    pid: int
    deployment_file: Path
    deployment: Deployment
    auditors: list[AuditorAccount]
    started: bool
    deployed: bool
    treasury: str
    insurance_fund: str


class _DevnetFiles:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.pid = directory / "anvil.pid"
        self.log = directory / "anvil.log"
        self.state = directory / "anvil-state.json"
        self.record = directory / "devnet.json"
        self.keystores = directory / "keystores"
        self.password = directory / "keystore-password"

    def password_value(self) -> str:
        if not self.password.is_file():
            self.dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.password, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(24) + "\n")
        return self.password.read_text().splitlines()[0]

    def auditors(self) -> list[AuditorAccount]:
        if not self.record.is_file():
            return []
        return [AuditorAccount(**a) for a in json.loads(self.record.read_text())["auditors"]]

    def save_auditors(self, auditors: list[AuditorAccount]) -> None:
        tmp = self.record.with_suffix(".tmp")
        tmp.write_text(json.dumps({"auditors": [asdict(a) for a in auditors]}, indent=2) + "\n")
        os.replace(tmp, self.record)


def _running_node(files: _DevnetFiles, settings: Settings) -> AnvilNode | None:
    if not files.pid.is_file():
        return None
    try:
        pid = int(files.pid.read_text().strip())
    except ValueError:
        return None
    d = settings.devnet
    return AnvilNode.attach(pid, d.host, d.port, d.chain_id)


async def _grant_through_timelock(protocol: Protocol, governor: LocalAccount, accounts: Sequence[str]) -> None:
    """Grants tier-3 credentials once the timelock governs: schedule, let devnet time pass, execute."""
    delay = await protocol.timelock.min_delay()
    pending = []
    for account in accounts:
        calldata = bytes.fromhex(protocol.registry.contract.encode_abi("grantCredential", args=[account])[2:])
        salt = secrets.token_bytes(32)
        await protocol.timelock.schedule(governor, protocol.registry.address, calldata, salt)
        pending.append((calldata, salt))
    # Devnet only: fast-forward the chain's clock past the governance delay.
    await protocol.chain.rpc("evm_increaseTime", [delay + 1])
    await protocol.chain.rpc("evm_mine", [])
    for calldata, salt in pending:
        await protocol.timelock.execute(governor, protocol.registry.address, calldata, salt)


async def _bootstrap(
    settings: Settings, toolchain: Toolchain, files: _DevnetFiles, rpc_url: str, auditors: int, progress: Progress
) -> tuple[Deployment, Path, list[AuditorAccount], bool]:
    artifacts = compile_protocol(toolchain)
    d = settings.devnet
    governor = dev_account(d.mnemonic, 0)
    deployments_dir = settings.deployments_path(toolchain.root)
    async with ChainClient(rpc_url, artifacts, tx_timeout_seconds=settings.tx_timeout_seconds) as chain:
        # Fast bootstrap: a block per transaction; switched to 1-second blocks at the end.
        await chain.rpc("evm_setAutomine", [True])
        deployed = False
        try:
            deployment = Deployment.load(deployments_dir, chain.chain_id)
            if not await chain.code_at(deployment.contracts["TRUSTAudit"]):
                raise DeploymentNotFound("stale deployment file: no code at the audit contract")
        except DeploymentNotFound:
            progress("deploying the protocol")
            deployment = await deploy_protocol(
                chain,
                governor,
                settings.devnet_protocol(),
                settings.governance.model_copy(update={"timelock_min_delay_seconds": d.timelock_min_delay_seconds}),
                treasury=dev_account(d.mnemonic, 1).address,
                insurance_fund=dev_account(d.mnemonic, 2).address,
            )
            deployment.save(deployments_dir)
            deployed = True
        protocol = Protocol.bind(chain, deployment)
        existing = files.auditors() if not deployed else []
        if deployed and files.record.is_file():
            files.record.unlink()  # auditors of an older chain
        missing = auditors - len(existing)
        if missing > 0:
            wanted = tier_plan(auditors)
            have = [a.tier for a in existing]
            plan = [t for t in (1, 2, 3) for _ in range(max(0, wanted.count(t) - have.count(t)))][:missing]
            progress(f"provisioning {missing} auditors")
            grant = (
                functools.partial(_grant_through_timelock, protocol, governor)
                if deployment.governed_by_timelock
                else None
            )
            new = await provision_auditors(
                protocol,
                governor,
                plan,
                files.keystores,
                files.password_value(),
                first_index=len(existing),
                grant_credentials=grant,
                scrypt_n=d.keystore_scrypt_n,
                progress=progress,
            )
            existing = existing + new
            files.save_auditors(existing)
        if not deployment.governed_by_timelock:
            progress("handing the protocol to the timelock")
            deployment = await hand_to_timelock(chain, governor, deployment)
            deployment.save(deployments_dir)
        await chain.rpc("evm_setIntervalMining", [1])
    return deployment, Deployment.path_for(deployments_dir, deployment.chain_id), existing, deployed


def devnet_up(settings: Settings, auditors: int | None = None, progress: Progress | None = None) -> DevnetStatus:
    """Starts (or finds) the devnet, deploys (or finds) the protocol, provisions the auditors."""
    say = progress or (lambda _msg: None)
    toolchain = Toolchain.discover()
    files = _DevnetFiles(settings.devnet_dir)
    files.dir.mkdir(parents=True, exist_ok=True)
    d = settings.devnet
    node = _running_node(files, settings)
    started = node is None
    if node is None:
        say(f"starting anvil on {d.rpc_url} (state: {files.state})")
        node = AnvilNode.start(
            toolchain,
            host=d.host,
            port=d.port,
            chain_id=d.chain_id,
            mnemonic=d.mnemonic,
            state_file=files.state,
            state_interval_seconds=d.state_interval_seconds,
            log_file=files.log,
            detached=True,
        )
        files.pid.write_text(f"{node.pid}\n")
    # Without --auditors: keep the devnet as it is, or provision the default number on a fresh one.
    count = auditors if auditors is not None else (len(files.auditors()) or d.auditors)
    try:
        deployment, path, accounts, deployed = asyncio.run(
            _bootstrap(settings, toolchain, files, node.rpc_url, count, say)
        )
    except BaseException:
        if started:
            node.stop()
            files.pid.unlink(missing_ok=True)
        raise
    return DevnetStatus(
        rpc_url=node.rpc_url,
        chain_id=d.chain_id,
        pid=node.pid,
        deployment_file=path,
        deployment=deployment,
        auditors=accounts,
        started=started,
        deployed=deployed,
        treasury=dev_account(d.mnemonic, 1).address,
        insurance_fund=dev_account(d.mnemonic, 2).address,
    )


def devnet_down(settings: Settings) -> bool:
    """Stops the devnet node (its state is written on the way out). False when none was running."""
    files = _DevnetFiles(settings.devnet_dir)
    node = _running_node(files, settings)
    files.pid.unlink(missing_ok=True)
    if node is None:
        return False
    node.stop()
    return True
