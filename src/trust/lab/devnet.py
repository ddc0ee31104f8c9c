"""The local development network: Anvil with persisted state, the protocol deployed, and auditor
accounts of all three tiers funded, registered and staked, each with its own keystore.

Layout of the devnet folder (`Settings.home / "devnet"`):

    anvil.pid, anvil.log      the node process and its log
    anvil-state.json          the chain, written every second and on exit (a restart loses nothing)
    anvil-states/             past blocks' states that no longer fit in Anvil's memory (removed by `down`)
    devnet.json               the auditors provisioned so far (address, tier, keystore)
    keystores/                one encrypted keystore and one encrypted X25519 key per auditor
    keystore-password         the password of the devnet keystores (mode 0600; test funds only)

`up` is idempotent: a second call finds the running node, the deployment and the auditors, and
only adds auditors when more are asked for. The workers of those auditors, the IPFS node and the
model server they use are `trust.lab.devnet_processes`. Anvil's development accounts come from
`trust.adapters.chain.wallets.dev_account`. `fund` is the devnet's faucet.

A devnet belongs to its `TRUST_HOME`: the node is trusted only while its pid still runs Anvil on
this home's state file, so `down` in one home never signals the node of another (or a recycled
pid). Two homes need two ports (`TRUST_DEVNET__PORT`); `up` refuses a port that something else
already answers on.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import json
import os
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlparse

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account.signers.local import LocalAccount
from eth_utils import is_address, to_checksum_address

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.deployment import Deployment, deploy_protocol, hand_to_timelock
from trust.adapters.chain.protocol import Protocol, open_chain
from trust.adapters.chain.wallets import create_keystore, dev_account, load_keystore, write_keystore
from trust.adapters.local.anvil import AnvilNode, rpc_ready
from trust.adapters.local.beacon.keys import deal_group, load_group
from trust.adapters.local.processes import alive, command_line, inspectable, option_value, working_directory
from trust.adapters.local.toolchain import Toolchain
from trust.core.amounts import decimal_text, parse_amount
from trust.errors import BeaconError, DeploymentNotFound, DevnetError, WalletError
from trust.settings import Settings

__all__ = [
    "AuditorAccount",
    "DevnetNode",
    "DevnetStatus",
    "Funded",
    "check_node_port",
    "devnet_auditors",
    "devnet_down",
    "devnet_node",
    "devnet_up",
    "fund",
    "parse_units",
    "provision_auditors",
    "tier_plan",
    "whole_units",
]

Progress = Callable[[str], None]

ETH = 10**18
AUDITOR_GAS_FUNDING_WEI = 10 * ETH


def tier_plan(count: int) -> list[int]:
    """Tiers for `count` auditors: about 1/4 computational, 3/8 LLM, 3/8 human, at least one each.

    Humans are over-represented compared with the paper's traffic shares (Table 2) because an
    escalated segment makes 2k+1 draws among them. One human's stake backs them all (a committee
    is drawn with replacement; the tier-3 minimum backs 1,250 penalties of 8 tokens), but a round
    whose draws all land on one person is one reviewer's word: with the devnet's k = 1, eight
    auditors give three humans, so a second round's three draws can seat three people (and a
    tier-1 segment escalated, three LLM auditors).
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
        self.states = directory / "anvil-states"
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


def _devnet_files(settings: Settings) -> _DevnetFiles:
    # Absolute, so that the paths recorded and put on command lines mean the same from any folder.
    return _DevnetFiles(settings.devnet_dir.expanduser().resolve())


def _recorded_pid(files: _DevnetFiles) -> int | None:
    try:
        return int(files.pid.read_text().strip())
    except (OSError, ValueError):
        return None


def _runs_anvil_on(pid: int, state_file: Path) -> bool:
    """Whether `pid` is Anvil on this home's state file (a recycled pid, or another home's node, is
    not). Where there is no /proc (macOS) the caller's JSON-RPC check has to do."""
    if not inspectable():
        return True
    args = command_line(pid)
    if not args or not Path(args[0]).name.startswith("anvil"):
        return False
    given = option_value(args, "--state")
    where = working_directory(pid) or Path.cwd()
    return given is not None and os.path.realpath(where / given) == os.path.realpath(state_file)


def _running_node(files: _DevnetFiles, settings: Settings) -> AnvilNode | None:
    pid = _recorded_pid(files)
    if pid is None or not _runs_anvil_on(pid, files.state):
        return None
    d = settings.devnet
    return AnvilNode.attach(pid, d.host, d.port, d.chain_id, states_dir=files.states)


