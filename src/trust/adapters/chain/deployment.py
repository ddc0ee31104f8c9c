"""Deploying the protocol and the per-chain address files.

`deploy_protocol` deploys, in order: the staking token, the TimelockController, the randomness
source, then ProtocolParams, AuditorRegistry, TRUSTAudit and SegmentKeys (key envelopes and segment
inclusion proofs, beside TRUSTAudit), each as an implementation behind an ERC-1967 proxy
initialized in the same transaction (no window in which someone else could initialize it). The
deployer owns the contracts until `hand_to_timelock`, which gives every one of them to the timelock:
from then on parameters, credentials, slashing and upgrades go through governance only.

`ProviderEscrow` (billing: providers prepay the gateway's sessions, docs/gateway.md) is deployed last,
as a plain contract: it has no owner and no upgrade path, so it is neither proxied nor handed to
the timelock. It is optional in a deployment file: a file written before it existed still loads
for the rest of the protocol (`Deployment.escrow` is then None, and a gateway that bills refuses
to start, naming `trust deploy`).

The addresses are written to `<deployments dir>/<chain id>.json`, atomically. A file that lacks one
of `PROTOCOL_CONTRACTS` (written before SegmentKeys existed) does not load: it is reported as
`DeploymentNotFound`, so `trust devnet up` redeploys and `trust deploy` is the fix elsewhere.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eth_account.signers.local import LocalAccount

from trust.adapters.chain.client import ChainClient
from trust.core.beacon.bls import BeaconGroup
from trust.errors import ConfigError, DeploymentNotFound
from trust.settings import TOKEN, GovernanceSettings, ProtocolSettings

__all__ = [
    "ESCROW_CONTRACT",
    "PROTOCOL_CONTRACTS",
    "RANDOMNESS_SOURCES",
    "Deployment",
    "deploy_protocol",
    "hand_to_timelock",
]

FORMAT_VERSION = 1

#: The upgradeable protocol contracts: each behind a proxy, each handed to the timelock.
PROTOCOL_CONTRACTS = ("ProtocolParams", "AuditorRegistry", "TRUSTAudit", "SegmentKeys")
#: The providers' escrow: immutable and ownerless, optional in a deployment file.
ESCROW_CONTRACT = "ProviderEscrow"

#: The randomness sources `deploy_protocol` can deploy, by the name `Deployment.extra["randomness"]`
#: records: the threshold BLS beacon, or the block hash (INSECURE: a block producer chooses it; for
#: unit tests and the test fixtures, which run no signer processes).
RANDOMNESS_SOURCES = {"beacon": "ThresholdBeacon", "blockhash": "BlockhashRandomness"}


@dataclass(frozen=True, slots=True)
class Deployment:
    """Where one deployment of the protocol lives on one chain."""

    chain_id: int
    contracts: dict[str, str]
    implementations: dict[str, str]
    deployer: str
    block_number: int
    deployed_at: float
    governed_by_timelock: bool = False
    format_version: int = FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def path_for(directory: Path, chain_id: int) -> Path:
        return directory / f"{chain_id}.json"

    def save(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = self.path_for(directory, self.chain_id)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, directory: Path, chain_id: int) -> Deployment:
        path = cls.path_for(directory, chain_id)
        if not path.is_file():
            raise DeploymentNotFound(
                f"no deployment for chain {chain_id} at {path}; run `trust deploy` (or `trust devnet up`)"
            )
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} is not valid JSON ({exc}); redeploy or restore it") from exc
        if data.get("format_version") != FORMAT_VERSION:
            raise ConfigError(f"{path} has format_version {data.get('format_version')}, expected {FORMAT_VERSION}")
        missing = [name for name in PROTOCOL_CONTRACTS if name not in data.get("contracts", {})]
        if missing:
            raise DeploymentNotFound(
                f"the deployment at {path} has no {', '.join(missing)} (it predates them); "
                "redeploy with `trust deploy`, or run `trust devnet up`, which redeploys a devnet"
            )
        return cls(**data)

    @property
    def escrow(self) -> str | None:
        """The `ProviderEscrow` address, if this deployment has one (see the module docstring)."""
        return self.contracts.get(ESCROW_CONTRACT)

    def replace(self, **changes: Any) -> Deployment:
        values = asdict(self)
        values.update(changes)
        return Deployment(**values)


async def _proxied(chain: ChainClient, deployer: LocalAccount, name: str, init_args: list[Any]) -> tuple[str, str]:
    """Deploys `name` behind an ERC-1967 proxy initialized with `init_args`; returns (proxy, impl)."""
    implementation = await chain.deploy(name, deployer)
    init = chain.contract(name, implementation).encode_abi("initialize", args=init_args)
    proxy = await chain.deploy("ERC1967Proxy", deployer, implementation, bytes.fromhex(init[2:]))
    return proxy, implementation


async def deploy_protocol(
    chain: ChainClient,
    deployer: LocalAccount,
    protocol: ProtocolSettings,
    governance: GovernanceSettings,
    *,
    treasury: str | None = None,
    insurance_fund: str | None = None,
    proposers: list[str] | None = None,
    randomness: str = "blockhash",
    beacon_group: BeaconGroup | None = None,
) -> Deployment:
    """Deploys every contract; the deployer owns them until `hand_to_timelock`.

    `randomness` picks the source (`RANDOMNESS_SOURCES`): "beacon" deploys a `ThresholdBeacon` for
    `beacon_group` (whose signers must then run: `trust beacon up`); "blockhash" is the insecure
    block hash, kept as the default of this function for unit tests and fixtures. The deployment
    names the contract under its own name and records the choice in `extra["randomness"]`.
    """
    if randomness not in RANDOMNESS_SOURCES:
        raise ConfigError(f"randomness source {randomness!r} is unknown: use one of {', '.join(RANDOMNESS_SOURCES)}")
    if (randomness == "beacon") != (beacon_group is not None):
        raise ConfigError(
            "a beacon needs its group (the group key, share keys and operators: "
            "`trust.adapters.local.beacon.keys.deal_group`), "
            "and only a beacon takes one"
        )
    params = protocol.to_params()
    token = await chain.deploy("TrustToken", deployer, deployer.address, governance.token_supply_tokens * TOKEN)
    members = proposers or [deployer.address]
    timelock = await chain.deploy(
        "TimelockController",
        deployer,
        governance.timelock_min_delay_seconds,
        members,
        members,
        "0x0000000000000000000000000000000000000000",
    )
    randomness_name = RANDOMNESS_SOURCES[randomness]
    if beacon_group is not None:
        randomness_address = await chain.deploy(randomness_name, deployer, *beacon_group.constructor_args())
    else:
        randomness_address = await chain.deploy(randomness_name, deployer)
    params_proxy, params_impl = await _proxied(
        chain,
        deployer,
        "ProtocolParams",
        [deployer.address, tuple(params.values()), treasury or timelock, insurance_fund or timelock],
    )
    registry_proxy, registry_impl = await _proxied(
        chain, deployer, "AuditorRegistry", [deployer.address, token, params_proxy]
    )
    audit_proxy, audit_impl = await _proxied(
        chain, deployer, "TRUSTAudit", [deployer.address, registry_proxy, params_proxy, randomness_address]
    )
    keys_proxy, keys_impl = await _proxied(chain, deployer, "SegmentKeys", [deployer.address, audit_proxy])
    registry = chain.contract("AuditorRegistry", registry_proxy)
    await chain.transact(registry.functions.setAuditContract(audit_proxy), deployer)
    # SegmentKeys records each round's key delivery in TRUSTAudit (issue M3, `claimUndelivered`).
    audit = chain.contract("TRUSTAudit", audit_proxy)
    await chain.transact(audit.functions.setSegmentKeys(keys_proxy), deployer)
    escrow = await chain.deploy(ESCROW_CONTRACT, deployer)
    return Deployment(
        chain_id=chain.chain_id,
        contracts={
            "TRUSTAudit": audit_proxy,
            "SegmentKeys": keys_proxy,
            "AuditorRegistry": registry_proxy,
            "ProtocolParams": params_proxy,
            "TrustToken": token,
            "TimelockController": timelock,
            ESCROW_CONTRACT: escrow,
            randomness_name: randomness_address,
            # TRUSTAudit's external libraries (stateless, linked into its implementation).
            **chain.libraries,
        },
        implementations={
            "TRUSTAudit": audit_impl,
            "SegmentKeys": keys_impl,
            "AuditorRegistry": registry_impl,
            "ProtocolParams": params_impl,
        },
        deployer=deployer.address,
        block_number=await chain.block_number(),
        deployed_at=time.time(),
        extra={"randomness": randomness},
    )


async def hand_to_timelock(chain: ChainClient, deployer: LocalAccount, deployment: Deployment) -> Deployment:
    """Transfers ownership of every protocol contract to the timelock."""
    timelock = deployment.contracts["TimelockController"]
    for name in PROTOCOL_CONTRACTS:
        contract = chain.contract(name, deployment.contracts[name])
        await chain.transact(contract.functions.transferOwnership(timelock), deployer)
    return deployment.replace(governed_by_timelock=True)
