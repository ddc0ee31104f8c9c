"""`trust.lab.localnet`: a whole network on this machine, its workers as separate processes."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import compile_protocol
from trust.adapters.chain.protocol import Protocol
from trust.adapters.local.processes import alive
from trust.adapters.local.toolchain import Toolchain
from trust.lab.localnet import LocalNetwork, WorkerSpec
from trust.services.worker.store import WorkerStore

pytestmark = pytest.mark.slow


async def test_a_local_network_runs_registered_workers_and_stops_them(tmp_path: Path) -> None:
    network = LocalNetwork(tmp_path, [WorkerSpec(1), WorkerSpec(1, adversary="wrong"), WorkerSpec(3)])
    async with network:
        assert network.alive_workers() == 3
        pids = [w.process.pid for w in network._workers]
        assert network.adversaries() == {network.auditors[1].address: "wrong"}
        (page,) = network.review_pages
        assert httpx.get(f"{page.url}/healthz", timeout=5).status_code == 200
        async with ChainClient(network.rpc_url, compile_protocol(Toolchain.discover())) as chain:
            protocol = Protocol.bind(chain, network.deployment)
            infos = [await protocol.registry.auditor(a.address) for a in network.auditors]
            assert [(i.registered, i.tier) for i in infos] == [(True, 1), (True, 1), (True, 3)]
            assert await protocol.registry.eligible_count(1) == 2
        assert all((tmp_path / "workers" / f"{a.address.lower()}.log").is_file() for a in network.auditors)
        # Each worker's state where the network says (`trust bench e2e` reads the seats there).
        states = network.worker_states
        assert set(states) == {a.address for a in network.auditors}
        for address, path in states.items():
            with WorkerStore.open_existing(path) as store:
                assert store.identity["auditor"] == address.lower()
    assert not any(alive(pid) for pid in pids)
