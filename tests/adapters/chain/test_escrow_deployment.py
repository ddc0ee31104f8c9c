"""`ProviderEscrow` in a deployment: deployed by `deploy_protocol` (plain, ownerless) and recorded in
the file; a file written before it existed still loads for the rest of the protocol, and the escrow
side (what a billing gateway and `trust gateway deposit` open) refuses it by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.deployment import ESCROW_CONTRACT, Deployment, deploy_protocol
from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.anvil import AnvilNode
from trust.api.gateway.billing import BillingUnavailable, open_escrow
from trust.settings import GovernanceSettings, ProtocolSettings, Settings

pytestmark = pytest.mark.chain


async def test_the_escrow_is_deployed_and_an_older_file_still_loads(
    anvil: AnvilNode, artifacts: dict[str, Artifact], mnemonic: str, tmp_path: Path
) -> None:
    settings = Settings(deployments_dir=tmp_path)
    async with ChainClient(anvil.rpc_url, artifacts) as chain:
        deployment = await deploy_protocol(chain, dev_account(mnemonic, 0), ProtocolSettings(), GovernanceSettings())
        assert deployment.escrow is not None and await chain.code_at(deployment.escrow)
        assert ESCROW_CONTRACT not in deployment.implementations, "not behind a proxy"
        deployment.save(tmp_path)
        async with open_escrow(settings, anvil.rpc_url, artifacts) as (_protocol, escrow):
            assert escrow.address == deployment.escrow
            assert await escrow.reservation_seconds() == 3600

        older = deployment.replace(contracts={k: v for k, v in deployment.contracts.items() if k != ESCROW_CONTRACT})
        older.save(tmp_path)
        loaded = Deployment.load(tmp_path, chain.chain_id)
        assert loaded.escrow is None and loaded.contracts["TRUSTAudit"] == deployment.contracts["TRUSTAudit"]
        with pytest.raises(BillingUnavailable, match="no ProviderEscrow .* --no-billing"):
            async with open_escrow(settings, anvil.rpc_url, artifacts):
                pass
