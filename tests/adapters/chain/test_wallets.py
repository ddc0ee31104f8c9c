from pathlib import Path

import pytest

from trust.adapters.chain.wallets import create_keystore, load_keystore, read_password
from trust.errors import WalletError


def test_keystore_round_trip_is_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    account = create_keystore(path, "pw", scrypt_n=2**10)
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_keystore(path, "pw").address == account.address


def test_wrong_password_and_overwrite_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    create_keystore(path, "pw", scrypt_n=2**10)
    with pytest.raises(WalletError, match="wrong password"):
        load_keystore(path, "other")
    with pytest.raises(WalletError, match="refusing to overwrite"):
        create_keystore(path, "pw", scrypt_n=2**10)
    with pytest.raises(WalletError, match="empty password"):
        create_keystore(tmp_path / "k2.json", "", scrypt_n=2**10)


def test_not_a_keystore(tmp_path: Path) -> None:
    path = tmp_path / "junk.json"
    path.write_text("{not json")
    with pytest.raises(WalletError, match="not a keystore"):
        load_keystore(path, "pw")
    with pytest.raises(WalletError, match="no keystore"):
        load_keystore(tmp_path / "absent.json", "pw")


def test_password_from_file_or_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "pw"
    file.write_text("secret\nignored\n")
    assert read_password(file) == "secret"
    monkeypatch.setenv("TRUST_KEYSTORE_PASSWORD", "from-env")
    assert read_password(None) == "from-env"
    with pytest.raises(WalletError, match="cannot read a password"):
        read_password(tmp_path / "missing")
