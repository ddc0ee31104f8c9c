"""The chain adapter against a real Anvil: deployment files, decoded reverts, unreachable nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import Artifact
from trust.adapters.chain.deployment import Deployment, deploy_protocol
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import SegmentSpec
from trust.adapters.chain.wallets import dev_account, load_keystore
from trust.adapters.local.processes import free_port
from trust.errors import ChainError, ConfigError, ContractReverted, DeploymentNotFound
from trust.lab.devnet import provision_auditors
from trust.settings import GovernanceSettings, ProtocolSettings

pytestmark = [pytest.mark.chain]


async def test_unreachable_node_is_a_clear_chain_error(artifacts: dict[str, Artifact]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ChainError, match="cannot reach the chain at .*trust devnet up"):
        async with ChainClient(url, artifacts):
            pass


async def test_deployment_file_round_trip_and_chain_check(chain: ChainClient, mnemonic: str, tmp_path: Path) -> None:
    deployer = dev_account(mnemonic, 0)
    deployment = await deploy_protocol(chain, deployer, ProtocolSettings(), GovernanceSettings())
    path = deployment.save(tmp_path)
    assert path == tmp_path / "31337.json"
    loaded = Deployment.load(tmp_path, 31337)
    assert loaded == deployment
    for address in loaded.contracts.values():
        assert await chain.code_at(address), address
    with pytest.raises(DeploymentNotFound, match="no deployment for chain 5"):
        Deployment.load(tmp_path, 5)
    with pytest.raises(ChainError, match="deployment is for chain 1"):
        Protocol.bind(chain, loaded.replace(chain_id=1))
    path.write_text("{broken")
    with pytest.raises(ConfigError, match="not valid JSON"):
        Deployment.load(tmp_path, 31337)


async def test_reverts_are_decoded_into_named_errors(chain: ChainClient, mnemonic: str) -> None:
    deployer, provider = dev_account(mnemonic, 0), dev_account(mnemonic, 3)
    protocol = Protocol.bind(chain, await deploy_protocol(chain, deployer, ProtocolSettings(), GovernanceSettings()))
    spec = SegmentSpec(tier=2, weight=1, content_digest=b"\x05" * 32)
    fee = await protocol.audit.minimum_fee([spec])
    with pytest.raises(ContractReverted) as low:
        await protocol.audit.create_session(provider, b"\x01" * 32, [spec], fee_wei=fee - 1)
    assert low.value.error_name == "AuditFeeTooLow"
    assert low.value.error_args == {"feeWei": fee - 1, "neededWei": fee}
    assert "AuditFeeTooLow(feeWei=" in str(low.value)
    with pytest.raises(ContractReverted) as unknown:
        await protocol.audit.session(0) and await protocol.audit.finalize_trace(deployer, 77)
    assert unknown.value.error_name == "AuditUnknownSession"
    with pytest.raises(ContractReverted) as not_auditor:
        await protocol.registry.set_available(provider, False)
    assert not_auditor.value.error_name == "RegistryNotRegistered"


async def test_writes_after_a_write_in_the_latest_block_are_priced_for_the_next_block(
    chain: ChainClient, mnemonic: str, keystore_dir: Path
) -> None:
    """The sortition tree keeps one history entry per block: estimated against the latest block
    (which already wrote the shared nodes' entries), `setAvailable` looked cheaper than it is in
    the next block, where it appends new entries, and every second one ran out of gas."""
    deployer = dev_account(mnemonic, 0)
    protocol = Protocol.bind(chain, await deploy_protocol(chain, deployer, ProtocolSettings(), GovernanceSettings()))
    infos = await provision_auditors(protocol, deployer, [1] * 12, keystore_dir, "test-only", scrypt_n=2**10)
    blocks = []
    for info in infos[:6]:
        sent = await protocol.registry.set_available(load_keystore(Path(info.keystore), "test-only"), False)
        blocks.append(sent.block_number)
    assert blocks == list(range(blocks[0], blocks[0] + 6)), "each in the block after the previous one"
    assert await protocol.registry.eligible_count(1) == 6
