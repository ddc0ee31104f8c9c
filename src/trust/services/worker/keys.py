"""Secrets a worker derives from its wallet, so that losing the disk loses nothing.

The vote salt of a seat is `keccak256(signature)`, where the signature is the wallet's EIP-712
signature over (chain id, audit contract, session, segment, round). secp256k1 signatures from
eth-account are deterministic (RFC 6979), so the same wallet always derives the same salt for the
same seat: a worker whose state directory is gone can still reveal. The salt stays secret as long
as the wallet key does; another auditor cannot derive it, and the commitment binds the auditor's
address as well (`TRUSTAudit.commitmentOf`), so a copied commitment is worthless.

The X25519 key that receives segment keys (`trust.core.privacy.envelopes`) is derived the same way from a
signature over (chain id, registry) when the worker registers itself; an auditor provisioned by the
devnet keeps the PEM file it was given instead (`load_encryption_key`).

A wallet must never sign these typed messages for anyone else: whoever holds the signature holds
the salt (and can reveal early) or the decryption key. Both domains are named after TRUST and typed
so that no ordinary dApp request can collide with them.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from eth_account.messages import encode_typed_data
from eth_account.signers.local import LocalAccount
from eth_utils import keccak, to_checksum_address

from trust.errors import WalletError

__all__ = [
    "derive_encryption_key",
    "encryption_public_key",
    "load_encryption_key",
    "vote_salt",
]

_SALT_TYPES = {
    "VoteSalt": [
        {"name": "auditor", "type": "address"},
        {"name": "sessionId", "type": "uint256"},
        {"name": "segmentId", "type": "uint256"},
        {"name": "round", "type": "uint8"},
    ]
}
_KEY_TYPES = {
    "EncryptionKey": [
        {"name": "auditor", "type": "address"},
        {"name": "purpose", "type": "string"},
    ]
}
_KEY_INFO = b"trust.worker.x25519.v1"


def _sign(
    account: LocalAccount, domain: dict[str, object], types: dict[str, list[dict[str, str]]], message: dict[str, object]
) -> bytes:
    signable = encode_typed_data(domain_data=domain, message_types=types, message_data=message)
    return bytes(account.sign_message(signable).signature)


def vote_salt(
    account: LocalAccount, *, chain_id: int, audit_contract: str, session_id: int, segment_id: int, round_id: int
) -> bytes:
    """The 32-byte salt of the account's vote on (session, segment, round) of this chain's audit contract."""
    domain = {
        "name": "TRUST vote salt",
        "version": "1",
        "chainId": chain_id,
        "verifyingContract": to_checksum_address(audit_contract),
    }
    message = {"auditor": account.address, "sessionId": session_id, "segmentId": segment_id, "round": round_id}
    return keccak(_sign(account, domain, _SALT_TYPES, message))


def derive_encryption_key(account: LocalAccount, *, chain_id: int, registry: str) -> X25519PrivateKey:
    """The X25519 key this wallet registers on `registry` when the worker registers it."""
    domain = {
        "name": "TRUST encryption key",
        "version": "1",
        "chainId": chain_id,
        "verifyingContract": to_checksum_address(registry),
    }
    signature = _sign(account, domain, _KEY_TYPES, {"auditor": account.address, "purpose": "segment keys"})
    seed = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_KEY_INFO).derive(signature)
    return X25519PrivateKey.from_private_bytes(seed)


def encryption_public_key(key: X25519PrivateKey) -> bytes:
    """The raw 32-byte public key (what the registry stores)."""
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def load_encryption_key(path: Path, password: str) -> X25519PrivateKey:
    """An X25519 private key stored as encrypted PKCS#8 PEM (what `trust devnet up` writes)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise WalletError(f"cannot read the encryption key {path}: {exc.strerror or exc}") from exc
    try:
        key = serialization.load_pem_private_key(data, password.encode())
    except (ValueError, TypeError) as exc:
        raise WalletError(f"cannot unlock the encryption key {path}: wrong password or not a PEM key ({exc})") from exc
    if not isinstance(key, X25519PrivateKey):
        raise WalletError(f"{path} holds a {type(key).__name__}, not an X25519 key")
    return key
