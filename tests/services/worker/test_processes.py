"""Workers as separate processes (`trust worker run`), killed and restarted like a real daemon.

Three tier-1 workers audit a session on Anvil and the local IPFS node. One (run silent, so that it
commits and does not reveal) is killed with SIGKILL after it committed and before it revealed;
restarted, it reveals in the reveal window from its state file and is not slashed. `trust worker
status` reads a running worker's state, and SIGTERM stops a worker cleanly.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.types import SessionStatus
from trust.adapters.chain.wallets import load_keystore
from trust.adapters.storage.kubo import KuboClient
from trust.services.worker.runner import state_path
from trust.services.worker.store import SeatState, WorkerStore
from trust.settings import Settings

from .conftest import PASSWORD, PROTOCOL, Network, deployed_network, products, seats_of, submit

pytestmark = [pytest.mark.chain, pytest.mark.slow]

SEGMENTS = 7
WRONG = (3, 4)
"""products()'s segments that state 17 * 23 = 409."""
REVEAL_WINDOW_SECONDS = 60
"""The reveal window opens when the last seat commits (the commit window closes early), a few
seconds after the draw; killing a worker, reading its state with two `trust worker status` runs and
starting a process again take a good part of the conftest's 16 s."""


@pytest.fixture
async def network(chain: ChainClient, mnemonic: str, keystore_dir: Path) -> AsyncIterator[Network]:
    settings = PROTOCOL.model_copy(update={"reveal_window_seconds": REVEAL_WINDOW_SECONDS})
    async with deployed_network(chain, mnemonic, keystore_dir, settings) as made:
        yield made


class Workers:
    """`trust worker run` processes of the network's auditors, with their logs in files."""

    def __init__(self, network: Network, ipfs_api_url: str, home: Path) -> None:
        self.network = network
        self.home = home
        deployments = home / "deployments"
        network.deployment.save(deployments)
        self.env = {
            **os.environ,
            "TRUST_HOME": str(home),
            "TRUST_RPC_URL": network.protocol.chain.rpc_url,
            "TRUST_IPFS__API_URL": ipfs_api_url,
            "TRUST_DEPLOYMENTS_DIR": str(deployments),
            "TRUST_KEYSTORE_PASSWORD": PASSWORD,
            "TRUST_WORKER__POLL_SECONDS": "0.3",
            "TRUST_WORKER__COMMIT_MARGIN_SECONDS": "3",
        }
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    def keystore(self, index: int) -> str:
        return self.network.auditors[index].keystore

    def start(self, index: int, *extra: str) -> subprocess.Popen[bytes]:
        with (self.home / f"worker-{index}.log").open("ab") as log:  # the child keeps its own copy
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "trust",
                    "worker",
                    "run",
                    "--keystore",
                    self.keystore(index),
                    "--tier",
                    "1",
                    *extra,
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.processes[index] = process
        return process

    def log(self, index: int) -> str:
        return (self.home / f"worker-{index}.log").read_text()

    def state(self, index: int) -> Path:
        address = self.network.auditors[index].address
        settings = Settings(home=self.home)
        return state_path(settings, address, self.network.protocol.chain.chain_id)

    def seats(self, index: int) -> list[SeatState]:
        path = self.state(index)
        if not path.is_file():
            return []
        with WorkerStore.open_existing(path) as store:
            return [s.state for s in store.seats()]

    def trust(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "trust", *args], env=self.env, capture_output=True, text=True, timeout=120
        )

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture
def workers(network: Network, ipfs_api_url: str, tmp_path: Path) -> Iterator[Workers]:
    made = Workers(network, ipfs_api_url, tmp_path)
    yield made
    made.stop_all()


async def _until(condition, timeout: float, what: str, workers: Workers) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- worker {i}\n{workers.log(i)[-3000:]}" for i in workers.processes)
            raise AssertionError(f"timed out waiting for {what}\n{logs}")
        await asyncio.sleep(0.3)


