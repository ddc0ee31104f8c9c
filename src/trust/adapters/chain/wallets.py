"""Wallets: encrypted keystore files (the Web3 Secret Storage format) through eth-account.

Keys never appear on a command line. A keystore is unlocked with a password read from a file
(`--password-file`), from the `TRUST_KEYSTORE_PASSWORD` environment variable, or typed at a
prompt; files are written with owner-only permissions, atomically.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from eth_account import Account
from eth_account.messages import encode_typed_data
from eth_account.signers.local import LocalAccount

from trust.errors import WalletError

__all__ = ["create_keystore", "dev_account", "load_keystore", "read_password", "sign_typed", "write_keystore"]


def write_keystore(path: Path, account: LocalAccount, password: str, *, scrypt_n: int = 2**18) -> Path:
    """Encrypts `account` into a keystore file at `path` (mode 0600). Refuses to overwrite."""
    if path.exists():
        raise WalletError(f"{path} exists; refusing to overwrite a keystore")
    if not password:
        raise WalletError("refusing to write a keystore with an empty password")
    keystore = Account.encrypt(account.key, password, kdf="scrypt", iterations=scrypt_n)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(keystore, fh)
    os.replace(tmp, path)
    return path


def create_keystore(path: Path, password: str, *, scrypt_n: int = 2**18) -> LocalAccount:
    """Creates a new random account and stores it encrypted at `path`."""
    account: LocalAccount = Account.create()
    write_keystore(path, account, password, scrypt_n=scrypt_n)
    return account


def load_keystore(path: Path, password: str) -> LocalAccount:
    """Decrypts the keystore at `path`."""
    try:
        keystore = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise WalletError(f"no keystore at {path}") from exc
    except json.JSONDecodeError as exc:
        raise WalletError(f"{path} is not a keystore file (invalid JSON: {exc})") from exc
    try:
        key = Account.decrypt(keystore, password)
    except ValueError as exc:
        raise WalletError(f"cannot unlock {path}: wrong password or corrupted keystore") from exc
    account: LocalAccount = Account.from_key(key)
    return account


def read_password(password_file: Path | None, *, env_var: str = "TRUST_KEYSTORE_PASSWORD") -> str | None:
    """The keystore password from a file (first line) or the environment; None when neither is set."""
    if password_file is not None:
        try:
            return password_file.read_text().splitlines()[0]
        except (OSError, IndexError) as exc:
            raise WalletError(f"cannot read a password from {password_file}: {exc}") from exc
    return os.environ.get(env_var)


def sign_typed(
    account: LocalAccount, domain: dict[str, object], types: dict[str, list[dict[str, str]]], message: dict[str, object]
) -> bytes:
    """The account's EIP-712 signature (65 bytes) over `message` of `types` in `domain`.

    secp256k1 signatures from eth-account are deterministic (RFC 6979): the same wallet signs the same
    message to the same bytes, which is what lets secrets be derived from a wallet alone.
    """
    signable = encode_typed_data(domain_data=domain, message_types=types, message_data=message)
    return bytes(account.sign_message(signable).signature)


def dev_account(mnemonic: str, index: int) -> LocalAccount:
    """Account `index` of a development mnemonic (Anvil's default accounts)."""
    Account.enable_unaudited_hdwallet_features()
    account: LocalAccount = Account.from_mnemonic(mnemonic, account_path=f"m/44'/60'/0'/0/{index}")
    return account
