"""A small audit network for worker tests: Anvil with the protocol deployed under short windows,
tier-1 auditors with keystores, a provider, the local IPFS node, and blocks every second (the
windows are timestamps, and only mined blocks move the chain's clock)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from eth_account.signers.local import LocalAccount

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.deployment import Deployment, deploy_protocol
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import CommitteeDrawn
from trust.adapters.chain.wallets import dev_account, load_keystore
from trust.adapters.storage.kubo import KuboClient
from trust.auditors.computational import ComputationalAuditor
from trust.auditors.tiers import default_checks
from trust.core.cid import unixfs_cid
from trust.core.decompose.rules import from_steps
from trust.core.graphs.cig import AgentTurn, Cig, Role
from trust.core.graphs.hdag import Hdag
from trust.core.graphs.units import UnitKind
from trust.core.privacy import merkle
from trust.lab.devnet import AuditorAccount, provision_auditors
from trust.services.delivery import SegmentProfile, StoredTrace, deliver_keys, store_trace, units_of
from trust.services.worker.daemon import Worker
from trust.services.worker.identity import AuditorIdentity
from trust.services.worker.keys import load_encryption_key
from trust.services.worker.store import WorkerStore
from trust.settings import GovernanceSettings, ProtocolSettings, SandboxSettings, WorkerSettings

PASSWORD = "worker-test-only"
COMMIT_WINDOW_SECONDS = 14
REVEAL_WINDOW_SECONDS = 16
PROTOCOL = ProtocolSettings(
    committee_size_tier1=3,
    committee_size_tier2=3,
    committee_size_tier3=3,
    commit_window_seconds=COMMIT_WINDOW_SECONDS,
    reveal_window_seconds=REVEAL_WINDOW_SECONDS,
)


@dataclass
class Network:
    protocol: Protocol
    deployment: Deployment
    deployer: LocalAccount
    provider: LocalAccount
    auditors: list[AuditorAccount]
    keystore_dir: Path


@asynccontextmanager
async def deployed_network(
    chain: ChainClient,
    mnemonic: str,
    keystore_dir: Path,
    settings: ProtocolSettings = PROTOCOL,
    stake_multiples: Sequence[int] = (2, 2, 2),
) -> AsyncIterator[Network]:
    """The protocol deployed under `settings`, three tier-1 auditors, and a block every second.

    `stake_multiples`: each auditor's stake in tier minimums. By default equal stakes, twice the tier
    minimum (25 units of P each): committees are drawn with replacement,
    so each of a session's draws lands on any of the three alike, and a worker that holds no seat of
    a seven-segment session (21 draws) is a one-in-5,000 event, not one in 45 as with a light stake.
    One auditor alone backs every draw of such a session (`leave_alone`)."""
    deployer, provider = dev_account(mnemonic, 0), dev_account(mnemonic, 3)
    await chain.rpc("evm_setAutomine", [True])
    deployment = await deploy_protocol(chain, deployer, settings, GovernanceSettings())
    protocol = Protocol.bind(chain, deployment)
    auditors = await provision_auditors(
        protocol,
        deployer,
        [1] * len(stake_multiples),
        keystore_dir,
        PASSWORD,
        stake_for=lambda index, tier: settings.min_stake(tier) * stake_multiples[index],
        scrypt_n=2**10,
    )
    await chain.rpc("evm_setIntervalMining", [1])
    try:
        yield Network(protocol, deployment, deployer, provider, auditors, keystore_dir)
    finally:
        await chain.rpc("evm_setIntervalMining", [0])


@pytest.fixture
async def network(chain: ChainClient, mnemonic: str, keystore_dir: Path) -> AsyncIterator[Network]:
    async with deployed_network(chain, mnemonic, keystore_dir) as made:
        yield made


def products() -> Hdag:
    """Four tier-1 segments: a goal and three calculations, the second one wrong (17 * 23 is 391)."""
    return from_steps(
        "Check the products 17 * 23 = 391 and 12 * 12 = 144.",
        ["17 * 23 = 391", "17 * 23 = 409", "12 * 12 = 144"],
    )


def tier1_profiles(graph: Hdag) -> dict[str, SegmentProfile]:
    return {node.id: SegmentProfile(1) for node in graph.nodes()}


def products_log() -> Cig:
    """A multi-agent log of the same products: the user's task u0 and a calculator's output x3 are
    context-only (they pose and report); the experts' turns t1, t2, t4 are audited at tier 1, and
    t2's 17 * 23 = 409 is wrong. t1 and t2 read the task, t4 reads the calculator."""
    cig = Cig()
    turns = [
        ("u0", Role.USER, "Check the products 17 * 23 and 12 * 12."),
        ("t1", Role.EXPERT, "17 * 23 = 391"),
        ("t2", Role.EXPERT, "17 * 23 = 409"),
        ("x3", Role.TOOL, "12 * 12 = 144"),
        ("t4", Role.EXPERT, "The calculator agrees: 12 * 12 = 144"),
    ]
    for step, (node_id, role, output) in enumerate(turns):
        cig.add_turn(AgentTurn(id=node_id, step=step, agent=role.value, role=role, output=output))
    for source, target in (("u0", "t1"), ("u0", "t2"), ("t1", "t2"), ("t2", "x3"), ("x3", "t4")):
        cig.add_edge(source, target)
    return cig


