"""A deployed protocol with staked auditors whose X25519 keys the test holds: the setting of the
delivery tests (a provider stores a trace, the seats open what their envelopes unlock)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account.signers.local import LocalAccount

from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.deployment import deploy_protocol
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.wallets import dev_account
from trust.lab.devnet import provision_auditors
from trust.settings import GovernanceSettings, ProtocolSettings

DELIVERY_SETTINGS = ProtocolSettings(
    committee_size_tier1=1,
    committee_size_tier2=3,
    committee_size_tier3=3,
    commit_window_seconds=300,
    reveal_window_seconds=300,
)


@dataclass
class Network:
    protocol: Protocol
    provider: LocalAccount
    private_keys: dict[str, X25519PrivateKey]


async def deliver_network(
    chain: ChainClient, mnemonic: str, keystore_dir: Path, tiers: Sequence[int], password: str
) -> Network:
    """Deploys with `DELIVERY_SETTINGS`, registers one auditor per entry of `tiers` and unlocks each
    auditor's encryption key; the provider is development account 3."""
    deployer, provider = dev_account(mnemonic, 0), dev_account(mnemonic, 3)
    protocol = Protocol.bind(chain, await deploy_protocol(chain, deployer, DELIVERY_SETTINGS, GovernanceSettings()))
    accounts = await provision_auditors(protocol, deployer, tiers, keystore_dir, password, scrypt_n=2**10)
    private_keys = {}
    for account in accounts:
        key = serialization.load_pem_private_key(Path(account.encryption_key_file).read_bytes(), password.encode())
        assert isinstance(key, X25519PrivateKey)
        private_keys[account.address] = key
    return Network(protocol, provider, private_keys)