async def test_a_worker_killed_between_commit_and_reveal_reveals_after_a_restart(
    network: Network, kubo: KuboClient, workers: Workers
) -> None:
    protocol = network.protocol
    victim = network.auditors[0].address
    stake_before = (await protocol.registry.auditor(victim)).stake
    # Worker 0 first runs silent: it commits its honest votes and never reveals, so it is killed
    # between commit and reveal for sure (every seat commits at once, which closes the commit
    # window early, and an honest worker would reveal in its next tick).
    workers.start(0, "--adversary", "silent")
    for index in (1, 2):
        workers.start(index)
    session_id, _, committees = await submit(network, kubo, products())
    # Three draws per segment among the three: worker 0 holds the seats its draws gave it.
    held = seats_of(committees, victim)

    await _until(lambda: workers.seats(0).count(SeatState.COMMITTED) == len(held), 60, "worker 0 to commit", workers)
    workers.processes[0].send_signal(signal.SIGKILL)
    workers.processes[0].wait()
    assert (await protocol.registry.auditor(victim)).locked > 0

    # The status command reads the dead worker's state file.
    status = workers.trust("worker", "status", "--keystore", workers.keystore(0), "--json")
    assert status.returncode == 0, status.stderr
    (report,) = json.loads(status.stdout)
    assert report["seats"]["committed"] == len(held) and report["auditor"] == victim.lower()
    everyone = workers.trust("worker", "status")  # every worker under TRUST_HOME, as a person reads it
    assert everyone.returncode == 0, everyone.stderr
    assert all(a.address.lower() in everyone.stdout for a in network.auditors)
    assert "open seats" in everyone.stdout and "recent" in everyone.stdout

    # Restarted in the reveal window (the chain's, which opened when the last seat committed), it
    # reveals from its state file.
    commit_deadline = max([(await protocol.audit.segment(session_id, i)).commit_deadline for i in range(SEGMENTS)])
    while (await protocol.chain.w3.eth.get_block("latest"))["timestamp"] <= commit_deadline:
        await asyncio.sleep(0.3)
    workers.start(0)
    await _until(
        lambda: (
            all(s in (SeatState.FINALIZED, SeatState.CLAIMED) for s in workers.seats(0))
            and len(workers.seats(0)) == len(held)
        ),
        90,
        "worker 0 to reveal and see the rounds finalized",
        workers,
    )
    for segment in held:
        seat = committees[segment].members.index(victim)
        assert (await protocol.audit.seat(session_id, segment, 0, seat)).revealed
    info = await protocol.registry.auditor(victim)
    assert info.stake == stake_before and info.locked == 0
    log = workers.log(0)
    if set(held) & set(WRONG):
        assert "revealed: fail" in log and "finalized: segment failed; our fail vote is aligned" in log
    if set(held) - set(WRONG):
        assert "revealed: pass" in log and "finalized: segment passed; our pass vote is aligned" in log

    # Once the session is paid out, the auditor withdraws its rewards on request.
    async def distributed() -> bool:
        return (await protocol.audit.session(session_id)).status is SessionStatus.DISTRIBUTED

    deadline = time.monotonic() + 60
    while not await distributed():
        assert time.monotonic() < deadline, "the session was never distributed"
        await asyncio.sleep(0.5)
    workers.processes[0].send_signal(signal.SIGTERM)
    assert workers.processes[0].wait(timeout=30) == 0
    balance = await protocol.chain.balance(victim)
    withdrawn = workers.trust("worker", "withdraw", "--keystore", workers.keystore(0))
    assert withdrawn.returncode == 0, withdrawn.stderr
    paid_eth = float(withdrawn.stdout.split("seat rewards:")[1].split("ETH")[0])
    assert paid_eth > 0
    assert await protocol.chain.balance(victim) > balance  # the reward is more than the claim's gas
    assert workers.seats(0) == [SeatState.CLAIMED] * len(held)


async def test_sigterm_stops_a_worker_cleanly(network: Network, workers: Workers) -> None:
    process = workers.start(1)
    await _until(lambda: "following" in workers.log(1), 60, "worker 1 to start", workers)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    assert "stopped" in workers.log(1)


def test_a_wrong_password_and_an_unregistered_wallet_are_clear_errors(
    network: Network, workers: Workers, tmp_path: Path
) -> None:
    wrong = workers.trust(
        "worker", "run", "--keystore", workers.keystore(0), "--tier", "1", "--password-file", "/dev/null"
    )
    assert wrong.returncode != 0
    bad = tmp_path / "bad-password"
    bad.write_text("not the password\n")
    wrong = workers.trust(
        "worker", "run", "--keystore", workers.keystore(0), "--tier", "1", "--password-file", str(bad)
    )
    assert wrong.returncode == 1 and "wrong password" in wrong.stderr
    new = tmp_path / "new.json"
    created = workers.trust("wallet", "new", str(new))
    assert created.returncode == 0, created.stderr
    unfunded = workers.trust("worker", "run", "--keystore", str(new), "--tier", "1")
    assert unfunded.returncode == 1 and "no ETH" in unfunded.stderr
    assert load_keystore(new, PASSWORD).address in unfunded.stderr