def check_node_port(settings: Settings) -> None:
    """Unless this home's node runs: `DevnetError` naming the port and the setting when something
    already answers where it would listen (another home's devnet, the demo, another chain). Called
    by `devnet_up`, and before it by whoever starts other things first."""
    if _running_node(_devnet_files(settings), settings) is not None:
        return
    _check_port_free(settings)


def _check_port_free(settings: Settings) -> None:
    d = settings.devnet
    answered = rpc_ready(d.rpc_url)
    if answered is not None:
        raise DevnetError(
            f"port {d.port} is taken: something already answers JSON-RPC at {d.rpc_url} (chain {answered}; "
            f"another TRUST_HOME's devnet, or `trust demo`?). Stop it, or give this home's devnet a port of its "
            f"own with TRUST_DEVNET__PORT (and its IPFS node one with TRUST_IPFS__PORT)"
        )


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


async def _fund_beacon_operators(chain: ChainClient, funder: LocalAccount, settings: Settings) -> None:
    """Gas money for each signer's account of this home's beacon group (they post shares and publish):
    topped up to `BeaconSettings.operator_funding_wei` when below half of it. Nothing without a group."""
    try:
        group = load_group(settings.beacon_dir.expanduser().resolve())
    except BeaconError:
        return
    target = settings.beacon.operator_funding_wei
    for operator in group.operators:
        held = await chain.balance(operator)
        if held < target // 2:
            await chain.send_value(funder, operator, target - held)


async def _bootstrap(
    settings: Settings, toolchain: Toolchain, files: _DevnetFiles, rpc_url: str, auditors: int, progress: Progress
) -> tuple[Deployment, Path, list[AuditorAccount], bool]:
    d = settings.devnet
    governor = dev_account(d.mnemonic, 0)
    deployments_dir = settings.deployments_path(toolchain.root)
    async with open_chain(rpc_url, tx_timeout_seconds=settings.tx_timeout_seconds) as chain:
        # The node mines in mixed mode (`AnvilNode.start(block_seconds=...)`): every transaction at
        # once, an empty block every `block_seconds` while idle, so windows and randomness blocks pass.
        deployed = False
        try:
            deployment = Deployment.load(deployments_dir, chain.chain_id)
            if not await chain.code_at(deployment.contracts["TRUSTAudit"]):
                raise DeploymentNotFound("stale deployment file: no code at the audit contract")
        except DeploymentNotFound:
            beacon = settings.beacon
            # The threshold beacon by default: its group is dealt here (a dealer is enough for a
            # devnet; see trust.adapters.local.beacon.keys) and its signers run beside the workers.
            group = (
                deal_group(settings.beacon_dir.expanduser().resolve(), beacon.threshold, beacon.signers)
                if beacon.randomness == "beacon"
                else None
            )
            progress(f"deploying the protocol (randomness: {beacon.randomness})")
            deployment = await deploy_protocol(
                chain,
                governor,
                settings.devnet_protocol(),
                settings.governance.model_copy(update={"timelock_min_delay_seconds": d.timelock_min_delay_seconds}),
                treasury=dev_account(d.mnemonic, 1).address,
                insurance_fund=dev_account(d.mnemonic, 2).address,
                randomness=beacon.randomness,
                beacon_group=group,
            )
            deployment.save(deployments_dir)
            deployed = True
        await _fund_beacon_operators(chain, governor, settings)
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
    return deployment, Deployment.path_for(deployments_dir, deployment.chain_id), existing, deployed


def devnet_up(settings: Settings, auditors: int | None = None, progress: Progress | None = None) -> DevnetStatus:
    """Starts (or finds) the devnet, deploys (or finds) the protocol, provisions the auditors."""
    say = progress or (lambda _msg: None)
    toolchain = Toolchain.discover()
    files = _devnet_files(settings)
    files.dir.mkdir(parents=True, exist_ok=True)
    d = settings.devnet
    node = _running_node(files, settings)
    started = node is None
    if node is None:
        _check_port_free(settings)
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
            block_seconds=d.block_seconds,
            states_dir=files.states,
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
    """Stops this home's devnet node (its state is written on the way out). False when none was
    running. The processes beside it are `trust.lab.devnet_processes.stop_devnet_processes`'."""
    files = _devnet_files(settings)
    node = _running_node(files, settings)
    pid = _recorded_pid(files)
    files.pid.unlink(missing_ok=True)
    if node is None and pid is not None and _runs_anvil_on(pid, files.state) and alive(pid):
        # Alive on this home's state but not answering (hung, or still loading it): stop it all the same.
        d = settings.devnet
        node = AnvilNode(d.host, d.port, d.chain_id, pid, states_dir=files.states)
    if node is None:
        return False
    node.stop()
    return True


