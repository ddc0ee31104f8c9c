"""The beacon as a user runs it: `trust devnet up` deploys `ThresholdBeacon` for a dealt 2-of-3
group, `trust beacon up` runs its three signer processes, a session's committee is drawn from the
randomness they publish (also with one signer down), and `trust beacon down` stops them."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trust.adapters.chain.beacon import BeaconContract, RandomnessStatus
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.deployment import Deployment
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import SegmentSpec
from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.beacon.keys import load_group
from trust.adapters.local.beacon.processes import beacon_status
from trust.adapters.local.processes import free_port
from trust.core.beacon import bls
from trust.lab.localnet import LocalNetwork

pytestmark = [pytest.mark.chain, pytest.mark.slow]

MNEMONIC = "test test test test test test test test test test test junk"


def _trust(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trust", *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def beacon_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = dict(os.environ)
    env.update(
        TRUST_HOME=str(tmp_path / "home"),
        TRUST_DEVNET__PORT=str(free_port()),
        TRUST_DEPLOYMENTS_DIR=str(tmp_path / "deployments"),
        TRUST_IPFS__PORT=str(free_port()),
        TRUST_BEACON__RANDOMNESS="beacon",
        TRUST_BEACON__POLL_SECONDS="0.2",
        TRUST_BEACON__BACKUP_DELAY_BLOCKS="1",
        COLUMNS="200",
    )
    yield env
    _trust(env, "devnet", "down")


async def _draw(rpc_url: str, artifacts: dict[str, Artifact], deployments: Path) -> tuple[int, tuple[str, ...]]:
    """Creates a one-segment session, waits for the beacon's value of its block, draws the committee."""
    async with ChainClient(rpc_url, artifacts) as chain:
        deployment = Deployment.load(deployments, chain.chain_id)
        protocol = Protocol.bind(chain, deployment)
        beacon = BeaconContract(chain, deployment.contracts["ThresholdBeacon"])
        provider = dev_account(MNEMONIC, 3)
        spec = SegmentSpec(tier=1, weight=1, content_digest=os.urandom(32))
        session_id, _ = await protocol.audit.create_session(provider, os.urandom(32), [spec])
        # The session opened in that call and the audit contract asked the beacon for its block:
        # the signers answer the audit contract's own request.
        block = (await protocol.audit.segment(session_id, 0)).randomness_block
        for _ in range(300):
            status, value = await beacon.randomness_at(block)
            if status is RandomnessStatus.READY:
                break
            await asyncio.sleep(0.2)
        assert status is RandomnessStatus.READY, f"no randomness for block {block}"
        # The value is keccak256 of the group signature, which verifies under the group key.
        published = await beacon.contract.events.RandomnessPublished().get_logs(
            from_block=block, argument_filters={"blockNumber": block}
        )
        signature = bls.G1Point(published[0]["args"]["x"], published[0]["args"]["y"])
        assert bls.randomness_value(signature) == value
        message = bls.beacon_message(chain.chain_id, beacon.address, block)
        assert bls.verify(await beacon.group_key(), message, signature)
        sent = await protocol.audit.assign_auditors(provider, session_id, [0])
        (drawn,) = protocol.audit.committees_in(sent)
        return block, drawn.members


def test_signers_publish_and_a_committee_is_drawn_even_with_one_signer_down(
    beacon_env: dict[str, str], tmp_path: Path, artifacts: dict[str, Artifact]
) -> None:
    up = _trust(beacon_env, "devnet", "up", "--auditors", "3", "--no-workers")
    assert up.returncode == 0, up.stderr
    assert "randomness:      ThresholdBeacon, a 2-of-3 threshold BLS beacon" in up.stdout
    deployment = json.loads((tmp_path / "deployments" / "31337.json").read_text())
    assert deployment["extra"]["randomness"] == "beacon" and "ThresholdBeacon" in deployment["contracts"]
    group = load_group(tmp_path / "home" / "beacon")
    assert (group.threshold, group.count) == (2, 3)

    started = _trust(beacon_env, "beacon", "up")
    assert started.returncode == 0, started.stderr
    assert started.stdout.count("started (pid") == 3
    again = _trust(beacon_env, "beacon", "up")
    assert again.stdout.count("running (pid") == 3  # idempotent: the same three processes

    shown = _trust(beacon_env, "params", "show")
    assert shown.returncode == 0, shown.stderr
    assert "randomness source: ThresholdBeacon at" in shown.stdout and "2-of-3 threshold BLS" in shown.stdout

    rpc_url = f"http://127.0.0.1:{beacon_env['TRUST_DEVNET__PORT']}"
    block, members = asyncio.run(_draw(rpc_url, artifacts, tmp_path / "deployments"))
    assert len(members) == 1

    # Liveness: with signer 1 gone, the other two (t = 2) still publish.
    record = json.loads((tmp_path / "home" / "beacon" / "processes.json").read_text())
    os.kill(record["1"]["pid"], signal.SIGTERM)
    later, members = asyncio.run(_draw(rpc_url, artifacts, tmp_path / "deployments"))
    assert later > block and len(members) == 1
    status = _trust(beacon_env, "beacon", "status")
    assert "dead (pid" in status.stdout and status.stdout.count("running (pid") == 2
    # With signer 1 down, the later block reached t = 2 valid shares only if both others posted
    # theirs. (The first block needs no share of signer 2: signers 1 and 3 may publish it first.)
    for index in (2, 3):
        log = (tmp_path / "home" / "beacon" / f"signer-{index}.log").read_text()
        assert f"block {later}: posted the share of signer {index}" in log

    down = _trust(beacon_env, "beacon", "down")
    assert down.returncode == 0 and "2 beacon signers stopped" in down.stdout
    assert _trust(beacon_env, "beacon", "status").stdout.count("running (pid") == 0


async def test_a_local_network_with_the_beacon_runs_and_stops_its_signers(
    tmp_path: Path, artifacts: dict[str, Artifact]
) -> None:
    async with LocalNetwork(tmp_path / "net", [], idle_auditors=[1], randomness="beacon") as network:
        assert network.deployment.extra["randomness"] == "beacon"
        signers = beacon_status(network.settings)
        assert [s.running for s in signers] == [True, True, True]
        # the network's read interval reaches the signer processes (the default is 0.5 s)
        for signer in signers:
            assert "reading the chain every 0.2 s" in signer.log_file.read_text()
        async with ChainClient(network.rpc_url, artifacts) as chain:
            for operator in load_group(network.settings.beacon_dir).operators:
                assert await chain.balance(operator) > 0
    assert [s.running for s in beacon_status(network.settings)] == [False, False, False]
