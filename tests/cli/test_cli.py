"""The `trust` command as a user runs it: wallets, deploying to a JSON-RPC URL, reading params."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trust.adapters.local.anvil import AnvilNode
from trust.adapters.local.toolchain import Toolchain

pytestmark = [pytest.mark.chain, pytest.mark.slow]


def _trust(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trust", *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_wallet_deploy_and_params(tmp_path: Path, mnemonic: str) -> None:
    password = tmp_path / "pw"
    password.write_text("correct horse\n")
    env = dict(os.environ, TRUST_DEPLOYMENTS_DIR=str(tmp_path / "deployments"), COLUMNS="160")
    env.pop("TRUST_KEYSTORE_PASSWORD", None)

    created = _trust(env, "wallet", "new", str(tmp_path / "deployer.json"), "--password-file", str(password))
    assert created.returncode == 0, created.stderr
    address = created.stdout.split()[0]
    assert address.startswith("0x") and len(address) == 42
    again = _trust(env, "wallet", "new", str(tmp_path / "deployer.json"), "--password-file", str(password))
    assert again.returncode == 1 and "refusing to overwrite" in again.stderr

    with AnvilNode.start(Toolchain.discover(), mnemonic=mnemonic) as node:
        # Fund the new wallet from a development account.
        import asyncio

        from trust.adapters.chain.client import ChainClient
        from trust.adapters.chain.compiler import compile_protocol
        from trust.adapters.chain.wallets import dev_account

        async def fund() -> None:
            async with ChainClient(node.rpc_url, compile_protocol(Toolchain.discover())) as chain:
                await chain.send_value(dev_account(mnemonic, 0), address, 10**19)

        asyncio.run(fund())
        wrong = tmp_path / "wrong"
        wrong.write_text("nope\n")
        refused = _trust(
            env,
            "deploy",
            "--keystore",
            str(tmp_path / "deployer.json"),
            "--password-file",
            str(wrong),
            "--rpc-url",
            node.rpc_url,
        )
        assert refused.returncode == 1 and "wrong password" in refused.stderr

        deployed = _trust(
            env,
            "deploy",
            "--keystore",
            str(tmp_path / "deployer.json"),
            "--password-file",
            str(password),
            "--rpc-url",
            node.rpc_url,
        )
        assert deployed.returncode == 0, deployed.stderr
        record = json.loads((tmp_path / "deployments" / "31337.json").read_text())
        assert record["deployer"] == address and record["governed_by_timelock"] is True
        assert record["contracts"]["TRUSTAudit"] in deployed.stdout

        shown = _trust(env, "params", "show", "--rpc-url", node.rpc_url)
        assert shown.returncode == 0, shown.stderr
        assert "version 1" in shown.stdout and "tauBps" in shown.stdout and "6,600" in shown.stdout
