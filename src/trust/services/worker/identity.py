"""Who a worker is on chain: its wallet, the X25519 key it receives segment keys with, its
registration and stake, checked before the daemon starts so that a misconfigured auditor hears
why at once instead of sitting on seats it cannot open.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from eth_account.signers.local import LocalAccount

from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.types import AuditorInfo
from trust.core.amounts import decimal_text, parse_amount
from trust.core.graphs.hdag import Tier
from trust.errors import ConfigError, ContractReverted, WalletError
from trust.services.worker.keys import derive_encryption_key, encryption_public_key, load_encryption_key

__all__ = [
    "TOKEN_UNIT",
    "AuditorIdentity",
    "check_registration",
    "credential_missing",
    "ensure_registered",
    "format_tokens",
    "parse_tokens",
    "resolve_encryption_key",
]

TOKEN_UNIT = 10**18
"""Base units per staking token (TrustToken has 18 decimals)."""


def parse_tokens(text: str, what: str = "the stake") -> int:
    """A token amount as typed ("250", "0.5") in base units; `what` names it in the error."""
    return parse_amount(text, what)


def format_tokens(units: int) -> str:
    """Token base units as whole tokens, exactly ("250", "0.5"): no binary float in between."""
    return decimal_text(units)


@dataclass(frozen=True, slots=True)
class AuditorIdentity:
    """A worker's wallet and the X25519 key matching its registration."""

    account: LocalAccount
    encryption_key: X25519PrivateKey
    key_source: str  # where the key came from, for the start-up log

    @property
    def address(self) -> str:
        return str(self.account.address)

    @property
    def public_key(self) -> bytes:
        return encryption_public_key(self.encryption_key)


def resolve_encryption_key(
    account: LocalAccount, keystore: Path | None, password: str, explicit: Path | None, *, chain_id: int, registry: str
) -> tuple[X25519PrivateKey, str]:
    """The worker's X25519 key: `explicit` (a PEM file), else the PEM the devnet stored beside the
    keystore (`auditor-003.json` -> `auditor-003.x25519.pem`), else the key derived from the wallet."""
    if explicit is not None:
        return load_encryption_key(explicit, password), str(explicit)
    if keystore is not None:
        sibling = keystore.with_name(keystore.stem + ".x25519.pem")
        if sibling.is_file():
            return load_encryption_key(sibling, password), str(sibling)
    return derive_encryption_key(account, chain_id=chain_id, registry=registry), "derived from the wallet"


def check_registration(info: AuditorInfo, identity: AuditorIdentity, tier: Tier) -> None:
    """That the registered auditor `info` is `identity`'s of `tier`: the same tier, and the registered
    encryption key is the one this identity holds (else no key envelope would open)."""
    if info.tier != int(tier):
        raise ConfigError(
            f"{info.address} is registered as a tier-{info.tier} auditor, not tier {int(tier)}: use --tier {info.tier}"
        )
    if info.encryption_key != identity.public_key:
        raise WalletError(
            f"{info.address} registered the encryption key 0x{info.encryption_key.hex()}, but this worker's key "
            f"({identity.key_source}) is 0x{identity.public_key.hex()}; pass the registered key with --encryption-key"
        )


def credential_missing(address: str) -> ConfigError:
    """Tier 3 is for credentialed experts only: the registry refuses to register anyone else."""
    return ConfigError(
        f"{address} has no tier-3 credential: tier 3 is for experts whom governance credentials first "
        f"(a timelock proposal calling AuditorRegistry.grantCredential({address})). Ask governance for it and "
        f"register once it is granted (`trust worker info` shows it), or register for tier 1 or 2"
    )


async def ensure_registered(
    protocol: Protocol,
    identity: AuditorIdentity,
    tier: Tier,
    *,
    register: bool = False,
    stake_units: int | None = None,
    metadata_uri: str = "",
    unavailable_ok: bool = False,
) -> AuditorInfo:
    """Checks (and with `register`, makes) the wallet a registered, staked, available auditor of `tier`
    whose registered key is `identity`'s. Every way this can be wrong ends in a `ConfigError` that
    says what to do. `unavailable_ok`: an auditor out of the draw is accepted (the worker's state
    says the worker took it out itself, and it puts it back once it can audit in time)."""
    registry, address = protocol.registry, identity.address
    params = await protocol.params.params()
    minimum = int(params[f"minStakeTier{int(tier)}"])
    info = await registry.auditor(address)
    if await protocol.chain.balance(address) == 0:
        raise ConfigError(f"{address} holds no ETH to pay gas on chain {protocol.chain.chain_id}; fund it first")
    if not info.registered:
        if not register:
            raise ConfigError(
                f"{address} is not a registered auditor; register it with `trust worker register --tier {int(tier)} "
                f"--stake <tokens>` or run again with --register --stake <tokens> "
                f"(tier {int(tier)} needs at least {format_tokens(minimum)} tokens)"
            )
        if tier is Tier.HUMAN and not info.credentialed:
            raise credential_missing(address)
        stake = stake_units if stake_units is not None else minimum
        if stake < minimum:
            raise ConfigError(
                f"a stake of {format_tokens(stake)} tokens is below tier {int(tier)}'s minimum of "
                f"{format_tokens(minimum)}"
            )
        held = await protocol.token.balance_of(address)
        if held < stake:
            raise ConfigError(
                f"{address} holds {format_tokens(held)} staking tokens; registering with {format_tokens(stake)} "
                "needs more"
            )
        try:
            await protocol.token.approve(identity.account, registry.address, stake)
            await registry.register(
                identity.account, int(tier), identity.public_key, metadata_uri or f"worker:{address}", stake
            )
        except ContractReverted as exc:
            hint = " (tier 3 needs a credential granted by governance first)" if tier is Tier.HUMAN else ""
            raise ConfigError(f"registering {address} as a tier-{int(tier)} auditor failed: {exc}{hint}") from exc
        return await registry.auditor(address)
    check_registration(info, identity, tier)
    if stake_units:
        try:
            await protocol.token.approve(identity.account, registry.address, stake_units)
            await registry.stake(identity.account, stake_units)
        except ContractReverted as exc:
            raise ConfigError(f"adding {format_tokens(stake_units)} tokens of stake failed: {exc}") from exc
        info = await registry.auditor(address)
    if info.stake < minimum:
        raise ConfigError(
            f"{address} stakes {format_tokens(info.stake)} tokens; tier {int(tier)} needs {format_tokens(minimum)} "
            "to be drawn. "
            f"Add stake with --stake {format_tokens(minimum - info.stake)} "
            f"(or `trust worker stake --add {format_tokens(minimum - info.stake)}`)"
        )
    if not info.available and not unavailable_ok:
        raise ConfigError(
            f"{address} is marked unavailable and will not be drawn (its operator took it out); "
            "put it back with `trust worker resume --keystore K` first"
        )
    return info