@dataclass(frozen=True, slots=True)
class DevnetNode:
    """This home's devnet node as `trust devnet status` shows it."""

    rpc_url: str
    pid: int | None
    running: bool
    state_file: Path
    log_file: Path


def devnet_node(settings: Settings) -> DevnetNode:
    """Whether this home's node runs, where, with which pid."""
    files = _devnet_files(settings)
    node = _running_node(files, settings)
    return DevnetNode(settings.devnet.rpc_url, _recorded_pid(files), node is not None, files.state, files.log)


def devnet_auditors(settings: Settings) -> list[AuditorAccount]:
    """The auditors this home's devnet provisioned (none before the first `up`)."""
    return _devnet_files(settings).auditors()


@dataclass(frozen=True, slots=True)
class Funded:
    """What `fund` sent and the balances after it, in wei and token base units."""

    address: str
    sent_wei: int
    sent_tokens: int
    balance_wei: int
    balance_tokens: int
    funder: str


def parse_units(text: str, what: str) -> int:
    """An amount typed in whole units ("10", "0.5"; ETH or tokens, both 18 decimals) in base units;
    zero is allowed (nothing of that kind is sent)."""
    return parse_amount(text, what, unit="units", allow_zero=True)


def whole_units(amount: int) -> str:
    """Wei (or token base units, 18 decimals as well) as an exact decimal: 10200000000000000 -> '0.0102'."""
    return decimal_text(amount)


def _loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _fund(settings: Settings, rpc_url: str, address: str, eth_wei: int, tokens: int) -> Funded:
    d = settings.devnet
    async with open_chain(rpc_url, tx_timeout_seconds=settings.tx_timeout_seconds) as chain:
        if chain.chain_id != d.chain_id or not _loopback(rpc_url):
            raise DevnetError(
                f"`trust wallet fund` is the devnet's faucet: {rpc_url} is chain {chain.chain_id}, not the devnet "
                f"(chain {d.chain_id} at a loopback address). On any other chain, ask whoever holds the funds"
            )
        protocol = Protocol.load(chain, settings)
        token = protocol.deployment.contracts["TrustToken"]
        if not await chain.code_at(token):
            raise DevnetError(
                f"no staking token at {token} on {rpc_url}: the deployment file is of "
                "another chain; run `trust devnet up`"
            )
        funder = dev_account(d.mnemonic, 0)
        eth_held = await chain.balance(funder.address)
        tokens_held = await protocol.token.balance_of(funder.address)
        if eth_wei > eth_held or tokens > tokens_held:
            raise DevnetError(
                f"the devnet funder {funder.address} holds {whole_units(eth_held)} ETH and "
                f"{whole_units(tokens_held)} tokens; asked for {whole_units(eth_wei)} ETH and "
                f"{whole_units(tokens)} tokens: ask for less"
            )
        if eth_wei:
            await chain.send_value(funder, address, eth_wei)
        if tokens:
            await protocol.token.transfer(funder, address, tokens)
        return Funded(
            address=address,
            sent_wei=eth_wei,
            sent_tokens=tokens,
            balance_wei=await chain.balance(address),
            balance_tokens=await protocol.token.balance_of(address),
            funder=funder.address,
        )


def fund(settings: Settings, address: str, *, eth_wei: int, tokens: int, rpc_url: str | None = None) -> Funded:
    """The devnet's faucet: sends `eth_wei` and `tokens` (staking-token base units) to `address` from
    the devnet's funder, Anvil's account 0, which deployed the protocol and holds the token supply.
    Refused (`DevnetError`) on any chain but the devnet (`DevnetSettings.chain_id` at a loopback
    address), and `WalletError` for an address that is not one."""
    if eth_wei < 0 or tokens < 0:
        raise DevnetError(f"amounts must not be negative (ETH {eth_wei} wei, tokens {tokens} base units)")
    if not is_address(address):
        raise WalletError(f"{address!r} is not an Ethereum address (0x and 40 hex digits)")
    url = rpc_url or settings.effective_rpc_url
    if rpc_ready(url) is None:
        raise DevnetError(f"nothing answers JSON-RPC at {url}: start the devnet (`trust devnet up`)")
    return asyncio.run(_fund(settings, url, to_checksum_address(address), eth_wei, tokens))
