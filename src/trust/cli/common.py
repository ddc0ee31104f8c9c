"""What every command module shares: the consoles, the settings, common options and the keystore password."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from trust.settings import Settings

__all__ = [
    "HomeOption",
    "PasswordFileOption",
    "PredictionsOption",
    "RpcOption",
    "TierOption",
    "console",
    "err_console",
    "keystore_address",
    "keystore_password",
    "settings_for",
    "write_lines",
]

console = Console()


err_console = Console(stderr=True)


def settings_for(home: Path | None) -> Settings:
    return Settings(home=home) if home else Settings()


HomeOption = Annotated[Path | None, typer.Option("--home", help="state folder (default ~/.trust, or TRUST_HOME)")]


RpcOption = Annotated[
    str | None, typer.Option("--rpc-url", help="JSON-RPC endpoint (default: TRUST_RPC_URL or the devnet)")
]


PasswordFileOption = Annotated[
    Path | None, typer.Option("--password-file", help="file whose first line unlocks the keystore")
]


def keystore_password(password_file: Path | None, *, confirm: bool = False) -> str:
    from trust.adapters.chain.wallets import read_password

    password = read_password(password_file)
    if password is None:
        password = typer.prompt("keystore password", hide_input=True, confirmation_prompt=confirm)
    return password


def write_lines(path: Path, rows: list[dict[str, object]]) -> None:
    import json

    from trust.errors import ConfigError

    try:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the predictions ({exc.strerror})") from None


TierOption = Annotated[int, typer.Option("--tier", min=1, max=3, help="1 computational, 2 LLM, 3 human expert")]


PredictionsOption = Annotated[
    Path | None, typer.Option("--predictions", help="also write one JSON line per item to this file")
]


def keystore_address(keystore: Path) -> str:
    from eth_utils import to_checksum_address

    from trust.errors import WalletError

    try:
        return str(to_checksum_address("0x" + json.loads(keystore.read_text())["address"].removeprefix("0x")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WalletError(f"cannot read the address of keystore {keystore}: {exc}") from exc