def tier1_log_profiles(graph: Cig) -> dict[str, SegmentProfile]:
    """Tier 1 for the reasoning turns; the user's and tools' turns context-only. The messages' edge
    units are stored but seat no committee: these tests are about the node layer (the edge seats
    are audited end to end in tests/services/sdk/test_client.py)."""
    profiles = {turn.id: SegmentProfile(1, audited=turn.role not in (Role.USER, Role.TOOL)) for turn in graph.turns()}
    for unit in units_of(graph):
        if unit.kind is UnitKind.EDGE:
            profiles[unit.id] = SegmentProfile(1, audited=False)
    return profiles


async def open_session(network: Network, stored: StoredTrace) -> tuple[int, list[CommitteeDrawn]]:
    """Creates the session, waits for its randomness block and draws every committee."""
    audit, chain = network.protocol.audit, network.protocol.chain
    session_id, _ = await audit.create_session(network.provider, stored.root, stored.specs())
    while await chain.block_number() <= (await audit.session(session_id)).randomness_block:
        await chain.rpc("evm_mine", [])
    drawn = await audit.assign_auditors(network.provider, session_id, range(len(stored.segments)))
    return session_id, audit.committees_in(drawn)


async def submit(
    network: Network,
    kubo: KuboClient,
    graph: Hdag | Cig,
    *,
    tamper: Sequence[int] = (),
    unavailable: Sequence[int] = (),
    reply_key: bytes | None = None,
    profiles: Mapping[str, SegmentProfile] | None = None,
    deliver: bool = True,
) -> tuple[int, StoredTrace, list[CommitteeDrawn]]:
    """The provider's side: store, register, draw and deliver the keys (with `reply_key` in every
    grant: the seats then report to it). `profiles` default to tier 1 for every node of an HDAG.
    Segments in `tamper` are replaced on IPFS by a copy with one ciphertext byte flipped, registered
    under the copy's CID (so the chain and the envelope agree on where it lies, but not on what it
    holds). Segments in `unavailable` are registered under the CID of a blob no node holds (a provider
    that announces content it never serves). `deliver=False` withholds every key envelope (a provider
    burning the seats, issue M3)."""
    if profiles is None:
        assert isinstance(graph, Hdag), "pass the profiles of a CIG"
        profiles = tier1_profiles(graph)
    stored = await store_trace(kubo, graph, profiles=profiles)
    if tamper or unavailable:
        segments, leaves = list(stored.segments), list(stored.leaves)
        for index in (*tamper, *unavailable):
            blob = bytearray(await kubo.cat(segments[index].cid))
            blob[-20] ^= 0x01
            cid = await kubo.add(bytes(blob)) if index in tamper else unixfs_cid(bytes(blob))
            segments[index] = dataclasses.replace(segments[index], cid=cid)
            leaves[index] = dataclasses.replace(leaves[index], cid=merkle.cid_bytes(cid))
        stored = StoredTrace.build(stored.trace_id, segments, leaves, stored.context)
    session_id, committees = await open_session(network, stored)
    if not deliver:
        return session_id, stored, committees
    await deliver_keys(
        network.protocol, kubo, network.provider, session_id, graph, stored, committees, reply_key=reply_key
    )
    return session_id, stored, committees


WORKER_SETTINGS = WorkerSettings(poll_seconds=0.3, commit_margin_seconds=3, backoff_seconds=0.2, max_attempts=3)


def seats_of(committees: Sequence[CommitteeDrawn], address: str) -> list[int]:
    """The segments whose committee seats `address`, in order. Committees are k draws with
    replacement: three draws among the three auditors seat one to three of them (a member drawn
    twice holds one seat weighing two), so each worker holds the seats its draws gave it."""
    return sorted(c.segment_id for c in committees if address in c.members)


async def leave_alone(network: Network, index: int) -> None:
    """Takes every tier-1 auditor but `index` out of the draw (their operators' `setAvailable`): the
    one left wins every draw, one seat on each segment weighing the committee's size."""
    for other, auditor in enumerate(network.auditors):
        if other != index:
            account = load_keystore(Path(auditor.keystore), PASSWORD)
            await network.protocol.registry.set_available(account, False)


def make_worker(network: Network, kubo: KuboClient, index: int, state_dir: Path, **kwargs: object) -> Worker:
    """The in-process worker of auditor `index` (a tier-1 auditor), its state under `state_dir`;
    `kwargs` go to `Worker` (an adversary, an event hook)."""
    auditor = network.auditors[index]
    account = load_keystore(Path(auditor.keystore), PASSWORD)
    identity = AuditorIdentity(account, load_encryption_key(Path(auditor.encryption_key_file), PASSWORD), "test")
    store = WorkerStore(
        state_dir / f"{index}.sqlite3",
        chain_id=network.protocol.chain.chain_id,
        audit_contract=network.protocol.audit.address,
        auditor=account.address,
    )
    return Worker(
        network.protocol,
        kubo,
        identity,
        ComputationalAuditor(default_checks(SandboxSettings())),
        store,
        WORKER_SETTINGS,
        logger=logging.getLogger(f"trust.services.worker.{index}"),
        **kwargs,  # type: ignore[arg-type]
    )
