"""`trust devnet up` / `down` as a user runs them: a real detached Anvil, state on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trust.adapters.local.anvil import rpc_ready
from trust.adapters.local.processes import free_port

pytestmark = [pytest.mark.chain, pytest.mark.slow]


def _trust(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trust", *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def devnet_env(tmp_path: Path) -> dict[str, str]:
    port = free_port()
    env = dict(os.environ)
    env.update(
        TRUST_HOME=str(tmp_path / "home"),
        TRUST_DEVNET__PORT=str(port),
        TRUST_DEPLOYMENTS_DIR=str(tmp_path / "deployments"),
        TRUST_IPFS__PORT=str(free_port()),
        COLUMNS="200",
    )
    yield env
    _trust(env, "devnet", "down")


def test_up_is_idempotent_and_a_restart_loses_nothing(devnet_env: dict[str, str], tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{devnet_env['TRUST_DEVNET__PORT']}"
    first = _trust(devnet_env, "devnet", "up", "--auditors", "6", "--no-workers")
    assert first.returncode == 0, first.stderr
    assert "devnet started" in first.stdout and url in first.stdout
    assert "no workers started (--no-workers)" in first.stdout
    assert not (tmp_path / "home" / "devnet" / "processes.json").exists()
    deployment_file = tmp_path / "deployments" / "31337.json"
    assert str(deployment_file) in first.stdout.replace("\n", "")
    deployment = json.loads(deployment_file.read_text())
    assert deployment["governed_by_timelock"] is True
    record = json.loads((tmp_path / "home" / "devnet" / "devnet.json").read_text())
    tiers = [a["tier"] for a in record["auditors"]]
    assert sorted(tiers) == [1, 2, 2, 2, 3, 3]
    for auditor in record["auditors"]:
        assert auditor["address"] in first.stdout

    again = _trust(devnet_env, "devnet", "up", "--no-workers")
    assert again.returncode == 0, again.stderr
    assert "already running" in again.stdout
    assert json.loads(deployment_file.read_text()) == deployment
    states = tmp_path / "home" / "devnet" / "anvil-states"
    assert states.is_dir()  # past blocks' states, here and not under ~/.foundry

    down = _trust(devnet_env, "devnet", "down")
    assert down.returncode == 0 and "stopped" in down.stdout
    assert rpc_ready(url) is None
    assert not states.exists()

    # Restart: same chain, same contracts, same auditors; two more asked for, one of them human
    # (its credential now goes through the governance timelock).
    restarted = _trust(devnet_env, "devnet", "up", "--auditors", "8", "--no-workers")
    assert restarted.returncode == 0, restarted.stderr
    assert "devnet started" in restarted.stdout
    assert json.loads(deployment_file.read_text())["contracts"] == deployment["contracts"]
    grown = json.loads((tmp_path / "home" / "devnet" / "devnet.json").read_text())["auditors"]
    assert [a["address"] for a in grown[:6]] == [a["address"] for a in record["auditors"]]
    assert len(grown) == 8 and sorted(a["tier"] for a in grown) == [1, 1, 2, 2, 2, 3, 3, 3]


def test_down_without_a_devnet_says_so(devnet_env: dict[str, str]) -> None:
    result = _trust(devnet_env, "devnet", "down")
    assert result.returncode == 0
    assert "no devnet was running" in result.stdout


def test_refuses_a_port_already_taken(devnet_env: dict[str, str], toolchain) -> None:
    from trust.adapters.local.anvil import AnvilNode

    with AnvilNode.start(toolchain, port=int(devnet_env["TRUST_DEVNET__PORT"])):
        result = _trust(devnet_env, "devnet", "up", "--auditors", "3")
    assert result.returncode == 1
    assert "already answers JSON-RPC" in result.stderr
    assert (
        f"port {devnet_env['TRUST_DEVNET__PORT']} is taken" in result.stderr and "TRUST_DEVNET__PORT" in result.stderr
    )
    assert "Traceback" not in result.stderr
    # Refused before anything else started: no IPFS node, no record of processes.
    assert not (Path(devnet_env["TRUST_HOME"]) / "devnet" / "processes.json").exists()
