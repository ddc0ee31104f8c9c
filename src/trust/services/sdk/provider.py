"""Which wallet a command-line provider signs with."""

from __future__ import annotations

import sys
from pathlib import Path

from eth_account.signers.local import LocalAccount

from trust.adapters.chain.wallets import dev_account, load_keystore
from trust.adapters.local.anvil import rpc_ready
from trust.errors import ConfigError
from trust.settings import Settings

__all__ = ["LOCAL_CHAIN_IDS", "LOCAL_PROVIDER_INDEX", "provider_account"]

LOCAL_CHAIN_IDS = frozenset({31337})
"""Chains whose development accounts anyone may use (Anvil's and Hardhat's id)."""

LOCAL_PROVIDER_INDEX = 3
"""The development account a local network's provider uses (0 deploys, 1 and 2 receive fees)."""


def provider_account(
    settings: Settings,
    rpc_url: str,
    keystore: Path | None,
    password: str | None,
    *,
    local_index: int = LOCAL_PROVIDER_INDEX,
    role: str = "provider",
) -> LocalAccount:
    """The keystore's account; without one, on a local chain only, Anvil's development account
    `local_index` (3 for a provider; the gateway takes its own, so that the two never race for
    nonces). `role` names the wallet in messages."""
    if keystore is not None:
        if password is None:
            raise ConfigError(f"no password for {keystore}: use --password-file or TRUST_KEYSTORE_PASSWORD")
        return load_keystore(keystore, password)
    chain_id = rpc_ready(rpc_url)
    if chain_id is None:
        raise ConfigError(
            f"nothing answers JSON-RPC at {rpc_url}: start the network (`trust demo`, `trust devnet up`), or pass "
            f"the {role}'s --keystore"
        )
    if chain_id not in LOCAL_CHAIN_IDS:
        raise ConfigError(f"chain {chain_id} at {rpc_url} is not a local chain: pass the {role}'s --keystore")
    account = dev_account(settings.devnet.mnemonic, local_index)
    print(f"{role}: development account {account.address} (local chain {chain_id})", file=sys.stderr)
    return account
