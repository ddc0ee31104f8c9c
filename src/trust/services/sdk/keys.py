"""The provider's reply key: where the seats of a session seal their reports (critiques) to.

One X25519 key per session, derived from the provider's wallet: HKDF-SHA256 over the wallet's EIP-712
signature of (chain id, audit contract, provider, trace root). Deterministic (RFC 6979 signatures),
so a provider that lost its disk still reads the reports of its sessions with its wallet alone, and
one per trace root, so a report sealed for one trace says nothing to the holder of another trace's
key. Its public half travels inside every key envelope of the session (`KeyGrant.reply_key`).
"""

from __future__ import annotations

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from trust.adapters.chain.wallets import sign_typed

__all__ = ["reply_key"]

_TYPES = {
    "ReplyKey": [
        {"name": "provider", "type": "address"},
        {"name": "traceRoot", "type": "bytes32"},
    ]
}
_INFO = b"trust.provider.reply.x25519.v1"
_KEY_BYTES = 32


def reply_key(account: LocalAccount, *, chain_id: int, audit_contract: str, trace_root: bytes) -> X25519PrivateKey:
    """The X25519 private key of the session registered with `trace_root` by `account`."""
    if len(trace_root) != _KEY_BYTES:
        raise ValueError(f"trace root must be 32 bytes, got {len(trace_root)}")
    domain = {
        "name": "TRUST reply key",
        "version": "1",
        "chainId": chain_id,
        "verifyingContract": to_checksum_address(audit_contract),
    }
    signature = sign_typed(account, domain, _TYPES, {"provider": account.address, "traceRoot": trace_root})
    seed = HKDF(algorithm=hashes.SHA256(), length=_KEY_BYTES, salt=None, info=_INFO).derive(signature)
    return X25519PrivateKey.from_private_bytes(seed)
