"""`Protocol.connect`, the one way services, the API, the CLI and the lab reach a deployment: the
chain it reaches picks the deployment file, a missing file or a file of another chain is refused by
name, and the client closes on exit."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.deployment import Deployment, deploy_protocol
from trust.adapters.chain.protocol import Protocol, open_chain
from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.anvil import AnvilNode
from trust.errors import ChainError, DeploymentNotFound
from trust.settings import GovernanceSettings, ProtocolSettings, Settings

pytestmark = pytest.mark.chain


async def test_connect_binds_the_deployment_file_of_the_chain_it_reaches(
    anvil: AnvilNode, artifacts: dict[str, Artifact], mnemonic: str, tmp_path: Path
) -> None:
    settings = Settings(deployments_dir=tmp_path, rpc_url=anvil.rpc_url)
    with pytest.raises(DeploymentNotFound, match=f"no deployment for chain {anvil.chain_id} at .*trust deploy"):
        async with Protocol.connect(settings, artifacts=artifacts):
            pass

    async with open_chain(anvil.rpc_url, artifacts=artifacts) as chain:
        deployment = await deploy_protocol(chain, dev_account(mnemonic, 0), ProtocolSettings(), GovernanceSettings())
    deployment.save(tmp_path)

    async with Protocol.connect(settings, artifacts=artifacts) as protocol:
        assert protocol.deployment == Deployment.load(tmp_path, anvil.chain_id)
        assert protocol.chain.rpc_url == anvil.rpc_url and protocol.chain.chain_id == anvil.chain_id
        assert protocol.audit.address == deployment.contracts["TRUSTAudit"]
        assert await protocol.params.version() == 1
    with pytest.raises(ChainError, match="closed"):
        protocol.chain.contract("TRUSTAudit", deployment.contracts["TRUSTAudit"])

    # A deployment given by the caller is bound as it is, and must be of the chain reached.
    elsewhere = deployment.replace(chain_id=anvil.chain_id + 1)
    with pytest.raises(ChainError, match=f"deployment is for chain {anvil.chain_id + 1} but .* is chain"):
        async with Protocol.connect(settings, anvil.rpc_url, deployment=elsewhere, artifacts=artifacts):
            pass


async def test_connect_names_the_node_it_cannot_reach(artifacts: dict[str, Artifact], tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(ChainError, match=f"cannot reach the chain at {url}: .*trust devnet up"):
        async with Protocol.connect(Settings(deployments_dir=tmp_path), url, artifacts=artifacts):
            pass
